"""Mid-utterance failover (gateway/engine_link/failover.py): the pure record of what was heard and what is sent
again, then a real gateway with two real engine workers, one SIGKILLed while it speaks: the listener hears the rest
from the other, no word twice, none missing, on the WebSocket and HTTP streams; the embedded worker restarted by its
supervisor; and no worker to go to, which ends as before with engine_unavailable. New utterances that find no worker
connected wait for one within the same --failover-wait (a cancel or a hang-up meanwhile leaves nothing), and fail at
once with it 0."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator

import httpx
import numpy as np
import pytest
from websockets.asyncio.client import connect

from cbf_tools.bench.failover import TEXT, TRANSPORTS, Fleet, SpeechFailed, said_once, speak
from engine.protocol import ChunkHeader, Done
from gateway.engine_link.failover import Resume
from tests.server import health_when, running_server



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


# -- real workers (cbf_tools/bench/failover.py's fleet and clients, as `bench failover` runs them) -----------------

# the simulated engine (a GPU's timing around eSpeak's audio) at 3x real time: an utterance is still being
# generated for seconds after its first chunk, so a worker can be killed mid-way
SLOW = ("--engine", "simulated", "--sim-rtf", "3", "--sim-fixed", "0.1")
SENTENCE = TEXT.split(". ")[0] + "."  # where no worker dies mid-way: said in a fraction of TEXT's time


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Fleet]]:
    """A gateway over workers a and b (failover within 5 s, once per utterance)."""
    group = Fleet(tmp_path_factory.mktemp("failover"), SLOW)
    try:
        with running_server("--engine-url", group.start_both(), "--failover-wait", "5",
                            "--max-failovers", "1") as url:
            yield url, group
    finally:
        group.workers.stop()


def both_up(url: str, fleet: Fleet) -> None:
    """Both workers connected (a killed one started again)."""
    for name in ("a", "b"):
        if fleet.listen(name) not in fleet.workers.procs:
            fleet.start(name)
    health_when(url, lambda h: all(e["available"] for e in h["engines"]), "both workers up", 60)


def first(action: Callable[[], object]) -> Callable[[int], None]:
    """``action`` at the first chunk only."""
    def on_chunk(n: int) -> None:
        if n == 1:
            action()

    return on_chunk


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_utterance_goes_on_on_the_other_worker_when_its_worker_is_killed(fleet, transport: str,
                                                                             watermarker) -> None:
    url, group = fleet
    both_up(url, group)
    killed: list[str] = []

    def kill() -> None:
        killed.append(group.kill_the_speaking_one(url))
        group.start(killed[-1])  # again at once, as bench failover's: it starts while the other says the rest

    spoken = speak(transport, url, TEXT, first(kill))
    done = spoken.done
    assert killed and done["failovers"] == 1 and done["failover_gap"] < 5, done
    assert said_once(spoken.chunks, TEXT) is None
    assert done["chunks"] == len(spoken.chunks)
    assert sum(c["duration"] for c in spoken.chunks) == pytest.approx(done["audio_seconds"], abs=0.01)
    assert 'cbf_failovers_total{outcome="moved"}' in httpx.get(url + "/metrics").text
    if transport == "http":  # its lines carry the audio: what the next worker said is watermarked too
        after = b"".join(base64.b64decode(c["audio"]) for c in spoken.chunks[1:])
        assert watermarker.detect(np.frombuffer(after, np.int16).astype(np.float32) / 32768, 24000) >= 0.5


def test_a_move_loop_ends_with_the_error_after_max_failovers(fleet) -> None:
    """Moved once (--max-failovers 1), the worker it moved to killed too while the first is back: the error."""
    url, group = fleet
    both_up(url, group)
    lost_at: list[float] = []

    def kill_twice(n: int) -> None:
        """The first worker at the first chunk (started again at once), the second at the first chunk after the
        first is back: looked at once a chunk, so the client reads on (and the utterance goes on being generated:
        six times the text is half a minute of it here) however long the restart takes."""
        if n == 1:
            group.start(group.kill_the_speaking_one(url))
        elif not lost_at and all(e["available"] for e in httpx.get(url + "/health").json()["engines"]):
            group.kill_the_speaking_one(url)
            lost_at.append(time.monotonic())

    with pytest.raises(SpeechFailed, match="engine_unavailable"):
        speak("ws", url, TEXT * 6, kill_twice)
    assert lost_at and time.monotonic() - lost_at[0] < 5  # not waited for: no move was left


def test_the_embedded_worker_restarted_by_its_supervisor_says_the_rest() -> None:
    with running_server(*SLOW, "--failover-wait", "60") as url:  # a worker starts in seconds here, longer when busy
        def kill_worker() -> None:
            os.kill(httpx.get(url + "/health").json()["worker"]["pid"], signal.SIGKILL)

        spoken = speak("ws", url, TEXT, first(kill_worker))
        assert spoken.done["failovers"] == 1 and said_once(spoken.chunks, TEXT) is None
        assert httpx.get(url + "/health").json()["worker"]["restarts"] == 1


def test_with_no_worker_to_go_to_the_utterance_fails_as_before(fleet) -> None:
    """The fleet's last test: it leaves both workers dead."""
    url, group = fleet
    both_up(url, group)

    def kill_both() -> None:
        dead = group.kill_the_speaking_one(url)
        group.workers.kill(group.listen("b" if dead == "a" else "a"))

    given_up = httpx.get(url + "/health").json()["failovers"]["given_up"]
    started = time.monotonic()
    with pytest.raises(SpeechFailed, match="engine_unavailable"):
        speak("ws", url, TEXT, first(kill_both))
    assert time.monotonic() - started < 30
    assert 'cbf_failovers_total{outcome="given_up"}' in httpx.get(url + "/metrics").text
    assert httpx.get(url + "/health").json()["failovers"]["given_up"] == given_up + 1


