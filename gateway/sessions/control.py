"""Out-of-band control of a WebRTC session (pure): who drives it, and what answers an input.

A phone bridge (a SIP trunk bridged to WebRTC) negotiates audio and nothing else: no data channel, none of our
messages. The agent that has the text is elsewhere; it attaches to the session by its id (``WS /v1/stream?session=``,
or ``POST /v1/sessions/{id}/speak``) and drives it. The I/O is in ``gateway/webrtc/control.py``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from gateway.listen.feed import CallerAudioFeed

CANCEL = json.dumps({"type": "cancel"})
REPLACED_CLOSE_CODE = 4409  # a controller's socket, closed because another controller took over
# An input refused, as an HTTP status: the rest are the client's mistakes (400).
_REFUSAL_STATUS = {"too_many_utterances": 429, "unknown_voice": 404, "engine_unavailable": 503,
                   "engine_error": 502, "text_too_long": 413}


class Controller(Protocol):
    """An attached controller, as the session sees it: events go to it without waiting; ``end`` lets it go; the
    caller's audio it asked for (``listen``) is taken from ``caller_audio``'s feed as fast as it reads."""

    def send(self, event: dict[str, Any]) -> None: ...

    def end(self, reason: str, code: int = 1000) -> None: ...

    def caller_audio(self, feed: CallerAudioFeed | None) -> None:
        """The caller's audio waits in ``feed`` (None: no longer listening)."""


class ControlSeat:
    """At most one controller per session. A second attach takes over: an agent that reconnects after a network
    blip must get its call back, even while the server has not yet noticed that its old socket is dead."""

    def __init__(self) -> None:
        self.current: Controller | None = None

    def attach(self, controller: Controller) -> Controller | None:
        """Seat ``controller``; returns the one it replaced, if any."""
        previous, self.current = self.current, controller
        return previous if previous is not controller else None

    def detach(self, controller: Controller) -> bool:
        """``controller`` left; True when it was the one driving (then its speech stops)."""
        if self.current is not controller:
            return False
        self.current = None
        return True


def is_answer(event: dict[str, Any]) -> bool:
    """Whether ``event`` answers the input that was just fed: a refusal (an error naming no utterance: those naming
    one come from the engine later) or a ``cancelled``."""
    return event["type"] == "cancelled" or (event["type"] == "error" and "utterance" not in event)


def refusal_status(code: str) -> int:
    """The HTTP status for an input refused with error ``code``."""
    return _REFUSAL_STATUS.get(code, 400)
