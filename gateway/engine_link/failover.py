"""Mid-utterance failover: an utterance whose worker goes away goes on on another, from where it stopped.

A chunk crosses the engine link whole (one binary message), so what the listener has is exactly the chunks the
gateway received: nothing is cut mid-chunk. The rest is the caller's text after the last received chunk's words
(its ``span``, widened by its last word's, which takes in the marks around a word that speak nothing), sent again to
another worker with the same voice and reading, the flushes and the end that came after that point kept in their
places. The new worker's chunks are numbered on from the received ones: seq, audio offset, word times and the
caller's spans all continue, so every transport sees one utterance with a gap in it.

SSML is read as one document and cannot be cut: it is moved only while none of it was received yet.

``Resume`` is the pure record of one utterance (tested directly); ``FailoverUtterance`` carries it out over the
engine pool.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import AsyncIterator, Awaitable, Callable

from engine.protocol import Chunk, ChunkHeader, Done
from engine.traces import NO_SPAN, Span
from gateway.engine_link.client import EngineRequestError, EngineUnavailable, RemoteUtterance

log = logging.getLogger("chatterbox_fast.gateway")
WAIT_POLL_S = 0.02  # how often a pool with no worker to go to is looked at again, within the wait

Op = tuple[str, str]  # ("text", the text) | ("flush", "") | ("end", "")


@dataclass(frozen=True)
class FailoverPolicy:
    wait_s: float = 10.0  # how long to wait for a worker to go to (0: no failover)
    max_failovers: int = 2  # moves of one utterance before it fails as it would without failover


@dataclass
class Resume:
    """What one utterance was sent and what came back of it, so another worker can say the rest.

    Positions are in the caller's characters (every Text of the utterance, in order), audio in seconds."""

    ops: list[Op] = field(default_factory=list)
    sent_chars: int = 0
    heard_chars: int = 0  # the caller's characters the received chunks speak for (what is not sent again)
    chunks: int = 0
    audio_s: float = 0.0
    gen_time_s: float = 0.0
    moves: int = 0
    gap_s: float = 0.0  # summed: each from the worker's loss to the next worker's first chunk
    # where the attempt in flight starts, in the utterance's terms
    base_chars: int = 0
    base_chunks: int = 0
    base_audio_s: float = 0.0

    def sent(self, kind: str, text: str = "") -> None:
        self.ops.append((kind, text))
        self.sent_chars += len(text)

    @property
    def ssml(self) -> bool:
        text = "".join(t for kind, t in self.ops if kind == "text").lstrip()
        return text.startswith(("<speak", "<?xml", "<!DOCTYPE"))

    @property
    def movable(self) -> bool:
        """Whether the rest can be said elsewhere: plain text, or SSML of which nothing was heard yet."""
        return not self.ssml or self.chunks == 0

    def received(self, header: ChunkHeader) -> ChunkHeader:
        """A chunk of the attempt in flight, in the utterance's terms (seq, offset, word times and spans on from
        what earlier attempts delivered); what it speaks for counts as heard."""
        shift = self.base_chars

        def moved(span: list[int] | None) -> list[int] | None:
            return None if span is None else [span[0] + shift, span[1] + shift]

        words = None if header.words is None else [
            {**w, "start": w["start"] + self.base_audio_s, "end": w["end"] + self.base_audio_s,
             **({"span": moved(w["span"])} if w.get("span") is not None else {})} for w in header.words]
        out = replace(header, seq=header.seq + self.base_chunks, offset=header.offset + self.base_audio_s,
                      span=moved(header.span), words=words)
        ends = [s[1] for s in [out.span, *(w.get("span") for w in out.words or [])] if s is not None]
        self.heard_chars = max([self.heard_chars, *ends])
        self.chunks += 1
        self.audio_s = out.offset + out.duration
        self.gen_time_s += header.gen_time
        return out

    def resume(self) -> list[Op]:
        """The next attempt's messages: the caller's text after what was heard, the flushes after that point and the
        end in their places. (SSML, only movable while nothing was heard: all of it.)"""
        cut = 0 if self.ssml else self.heard_chars
        self.base_chars, self.base_chunks, self.base_audio_s = cut, self.chunks, self.audio_s
        self.moves += 1
        out: list[Op] = []
        at = 0
        for kind, text in self.ops:
            if kind == "text":
                rest = text[max(0, cut - at):]
                at += len(text)
                if rest:
                    out.append((kind, rest))
            elif kind == "end" or at > cut:
                out.append((kind, text))
        return out

    def played(self, seconds: float) -> float:
        """The listener's position in the utterance, as the attempt in flight counts its audio."""
        return max(0.0, seconds - self.base_audio_s)

    def done(self, done: Done) -> Done:
        """The last worker's summary as the whole utterance's."""
        if not self.moves:
            return done
        return replace(done, chunks=self.chunks, audio=round(self.audio_s, 3),
                       gen_time=round(self.gen_time_s, 4), failovers=self.moves, failover_gap=round(self.gap_s, 3))


StartOne = Callable[[], Awaitable[RemoteUtterance]]


async def _send_op(utterance: RemoteUtterance, kind: str, text: str) -> None:
    """One recorded message (``Op``) sent to ``utterance``: its text, flush or end."""
    await getattr(utterance, kind)(*([text] if kind == "text" else []))


