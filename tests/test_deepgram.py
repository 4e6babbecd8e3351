"""Deepgram Aura's speak API (gateway/vendors/deepgram/): the pure rules, then their real SDK (the socket's Speak,
Flush, Clear and Close; the REST route in a WAV, MP3 and G.711, decoded with PyAV) and pipecat's real
DeepgramTTSService against a real gateway on 127.0.0.1 (eSpeak; the one the third-party client tests share), the audio
checked for speech and the PerTh watermark after the format change; wrong keys and bad input refused, the server going
on."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import av
import numpy as np
import pytest

from engine.protocol import ProtocolError
from gateway import messages
from gateway.vendors.deepgram import translate
from gateway.vendors.deepgram.translate import Close, Mark, Reply, Say, SpeakSocket
from tests.server import KEYED_KEY

KEY = KEYED_KEY


# The rules, without sockets.

def frame(**fields: Any) -> str:
    return json.dumps(fields)


def fmt(query: dict[str, str], rest: bool) -> tuple[str, int]:
    opts = translate.options(query, {"default"}, rest=rest)
    return opts.format, opts.sample_rate


def test_a_model_is_the_voice_it_names_where_the_gateway_has_it_else_the_default() -> None:
    voices = {"default", "thalia", "narrator"}
    assert translate.voice_for("aura-2-thalia-en", voices) == "thalia"
    assert translate.voice_for("aura-asteria-en", voices) == "default"  # no such voice here
    assert translate.voice_for("aura-2-narrator-en", voices) == "narrator"
    assert translate.voice_for("narrator", voices) == "narrator"
    assert translate.voice_for("nova-3", voices) == "default"


def test_the_query_picks_format_rate_and_container() -> None:
    voices = {"default"}
    ws = translate.options({}, voices, rest=False)
    assert (ws.model, ws.voice, ws.format, ws.sample_rate) == ("aura-2-thalia-en", "default", "pcm", 24000)
    assert fmt({"encoding": "mulaw"}, rest=False) == ("mulaw", 8000)
    assert translate.options({"encoding": "linear16", "sample_rate": "16000"}, voices, rest=False).sample_rate == 16000
    rest = translate.options({}, voices, rest=True)
    assert (rest.format, rest.sample_rate, rest.wav_header) == ("wav", 24000, b"")
    assert translate.options({"container": "none"}, voices, rest=True).format == "pcm"
    assert fmt({"encoding": "mp3"}, rest=True) == ("mp3", 22050)
    assert fmt({"encoding": "opus"}, rest=True) == ("opus", 48000)
    alaw = translate.options({"encoding": "alaw"}, voices, rest=True)
    assert alaw.format == "alaw" and alaw.wav_header[:4] == b"RIFF" and alaw.wav_header[20:22] == b"\x06\x00"
    assert translate.options({"encoding": "mulaw", "container": "none"}, voices, rest=True).wav_header == b""
    for query, rest_route, words in [({"encoding": "mp3"}, False, "encoding must be one of linear16, mulaw, alaw"),
                                     ({"encoding": "wav"}, True, "encoding must be one of"),
                                     ({"sample_rate": "11025"}, False, "sample_rate for linear16 must be one of"),
                                     ({"sample_rate": "x"}, True, "sample_rate"),
                                     ({"encoding": "mulaw", "sample_rate": "16000"}, False, "8000"),
                                     ({"encoding": "mp3", "container": "wav"}, True, "container for mp3")]:
        with pytest.raises(ProtocolError, match=words) as info:
            translate.options(query, voices, rest=rest_route)
        assert info.value.code == "INVALID_QUERY_PARAMETER"


def test_flushed_follows_the_utterances_queued_at_its_flush_and_clear_drops_them() -> None:
    rules = SpeakSocket()
    assert rules.receive(frame(type="Speak", text="Hello ")) == [Say(messages.Text("Hello "))]
    assert rules.receive(frame(type="Speak", text="")) == []
    assert rules.receive(frame(type="Flush")) == [Say(messages.End()), Mark(0)]
    assert rules.mark(0, queued=[0]) == []  # its utterance is still being sent
    assert rules.receive(frame(type="Flush")) == [Say(messages.End()), Mark(1)]
    assert rules.mark(1, queued=[0]) == []  # nothing new: it waits for the one before
    assert rules.settled(queued=[0]) == []
    assert rules.settled(queued=[]) == [translate.flushed(0), translate.flushed(1)]
    assert rules.receive(frame(type="Flush")) == [Say(messages.End()), Mark(2)]
    assert rules.mark(2, queued=[]) == [translate.flushed(2)]  # nothing queued: at once
    rules.receive(frame(type="Flush"))
    rules.mark(3, queued=[4])
    assert rules.waiting
    assert rules.receive(frame(type="Clear")) == [Say(messages.Cancel()), Reply(translate.cleared(3))]
    assert not rules.waiting and rules.settled(queued=[]) == []  # no stale Flushed after Cleared
    assert rules.receive(frame(type="Close")) == [Say(messages.End()), Close()]


@pytest.mark.parametrize(("raw", "words", "code"), [
    ("nope", "not JSON", "bad_message"),
    ('{"text": "hi"}', "string 'type'", "bad_message"),
    ('{"type": "Speak", "text": 5}', "string field 'text'", "bad_message"),
    ('{"type": "Speak", "text": "' + "a" * 2001 + '"}', "over 2000", "TEXT_TOO_LONG"),
    ('{"type": "Shout"}', "unknown message type 'Shout'", "UNKNOWN_MESSAGE_TYPE"),
    (b"\x00\x01", "binary", "bad_message"),
])
def test_bad_messages_say_what_is_wrong(raw: str | bytes, words: str, code: str) -> None:
    with pytest.raises(ProtocolError, match=words) as info:
        SpeakSocket().receive(raw)
    assert info.value.code == code


# A real gateway and their real clients.

@pytest.fixture(scope="module")
def server(keyed_gateway: tuple[str, int]) -> str:
    """The gateway the third-party client tests share (tests/conftest.py)."""
    return keyed_gateway[0]


def environment(url: str) -> Any:
    """Their SDK's base URLs pointed at the gateway: REST at ``base``, the sockets at ``production``."""
    from deepgram.environment import DeepgramClientEnvironment

    return DeepgramClientEnvironment(base=url + "/deepgram", production=url.replace("http://", "ws://") + "/deepgram",
                                     agent=url.replace("http://", "ws://"), agent_rest=url)


