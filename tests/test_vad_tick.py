"""Many calls' VAD in one model run (gateway/listen/silero.py's ``run``, gateway/listen/tick.py): on real speech
through the real Silero model, batched runs say what one stream at a time says, and calls heard together through the
ticker start and stop speech, and barge in, exactly where each heard alone does."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from gateway.listen.barge_in import Act
from gateway.listen.silero import SileroVad, run
from gateway.listen.tick import VadTicker, hear_all
from gateway.listen.caller import CallerSide
from gateway.listen.detector import VadConfig
from tests.test_listen import clip_8k, frames

FRAME_S = 0.02


def calls(count: int) -> list[list[bytes]]:
    """``count`` callers saying the clip, each from its own moment (0.3 s apart) after a silence: their gates open
    and their speech starts on different frames."""
    speech, silence = clip_8k()[:16000], np.zeros(8000, dtype=np.int16)
    return [frames(np.concatenate([silence, np.zeros(2400 * i, dtype=np.int16), speech, silence])) for i in range(count)]


class Clock:
    """Real time as the frames count it: frame ``n`` arrives once it has been spoken."""

    def __init__(self) -> None:
        self.frame = 0

    def __call__(self) -> float:
        return (self.frame + 1) * FRAME_S


def caller(clock: Clock) -> CallerSide:
    return CallerSide("mulaw", 8000, VadConfig(), "vad", lambda: True, clock=clock)


def alone(payloads: list[bytes]) -> list:
    clock = Clock()
    side, out = caller(clock), []
    for clock.frame, payload in enumerate(payloads):
        out += side.hear(payload, 1000 * FRAME_S * clock.frame)
    return out


def test_a_batched_run_says_what_one_stream_at_a_time_says():
    samples = (clip_8k()[:16000] / 32768).astype(np.float32)
    streams = [np.roll(samples, 1000 * i) for i in range(5)]
    batched, single = [SileroVad(8000) for _ in streams], [SileroVad(8000) for _ in streams]
    for at in range(0, samples.size - 255, 256):
        windows = [s[at:at + 256] for s in streams]
        together = run(batched, windows)
        assert together == pytest.approx([vad.probability(w) for vad, w in zip(single, windows)], abs=1e-4)
    assert max(together) > 0.5  # it heard speech, not only silence


def test_a_run_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="one window per VAD"):
        run([SileroVad(8000)], [])
    with pytest.raises(ValueError, match="one rate"):
        run([SileroVad(8000), SileroVad(16000)], [np.zeros(256, np.float32), np.zeros(512, np.float32)])
    assert run([], []) == []


def test_calls_heard_together_decide_as_each_alone_in_fewer_runs():
    payloads = calls(4)
    clock = Clock()
    sides = [caller(clock) for _ in payloads]
    together: list[list] = [[] for _ in payloads]
    runs = windows = 0
    for clock.frame in range(max(map(len, payloads))):
        for side, mine in zip(sides, payloads):
            if clock.frame < len(mine):
                side.take(mine[clock.frame], 1000 * FRAME_S * clock.frame)
        r, w = hear_all(sides)
        runs, windows = runs + r, windows + w
        for out, side in zip(together, sides):
            out += side.heard()
    assert together == [alone(p) for p in payloads]
    assert all(Act.INTERRUPT in out for out in together)
    assert 0 < runs < windows  # windows due together ran as one


async def test_the_ticker_hears_the_frames_of_one_pass_in_one_run():
    """Each call's frames come from its own task, as the media streams' readers do; the frames of one pass of the
    loop are decided together, each as it would be alone."""
    payloads = calls(3)
    ticker = VadTicker(asyncio.get_running_loop())
    clocks = [Clock() for _ in payloads]
    sides = [caller(clock) for clock in clocks]
    heard: list[list] = [[] for _ in payloads]

    async def reader(i: int) -> None:
        for clocks[i].frame, payload in enumerate(payloads[i]):
            heard[i].extend(await ticker.hear(sides[i], payload, 1000 * FRAME_S * clocks[i].frame))
            await asyncio.sleep(0)  # the next frame comes in the next pass, as a socket's would

    await asyncio.gather(*(reader(i) for i in range(len(payloads))))
    assert heard == [alone(p) for p in payloads]
    assert 0 < ticker.runs < ticker.windows



async def test_a_due_window_is_decided_in_the_next_pass_of_the_loop_not_on_a_timer():
    """No window waits for a batch: the frame that completes one has its answer after a few passes of the loop
    (each ``sleep(0)`` one), however long a timer tick would be."""
    clock = Clock()
    side = caller(clock)
    ticker = VadTicker(asyncio.get_running_loop())
    loud = frames(clip_8k()[8000:16000])
    for clock.frame, payload in enumerate(loud[:20]):
        task = asyncio.create_task(ticker.hear(side, payload, 1000 * FRAME_S * clock.frame))
        for _ in range(3):  # the task takes the frame; the tick runs; the task wakes with its answer
            await asyncio.sleep(0)
        assert task.done()
        task.result()
    assert ticker.windows > 0
