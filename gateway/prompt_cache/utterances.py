"""The prompt cache's two utterances, each with the interface of the engine pool's (``FailoverUtterance``).

``CachedUtterance`` is a hit: the stored chunks at once, then the stored ``done``; nothing reaches an engine.
``RecordingUtterance`` is a miss: the engine's utterance passed through unchanged, its chunks kept, and handed to
the cache once it ends whole (every text sent, ended, not cancelled, not failed, never moved to another worker).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import AsyncIterator, Callable

from engine.protocol import Chunk, Done
from engine.traces import NO_SPAN, Span
from gateway.engine_link.failover import FailoverUtterance
from gateway.prompt_cache.store import CachedPrompt, PromptKey


class CachedUtterance:
    """A stored prompt said again under a new id. Text, flushes and playout reports are taken and ignored."""

    cached = True
    worker = "prompt cache"

    def __init__(self, entry: CachedPrompt, text: str, span: Span = NO_SPAN) -> None:
        self.id = uuid.uuid4().hex
        self._chunks, self._done = entry.for_text(text), entry.done
        self.finished = False
        self.span = span  # the utterance's trace: a hit's first audio and end, no worker under it
        span.set(cached=True, **{"utterance.id": self.id})

    async def text(self, text: str) -> None:
        pass

    async def flush(self) -> None:
        pass

    async def end(self) -> None:
        pass

    async def playout(self, played: float) -> None:
        pass

    async def cancel(self) -> None:
        if not self.finished:
            self.span.event("cancelled")
        self.finished = True

    async def events(self) -> AsyncIterator[Chunk | Done]:
        try:
            for n, chunk in enumerate(self._chunks):
                if self.finished:
                    return
                if n == 0:
                    self.span.event("first_audio")
                yield Chunk(replace(chunk.header, id=self.id), chunk.pcm)
            yield replace(self._done, id=self.id)
        finally:
            self.finished = True
            self.span.end()


class RecordingUtterance:
    """``inner`` passed through; ``store(entry)`` is given it once it ended whole as the text ``text``. Recording
    stops (nothing is stored) past ``limit`` bytes of audio."""

    cached = False

    def __init__(self, inner: FailoverUtterance, key: PromptKey, text: str, limit: int,
                 store: Callable[[CachedPrompt], None]) -> None:
        self._inner, self._key, self._text, self._limit, self._store = inner, key, text, limit, store
        self._sent: list[str] = []
        self._whole = True  # nothing but the text, then the end
        self._ended = self._cancelled = False
        self.id = inner.id
        self.span = inner.span

    @property
    def worker(self) -> str:
        return self._inner.worker

    @property
    def finished(self) -> bool:
        return self._inner.finished

    async def text(self, text: str) -> None:
        self._whole = self._whole and not self._ended
        self._sent.append(text)
        await self._inner.text(text)

    async def flush(self) -> None:
        self._whole = False
        await self._inner.flush()

    async def end(self) -> None:
        self._ended = True
        await self._inner.end()

    async def playout(self, played: float) -> None:
        await self._inner.playout(played)

    async def cancel(self) -> None:
        if not self._inner.finished:
            self._cancelled = True
        await self._inner.cancel()

    async def events(self) -> AsyncIterator[Chunk | Done]:
        chunks: list[Chunk] | None = []
        size = 0
        async for event in self._inner.events():
            if isinstance(event, Chunk) and chunks is not None:
                size += len(event.pcm)
                if size <= self._limit:
                    chunks.append(event)
                else:
                    chunks = None
            elif isinstance(event, Done) and chunks and self._complete(event):
                self._store(CachedPrompt(self._key, self._text, tuple(chunks), event))
            yield event

    def _complete(self, done: Done) -> bool:
        return (self._whole and self._ended and not self._cancelled and not done.failovers
                and "".join(self._sent) == self._text)


Spoken = FailoverUtterance | RecordingUtterance | CachedUtterance  # what PromptCache.start gives
