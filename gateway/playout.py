"""How much of each utterance its client has taken, told to the engine so that generation pauses when it stops.

The engine's planner paces an utterance on its listener's buffer and, for a client that reports what it has taken,
generates no more than a lead limit ahead of that (engine/planner.py). The paced WebRTC track reports what the
listener has heard; a WebSocket client that sends ``playout`` messages, what it says it has played (``PlayoutReports``:
never past what was sent); a WebSocket without them or an HTTP stream, what it has sent (an HTTP body is sent as
fast as the client reads it, so that is what it took); a turn queued behind another reports nothing taken. So a
client that stops reading or playing, or a queue of turns, holds a bounded amount of audio in the gateway, while a
client that reads fast is never held back.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Callable

from gateway.engine_link.client import EngineUnavailable
from gateway.engine_link.failover import Utterance

REPORT_EVERY_S = 0.2
REPORTS_BURST = 10  # ``playout`` reports taken at once; past it, at most REPORTS_PER_S (a flood's rest is ignored)
REPORTS_PER_S = 20.0
EXTRAPOLATE_S = 1.0  # how long after its last report a client is taken to go on playing (at 1x)


class SentAudio:
    """Seconds of one utterance's audio sent to its client."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def reset(self) -> None:
        self.seconds = 0.0

    def sent(self, seconds: float) -> None:
        self.seconds += seconds

    def taken(self) -> float:
        return self.seconds


class PlayoutReports:
    """A client's own reports of how far it has played one utterance (``playout``), held to what is possible.

    A report past what had been sent when it came counts as what had been sent; one going backwards, and one past
    the flood allowance (REPORTS_BURST at once, then REPORTS_PER_S), is ignored (counted in ``ignored``). Times are
    seconds on any monotonic clock.
    """

    def __init__(self) -> None:
        self.played: float | None = None  # the last report taken; None: none yet
        self.ignored = 0
        self._at = 0.0  # when it came
        self._allowance = float(REPORTS_BURST)
        self._refilled: float | None = None

    def report(self, played: float, sent: float, now: float) -> bool:
        """The client says it has played ``played`` seconds, with ``sent`` seconds sent to it; whether it was taken."""
        if not self._admit(now) or (self.played is not None and played < self.played):
            self.ignored += 1
            return False
        self.played, self._at = max(min(played, sent), self.played or 0.0), now
        return True

    def position(self, sent: float, now: float) -> float | None:
        """Where the client is now: its last report, played on at 1x for up to EXTRAPOLATE_S (a report is that old
        by the time the engine hears it), never past ``sent``; None when it has not reported."""
        if self.played is None:
            return None
        return min(sent, self.played + min(max(0.0, now - self._at), EXTRAPOLATE_S))

    def _admit(self, now: float) -> bool:
        if self._refilled is not None:
            self._allowance = min(REPORTS_BURST, self._allowance + max(0.0, now - self._refilled) * REPORTS_PER_S)
        self._refilled = now
        if self._allowance < 1.0:
            return False
        self._allowance -= 1.0
        return True


async def report_playout(utterance: Utterance, taken: Callable[[], float | None]) -> None:
    """Until the engine has finished ``utterance``, tell it every REPORT_EVERY_S how much its client has taken
    (``taken()``; None: it cannot be known, stop telling)."""
    with contextlib.suppress(EngineUnavailable):
        while not utterance.finished and (played := taken()) is not None:
            await utterance.playout(round(played, 3))
            await asyncio.sleep(REPORT_EVERY_S)
