"""Sockets that may bring their key in a message rather than their handshake (the ElevenLabs sockets'
``xi_api_key``, Twilio's ``start``, every Wyoming connection): bounded while they have shown nothing.

``WaitingRoom`` caps the connections not yet authenticated (a silent one holds a file descriptor and a task);
``IdleClock`` says when a connection has received and sent nothing for its timeout, and ``until_idle`` waits for
that. Pure but for ``until_idle``, which polls like ``gateway.websocket.until_stalled``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Callable

IDLE_CHECK_S = 0.5


class WaitingRoom:
    """Connections not yet authenticated, at most ``limit`` at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._waiting: set[Admission] = set()

    def __len__(self) -> int:
        return len(self._waiting)

    def enter(self) -> "Admission | None":
        """A place for one more connection; None when the room is full (refuse the connection)."""
        if len(self._waiting) >= self.limit:
            return None
        admission = Admission(self)
        self._waiting.add(admission)
        return admission

    @property
    def full_message(self) -> str:
        return f"the server is at its limit of {self.limit} connections not yet authenticated; retry shortly"


class Admission:
    """One connection's place in the waiting room, given up once it is authenticated or gone (``leave``, any
    number of times)."""

    def __init__(self, room: WaitingRoom) -> None:
        self._room = room

    def leave(self) -> None:
        self._room._waiting.discard(self)


class IdleClock:
    """The last time a connection received or sent something; ``timeout`` seconds later it is idle. While ``busy``
    says work is under way for it (a synthesis whose first audio a loaded engine has not yet given), it is not: the
    client is waiting on us, and its clock runs from when that work ends."""

    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic,
                 busy: Callable[[], bool] = lambda: False) -> None:
        self.timeout, self._clock, self.busy = timeout, clock, busy
        self._last = clock()

    def touch(self) -> None:
        self._last = self._clock()

    def idle(self, now: float | None = None) -> bool:
        now = self._clock() if now is None else now
        if self.busy():
            self._last = now
            return False
        return now - self._last >= self.timeout

    @property
    def reason(self) -> str:
        return f"nothing received or sent for {self.timeout:g} s"


async def until_idle(clock: IdleClock) -> None:
    """Returns once ``clock`` is idle."""
    while not clock.idle():
        await asyncio.sleep(min(IDLE_CHECK_S, clock.timeout))
