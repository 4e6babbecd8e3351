"""The WebSocket /v1/stream against a real server on 127.0.0.1 with the embedded eSpeak engine."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.server import running_server


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory):
    """The file's gateway (its base URL); the file's last test stops it."""
    with running_server("--max-text-chars", "400", voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield url


@pytest.fixture(scope="module")
def server(gateway: str) -> str:
    return gateway.replace("http://", "ws://") + "/v1/stream"


async def events_until(ws: ClientConnection, kind: str, timeout: float = 20) -> tuple[list[dict], bytes]:
    """Collect JSON events and binary audio until an event of ``kind`` arrives."""
    events, audio = [], bytearray()
    deadline = time.monotonic() + timeout
    while True:
        frame = await asyncio.wait_for(ws.recv(), deadline - time.monotonic())
        if isinstance(frame, bytes):
            audio += frame
            continue
        event = json.loads(frame)
        events.append(event)
        if event["type"] == kind:
            return events, bytes(audio)


def rms(pcm: bytes) -> float:
    samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) if samples.size else 0.0


async def test_incremental_text_flush_and_end(server: str) -> None:
    async with connect(server) as ws:
        ready = json.loads(await ws.recv())
        assert ready["type"] == "ready" and ready["engine"]["engine"] == "espeak" and ready["engine"]["watermark"]
        assert 44100 in ready["formats"]["pcm_s16le"] and ready["formats"]["mulaw"] == [8000]
        await ws.send(json.dumps({"type": "config", "format": "pcm_s16le", "sample_rate": 16000}))
        for token in ["Hello", " there,", " my", " friend.", " How", " are", " you"]:
            await ws.send(json.dumps({"type": "text", "text": token}))
        await ws.send(json.dumps({"type": "flush"}))
        await ws.send(json.dumps({"type": "text", "text": " doing today?"}))
        await ws.send(json.dumps({"type": "end"}))
        events, audio = await events_until(ws, "done")
    chunks = [e for e in events if e["type"] == "chunk"]
    done = events[-1]
    assert len(chunks) >= 2
    assert "Hello" in chunks[0]["text"] and "today" in chunks[-1]["text"]
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    total = sum(c["duration"] for c in chunks)
    assert len(audio) / 2 / 16000 == pytest.approx(total, abs=0.05)  # resampled to the configured rate
    assert rms(audio) > 500  # speech, not silence
    assert done["chunks"] == len(chunks) and done["ttfa"] > 0 and done["audio_seconds"] == pytest.approx(total, 0.02)


async def test_two_utterances_in_a_row_and_mulaw(server: str) -> None:
    async with connect(server) as ws:
        await ws.recv()
        await ws.send(json.dumps({"type": "config", "format": "mulaw"}))
        await ws.send(json.dumps({"type": "speak", "text": "First one."}))
        await ws.send(json.dumps({"type": "speak", "text": "And the second one, right after."}))
        first, audio1 = await events_until(ws, "done")
        second, audio2 = await events_until(ws, "done")
    assert first[-1]["utterance"] != second[-1]["utterance"]
    assert "First" in first[0]["text"] and "second" in " ".join(e.get("text", "") for e in second)
    for events, audio in ((first, audio1), (second, audio2)):  # mu-law: one byte per sample at 8 kHz
        assert len(audio) / 8000 == pytest.approx(events[-1]["audio_seconds"], abs=0.05)


async def test_cancel_stops_audio_and_the_session_goes_on(server: str) -> None:
    long_text = " ".join(["This sentence keeps the engine busy for a while."] * 6)
    async with connect(server) as ws:
        await ws.recv()
        await ws.send(json.dumps({"type": "text", "text": long_text}))
        events, _ = await events_until(ws, "chunk")
        await ws.send(json.dumps({"type": "cancel"}))
        events, _ = await events_until(ws, "cancelled")
        assert not any(e["type"] == "done" for e in events)
        with pytest.raises(TimeoutError):  # nothing more arrives for the cancelled utterance
            await asyncio.wait_for(ws.recv(), 1.0)
        await ws.send(json.dumps({"type": "speak", "text": "Still here."}))
        events, audio = await events_until(ws, "done")
        assert rms(audio) > 500
        await ws.send(json.dumps({"type": "cancel"}))  # nothing left to send: still acknowledged
        events, _ = await events_until(ws, "cancelled")
        assert events[-1]["utterance"] is None


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("not json", "bad_message"),
        (b"\x00\x01binary", "bad_message"),
        (json.dumps([1, 2]), "bad_message"),
        (json.dumps({"type": "shout"}), "unknown_type"),
        (json.dumps({"type": "text", "text": 5}), "bad_message"),
        (json.dumps({"type": "config", "format": "mulaw", "sample_rate": 48000}), "bad_config"),
        (json.dumps({"type": "text", "text": "x" * 401}), "text_too_long"),
        (json.dumps({"type": "speak", "text": "Hi there.", "voice": "nobody"}), "unknown_voice"),
    ],
)
async def test_bad_input_gets_an_error_event_and_the_session_survives(server: str, frame: str | bytes,
                                                                     code: str) -> None:
    async with connect(server) as ws:
        await ws.recv()
        await ws.send(frame)
        events, _ = await events_until(ws, "error")
        assert events[-1]["code"] == code and events[-1]["message"]
        await ws.send(json.dumps({"type": "speak", "text": "Still working.", "voice": "default"}))
        events, audio = await events_until(ws, "done")
        assert rms(audio) > 500


def _parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


async def test_a_flood_of_utterances_is_refused_beyond_the_queue_limit(server: str) -> None:
    async with connect(server) as ws:
        await ws.recv()
        for n in range(12):
            await ws.send(json.dumps({"type": "speak", "text": f"Number {n} of a flood of utterances."}))
        events, _ = await events_until(ws, "error")
        assert events[-1]["code"] == "too_many_utterances"
        await ws.send(json.dumps({"type": "cancel"}))
        await events_until(ws, "cancelled")
        await ws.send(json.dumps({"type": "speak", "text": "Calm again."}))
        events, audio = await events_until(ws, "done")
        assert "Calm" in events[-1].get("text", "") or any("Calm" in e.get("text", "") for e in events)


async def test_chunk_events_carry_exact_word_timings_within_the_audio(server: str) -> None:
    async with connect(server) as ws:
        await ws.recv()  # ready
        await ws.send(json.dumps({"type": "speak", "text": "[laugh] Good morning, everyone. The meeting starts soon."}))
        events, audio = await events_until(ws, "done")
    chunks = [e for e in events if e["type"] == "chunk"]
    words = [w for c in chunks for w in c["words"]]
    assert all(c["timing"] == "exact" for c in chunks)  # eSpeak reports where each word starts
    assert [w["word"] for w in words] == "Good morning, everyone. The meeting starts soon.".split()
    total = len(audio) / 2 / 24000
    for chunk in chunks:  # every word inside its own chunk's audio, in order
        for word in chunk["words"]:
            assert chunk["offset"] <= word["start"] <= word["end"] <= chunk["offset"] + chunk["duration"] + 1e-3
    assert all(a["end"] <= b["start"] + 1e-3 for a, b in zip(words, words[1:]))
    samples = np.frombuffer(audio, dtype=np.int16)
    for word in words:  # the audio is speech where each word starts
        at = int(word["start"] * 24000)
        assert rms(samples[at:at + 1200].tobytes()) > 30 and word["end"] <= total + 1e-3


async def audio_until(ws: ClientConnection, seconds: float) -> tuple[list[dict], bytes]:
    """Events and 24 kHz audio until at least ``seconds`` of it arrived."""
    events, audio = [], bytearray()
    while len(audio) < 2 * 24000 * seconds:
        frame = await asyncio.wait_for(ws.recv(), 20)
        if isinstance(frame, bytes):
            audio += frame
        else:
            events.append(json.loads(frame))
    return events, bytes(audio)


def heard_words(chunks: list[dict], seconds: float) -> str:
    return " ".join(w["word"] for c in chunks for w in c["words"] if w["end"] <= seconds + 1e-3)


async def test_cancel_says_what_was_heard_from_what_was_sent_or_from_playout_reports(server: str) -> None:
    long_text = " ".join(["Every word of this sentence is timed, one after another."] * 5)
    async with connect(server) as ws:
        await ws.recv()
        await ws.send(json.dumps({"type": "text", "text": long_text}))  # no end: the turn is live when cancelled
        events, audio = await audio_until(ws, 1.5)  # 1.5 s of audio in hand, then barge in
        await ws.send(json.dumps({"type": "cancel"}))
        more, rest = await events_until(ws, "cancelled")
        received = (len(audio) + len(rest)) / 2 / 24000  # everything that arrived before "cancelled"
        chunks = [e for e in events + more if e["type"] == "chunk"]
        cancelled = more[-1]
        # what was sent when the cancel was taken: all the client received but the frame (<= 0.1 s) then on its way
        assert cancelled["heard_from"] == "sent" and received - 0.105 <= cancelled["heard_s"] <= received + 1e-3
        assert cancelled["heard_text"] == heard_words(chunks, cancelled["heard_s"])
        assert 3 <= len(cancelled["heard_text"].split()) < len(long_text.split())
        assert long_text.startswith(cancelled["heard_text"])  # the client's own words, in order

        # A client that plays the audio says how far it got; that is what was heard.
        await ws.send(json.dumps({"type": "text", "text": long_text}))
        events, audio = await audio_until(ws, 1.5)
        await ws.send(json.dumps({"type": "playout", "played": 0.8}))
        await ws.send(json.dumps({"type": "cancel"}))
        more, _ = await events_until(ws, "cancelled")
        chunks = [e for e in events + more if e["type"] == "chunk"]
        cancelled = more[-1]
        assert (cancelled["heard_s"], cancelled["heard_from"]) == (0.8, "playout")
        assert cancelled["heard_text"] == heard_words(chunks, 0.8) and cancelled["heard_text"]

        await ws.send(json.dumps({"type": "speak", "text": "All of it, this time."}))
        events, audio = await events_until(ws, "done")
    done = events[-1]
    assert done["heard_s"] == pytest.approx(len(audio) / 2 / 24000, abs=0.01)
    assert done["heard_text"] == "All of it, this time." and done["heard_from"] == "sent"


async def test_shutdown_closes_sockets_with_service_restart_and_stops_the_worker(gateway: str) -> None:
    """The file's last test: it stops the file's gateway (one of its own cost a gateway's and a worker's start)."""
    import signal

    import httpx
    from websockets.exceptions import ConnectionClosed

    url = gateway
    ws_url = url.replace("http://", "ws://") + "/v1/stream"
    async with connect(ws_url) as ws:
        await ws.recv()
        worker_pid = httpx.get(url + "/health").json()["worker"]["pid"]
        os.kill(_parent_pid(worker_pid), signal.SIGTERM)  # a drain: this idle session is let go at once
        assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "closing"
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012  # service restart
    deadline = time.monotonic() + 15
    while os.path.exists(f"/proc/{worker_pid}") and _state(worker_pid) != "Z":
        assert time.monotonic() < deadline, "the engine worker outlived the gateway"
        await asyncio.sleep(0.1)
