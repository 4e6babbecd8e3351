"""How much of each utterance its client has taken, told to the engine so that generation pauses when it stops.

The engine's planner paces an utterance on its listener's buffer and, for a client that reports what it has taken,
generates no more than a lead limit ahead of that (engine/planner.py; serve --client-lead). The paced WebRTC track
reports what the listener has heard; a WebSocket client that sends ``playout`` messages, what it says it has played
(gateway/sessions/playout_reports.py: never past what was sent); a WebSocket without them, what it has sent less
what still waits in the connection's buffers (``Outbound``: the transport's write buffer and the kernel's send
queue, which hold megabytes for a client that stops reading); an HTTP stream, what it has sent; a turn queued behind
another reports nothing taken. So a client that stops reading or playing, or a queue of turns, holds a bounded
amount of audio in the gateway, while a client that reads fast is never held back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Callable, Mapping

from gateway.engine_link.client import EngineUnavailable
from gateway.engine_link.failover import Utterance
from gateway.host.protocols import transport_of, unsent_bytes

REPORT_EVERY_S = 0.2


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


class Outbound:
    """What a connection's client has taken of the bytes written to it: those written, less those still waiting in
    the transport's write buffer or the kernel's send queue (gateway/host/protocols.py ``unsent_bytes``). Where the
    transport is not known (not served by this gateway's protocols), everything written counts as taken.

    ``stalled(now, timeout)``: bytes are waiting and the client has taken none of them for ``timeout`` seconds."""

    def __init__(self, scope: Mapping[str, Any]) -> None:
        self.transport = transport_of(scope)
        self.written = 0
        self._taken = 0
        self._progress = time.monotonic()

    def wrote(self, size: int) -> None:
        self.written += size

    def unsent(self) -> int:
        """Bytes written (audio, and the events beside it) not yet taken; 0 where it cannot be known."""
        if self.transport is None or self.transport.is_closing():
            return 0
        return unsent_bytes(self.transport)

    def held(self) -> int:
        """Bytes in the gateway's own buffer for this client (the transport's; the kernel's send queue apart)."""
        return 0 if self.transport is None else self.transport.get_write_buffer_size()

    def stalled(self, now: float, timeout: float) -> bool:
        unsent = self.unsent()
        taken = self.written - unsent
        if unsent <= 0 or taken > self._taken:
            self._progress = now
        self._taken = max(self._taken, taken)
        return now - self._progress > timeout


async def report_playout(utterance: Utterance, taken: Callable[[], float | None]) -> None:
    """Until the engine has finished ``utterance``, tell it every REPORT_EVERY_S how much its client has taken
    (``taken()``; None: it cannot be known, stop telling)."""
    with contextlib.suppress(EngineUnavailable):
        while not utterance.finished and (played := taken()) is not None:
            await utterance.playout(round(played, 3))
            await asyncio.sleep(REPORT_EVERY_S)
