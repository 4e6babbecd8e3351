"""What the caller's speech does to the gateway's own (pure): barge-in at the edge, before any round trip.

``vad`` (the default wherever caller audio arrives): speech that starts while the gateway speaks stops it at once.
``pause`` (LiveKit's false-interruption handling): the speech under way pauses at the onset; it is cancelled once
the caller has spoken ``cancel_after_ms``, and resumes where it stopped if they fall silent sooner (a cough, a
"mm-hm"). ``off``: the gateway never stops of itself; the controller still hears ``speech_started``/``speech_stopped``.
"""

from __future__ import annotations

from enum import Enum

MODES = ("vad", "pause", "off")
CANCEL_AFTER_MS = 500.0  # LiveKit Agents' min_interruption_duration


class Act(Enum):
    INTERRUPT = "interrupt"
    PAUSE = "pause"
    RESUME = "resume"


class BargeIn:
    def __init__(self, mode: str = "vad", cancel_after_ms: float = CANCEL_AFTER_MS) -> None:
        if mode not in MODES:
            raise ValueError(f"barge_in is one of {', '.join(MODES)}")
        self.mode = mode
        self.cancel_after_ms = cancel_after_ms
        self._paused_at: float | None = None  # stream time of the onset that paused the speech

    @property
    def paused(self) -> bool:
        return self._paused_at is not None

    def set_mode(self, mode: str) -> Act | None:
        """A new mode; RESUME when leaving a pause under way."""
        if mode not in MODES:
            raise ValueError(f"barge_in is one of {', '.join(MODES)}")
        self.mode = mode
        return self._resume() if mode != "pause" else None

    def started(self, onset_ms: float, at_ms: float, gateway_speaking: bool) -> Act | None:
        """The caller started speaking (confirmed at ``at_ms``)."""
        if not gateway_speaking or self.mode == "off" or self.paused:
            return None
        if self.mode == "vad":
            return Act.INTERRUPT
        self._paused_at = onset_ms
        return self.speaking(at_ms) or Act.PAUSE  # already long enough (a long minimum speech): cancel at once

    def speaking(self, at_ms: float) -> Act | None:
        """The caller is still speaking at ``at_ms``."""
        if self._paused_at is not None and self.mode == "pause":
            if at_ms - self._paused_at >= self.cancel_after_ms:
                self._paused_at = None
                return Act.INTERRUPT
        return None

    def stopped(self) -> Act | None:
        """The caller fell silent."""
        return self._resume()

    def speech_ended(self) -> None:
        """The gateway's speech ended or was cancelled: nothing is paused any more."""
        self._paused_at = None

    def _resume(self) -> Act | None:
        if self._paused_at is None:
            return None
        self._paused_at = None
        return Act.RESUME
