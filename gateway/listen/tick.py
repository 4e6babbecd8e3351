"""Every call's VAD in one model run: the windows that fall due together, across calls, heard in one batch.

Silero's fixed cost per run is most of what a window costs (gateway/listen/silero.py), so a process with many
talking callers runs the model once per batch of due windows rather than once per window. No window waits for a
batch: a call's frame is taken (``CallerSide.take``) the moment it arrives, as before, and its windows are decided
at the end of that pass of the event loop, beside those of every other call whose frame came in the same pass
(``VadTicker``: one tick per pass that has windows due, never on a timer). A busy loop gathers more per pass; an
idle one runs the model for one call's window as soon as it is due, as a single call always did.

A due window waits for the tick and its frame's task for the wake-up: two passes of the loop (~25 us on an idle
loop). On a heavily loaded machine (load average 4-12 on 2 cores) ``bench barge-in``'s onset-to-clear tail and
false barge-ins on echo came out worse with the ticker than with each call's windows inline, over five back-to-back
pairs, so gateway/sessions/driven.py uses it only with ``--vad-batch``.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any, Iterable

import numpy as np

from gateway.listen.barge_in import Act
from gateway.listen.caller import CallerSide
from gateway.listen.silero import run


def hear_all(sides: Iterable[CallerSide]) -> tuple[int, int]:
    """Decide every due window of ``sides`` (whose frames were ``take``\\ n), one batched run per round and rate:
    a round hears each side's next due window; another follows while any side has one due (a frame of several
    windows, or a gate that opened on the window before). Returns (model runs, windows heard)."""
    runs = heard = 0
    waiting = list(sides)
    while waiting:
        due = [(side, window) for side in waiting if (window := side.next_due()) is not None]
        by_rate: dict[int, list[tuple[CallerSide, np.ndarray]]] = {}
        for side, window in due:
            by_rate.setdefault(side.vad.rate, []).append((side, window))
        for batch in by_rate.values():
            for (side, _), probability in zip(batch, run([side.vad for side, _ in batch], [w for _, w in batch])):
                side.decided(probability)
        runs, heard = runs + len(by_rate), heard + len(due)
        waiting = [side for side, _ in due]
    return runs, heard


class VadTicker:
    """One event loop's calls' VAD: ``await hear(side, frame, timestamp)`` returns that frame's events once its
    windows are decided, with every other call's due in the same pass (counted: ``runs``, ``windows``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waiting: list[tuple[CallerSide, asyncio.Future[None]]] = []
        self.runs = 0  # model runs
        self.windows = 0  # windows the model heard in them

    async def hear(self, side: CallerSide, audio: bytes, timestamp_ms: float | None) -> list[dict[str, Any] | Act]:
        side.take(audio, timestamp_ms)
        if side.next_due() is not None:  # else the frame completed no window the model must hear: no wait
            done = self._loop.create_future()
            if not self._waiting:
                self._loop.call_soon(self._tick)
            self._waiting.append((side, done))
            await done
        return side.heard()

    def _tick(self) -> None:
        waiting, self._waiting = self._waiting, []
        live = [(side, done) for side, done in waiting if not done.done()]  # a call whose task was cancelled: gone
        try:
            runs, windows = hear_all(side for side, _ in live)
        except Exception as exc:  # the model failed: each call hears why, none waits forever
            for _, done in live:
                if not done.done():
                    done.set_exception(exc)
            return
        self.runs, self.windows = self.runs + runs, self.windows + windows
        for _, done in live:
            if not done.done():
                done.set_result(None)


_TICKERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, VadTicker] = weakref.WeakKeyDictionary()


def ticker() -> VadTicker:
    """The running event loop's ticker (one per loop: the calls it serves share it)."""
    loop = asyncio.get_running_loop()
    if (found := _TICKERS.get(loop)) is None:
        found = _TICKERS[loop] = VadTicker(loop)
    return found
