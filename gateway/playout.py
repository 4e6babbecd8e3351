"""How much of each utterance its client has taken, told to the engine so that generation pauses when it stops.

The engine's planner paces an utterance on its listener's buffer and, for a client that reports what it has taken,
generates no more than a lead limit ahead of that (engine/planner.py; serve --client-lead). The paced WebRTC track
reports what the listener has heard; a WebSocket client that sends ``playout`` messages, what it says it has played
(gateway/sessions/playout_reports.py: never past what was sent); a WebSocket without them, what it has sent less
what still waits in the connection's buffers (``Outbound``: the transport's write buffer and the kernel's send
queue, which hold megabytes for a client that stops reading); an HTTP stream (its body's bytes) and the ElevenLabs
socket (its replies, base64 in JSON) the same, each piece's bytes mapped back to the seconds of audio in it
(``WrittenAudio``: compressed formats have no fixed bytes per second); a turn queued behind another reports nothing
taken. So a client that stops reading or playing, or a queue of turns, holds a bounded
amount of audio in the gateway, while a client that reads fast is never held back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
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

    @classmethod
    def on(cls, transport: Any) -> "Outbound":
        """The same for a connection this gateway serves outside ASGI (the Wyoming port's asyncio streams)."""
        outbound = cls({})
        outbound.transport = transport
        return outbound

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


class WrittenAudio:
    """Seconds of one utterance's audio its client has taken, where the audio goes out in pieces of bytes on a
    connection (``Outbound``) whose bytes do not map to seconds by a fixed rate (MP3, Opus; JSON or server-sent events
    around base64): each piece is marked with where it ends in the connection's bytes and the seconds of audio it ends
    with (``wrote``); the bytes the client has taken are mapped back through the marks, between two of them in
    proportion. A piece with no bytes (an encoder holding audio back, a format sent whole at the end) counts as taken
    once everything before it is; where the transport is not known, everything written is taken."""

    def __init__(self, outbound: Outbound) -> None:
        self.outbound = outbound
        self.seconds = 0.0  # written so far
        self._marks: deque[tuple[int, float]] = deque()  # (bytes end, seconds end), not yet taken whole
        self._base = (outbound.written, 0.0)  # the last mark taken whole
        self._taken = 0.0

    def reset(self) -> None:
        """A new utterance starts here in the connection's bytes."""
        self.seconds, self._taken = 0.0, 0.0
        self._marks.clear()
        self._base = (self.outbound.written, 0.0)

    def wrote(self, seconds: float, end: int | None = None) -> None:
        """``seconds`` more of the audio, written up to byte ``end`` of the connection (None: all written so far)."""
        self.seconds += seconds
        self._marks.append((self.outbound.written if end is None else end, self.seconds))

    def taken(self) -> float:
        taken = max(0, self.outbound.written - self.outbound.unsent())  # (less headers and framing not yet taken)
        while self._marks and self._marks[0][0] <= taken:
            self._base = self._marks.popleft()
        seconds = self._base[1]
        if self._marks:
            (start, before), (end, after) = self._base, self._marks[0]
            seconds = before + (after - before) * max(0, taken - start) / max(1, end - start)
        self._taken = max(self._taken, seconds)
        return self._taken


async def report_playout(utterance: Utterance, taken: Callable[[], float | None]) -> None:
    """Until the engine has finished ``utterance``, tell it every REPORT_EVERY_S how much its client has taken
    (``taken()``; None: it cannot be known, stop telling)."""
    with contextlib.suppress(EngineUnavailable):
        while not utterance.finished and (played := taken()) is not None:
            await utterance.playout(round(played, 3))
            await asyncio.sleep(REPORT_EVERY_S)
