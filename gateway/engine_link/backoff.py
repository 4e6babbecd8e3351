"""Retry delays that double up to a cap, each drawn at random from its upper half (jitter), so that many gateways
(or one gateway's clients) that lost a worker at the same moment do not all come back at the same moment."""

from __future__ import annotations

import random


class Backoff:
    def __init__(self, first: float, cap: float) -> None:
        self.first, self.cap = first, cap
        self._ceiling = first

    def next(self) -> float:
        """The delay before the next try; each call doubles the ceiling it is drawn under, up to ``cap``."""
        delay = random.uniform(self._ceiling / 2, self._ceiling)
        self._ceiling = min(self._ceiling * 2, self.cap)
        return delay

    def reset(self) -> None:
        """After a success that lasted: the next failure is retried quickly again."""
        self._ceiling = self.first