def pcm_of(audio: bytes) -> np.ndarray:
    return np.frombuffer(audio, dtype="<i2").astype(np.float32) / 32768.0


def decoded(data: bytes) -> tuple[np.ndarray, int]:
    """A whole file decoded with PyAV: mono float samples, sample rate."""
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        rate = stream.codec_context.sample_rate
        frames = [f.to_ndarray().reshape(-1).astype(np.float32) for f in container.decode(stream)]
    samples = np.concatenate(frames)
    return (samples / 32768.0 if np.abs(samples).max() > 1.5 else samples), rate


def speech_heard(wav: np.ndarray, rate: int, seconds: float = 0.8) -> bool:
    return wav.size / rate > seconds and float(np.sqrt(np.mean(wav ** 2))) > 0.02


async def test_the_sdk_socket_speaks_flushes_clears_and_closes(server: str, watermarker) -> None:
    from deepgram import AsyncDeepgramClient
    from deepgram.speak.v1.types import SpeakV1Text

    client = AsyncDeepgramClient(api_key=KEY, environment=environment(server))
    async with asyncio.timeout(60):  # a bound on a hang, not a speed
        async with client.speak.v1.connect(model="aura-2-thalia-en", encoding="linear16", sample_rate=16000) as ws:
            first = await ws.recv()
            assert first.type == "Metadata" and first.model_name == "aura-2-thalia-en"
            for piece in ["Hello there,", " this is streamed", " text from a model."]:
                await ws.send_text(SpeakV1Text(text=piece))
            await ws.send_flush()
            audio = bytearray()
            while isinstance(reply := await ws.recv(), bytes):
                audio += reply
            assert reply.type == "Flushed" and reply.sequence_id == 0
            wav = pcm_of(bytes(audio))
            assert speech_heard(wav, 16000) and watermarker.detect(wav, 16000) >= 0.5

            await ws.send_text(SpeakV1Text(text="This is a long answer that the caller will interrupt. " * 30))
            await ws.send_flush()
            assert isinstance(await ws.recv(), bytes)  # speaking
            await ws.send_clear()
            while isinstance(reply := await ws.recv(), bytes):  # what was on its way before the Clear was taken
                pass
            assert reply.type == "Cleared"
            with pytest.raises(TimeoutError):  # nothing of the cleared answer after Cleared, and no stale Flushed
                async with asyncio.timeout(1.0):
                    print(await ws.recv())

            await ws._websocket.send("{mangled")  # a bad message: a Warning, the socket goes on
            warning = await ws.recv()
            assert warning.type == "Warning" and "not JSON" in warning.description
            await ws.send_text(SpeakV1Text(text="Sorry, go ahead."))
            await ws.send_close()  # what was sent is spoken, then the socket closes
            heard = bytearray()
            async for reply in ws:
                assert isinstance(reply, bytes), reply
                heard += reply
        assert speech_heard(pcm_of(bytes(heard)), 16000, 0.5)