# -- new utterances while no worker is connected -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def lone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Fleet]]:
    """A gateway over worker a alone, which an utterance waits up to 60 s for (a new one too)."""
    group = Fleet(tmp_path_factory.mktemp("lone"), SLOW)
    try:
        group.start("a")
        group.workers.wait_listening(group.listen("a"))
        with running_server("--engine-url", group.listen("a"), "--failover-wait", "60") as url:
            yield url, group
    finally:
        group.workers.stop()


def worker_down(url: str, fleet: Fleet) -> None:
    """Worker a SIGKILLed, and the gateway has seen it go."""
    fleet.workers.kill(fleet.listen("a"))
    health_when(url, lambda h: not any(e["available"] for e in h["engines"]), "the gateway saw its worker go", 30)


def worker_up(url: str, fleet: Fleet) -> None:
    if fleet.listen("a") not in fleet.workers.procs:
        fleet.start("a")
    health_when(url, lambda h: all(e["available"] for e in h["engines"]), "the worker back", 120)


def test_new_utterances_sent_while_no_worker_is_connected_are_said_once_it_is_back(lone) -> None:
    url, group = lone
    worker_up(url, group)
    worker_down(url, group)
    with ThreadPoolExecutor(2) as pool:
        calls = [pool.submit(speak, transport, url, SENTENCE, lambda n: None) for transport in TRANSPORTS]
        # both are held by the gateway (a WebSocket session and an HTTP stream), none refused, while no worker is up
        health_when(url, lambda h: h["sessions"] == 2 and not any(e["available"] for e in h["engines"]),
                    "the two calls held while no worker is connected", 30)
        assert not any(call.done() for call in calls), [call.exception() for call in calls if call.done()]
        group.start("a")
        spoken = [call.result(timeout=120) for call in calls]
    for one in spoken:
        assert "failovers" not in one.done, one.done  # its first worker, not a move
        assert said_once(one.chunks, SENTENCE) is None


async def test_a_cancel_or_a_hang_up_while_waiting_for_a_worker_leaves_no_engine_work(lone) -> None:
    url, group = lone
    await asyncio.to_thread(worker_up, url, group)
    started = httpx.get(url + "/health").json()["engines"][0]["started"]
    await asyncio.to_thread(worker_down, url, group)
    async with connect(url.replace("http", "ws", 1) + "/v1/stream") as cancelling, \
            connect(url.replace("http", "ws", 1) + "/v1/stream") as leaving:
        for ws in (cancelling, leaving):
            assert json.loads(await ws.recv())["type"] == "ready"
            await ws.send(json.dumps({"type": "speak", "text": SENTENCE}))
        await cancelling.send(json.dumps({"type": "cancel"}))
        cancelled = json.loads(await asyncio.wait_for(cancelling.recv(), 30))  # a bound on a hang, not a speed
        # answered while the worker is still down: the session was not held up by the wait
        assert cancelled["type"] == "cancelled" and cancelled["utterance"], cancelled
    await asyncio.to_thread(health_when, url, lambda h: h["sessions"] == 0, "the sessions ended", 30)
    assert not any(e["available"] for e in httpx.get(url + "/health").json()["engines"])
    await asyncio.to_thread(worker_up, url, group)
    spoken = await asyncio.to_thread(speak, "ws", url, SENTENCE, lambda n: None)
    assert said_once(spoken.chunks, SENTENCE) is None
    engine = httpx.get(url + "/health").json()["engines"][0]
    assert engine["started"] == started + 1 and engine["in_flight"] == 0, engine  # neither waiting one ever started


def test_with_failover_off_a_new_utterance_with_no_worker_fails_at_once(lone) -> None:
    """A second gateway over the same worker, --failover-wait 0: the error as before the wait existed."""
    url, group = lone
    worker_up(url, group)
    with running_server("--engine-url", group.listen("a"), "--failover-wait", "0") as bare:
        worker_down(bare, group)
        with pytest.raises(SpeechFailed, match="engine_unavailable") as failed:
            speak("ws", bare, SENTENCE, lambda n: None)
        assert "utterance" not in json.loads(str(failed.value))  # refused as it started, as before
        refused = httpx.post(bare + "/v1/tts", json={"text": SENTENCE}, timeout=30)
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "engine_unavailable"
