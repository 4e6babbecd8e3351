"""Mid-utterance failover (gateway/engine_link/failover.py): the pure record of what was heard and what is sent
again, then a real gateway with two real engine workers, one SIGKILLed while it speaks: the listener hears the rest
from the other, no word twice, none missing, on the WebSocket and HTTP streams; the embedded worker restarted by its
supervisor; and no worker to go to, which ends as before with engine_unavailable."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import pytest
from websockets.asyncio.client import connect

from engine.protocol import ChunkHeader, Done
from gateway.engine_link.failover import Resume
from cbf_tools.peers.local_server import Workers
from tests.server import health_when, running_server

TEXT = ("The first train leaves at nine in the morning. It stops at every station along the coast. "
        "Passengers for the islands change at the harbour, where the ferry waits. The last train comes back "
        "late at night, and it does not stop at the small stations. Tickets are sold on board.")


# -- the record (pure) -----------------------------------------------------------------------------------------------

def header(seq: int, span: list[int], offset: float, words: list[dict[str, Any]] | None = None) -> ChunkHeader:
    return ChunkHeader("u", seq, "spoken", offset, 1.0, 0.1, words=words, span=span)


def test_the_rest_starts_after_the_last_heard_word_with_later_flushes_and_the_end_in_place() -> None:
    resume = Resume()
    for kind, text in [("text", "Hello there, "), ("flush", ""), ("text", "**Note:** the rest "), ("text", "goes on."),
                       ("flush", ""), ("end", "")]:
        resume.sent(kind, text)
    resume.received(header(0, [0, 12], 0.0))
    # the word span reaches past the chunk's over the silent marks: "**Note:**" is heard whole
    resume.received(header(1, [13, 19], 1.0, [{"word": "Note", "start": 1.0, "end": 1.4, "span": [13, 22]}]))
    assert resume.resume() == [("text", " the rest "), ("text", "goes on."), ("flush", ""), ("end", "")]
    assert resume.base_chars == 22 and resume.base_chunks == 2 and resume.base_audio_s == 2.0


def test_chunks_after_a_move_number_on_from_what_was_delivered() -> None:
    resume = Resume()
    resume.sent("text", "One two three. Four five six.")
    resume.received(header(0, [0, 14], 0.0))
    resume.resume()
    moved = resume.received(header(0, [1, 15], 0.25, [{"word": "Four", "start": 0.3, "end": 0.6, "span": [1, 5]}]))
    assert (moved.seq, moved.offset, moved.span) == (1, 1.25, [15, 29])
    assert moved.words == [{"word": "Four", "start": 1.3, "end": 1.6, "span": [15, 19]}]
    assert resume.played(1.5) == 0.5 and resume.played(0.5) == 0.0
    done = resume.done(Done("u", chunks=1, audio=1.25, gen_time=0.1))
    assert (done.chunks, done.audio, done.failovers) == (2, 2.25, 1)


def test_nothing_heard_sends_everything_again_and_heard_ssml_cannot_move() -> None:
    plain = Resume()
    plain.sent("text", "Nothing was said yet.")
    plain.sent("end")
    assert plain.movable and plain.resume() == [("text", "Nothing was said yet."), ("end", "")]
    ssml = Resume()
    ssml.sent("text", "<speak>One. <break time='1s'/> Two.</speak>")
    assert ssml.movable
    ssml.received(header(0, [7, 11], 0.0))
    assert not ssml.movable
    untouched = Resume()
    assert untouched.done(Done("u", 1, 1.0, 0.1)) == Done("u", 1, 1.0, 0.1)


# -- real workers ----------------------------------------------------------------------------------------------------

# the simulated engine (a GPU's timing around eSpeak's audio) at 3x real time: an utterance is still being
# generated for seconds after its first chunk, so a worker can be killed mid-way
SLOW = ("--engine", "simulated", "--sim-rtf", "3", "--sim-fixed", "0.1")


@dataclass
class Fleet:
    """A gateway over two workers (failover within 5 s, once per utterance)."""

    url: str
    workers: Workers
    base: Path

    def listen(self, name: str) -> str:
        return f"unix:{self.base / name}.sock"

    def start(self, name: str, *flags: str) -> None:
        self.workers.start(self.listen(name), "--voices-dir", str(self.base / f"voices-{name}"), *flags)

    def both_up(self) -> None:
        """Both workers simulated and connected (a killed one started again, an eSpeak one replaced)."""
        for name in ("a", "b"):
            listen = self.listen(name)
            if listen in self.workers.procs and "espeak" in self.workers.flags_of[listen]:
                self.workers.kill(listen)
            if listen not in self.workers.procs:
                self.start(name)
        health_when(self.url, lambda h: all(e["engine"] == "simulated" for e in h["engines"]),
                    "both workers connected", within=60)

    def kill_the_speaking_one(self) -> str:
        engines = httpx.get(self.url + "/health").json()["engines"]
        busy = [e["url"] for e in engines if e["in_flight"]]
        assert len(busy) == 1, engines
        self.workers.kill(busy[0])
        return next(name for name in ("a", "b") if self.listen(name) == busy[0])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Both workers up at the start of each test that calls ``both_up``."""
    workers = Workers(*SLOW)
    try:
        group = Fleet("", workers, tmp_path_factory.mktemp("failover"))
        for name in ("a", "b"):
            group.start(name)
        for listen in list(workers.procs):
            workers.wait_listening(listen)
        with running_server("--engine-url", f"{group.listen('a')},{group.listen('b')}", "--failover-wait", "5",
                            "--max-failovers", "1") as url:
            group.url = url
            yield group
    finally:
        workers.stop()


def first(action: Callable[[], None]) -> Callable[[int], None]:
    """``action`` at the first chunk only."""
    return lambda n: action() if n == 1 else None


