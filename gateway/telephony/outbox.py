"""What a phone call's media stream sends next, and what the caller has heard (pure: no sockets, no clock of its own).

The phone stack plays what it is sent from its own buffer and gives no other sign of playout than marks: a named
point in the stream it echoes once the audio before it has played. So the outbox sends audio in frames of
``FRAME_S``, each followed by a mark naming its end position, and never more than ``LEAD_S`` ahead of real time (by
its own estimate of when what was sent will have played): the marks that come back then say what was heard to within
a frame and the network's delay, and a cancel finds at most ``LEAD_S`` in the stack's buffer to clear.

Each utterance is an *epoch*; marks name theirs (``"e3.16000"``: epoch 3, 16000 bytes in), so the marks a stack
echoes for audio it dropped on a ``clear`` (Twilio sends them all back at once) count for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FRAME_S = 0.1  # audio per media message
LEAD_S = 1.0  # the most audio sent ahead of real time
END = "end"


@dataclass(frozen=True)
class Media:
    payload: bytes
    plays_at: float = field(default=0.0, compare=False)  # when it starts playing, by the outbox's estimate


@dataclass(frozen=True)
class Mark:
    name: str


Outgoing = Media | Mark


def _parse_mark(name: str) -> tuple[int, int, bool] | None:
    """``e{epoch}.{position}[.end]`` → (epoch, position, final); None for a mark this outbox did not name."""
    parts = name.split(".")
    if len(parts) not in (2, 3) or not parts[0].startswith("e") or (len(parts) == 3 and parts[2] != END):
        return None
    try:
        return int(parts[0][1:]), int(parts[1]), len(parts) == 3
    except ValueError:
        return None


class Outbox:
    """One call's outbound audio (already in the wire's encoding), ``bytes_per_second`` of it a second.

    ``frame_bytes``: the size of every media frame (Asterisk wants exactly its ``optimal_frame_size``; the last frame
    of an utterance is padded with ``silence``); None: frames of ``FRAME_S``, the last one shorter.
    """

    def __init__(self, bytes_per_second: int, frame_bytes: int | None = None, silence: bytes = b"\0",
                 lead_s: float = LEAD_S) -> None:
        self.bytes_per_second = bytes_per_second
        self.frame_bytes = frame_bytes or max(1, round(bytes_per_second * FRAME_S))
        self.exact = frame_bytes is not None
        self.silence = silence
        self.lead_s = lead_s
        self.epoch = 0
        self._pending = bytearray()
        self._ended = False  # the utterance's audio is all in: send the rest, then its final mark
        self._sent = 0  # bytes of this utterance sent
        self._heard = 0  # bytes of this utterance the echoed marks say were played
        self._unheard = bytearray()  # what was sent from the heard position on (a rewind sends it again)
        self._final_sent = False
        self.final_heard = False
        self.plays_until: float | None = None  # when everything sent so far will have played, by our estimate

    def begin(self) -> None:
        """A new utterance."""
        self.epoch += 1
        self._pending.clear()
        self._ended = self._final_sent = self.final_heard = False
        self._sent = self._heard = 0
        self._unheard.clear()

    def push(self, data: bytes) -> None:
        self._pending += data

    def end(self) -> None:
        """The utterance's audio is all pushed."""
        self._ended = True

    def clear(self, now: float) -> None:
        """Barge-in: drop what has not been sent; the stack is told to drop the rest (its ``clear``)."""
        self.begin()
        self._ended = True
        self._final_sent = self.final_heard = True  # nothing of it is left to wait for
        self.plays_until = now

    def rewind(self, now: float) -> None:
        """Barge-in's pause: what was sent but not heard goes back to be sent again (the stack is told to drop it,
        its ``clear``), as a new epoch, so the marks it echoes for what it dropped count for nothing."""
        self.epoch += 1
        self._pending[:0] = self._unheard
        self._unheard.clear()
        self._sent = self._heard
        if not self.final_heard:
            self._final_sent = False
        self.plays_until = now

    @property
    def heard_s(self) -> float:
        return self._heard / self.bytes_per_second

    @property
    def idle(self) -> bool:
        """Nothing waits to be sent."""
        return not self._pending and (not self._ended or self._final_sent)

    def echoed(self, name: str) -> bool:
        """The stack echoed mark ``name``; True when it was this utterance's last."""
        parsed = _parse_mark(name)
        if parsed is None or parsed[0] != self.epoch:
            return False
        heard = max(self._heard, min(parsed[1], self._sent))  # a stack cannot have played more than it got
        del self._unheard[:heard - self._heard]
        self._heard = heard
        if parsed[2]:
            self.final_heard = True
        return parsed[2]

    def due(self, now: float) -> tuple[list[Outgoing], float | None]:
        """What to send at ``now``, and how many seconds until more may go (None: nothing to send until more audio
        is pushed or the utterance ends)."""
        out: list[Outgoing] = []
        while True:
            if self.plays_until is None or self.plays_until < now:
                self.plays_until = now
            ahead = self.plays_until - now
            if not self._pending:
                if self._ended and not self._final_sent:
                    self._final_sent = True
                    out.append(Mark(f"e{self.epoch}.{self._sent}.{END}"))
                return out, None
            if ahead >= self.lead_s - 1e-9:
                return out, ahead - self.lead_s + 1e-3
            if self.exact and len(self._pending) < self.frame_bytes:
                if not self._ended:
                    return out, None  # wait for a whole frame
                needed = self.frame_bytes - len(self._pending)
                self._pending += (self.silence * needed)[:needed]
            frame = bytes(self._pending[:self.frame_bytes])
            del self._pending[:self.frame_bytes]
            self._sent += len(frame)
            self._unheard += frame
            out += [Media(frame, self.plays_until), Mark(f"e{self.epoch}.{self._sent}")]
            self.plays_until += len(frame) / self.bytes_per_second
