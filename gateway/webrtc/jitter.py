"""Jitter buffer and exact-frame slicer for outbound speech (pure: no sockets, no event loop)."""

from __future__ import annotations

from collections import deque


class JitterBuffer:
    """Holds s16 mono samples already at the codec rate and hands them out in exact frames.

    ``pop()`` returns ``frame_samples * 2`` bytes or None when less than a frame is buffered (the caller sends silence).
    An *utterance* starts with the first frame popped while idle and ends where ``mark_end()`` was called; running dry
    in between counts one underrun per dry spell, and one in ``underruns_preparing`` too where the caller says the
    missing audio had reached it and was still being prepared (the gateway was late, not the engine). Positions are
    counted in samples since creation: ``write_position`` is where the next pushed sample will play, ``read_position``
    how many have been handed out.
    """

    def __init__(self, sample_rate: int, frame_samples: int) -> None:
        if sample_rate <= 0 or frame_samples <= 0:
            raise ValueError("sample_rate and frame_samples must be positive")
        self.sample_rate = sample_rate
        self.frame_samples = frame_samples
        self.frame_bytes = frame_samples * 2
        self._buf = bytearray()
        self._ends: deque[int] = deque()  # write positions where marked utterances end
        self._playing = False  # an utterance has started playing and has not reached its end
        self._dry = False
        self.underruns = 0
        self.underruns_preparing = 0
        self.frames_out = 0
        self.samples_in = 0
        self.samples_padded = 0
        self.samples_dropped = 0

    @property
    def read_position(self) -> int:
        return self.frames_out * self.frame_samples

    @property
    def write_position(self) -> int:
        return self.read_position + len(self._buf) // 2

    @property
    def buffered_seconds(self) -> float:
        return len(self._buf) / 2 / self.sample_rate

    @property
    def playing(self) -> bool:
        """True while an utterance has started playing and has not reached its marked end."""
        return self._playing

    def push(self, samples: bytes) -> None:
        """Append s16 mono samples (an odd trailing byte is an error)."""
        if len(samples) % 2:
            raise ValueError("s16 samples must be an even number of bytes")
        self._buf += samples
        self.samples_in += len(samples) // 2

    def mark_end(self) -> None:
        """The utterance is complete: pad its last partial frame with silence; running dry after it is no underrun."""
        partial = len(self._buf) % self.frame_bytes
        if partial:
            pad = self.frame_bytes - partial
            self._buf += bytes(pad)
            self.samples_padded += pad // 2
        end = self.write_position
        if not self._ends or self._ends[-1] != end:
            self._ends.append(end)
        self._settle_end()

    def clear(self) -> None:
        """Barge-in: drop everything buffered now; the current utterance is over."""
        self.samples_dropped += len(self._buf) // 2
        self._buf.clear()
        self._ends.clear()
        self._playing = False
        self._dry = False

    def pop(self, preparing: bool = False) -> bytes | None:
        """The next exact frame, or None when less than a frame is buffered; ``preparing``: more audio has arrived
        and is being prepared (an underrun now is the gateway's)."""
        if len(self._buf) < self.frame_bytes:
            if self._playing and not self._dry:
                self.underruns += 1
                self.underruns_preparing += preparing
                self._dry = True
            return None
        frame = bytes(self._buf[: self.frame_bytes])
        del self._buf[: self.frame_bytes]
        self.frames_out += 1
        self._dry = False
        self._playing = True
        self._settle_end()
        return frame

    def _settle_end(self) -> None:
        """Retire utterance ends that playout has reached."""
        while self._ends and self.read_position >= self._ends[0]:
            self._ends.popleft()
            self._playing = False
            self._dry = False
