"""Cartesia's API at /cartesia against a real gateway on 127.0.0.1 (eSpeak): the real ``cartesia`` SDK over the
socket (two interleaved contexts of continue pieces, timestamps, flushes), bytes and SSE, pipecat's real
CartesiaTTSService, and the socket's own behaviours (cancel, bad requests, wrong keys), the audio checked for speech
and the PerTh watermark after the format change. The rules themselves: tests/test_cartesia_translate.py."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import time
from typing import Any, Iterator

import httpx
import numpy as np
import pytest
import soundfile
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.pipecat_barge_in import check_barge_in
from tests.server import running_server

KEY = "cartesia-test-key"  # the keys file's "agent": every route, and /v1/usage
NARROW_KEY = "cartesia-narrow-key"  # its "narrow": /v1/tts only
KEYS = f"""
[keys.agent]
key = "{KEY}"
admin = true

[keys.narrow]
key = "{NARROW_KEY}"
routes = ["/v1/tts"]
"""
F32_44K = {"container": "raw", "encoding": "pcm_f32le", "sample_rate": 44100}
S16_16K = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16000}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    keys = tmp_path_factory.mktemp("keys") / "keys.toml"
    keys.write_text(KEYS)
    with running_server("--keys-file", str(keys), voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield url


def sdk(server: str, key: str = KEY):
    from cartesia import AsyncCartesia

    return AsyncCartesia(api_key=key, base_url=server + "/cartesia",
                         websocket_base_url=server.replace("http://", "ws://") + "/cartesia")


def ws_url(server: str) -> str:
    return server.replace("http://", "ws://") + "/cartesia/tts/websocket"


def speech_of(wav: np.ndarray, rate: int, watermarker, seconds: float = 1.0) -> None:
    """``wav`` is seconds of speech, not silence, and carries the PerTh watermark."""
    assert wav.size / rate > seconds and np.sqrt(np.mean(wav ** 2)) > 0.02
    assert watermarker.detect(wav, rate) >= 0.5


async def test_the_sdk_speaks_two_interleaved_contexts_of_continue_pieces_with_timestamps(
        server: str, watermarker) -> None:
    client = sdk(server)
    conn = await client.tts.websocket_connect().enter()
    texts = {"a": ["Good morning, ", "I can help you ", "book a table ", "for tonight."],
             "b": ["The weather ", "today is sunny ", "with a light breeze."]}
    contexts = {ctx: conn.context(ctx, model_id="sonic-3", voice={"mode": "id", "id": "default"},
                                  output_format=F32_44K, add_timestamps=True) for ctx in texts}
    for a, b in zip(texts["a"], texts["b"] + [None]):  # interleaved, piece by piece
        await contexts["a"].push(a)
        if b is not None:
            await contexts["b"].push(b, flush=b.endswith("."))
    for ctx in contexts.values():
        await ctx.no_more_inputs()

    async def heard(ctx: str) -> list[Any]:
        return [event async for event in contexts[ctx].receive()]

    async with asyncio.timeout(60):  # a bound on a hang, not a speed
        events = dict(zip(texts, await asyncio.gather(*(heard(ctx) for ctx in texts))))
    await conn.close()
    for ctx, said in texts.items():
        kinds = [e.type for e in events[ctx]]
        assert kinds[-1] == "done" and "error" not in kinds and all(e.context_id == ctx for e in events[ctx])
        audio = np.frombuffer(b"".join(e.audio for e in events[ctx] if e.type == "chunk"), dtype="<f4")
        speech_of(audio, 44100, watermarker)
        stamps = [e.word_timestamps for e in events[ctx] if e.type == "timestamps"]
        words = [w for s in stamps for w in s.words]
        sent = "".join(said).split()
        assert words == sent  # every word sent, in order, spelt as sent
        starts = [t for s in stamps for t in s.start]
        seconds = audio.size / 44100
        assert starts == sorted(starts) and 0.5 * seconds < starts[-1] < seconds  # from the context's start, spread
    assert [e.flush_id for e in events["b"] if e.type == "flush_done"] == [1]


async def test_a_cancel_stops_its_context_within_a_chunk_and_the_other_goes_on(server: str) -> None:
    """Nothing of "a" is sent once its cancel is taken: the socket takes its messages in order, so "b"'s first reply
    comes after the cancel was taken, and nothing of "a" may follow it (up to a second after "b" is done). What
    arrived within 100 ms of the cancel was the machine's load to say: a client descheduled that long reads "a"'s
    last piece, sent before the cancel was taken, that late."""
    long_text = "This is a long answer that the caller will interrupt. " * 30
    seen: dict[str, list[tuple[float, str]]] = {"a": [], "b": []}
    order: list[str] = []  # each reply's context, as received
    async with connect(ws_url(server), additional_headers={"X-API-Key": KEY, "Cartesia-Version": "2025-04-16"}) as ws:
        base = {"model_id": "sonic-3", "voice": {"mode": "id", "id": "default"}, "output_format": S16_16K}
        await ws.send(json.dumps({**base, "context_id": "a", "transcript": long_text, "continue": True}))
        async with asyncio.timeout(30):
            while not seen["a"]:
                reply = json.loads(await ws.recv())
                seen[reply["context_id"]].append((time.monotonic(), reply["type"]))
                order.append(reply["context_id"])
        await ws.send(json.dumps({"context_id": "a", "cancel": True}))
        await ws.send(json.dumps({**base, "context_id": "b", "transcript": "Sorry, go ahead.", "continue": False}))
        async with asyncio.timeout(30):
            while ("done" not in [kind for _, kind in seen["b"]]):
                reply = json.loads(await ws.recv())
                seen[reply["context_id"]].append((time.monotonic(), reply["type"]))
                order.append(reply["context_id"])
        with contextlib.suppress(TimeoutError):  # and a second more: an "a" that went on would send in it
            async with asyncio.timeout(1.0):
                while True:
                    reply = json.loads(await ws.recv())
                    seen[reply["context_id"]].append((time.monotonic(), reply["type"]))
                    order.append(reply["context_id"])
    after_b = order[order.index("b"):]
    assert "a" not in after_b, order  # nothing of "a" once its cancel was taken
    assert "done" not in [kind for _, kind in seen["a"]]  # a cancelled context is not said done
    assert [kind for _, kind in seen["b"]][-1] == "done"


async def test_bad_requests_are_error_replies_and_the_socket_lives_on(server: str) -> None:
    base = {"model_id": "sonic-3", "output_format": S16_16K, "continue": False}
    async with connect(ws_url(server) + f"?api_key={KEY}&cartesia_version=2025-04-16") as ws:
        await ws.send("{not json")
        await ws.send(json.dumps({**base, "context_id": "m", "transcript": "Hi.", "voice": "default",
                                  "model_id": "eleven_flash_v2_5"}))
        await ws.send(json.dumps({**base, "context_id": "v", "transcript": "Hi there.", "voice": "nobody"}))
        await ws.send(json.dumps({"context_id": "nothing-here", "cancel": True}))  # unknown: nothing to say
        await ws.send(json.dumps({**base, "context_id": "ok", "transcript": "Still here.", "voice": "default"}))
        replies = []
        async with asyncio.timeout(30):
            while not any(r["type"] == "done" and r["context_id"] == "ok" for r in replies):
                replies.append(json.loads(await ws.recv()))
    errors = {r["context_id"]: r for r in replies if r["type"] == "error"}
    assert set(errors) == {None, "m", "v"} and all("context_id" in r for r in replies)
    assert errors["m"]["error_code"] == "unknown_model" and "eleven_flash_v2_5" in errors["m"]["message"]
    assert errors["v"]["error_code"] == "unknown_voice" and "nobody" in errors["v"]["message"]
    assert any(r["type"] == "chunk" and r["context_id"] == "ok" for r in replies)


async def test_bytes_and_sse_through_the_sdk(server: str, watermarker) -> None:
    client = sdk(server)
    text = "Hello from the bytes endpoint, spoken whole and watermarked."
    reply = await client.tts.generate(model_id="sonic-3", transcript=text, voice="default",
                                      output_format={"container": "wav", "encoding": "pcm_s16le",
                                                     "sample_rate": 22050})
    wav, rate = soundfile.read(io.BytesIO(await reply.read()), dtype="float32")
    assert rate == 22050
    speech_of(wav, rate, watermarker)
    reply = await client.tts.generate(model_id="sonic-3", transcript="Telephone speech.", voice={"id": "default"},
                                      output_format={"container": "raw", "encoding": "pcm_mulaw", "sample_rate": 8000})
    assert len(await reply.read()) > 8000 * 0.5  # mu-law: a byte a sample
    stream = await client.tts.generate_sse(model_id="sonic-3", transcript="Events, one by one, with word times.",
                                           voice="default", output_format=F32_44K, add_timestamps=True,
                                           context_id="sse-1")
    events = [event async for event in stream]
    assert events[-1].type == "done" and {e.type for e in events} == {"chunk", "timestamps", "done"}
    audio = np.frombuffer(b"".join(e.audio for e in events if e.type == "chunk"), dtype="<f4")
    speech_of(audio, 44100, watermarker)
    words = [w for e in events if e.type == "timestamps" for w in e.word_timestamps.words]
    assert words == "Events, one by one, with word times.".split()
    assert all(e.context_id == "sse-1" for e in events)
    voices = await client.voices.list()
    assert "default" in [v.id for v in voices.data]


async def test_a_wrong_key_is_refused_before_any_audio_on_every_route(server: str) -> None:
    from cartesia import AuthenticationError

    client = sdk(server, key="wrong")
    with pytest.raises(InvalidStatus) as info:
        await client.tts.websocket_connect().enter()
    assert info.value.response.status_code == 401
    for headers, query in (({"X-API-Key": "wrong"}, ""), ({}, "?api_key=wrong"), ({}, "")):
        with pytest.raises(InvalidStatus):
            async with connect(ws_url(server) + query, additional_headers=headers):
                pass
    body = {"model_id": "sonic-3", "transcript": "Hi.", "voice": "default", "output_format": S16_16K}
    with pytest.raises(AuthenticationError):
        await client.tts.generate(**body)
    async with httpx.AsyncClient(base_url=server + "/cartesia") as http:
        for headers in ({"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}, {}):
            for method, path in (("POST", "/tts/bytes"), ("POST", "/tts/sse"), ("GET", "/voices")):
                answer = await http.request(method, path, json=body if method == "POST" else None, headers=headers)
                assert answer.status_code == 401 and not answer.headers["content-type"].startswith("audio")
        assert (await http.get("/voices", headers={"X-API-Key": KEY})).status_code == 200
        narrow = await http.post("/tts/bytes", json=body, headers={"X-API-Key": NARROW_KEY})  # a key kept to /v1/tts
        assert narrow.status_code == 403 and narrow.json()["error"]["code"] == "route_forbidden"
    with pytest.raises(InvalidStatus) as info:
        async with connect(ws_url(server), additional_headers={"X-API-Key": NARROW_KEY}):
            pass
    assert info.value.response.status_code == 403


async def test_pipecats_cartesia_service_hears_watermarked_speech_and_times_its_words(
        server: str, watermarker) -> None:
    """pipecat's real CartesiaTTSService in its own test harness, only its URL pointed at the gateway."""
    from pipecat.frames.frames import ErrorFrame, TTSAudioRawFrame, TTSSpeakFrame, TTSTextFrame
    from pipecat.services.cartesia.tts import CartesiaTTSService
    from pipecat.tests.utils import run_test

    text = "Good morning. I can help you book a table for tonight, or tomorrow if you prefer."
    tts = CartesiaTTSService(api_key=KEY, url=ws_url(server), sample_rate=24000,
                             settings=CartesiaTTSService.Settings(voice="default"))
    async with asyncio.timeout(60):  # a bound on a hang, not a speed
        frames, _ = await run_test(tts, frames_to_send=[TTSSpeakFrame(text)], start_timeout=30)
    assert not any(isinstance(f, ErrorFrame) for f in frames)
    wav = np.frombuffer(b"".join(f.audio for f in frames if isinstance(f, TTSAudioRawFrame)), dtype="<i2")
    speech_of(wav.astype(np.float32) / 32768, 24000, watermarker, seconds=2.0)
    spoken = [f.text for f in frames if isinstance(f, TTSTextFrame)]
    assert len(spoken) >= 0.9 * len(text.split()) and " ".join(spoken) in text


async def test_pipecat_barging_in_cancels_the_answer_and_its_next_turn_is_heard(server: str) -> None:
    """pipecat sends a cancel for the interrupted context: the answer is cut off in the gateway (not left generating
    for nobody), and the next turn speaks on that socket."""
    from pipecat.services.cartesia.tts import CartesiaTTSService

    tts = CartesiaTTSService(api_key=KEY, url=ws_url(server), sample_rate=16000,
                             settings=CartesiaTTSService.Settings(voice="default"))
    await check_barge_in(tts, server, KEY, "cartesia", 16000)


async def test_metrics_count_the_dialect_and_usage_its_tenant(server: str) -> None:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}) as http:
        text = (await http.get(server + "/metrics")).text
        usage = (await http.get(server + "/v1/usage")).json()["tenants"]
    assert usage["agent"]["characters"] > 0 and usage["agent"]["utterances"] > 0  # the tests above, its key's
    counted = [line for line in text.splitlines() if 'transport="cartesia"' in line and not line.startswith("#")]
    assert any(line.startswith('cbf_utterances_total{outcome="done",transport="cartesia"}') for line in counted)
    assert any(line.startswith('cbf_time_to_first_audio_seconds_count{transport="cartesia"}') for line in counted)
