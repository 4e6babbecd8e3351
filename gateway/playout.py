"""How much of each utterance its client has taken, told to the engine so that generation pauses when it stops.

The engine's planner paces an utterance on its listener's buffer and, for a client that reports what it has taken,
generates no more than a lead limit ahead of that (engine/planner.py). The paced WebRTC track reports what the
listener has heard; a WebSocket client that sends ``playout`` messages, what it says it has played
(gateway/sessions/playout_reports.py: never past what was sent); a WebSocket without them or an HTTP stream, what
it has sent (an HTTP body is sent as fast as the client reads it, so that is what it took); a turn queued behind
another reports nothing taken. So a client that stops reading or playing, or a queue of turns, holds a bounded
amount of audio in the gateway, while a client that reads fast is never held back.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Callable

from gateway.engine_link.client import EngineUnavailable
from gateway.engine_link.failover import Utterance

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


async def report_playout(utterance: Utterance, taken: Callable[[], float | None]) -> None:
    """Until the engine has finished ``utterance``, tell it every REPORT_EVERY_S how much its client has taken
    (``taken()``; None: it cannot be known, stop telling)."""
    with contextlib.suppress(EngineUnavailable):
        while not utterance.finished and (played := taken()) is not None:
            await utterance.playout(round(played, 3))
            await asyncio.sleep(REPORT_EVERY_S)
