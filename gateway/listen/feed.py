"""The caller's audio as a controller reads it (pure): a start that declares the format, then each frame with its
stream timestamp, base64 in JSON; bounded, so a controller that reads slowly or not at all costs the call nothing.

Past ``MAX_FRAMES`` unread the oldest frames go, counted; the controller is told how many before the next frame it
gets (``caller_audio_dropped``), and the call's total shows in ``/health`` and the metrics.
"""

from __future__ import annotations

import base64
from collections import deque
from typing import Any

MAX_FRAMES = 150  # ~3 s of 20 ms frames


class CallerAudioFeed:
    def __init__(self, encoding: str, rate: int, max_frames: int = MAX_FRAMES) -> None:
        self.encoding, self.rate = encoding, rate
        self._frames: deque[tuple[float, bytes]] = deque()
        self.max_frames = max_frames
        self.dropped = 0  # in all
        self._unreported = 0  # dropped since the controller was last told

    def start(self) -> dict[str, Any]:
        return {"type": "caller_audio_start", "encoding": self.encoding, "sample_rate": self.rate, "channels": 1}

    def push(self, timestamp_ms: float, audio: bytes) -> int:
        """One frame of the caller's; returns how many unread frames it pushed out (0 or 1)."""
        self._frames.append((timestamp_ms, audio))
        if len(self._frames) <= self.max_frames:
            return 0
        self._frames.popleft()
        self.dropped += 1
        self._unreported += 1
        return 1

    def __len__(self) -> int:
        return len(self._frames)

    def take(self) -> dict[str, Any] | None:
        """The next message for the controller (None: nothing waits)."""
        if self._unreported:
            count, self._unreported = self._unreported, 0
            return {"type": "caller_audio_dropped", "frames": count, "total": self.dropped}
        if not self._frames:
            return None
        timestamp, audio = self._frames.popleft()
        return {"type": "caller_audio", "timestamp": round(timestamp, 1), "audio": base64.b64encode(audio).decode()}
