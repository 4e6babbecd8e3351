"""The audio sink contract: where a session's audio goes, with every capability a transport may have declared."""

from __future__ import annotations

from abc import ABC, abstractmethod


class AudioSink(ABC):
    """Takes a session's audio, one utterance at a time; ``pcm`` is always 24 kHz mono s16le.

    ``begin`` (an utterance starts), ``write`` (its audio, in order), ``end`` (it is complete: flush resamplers and
    encoders), ``clear`` (barge-in: drop everything buffered now), ``hold`` (barge-in's pause). The optional capabilities have defaults that say
    the sink does not have them.
    """

    configurable: bool = False  # a client may choose the wire format with ``config`` (see ``configure``)
    heard_from: str | None = None  # what ``played_seconds`` is, for ``heard_from`` (None: the transport's default)

    @abstractmethod
    async def begin(self) -> None: ...

    @abstractmethod
    async def write(self, pcm: bytes) -> None: ...

    @abstractmethod
    async def end(self) -> None: ...

    @abstractmethod
    async def clear(self) -> None: ...

    def configure(self, fmt: str, sample_rate: int) -> None:
        """Switch the wire format for the next utterance; only where ``configurable``."""
        raise TypeError(f"{type(self).__name__} negotiates its own format")

    def played_seconds(self) -> float | None:
        """Seconds of the current utterance the listener has been handed so far, where the sink paces playout
        itself (so the engine's planner can size chunks on the true buffer); None where it cannot know."""
        return None

    def taken_seconds(self) -> float | None:
        """Seconds of the current utterance its client has taken, told to the engine (which generates no more than
        serve --client-lead ahead of it): ``played_seconds`` unless the sink knows better (the WebSocket sink: less
        what still waits in the connection's buffers)."""
        return self.played_seconds()

    async def hold(self, held: bool) -> None:
        """Barge-in's pause: stop the speech where it is (``True``), to go on from there (``False``), where the sink
        paces playout itself; elsewhere the speech goes on."""

    def underruns(self) -> int | None:
        """Times playout has run dry so far, where the sink paces playout itself; None where it cannot know."""
        return None

    def underruns_in_gateway(self) -> int:
        """Of ``underruns``, those where the missing audio had reached the sink and was still being prepared (the
        gateway was late, not the engine)."""
        return 0