def assert_said_once_in_order(chunks: list[dict[str, Any]], text: str) -> None:
    """Every chunk's caller span follows the one before without overlap, and together they speak the whole text."""
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    spans = [c["span"] for c in chunks]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans
    assert " ".join(text[a:b] for a, b in spans).split() == text.split(), spans
    assert spans[0][0] == 0 and text[spans[-1][1]:].strip() == ""
    offsets = [c["offset"] for c in chunks]
    assert offsets == sorted(offsets)


async def speak_over_websocket(url: str, on_chunk: Callable[[int], None], text: str = TEXT) -> tuple[list[dict], dict]:
    """Speak ``text``; ``on_chunk(n)`` is run (in a thread) as the n-th chunk event arrives (from 1)."""
    async with connect(url.replace("http", "ws") + "/v1/stream") as ws:
        await ws.send(json.dumps({"type": "speak", "text": text}))
        chunks: list[dict] = []
        while True:
            frame = await asyncio.wait_for(ws.recv(), 60)
            if isinstance(frame, bytes):
                continue
            event = json.loads(frame)
            assert event["type"] != "error", event
            if event["type"] == "chunk":
                chunks.append(event)
                await asyncio.to_thread(on_chunk, len(chunks))
            elif event["type"] == "done":
                return chunks, event


def test_a_websocket_utterance_goes_on_on_the_other_worker_when_its_worker_is_killed(fleet: Fleet) -> None:
    url = fleet.url
    fleet.both_up()
    killed: list[str] = []
    chunks, done = asyncio.run(speak_over_websocket(url, first(lambda: killed.append(fleet.kill_the_speaking_one()))))
    assert killed and done["failovers"] == 1 and done["failover_gap"] < 5, done
    print("failover gap", done["failover_gap"])
    assert_said_once_in_order(chunks, TEXT)
    assert done["chunks"] == len(chunks) and done["heard_text"]
    metrics = httpx.get(url + "/metrics").text
    assert 'cbf_failovers_total{outcome="moved"}' in metrics


def test_an_http_stream_goes_on_too_and_its_audio_is_whole(fleet: Fleet) -> None:
    url = fleet.url
    fleet.both_up()
    lines: list[dict] = []
    with httpx.stream("POST", url + "/v1/tts", json={"text": TEXT, "format": "ndjson"}, timeout=60) as reply:
        assert reply.status_code == 200
        for line in reply.iter_lines():
            lines.append(json.loads(line))
            if len(lines) == 1:
                fleet.kill_the_speaking_one()
    chunks = [line for line in lines if line["type"] == "chunk"]
    done = lines[-1]
    assert done["type"] == "done" and done["failovers"] == 1, done
    assert_said_once_in_order(chunks, TEXT)
    assert sum(c["duration"] for c in chunks) == pytest.approx(done["audio_seconds"], abs=0.01)


def test_with_no_worker_to_go_to_the_utterance_fails_as_before(fleet: Fleet) -> None:
    url = fleet.url
    fleet.both_up()

    def kill_both() -> None:
        dead = fleet.kill_the_speaking_one()
        fleet.workers.kill(fleet.listen("b" if dead == "a" else "a"))

    started = time.monotonic()
    with pytest.raises(AssertionError, match="engine_unavailable"):
        asyncio.run(speak_over_websocket(url, first(kill_both)))
    assert time.monotonic() - started < 30
    assert 'cbf_failovers_total{outcome="given_up"}' in httpx.get(url + "/metrics").text
    fleet.both_up()
    assert httpx.post(url + "/v1/tts", json={"text": "Back again."}, timeout=30).status_code == 200


def test_the_embedded_worker_restarted_by_its_supervisor_says_the_rest(tmp_path: Path) -> None:
    import os
    import signal

    with running_server(*SLOW, "--failover-wait", "60") as url:  # a worker starts in seconds here, longer when busy
        def kill_worker() -> None:
            os.kill(httpx.get(url + "/health").json()["worker"]["pid"], signal.SIGKILL)

        chunks, done = asyncio.run(speak_over_websocket(url, first(kill_worker)))
        assert done["failovers"] == 1
        assert_said_once_in_order(chunks, TEXT)
        assert httpx.get(url + "/health").json()["worker"]["restarts"] == 1


def test_a_move_loop_ends_with_the_error_after_max_failovers(fleet: Fleet) -> None:
    """Moved once (--max-failovers 1), the worker it moved to killed too while the first is back: the error."""
    url = fleet.url
    fleet.both_up()
    lost_at: list[float] = []

    def kill_twice(n: int) -> None:
        if n == 1:
            fleet.start(fleet.kill_the_speaking_one())
        elif not lost_at:
            health_when(url, lambda h: all(e["available"] for e in h["engines"]), "the killed worker is back", 60)
            fleet.kill_the_speaking_one()
            lost_at.append(time.monotonic())

    with pytest.raises(AssertionError, match="engine_unavailable"):
        asyncio.run(speak_over_websocket(url, kill_twice, text=TEXT * 3))
    assert lost_at and time.monotonic() - lost_at[0] < 5  # not waited for: no move was left


def test_a_worker_of_another_engine_is_not_used_to_go_on(fleet: Fleet) -> None:
    """b comes back as eSpeak: an utterance on either cannot move to the other (its voice would change)."""
    url = fleet.url
    fleet.both_up()
    fleet.workers.kill(fleet.listen("b"))
    fleet.start("b", "--engine", "espeak")
    health_when(url, lambda h: {e["engine"] for e in h["engines"]} == {"simulated", "espeak"}, "b back as eSpeak", 60)
    with pytest.raises(AssertionError, match="engine_unavailable"):
        asyncio.run(speak_over_websocket(url, first(fleet.kill_the_speaking_one)))
