"""``--engine http``: a buffered TTS server (tests/buffered_backend.py: eSpeak behind OpenAI's speech API, answering
only once a whole text is synthesized, at a set real-time factor) streamed through the gateway chunk by chunk.

The stand-in's speed is per voice (``rtf-X``); every voice's cost starts from the start-up calibration (at 4x) and
is learnt online. Timing is checked by order of events (the listener's first audio before the server had made the
last chunk) and by replaying the listener's timeline, never against a wall-clock budget.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Iterator

import httpx
import numpy as np
import pytest
from websockets.asyncio.client import ClientConnection, connect

from engine.watermark import Watermarker
from tests.buffered_backend import BufferedBackend
from tests.server import running_server, serving

PARAGRAPH = ("The old lighthouse stood on the rocks above the bay. Every night the keeper climbed the stairs and lit "
             "the lamp, and the ships passed safely by.")


@pytest.fixture(scope="module")
def backend() -> Iterator[tuple[BufferedBackend, str]]:
    stand_in = BufferedBackend(rtf=4.0)
    with serving(stand_in.app()) as url:
        yield stand_in, url


@pytest.fixture(scope="module")
def gateway(backend: tuple[BufferedBackend, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _, url = backend
    with running_server("--engine", "http", "--engine-http-url", url, "--engine-http-dialect", "openai",
                        "--engine-http-timeout", "20", voices_dir=tmp_path_factory.mktemp("voices")) as base:
        yield base


async def speak(gateway: str, text: str, voice: str) -> tuple[list[tuple[float, int]], list[dict], bytes]:
    """Speak over the WebSocket: (arrival time, samples) of every audio frame, the events, the PCM."""
    async with connect(gateway.replace("http://", "ws://") + "/v1/stream") as ws:
        await ws.recv()  # ready
        await ws.send(json.dumps({"type": "speak", "text": text, "voice": voice}))
        return await _until_done(ws)


async def _until_done(ws: ClientConnection) -> tuple[list[tuple[float, int]], list[dict], bytes]:
    frames, events, audio = [], [], bytearray()
    while True:
        frame = await asyncio.wait_for(ws.recv(), 60)
        if isinstance(frame, bytes):
            frames.append((time.monotonic(), len(frame) // 2))
            audio += frame
            continue
        events.append(json.loads(frame))
        if events[-1]["type"] in ("done", "error"):
            return frames, events, bytes(audio)


def worst_wait(frames: list[tuple[float, int]], start: float, rate: int = 24000) -> float:
    """The longest a listener who starts playing at ``start`` waits for audio it should already be hearing."""
    heard, wait = 0.0, 0.0
    for arrived, samples in frames:
        wait = max(wait, arrived - (start + wait + heard))
        heard += samples / rate
    return wait


async def test_first_audio_comes_after_one_chunk_and_never_stalls_above_one_and_a_half_times_real_time(
        gateway: str, backend, watermarker: Watermarker) -> None:
    stand_in, _ = backend
    since = len(stand_in.requests)
    frames, events, audio = await speak(gateway, PARAGRAPH, "rtf-1.6")
    done, chunks = events[-1], [e for e in events if e["type"] == "chunk"]
    asked = stand_in.requests[since:]
    assert done["type"] == "done" and done.get("start_delay") is None
    assert len(asked) == len(chunks) >= 2 and " ".join(r.text for r in asked).endswith("safely by.")
    assert frames[0][0] < asked[-1].answered  # heard while the server was still making the rest
    # (how far the ratchet kept ahead of playback is a figure, not asserted here: on a loaded CI machine the listener
    # itself waited 0.97 s once; `bench gateway` prints underruns and starved time)
    assert all(c["timing"] == "estimated" and c["words"] for c in chunks)  # word timings, estimated
    assert watermarker.detect(np.frombuffer(audio, np.int16).astype(np.float32) / 32768, 24000) >= 0.5


async def test_a_server_slower_than_real_time_is_held_back_and_then_plays_through(gateway: str) -> None:
    text = "The keeper climbed the stairs. She lit the lamp and watched the ships sail by."
    frames, events, _ = await speak(gateway, text, "rtf-0.8")
    done = events[-1]
    assert done["type"] == "done" and done["start_delay"] > 0  # as long as this chunking needs: not a fixed figure
    # Held back, then played through: the listener waits less than half of what it would have without the hold (here
    # ~1.9 s; with it ~0.1 s on a quiet machine, 0.29 s seen in CI under load: how little is bench gateway's figure).
    assert worst_wait(frames, frames[0][0]) < done["start_delay"] / 2


async def test_cancel_abandons_the_request_and_its_audio(gateway: str, backend) -> None:
    stand_in, _ = backend
    async with connect(gateway.replace("http://", "ws://") + "/v1/stream") as ws:
        await ws.recv()
        await ws.send(json.dumps({"type": "speak", "text": PARAGRAPH, "voice": "rtf-2"}))
        while isinstance(frame := await ws.recv(), bytes) or json.loads(frame)["type"] != "chunk":
            pass
        await ws.send(json.dumps({"type": "cancel"}))
        cancelled_at = len(stand_in.requests)
        while (event := await asyncio.wait_for(ws.recv(), 20)) and (
                isinstance(event, bytes) or json.loads(event)["type"] != "cancelled"):
            pass
        with pytest.raises(TimeoutError):  # nothing of the abandoned chunk arrives
            await asyncio.wait_for(ws.recv(), 1.0)
        assert len(stand_in.requests) <= cancelled_at + 1  # no request after the one in flight
        await ws.send(json.dumps({"type": "speak", "text": "Still here.", "voice": "rtf-4"}))
        _, events, audio = await _until_done(ws)
        assert events[-1]["type"] == "done" and len(audio) > 24000


def test_voices_are_the_servers_own_and_cloning_is_refused_clearly(gateway: str) -> None:
    listed = httpx.get(gateway + "/v1/voices").json()
    names = {v["name"]: v["kind"] for v in (listed["voices"] if isinstance(listed, dict) else listed)}
    assert names["rtf-0.8"] == "backend" and "default" in names
    refused = httpx.post(gateway + "/v1/voices", data={"name": "mine"}, files={"file": ("a.wav", _clip())})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "not_supported"


async def test_garbage_and_a_server_that_dies_mid_utterance_are_clear_errors(gateway: str, backend) -> None:
    stand_in, _ = backend
    stand_in.mode = "garbage"
    _, events, _ = await speak(gateway, "Hello there.", "rtf-4")
    assert events[-1]["type"] == "error" and events[-1]["code"] == "bad_backend_reply"
    stand_in.mode = "ok"
    async with connect(gateway.replace("http://", "ws://") + "/v1/stream") as ws:
        await ws.recv()
        # the paragraph four times: chunks still to ask for once the first has come (the paragraph alone is two
        # chunks, and the second's request was sometimes made before the test saw the first: the utterance ended "done")
        await ws.send(json.dumps({"type": "speak", "text": " ".join([PARAGRAPH] * 4), "voice": "rtf-2"}))
        while isinstance(frame := await ws.recv(), bytes) or json.loads(frame)["type"] != "chunk":
            pass
        stand_in.mode = "dying"  # the next chunk's reply is cut off, and then the server answers 503
        _, events, _ = await _until_done(ws)
        assert events[-1]["type"] == "error" and events[-1]["code"] == "engine_unavailable"
    health = await _health_until(gateway, lambda h: h["status"] == "down")
    assert "TTS backend" in health["reason"] and health["engines"][0]["backend"]["state"] == "down"
    refused = httpx.post(gateway + "/v1/tts", json={"text": "Anyone there?"}, timeout=30)
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "engine_unavailable"
    stand_in.mode = "ok"  # back: the worker's probe notices, and speech goes on
    health = await _health_until(gateway, lambda h: h["status"] == "ok")
    assert health["engine"]["backend"]["state"] == "up"
    _, events, _ = await speak(gateway, "Back again.", "rtf-4")
    assert events[-1]["type"] == "done"


async def _health_until(gateway: str, ok: Any, within: float = 20.0) -> dict:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient() as client:
        while not ok(health := (await client.get(gateway + "/health")).json()):
            assert time.monotonic() < deadline, f"/health stayed {health}"
            await asyncio.sleep(0.1)
    return health


def _clip() -> bytes:
    import io

    import soundfile as sf

    t = np.arange(24000 * 6) / 24000
    buffer = io.BytesIO()
    sf.write(buffer, (0.3 * np.sin(2 * np.pi * 180 * t)).astype(np.float32), 24000, format="WAV")
    return buffer.getvalue()
