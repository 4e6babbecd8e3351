"""What a listener can have heard of an utterance, told to the engine so that generation pauses when the client does.

The engine's planner paces each utterance on its listener's buffer (audio generated minus audio heard); left alone it
assumes the listener hears in real time from the first chunk. A client that stops reading, or an utterance queued
behind another, hears nothing, so the gateway tells the planner: the listener cannot have heard more than was sent,
nor more than real time since the first of it was sent. The audio a session holds ahead of its transport then stays
within what the planner buffers, whatever the client does.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Callable

from gateway.engine_link.client import EngineUnavailable, RemoteUtterance

REPORT_EVERY_S = 0.2


class SentClock:
    """An upper bound on what the listener of one utterance has heard, from what has been sent to it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._sent_s = 0.0
        self._first_at: float | None = None

    def reset(self) -> None:
        self._sent_s, self._first_at = 0.0, None

    def sent(self, seconds: float) -> None:
        if self._first_at is None:
            self._first_at = self._clock()
        self._sent_s += seconds

    @property
    def sent_s(self) -> float:
        return self._sent_s

    def heard(self) -> float:
        if self._first_at is None:
            return 0.0
        return min(self._sent_s, self._clock() - self._first_at)


async def report_playout(utterance: RemoteUtterance, heard: Callable[[], float | None]) -> None:
    """Until the engine has finished ``utterance``, tell it every REPORT_EVERY_S how much its listener has heard
    (``heard()``; None: it cannot be known, stop telling)."""
    with contextlib.suppress(EngineUnavailable):
        while not utterance.finished and (played := heard()) is not None:
            await utterance.playout(round(played, 3))
            await asyncio.sleep(REPORT_EVERY_S)
