"""Mid-utterance failover (gateway/engine_link/failover.py): the pure record of what was heard and what is sent
again, then a real gateway with two real engine workers, one SIGKILLed while it speaks: the listener hears the rest
from the other, no word twice, none missing, on the WebSocket and HTTP streams; the embedded worker restarted by its
supervisor; and no worker to go to, which ends as before with engine_unavailable."""

from __future__ import annotations

import base64
import os
import signal
import time
from typing import Any, Callable, Iterator

import httpx
import numpy as np
import pytest

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
    spoken = speak(transport, url, TEXT, first(lambda: killed.append(group.kill_the_speaking_one(url))))
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
        if n == 1:
            group.start(group.kill_the_speaking_one(url))
        elif not lost_at:
            health_when(url, lambda h: all(e["available"] for e in h["engines"]), "the killed worker is back", 60)
            group.kill_the_speaking_one(url)
            lost_at.append(time.monotonic())

    with pytest.raises(SpeechFailed, match="engine_unavailable"):
        speak("ws", url, TEXT * 3, kill_twice)
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