def test_the_sdk_rest_route_streams_a_wav_and_an_mp3(server: str, watermarker) -> None:
    from deepgram import DeepgramClient

    client = DeepgramClient(api_key=KEY, environment=environment(server))
    text = "Good morning. I can help you book a table for tonight."
    wav_bytes = b"".join(client.speak.v1.audio.generate(text=text, model="aura-2-thalia-en"))
    assert wav_bytes[:4] == b"RIFF"
    wav, rate = decoded(wav_bytes)
    assert rate == 24000 and speech_heard(wav, rate) and watermarker.detect(wav, rate) >= 0.5
    mp3, rate = decoded(b"".join(client.speak.v1.audio.generate(text=text, encoding="mp3")))
    assert rate == 22050 and speech_heard(mp3, rate) and watermarker.detect(mp3, rate) >= 0.5
    mulaw, rate = decoded(b"".join(client.speak.v1.audio.generate(text=text, encoding="mulaw", sample_rate=8000)))
    assert rate == 8000 and speech_heard(mulaw, rate)


def test_wrong_keys_are_refused_before_any_audio_and_the_bearer_form_is_taken(server: str) -> None:
    import httpx
    from deepgram import DeepgramClient
    from deepgram.core.api_error import ApiError
    from websockets.exceptions import InvalidStatus

    wrong = DeepgramClient(api_key="wrong", environment=environment(server))
    with pytest.raises(ApiError) as info:
        b"".join(wrong.speak.v1.audio.generate(text="Hello."))
    assert info.value.status_code == 401
    # (the sync socket client of deepgram-sdk 7 raises websockets' own InvalidStatus under websockets 14+; the
    # async one their ApiError)
    with pytest.raises((ApiError, InvalidStatus)) as info:
        with wrong.speak.v1.connect() as ws:
            ws.recv()
    assert (getattr(info.value, "status_code", None) or info.value.response.status_code) == 401
    bearer = DeepgramClient(access_token=KEY, environment=environment(server))  # "Authorization: bearer KEY"
    assert b"".join(bearer.speak.v1.audio.generate(text="Hi.", container="none", encoding="linear16"))
    reply = httpx.post(server + "/deepgram/v1/speak?encoding=wav", json={"text": "Hi."},
                       headers={"Authorization": f"Token {KEY}"})
    assert reply.status_code == 400 and reply.json()["err_code"] == "INVALID_QUERY_PARAMETER"
    reply = httpx.post(server + "/deepgram/v1/speak", json={"text": "  "}, headers={"Authorization": f"Token {KEY}"})
    assert reply.status_code == 400 and reply.json()["err_msg"] == "text is empty"
    metrics = httpx.get(server + "/metrics", headers={"Authorization": f"Token {KEY}"}).text  # by dialect
    assert 'cbf_active_sessions{transport="deepgram"}' in metrics
    assert 'cbf_errors_total{code="invalid_query_parameter"}' in metrics


async def test_pipecats_deepgram_service_hears_watermarked_speech(server: str, watermarker) -> None:
    """pipecat's real DeepgramTTSService in its own test harness, pointed at the gateway: it speaks each sentence and
    ends each on our Flushed."""
    from pipecat.frames.frames import ErrorFrame, TTSAudioRawFrame, TTSSpeakFrame, TTSStoppedFrame
    from pipecat.services.deepgram.tts import DeepgramTTSService
    from pipecat.tests.utils import run_test

    tts = DeepgramTTSService(api_key=KEY, base_url=server.replace("http://", "ws://") + "/deepgram",
                             sample_rate=24000, settings=DeepgramTTSService.Settings(voice="aura-2-thalia-en"))
    async with asyncio.timeout(60):  # a bound on a hang, not a speed
        frames, _ = await run_test(tts, frames_to_send=[TTSSpeakFrame("Good morning. How can I help you today?")],
                                   start_timeout=30)
    wav = pcm_of(b"".join(f.audio for f in frames if isinstance(f, TTSAudioRawFrame)))
    assert speech_heard(wav, 24000, 1.0) and watermarker.detect(wav, 24000) >= 0.5
    assert any(isinstance(f, TTSStoppedFrame) for f in frames)
    assert not any(isinstance(f, ErrorFrame) for f in frames)
