"""Draining (pure): whether this gateway process takes new sessions, and until when the ones it has may go on.

Two ways to drain. In place (SIGTERM, ``POST /v1/admin/drain``): the process keeps its port, ``/health`` answers 503
``draining`` so a load balancer or a readiness probe takes it out, and new sessions are refused with a reason that
says to reconnect. Handing over (SIGHUP, a rolling restart of ``serve --processes N``): the process closes its
listening socket, so the other processes sharing the port (SO_REUSEPORT) take every new connection, and it serves
whatever reached it before, refusing nothing. Either way its sessions go on until their utterances end, at most
``grace_s``; then the rest are closed with WebSocket code 1012 ("service restart": reconnect).
"""

from __future__ import annotations

from dataclasses import dataclass

SERVING, DRAINING = "serving", "draining"
RESTART_CLOSE_CODE = 1012  # WebSocket "service restart": the client reconnects (elsewhere, or here once restarted)
REFUSAL = "the server is restarting and takes no new sessions: reconnect and send it again"
CLOSING = "the server is restarting: reconnect, and send again what got no 'done'"


@dataclass
class Drain:
    grace_s: float  # how long utterances in flight may go on once a drain begins
    deadline: float | None = None  # monotonic seconds; None while serving
    handover: bool = False  # the listening socket was closed: the other processes on the port take new connections

    @property
    def state(self) -> str:
        return SERVING if self.deadline is None else DRAINING

    def begin(self, now: float, handover: bool = False) -> bool:
        """Start draining at ``now``; False when a drain has begun already (its deadline and its way stand)."""
        if self.deadline is not None:
            return False
        self.deadline, self.handover = now + self.grace_s, handover
        return True

    def refusal(self) -> str | None:
        """Why a new session is refused now: None while serving, and while handing over (no new connection reaches
        this process then; the few accepted before its socket closed are served)."""
        return REFUSAL if self.deadline is not None and not self.handover else None

    def left(self, now: float) -> float | None:
        """Seconds of the grace left at ``now``; None while serving."""
        return None if self.deadline is None else max(0.0, self.deadline - now)
