"""How loud the gateway's own voice is on the line now (pure): the reference the echo guard holds the caller to.

Each piece of outbound audio is recorded with when it plays (phone calls: the outbox's estimate; WebRTC: when the
paced track hands it to aiortc) and its RMS level. Its echo comes back later by the line's round trip (the network
both ways, the far end's playout), so the reference at ``now`` is the loudest that played within ``reach_s`` before.
"""

from __future__ import annotations

from collections import deque

import numpy as np

REACH_S = 0.6  # the longest echo path allowed for: a carrier's round trip and its playout buffer


def rms(samples: np.ndarray) -> float:
    """RMS of float samples in [-1, 1] (0 for none)."""
    return float(np.sqrt(np.mean(np.square(samples, dtype=np.float64)))) if samples.size else 0.0


class EchoReference:
    def __init__(self, reach_s: float = REACH_S) -> None:
        self.reach_s = reach_s
        self._played: deque[tuple[float, float, float]] = deque()  # (start, end, level), in start order

    def played(self, start: float, duration: float, level: float) -> None:
        """Outbound audio of ``level`` plays from ``start`` (monotonic seconds) for ``duration``."""
        if level > 0:
            self._played.append((start, start + duration, level))

    def clear(self, now: float) -> None:
        """What was to play after ``now`` was dropped (a barge-in)."""
        self._played = deque((s, min(e, now), level) for s, e, level in self._played if s < now)

    def level(self, now: float) -> float:
        """The loudest outbound level whose echo may be arriving at ``now``."""
        since = now - self.reach_s
        while self._played and self._played[0][1] < since:
            self._played.popleft()
        return max((level for start, _, level in self._played if start <= now), default=0.0)
