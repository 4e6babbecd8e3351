"""A client's own ``playout`` reports of how far it has played an utterance, held to what is possible (pure).

The session tells the engine their position in place of the sink's (gateway/playout.py), so a WebSocket client that
plays the audio itself closes the planner's loop as the WebRTC track does; nothing it says can put it past what was
sent, back in time, or cost more than a few reports a second.
"""

from __future__ import annotations

REPORTS_BURST = 10  # ``playout`` reports taken at once; past it, at most REPORTS_PER_S (a flood's rest is ignored)
REPORTS_PER_S = 20.0
EXTRAPOLATE_S = 1.0  # how long after its last report a client is taken to go on playing (at 1x)


class PlayoutReports:
    """A client's own reports of how far it has played one utterance (``playout``), held to what is possible.

    A report past what had been sent when it came counts as what had been sent; one going backwards, and one past
    the flood allowance (REPORTS_BURST at once, then REPORTS_PER_S), is ignored. Times are
    seconds on any monotonic clock.
    """

    def __init__(self) -> None:
        self.played: float | None = None  # the last report taken; None: none yet
        self._at = 0.0  # when it came
        self._allowance = float(REPORTS_BURST)
        self._refilled: float | None = None

    def report(self, played: float, sent: float, now: float) -> bool:
        """The client says it has played ``played`` seconds, with ``sent`` seconds sent to it; whether it was taken."""
        if not self._admit(now) or (self.played is not None and played < self.played):
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