class FailoverUtterance:
    """The interface of ``RemoteUtterance`` over any worker of the pool: when its worker goes away (an
    ``engine_unavailable``), the utterance is started again on the next one (``start_one``: the pool's least busy
    worker, the restarted one included) within ``policy.wait_s`` and the rest of it said there.

    Started with no worker (``first`` None: none was connected), it takes what it is sent and waits for one within
    the same ``policy.wait_s`` when its events are read (not a move: ``failovers`` does not count it); a cancel ends
    the wait at once."""

    def __init__(self, first: RemoteUtterance | None, start_one: StartOne, policy: FailoverPolicy,
                 on_move: Callable[[bool], None] = lambda moved: None, span: Span = NO_SPAN) -> None:
        """``on_move(moved)``: told each time a move succeeded (True) or was given up (False); ``span``: the
        utterance's trace, told of its text (with --trace-text), its first audio and its moves, ended with it."""
        self.id = first.id if first is not None else uuid.uuid4().hex[:12]
        self.span = span
        span.set(**{"utterance.id": self.id})
        self._inner = first
        self._start_one, self._policy, self._on_move = start_one, policy, on_move
        self._resume = Resume()
        self._lock = asyncio.Lock()  # one move at a time; what is sent during a move goes to the new worker
        self._cancelled = False
        self._ended = False
        self._lost_at: float | None = None  # when the worker in flight was lost, until the next one's first chunk

    @property
    def worker(self) -> str | None:
        """The URL of the worker saying it now (None while it waits for its first)."""
        return self._inner.worker if self._inner is not None else None

    @property
    def finished(self) -> bool:
        """Done, failed for good or cancelled (not while it moves)."""
        return self._cancelled or self._ended

    async def text(self, text: str) -> None:
        self.span.text("text", text)
        await self._send("text", text)

    async def flush(self) -> None:
        await self._send("flush")

    async def end(self) -> None:
        await self._send("end")

    async def playout(self, played: float) -> None:
        async with self._lock:
            if self._inner is None:
                return
            try:
                await self._inner.playout(self._resume.played(played))
            except EngineUnavailable:
                if not self._can_move():
                    raise

    async def cancel(self) -> None:
        if not self._ended:
            self.span.event("cancelled")
        self._cancelled = True
        self.span.end()
        if self._inner is not None:
            await self._inner.cancel()

    async def _send(self, kind: str, text: str = "") -> None:
        """Recorded, then sent to the worker in flight (none yet: its first is sent it all); a worker already gone
        is not an error while the utterance can move (the move sends it again)."""
        async with self._lock:
            self._resume.sent(kind, text)
            if self._inner is None:
                return
            try:
                await _send_op(self._inner, kind, text)
            except EngineUnavailable:
                if not self._can_move():
                    raise

    def _can_move(self) -> bool:
        return (self._policy.wait_s > 0 and self._resume.moves < self._policy.max_failovers and self._resume.movable
                and not self._cancelled)

    async def events(self) -> AsyncIterator[Chunk | Done]:
        """Chunks in order, then one ``Done`` (with ``failovers`` and ``failover_gap`` when it moved); raises
        ``EngineRequestError`` on a failure it cannot move past."""
        try:
            if self._inner is None and not await self._switch(moving=False):
                raise EngineRequestError(EngineUnavailable.code, f"no engine worker connected within "
                                         f"{self._policy.wait_s:g} s")
            while True:
                assert self._inner is not None
                try:
                    async for event in self._inner.events():
                        if isinstance(event, Done):
                            done = self._resume.done(event)
                            self.span.set(chunks=done.chunks, audio_s=done.audio, failovers=done.failovers)
                            self.span.end()
                            yield done
                            return
                        if self._resume.chunks == 0:
                            self.span.event("first_audio")
                        if self._lost_at is not None:
                            self._resume.gap_s += time.monotonic() - self._lost_at
                            self._lost_at = None
                        yield Chunk(replace(self._resume.received(event.header), id=self.id), event.pcm)
                    return
                except EngineRequestError as exc:
                    if exc.code != EngineUnavailable.code:
                        raise
                    self._lost_at = self._lost_at or time.monotonic()
                    if not (self._can_move() and await self._switch(moving=True)):
                        if self._policy.wait_s > 0 and not self._cancelled:
                            self.span.event("failover_given_up", worker=self.worker)
                            self._on_move(False)
                        raise
        except EngineRequestError as exc:
            self.span.end(error=exc.code)
            raise
        except (asyncio.CancelledError, GeneratorExit):
            self.span.event("cancelled")  # its consumer stopped taking it: a cancel, a barge-in, a client gone
            raise
        finally:
            self._ended = True
            self.span.end()

    async def _switch(self, moving: bool) -> bool:
        """Start the utterance on the next worker within the wait: the rest of it (``moving``: its worker went away),
        or all it was sent so far (its first worker); False when none took it or it was cancelled meanwhile."""
        deadline = time.monotonic() + self._policy.wait_s
        while not self._cancelled:
            async with self._lock:
                try:
                    utterance = await self._start_one()
                except EngineUnavailable:
                    utterance = None
                if utterance is not None and self._cancelled:  # cancelled while it started: nothing of it stays
                    await utterance.cancel()
                    return False
                if utterance is not None:
                    ops = self._resume.resume() if moving else list(self._resume.ops)
                    self._inner = utterance
                    try:
                        for kind, text in ops:
                            await _send_op(utterance, kind, text)
                    except EngineUnavailable:  # that one went too: its events say so, and the next move starts
                        pass
                    if moving:
                        log.info("utterance %s: its worker went away; going on on another from character %d "
                                 "(move %d)", self.id, self._resume.base_chars, self._resume.moves)
                        self.span.event("failover", move=self._resume.moves, worker=utterance.worker,
                                        from_char=self._resume.base_chars)
                        self._on_move(True)
                    else:
                        log.info("utterance %s: started on %s once it connected", self.id, utterance.worker)
                        self.span.event("worker_connected", worker=utterance.worker)
                    return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(WAIT_POLL_S)
        return False


Utterance = RemoteUtterance | FailoverUtterance
