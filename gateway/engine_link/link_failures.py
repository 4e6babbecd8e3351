"""How loud a failed try to reach an engine worker is (pure).

A worker that is starting is not listening yet by design (its socket is not there until its model is loaded), so
tries that find no one listening, before it has ever answered or after a lost connection while it comes back, are
debug lines until they have gone on for longer than a start takes; then one warning. A connection lost, a worker that
answers and refuses (a wrong secret, a frame this gateway cannot read) or a bug here, and a failure that changes after
that warning are warnings at once. The same failure again is not said twice.
"""

from __future__ import annotations

import logging

# A Chatterbox-Turbo worker loads its weights and captures its CUDA graphs in well under this; the images' health
# checks give a start as long (Dockerfile, compose*.yaml: start_period 180 s).
START_S = 180.0


class LinkFailures:
    def __init__(self, start_s: float = START_S) -> None:
        self.start_s = start_s
        self._since: float | None = None  # when the link was last up (or first tried)
        self._said: str | None = None  # the last failure: the same one again is not said again
        self._warned = False  # since the link was last up

    def connected(self) -> None:
        self._since, self._said, self._warned = None, None, False

    def failing_for(self, now: float) -> float:
        """Seconds since the link was last up, or since it was first tried."""
        return 0.0 if self._since is None else now - self._since

    def level(self, error: str, now: float, *, lost: bool = False, listening: bool = False) -> int | None:
        """The log level of a failed try at ``now`` (monotonic seconds) failing with ``error``; None: not logged.
        ``lost``: the try ended a connection that was up; ``listening``: something answered (and refused, or spoke
        nonsense), so this is no worker still starting."""
        if lost or self._since is None:
            self._since = now
        repeated, self._said = error == self._said, error
        if lost:
            return logging.WARNING
        if listening or now - self._since > self.start_s:
            if repeated and (listening or self._warned):
                return None
            self._warned = True
            return logging.WARNING
        return None if repeated else logging.DEBUG
