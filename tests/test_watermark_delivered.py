"""PerTh on the audio a listener actually receives, after every codec the gateway delivers: a real aiortc peer over
Opus and PCMU, a WebSocket client over mu-law and PCM, an HTTP client over MP3 and Opus. Real server (eSpeak engine),
real PerTh detection, utterances of 2 s and longer. Run with ``-s`` to see the confidences."""

from __future__ import annotations

import asyncio
import json
import threading

import av
import httpx
import numpy as np
import pytest
from websockets.asyncio.client import connect as ws_connect

from cbf_tools.peers.rtc_listener import SPEECH_RMS
from engine.watermark import Watermarker
from tests.rtc_helpers import connect as rtc_connect, frames_later
from tests.test_http import decode

UTTERANCES = [
    "Thanks for calling. How can I help you today?",  # about 2.5 s
    "Sure, let me check that for you. It will only take a moment, and then your booking for Friday at noon is "
    "confirmed. Is there anything else I can do?",  # about 8 s
]
MIN_SECONDS = 2.0
THRESHOLD = 0.5


@pytest.fixture(scope="module")
def server(plain_server: str) -> str:
    return plain_server


def check(watermarker: Watermarker, how: str, text: str, audio: np.ndarray, rate: int) -> None:
    """The received speech is long enough, and PerTh reads it as marked."""
    seconds = audio.size / rate
    confidence = watermarker.detect(audio, rate)
    print(f"\n{how:<22} {seconds:5.2f} s at {rate:5d} Hz: PerTh {confidence:.3f}  ({text[:30]}...)")
    assert seconds >= MIN_SECONDS and np.abs(audio).max() > 0.05
    assert confidence >= THRESHOLD, f"{how}: watermark read {confidence:.3f} on {seconds:.2f} s of received audio"


def mulaw_decode(data: bytes) -> np.ndarray:
    """G.711 mu-law bytes (8 kHz mono) to float32 with PyAV's decoder."""
    decoder = av.CodecContext.create("pcm_mulaw", "r")
    decoder.sample_rate, decoder.layout = 8000, "mono"
    frames = decoder.decode(av.Packet(data))
    return np.concatenate([f.to_ndarray().reshape(-1) for f in frames]).astype(np.float32) / 32768


def speech_span(audio: np.ndarray, rate: int) -> np.ndarray:
    """From the first to the last 20 ms frame with speech: what the peer heard of the utterance, not the silence a
    paced track sends around it."""
    frame = rate // 50
    frames = audio[: audio.size // frame * frame].reshape(-1, frame)
    loud = np.flatnonzero(np.sqrt(np.mean((frames * 32768.0) ** 2, axis=1)) > SPEECH_RMS)
    return frames[loud[0]: loud[-1] + 1].reshape(-1) if loud.size else audio[:0]


async def _received_over_webrtc(server: str, codec: str, text: str) -> tuple[np.ndarray, int]:
    """What a peer offering only ``codec`` heard of ``text``, played at real time."""
    listener, answer = await rtc_connect(server, keep_audio=True, offer_codecs=[codec])
    try:
        assert answer["codec"] == codec
        listener.channel.send(json.dumps({"type": "speak", "text": text}))
        await listener.wait_for(lambda: any(e["type"] == "done" for e in listener.events), timeout=60)
        await frames_later(listener)  # the last frames in flight
        audio, rate = listener.audio()
    finally:
        await listener.close()
    assert rate == (48000 if codec == "opus" else 8000)
    return speech_span(audio, rate), rate


@pytest.mark.parametrize("text", UTTERANCES, ids=["short", "long"])
async def test_aiortc_peers_receive_marked_speech_over_opus_and_pcmu(server: str, watermarker: Watermarker,
                                                                     text: str) -> None:
    """An Opus peer and a PCMU peer at once (each its own session): the audio plays at real time, so side by side
    rather than one after the other."""
    codecs = ["opus", "pcmu"]
    received = await asyncio.gather(*(_received_over_webrtc(server, codec, text) for codec in codecs))
    for codec, (audio, rate) in zip(codecs, received):
        check(watermarker, f"WebRTC {codec}", text, audio, rate)


@pytest.mark.parametrize(("fmt", "rate"), [("mulaw", 8000), ("pcm_s16le", 24000), ("pcm_s16le", 16000)])
@pytest.mark.parametrize("text", UTTERANCES, ids=["short", "long"])
async def test_a_websocket_client_receives_marked_speech(server: str, watermarker: Watermarker, fmt: str, rate: int,
                                                         text: str) -> None:
    audio = bytearray()
    async with ws_connect(server.replace("http://", "ws://") + "/v1/stream") as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
        await ws.send(json.dumps({"type": "config", "format": fmt, "sample_rate": rate}))
        await ws.send(json.dumps({"type": "speak", "text": text}))
        while True:
            frame = await asyncio.wait_for(ws.recv(), 30)
            if isinstance(frame, bytes):
                audio += frame
            elif (event := json.loads(frame))["type"] in ("done", "error"):
                assert event["type"] == "done", event
                break
    samples = mulaw_decode(bytes(audio)) if fmt == "mulaw" else (
        np.frombuffer(bytes(audio), dtype="<i2").astype(np.float32) / 32768)
    check(watermarker, f"WebSocket {fmt} {rate}", text, samples, rate)


@pytest.mark.parametrize(("fmt", "rate"), [("mp3", 24000), ("opus", 48000)])
@pytest.mark.parametrize("text", UTTERANCES, ids=["short", "long"])
def test_an_http_client_receives_marked_speech(server: str, watermarker: Watermarker, fmt: str, rate: int,
                                               text: str) -> None:
    reply = httpx.post(server + "/v1/tts", json={"text": text, "format": fmt}, timeout=60)
    assert reply.status_code == 200, reply.text
    audio, got_rate = decode(reply.content)
    assert got_rate == rate
    check(watermarker, f"HTTP {fmt}", text, audio, rate)


@pytest.mark.parametrize("rate", [8000, 16000, 24000, 48000])
def test_the_same_speech_unmarked_reads_clean_at_every_rate(espeak_engine, watermarker: Watermarker,
                                                           rate: int) -> None:
    """The control: the detector tells marked from unmarked at these rates, so the readings above mean something."""
    wav = espeak_engine.synthesize(UTTERANCES[1], espeak_engine.default_voice(), threading.Event())
    frame = av.AudioFrame.from_ndarray((np.clip(wav, -1, 1) * 32767).astype(np.int16)[None, :], "s16", "mono")
    frame.sample_rate = espeak_engine.sample_rate
    resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
    clean = np.concatenate([f.to_ndarray().reshape(-1) for f in resampler.resample(frame) + resampler.resample(None)])
    confidence = watermarker.detect(clean.astype(np.float32) / 32768, rate)
    print(f"\nunmarked eSpeak at {rate:5d} Hz: PerTh {confidence:.3f}")
    assert confidence < THRESHOLD
