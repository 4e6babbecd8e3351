"""The prompt cache's pure parts: what a cached prompt is keyed on, what it holds, and the bounded store.

An entry is one whole utterance as the engine link delivered it: every chunk (24 kHz PCM, watermarked by the worker,
with its text, words and timing) and the engine's ``done``. Each transport encodes a hit as it encodes any
utterance, so the output format is not part of the key.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable

from engine.protocol import Chunk, ChunkHeader, Done, Reading, voice_key
from gateway.prompt_cache.prompts_file import Prompt


@dataclass(frozen=True)
class CacheSettings:
    """--cache-mib, --cache-dir, --cache-dir-mib, --cache-shared-across-keys, --prompts (gateway/cli.py)."""

    memory_mib: float = 64.0  # 0: no prompt cache
    directory: str | None = None
    directory_mib: float = 1024.0
    shared_across_keys: bool = False
    prompts: tuple[Prompt, ...] = ()  # the warm-up list, already checked

    @property
    def enabled(self) -> bool:
        return self.memory_mib > 0


ENTRY_OVERHEAD = 512  # bytes counted per chunk beside its PCM: its header, words and bookkeeping


def normal_text(text: str) -> str:
    """The text as the cache compares it: runs of whitespace one space, none at either end."""
    return " ".join(text.split())


@dataclass(frozen=True)
class PromptKey:
    """What makes two requests the same prompt. ``scope``: who may hear it (see ``scope_for``); ``engine``: the
    engine and its weights (a restart with another model does not hear the old one's audio)."""

    scope: str
    engine: str
    voice: str
    text: str
    reading: tuple[str, ...]

    @classmethod
    def of(cls, scope: str, engine: str, voice: str, text: str, reading: Reading) -> "PromptKey":
        fields = (reading.latency, reading.normalize, reading.speed, reading.lexicons)
        return cls(scope, engine, voice_key(voice), normal_text(text),
                   tuple(json.dumps(value, sort_keys=True) for value in fields))

    @property
    def digest(self) -> str:
        """A stable name for the key (the directory store's file name)."""
        raw = json.dumps([self.scope, self.engine, self.voice, self.text, list(self.reading)])
        return hashlib.sha256(raw.encode()).hexdigest()

    def uses(self, what: str, name: str) -> bool:
        """Whether this prompt was said with voice ``name`` (``what`` "voices") or may have been read with lexicon
        ``name`` (named in its reading; ``default``, which every utterance is read with; its voice's own)."""
        if what == "voices":
            return self.voice == voice_key(name)
        return name == "default" or self.voice == voice_key(name) or name in (json.loads(self.reading[3]) or [])


SCOPE_SHARED = "shared"  # every caller (--cache-shared-across-keys)
SCOPE_OPEN = "open"  # no API keys configured
SCOPE_WARM = "warm"  # the operator's warm-up prompts (--prompts): heard by every caller


def scope_for(key: str | None, tenant: str | None, guarded: bool, shared: bool) -> str | None:
    """The scope a request's entries live in: its keys file tenant's (under whichever of its keys), else a hash of its
    API key, so one tenant never hears another's prompts (nor learns by timing that they were said); None: not cached
    (keys are on but this request's key is not known here)."""
    if shared:
        return SCOPE_SHARED
    if tenant is not None:
        return "tenant:" + tenant
    if not guarded:
        return SCOPE_OPEN
    if key is None:
        return None
    return "key:" + hashlib.sha256(key.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class CachedPrompt:
    key: PromptKey
    text: str  # the caller's text as first said (the chunks' spans count its characters)
    chunks: tuple[Chunk, ...]
    done: Done

    @property
    def size(self) -> int:
        return sum(len(chunk.pcm) + ENTRY_OVERHEAD for chunk in self.chunks)

    def for_text(self, text: str) -> tuple[Chunk, ...]:
        """The chunks with their spans in ``text``'s characters (the same prompt, its whitespace perhaps not)."""
        if text == self.text:
            return self.chunks
        moved = respan(self.text, text)
        return tuple(Chunk(_moved_header(chunk.header, moved), chunk.pcm) for chunk in self.chunks)


def _moved_header(header: ChunkHeader, moved: Callable[[list[int]], list[int]]) -> ChunkHeader:
    words = None if header.words is None else [
        {**w, **({"span": moved(w["span"])} if w.get("span") is not None else {})} for w in header.words]
    return replace(header, span=None if header.span is None else moved(header.span), words=words)


def respan(old: str, new: str) -> Callable[[list[int]], list[int]]:
    """A span ``[start, end)`` of ``old`` as the same characters of ``new``, two texts with the same characters
    but for their whitespace: each end goes to the place of the same count of non-space characters."""
    def places(text: str) -> list[int]:  # where each non-space character sits
        return [i for i, ch in enumerate(text) if not ch.isspace()]

    old_at, new_at = places(old), places(new)

    def counted(position: int) -> int:  # non-space characters of ``old`` before ``position``
        lo, hi = 0, len(old_at)
        while lo < hi:
            mid = (lo + hi) // 2
            if old_at[mid] < position:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def start(position: int) -> int:
        n = counted(position)
        return new_at[n] if n < len(new_at) else len(new)

    def end(position: int) -> int:
        n = counted(position)
        return new_at[n - 1] + 1 if n > 0 else 0

    return lambda span: [start(span[0]), max(start(span[0]), end(span[1]))]


class LruBytes:
    """Entries by digest, at most ``limit`` bytes of them; the least recently used go first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.bytes = 0
        self._entries: OrderedDict[str, CachedPrompt] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, digest: str) -> CachedPrompt | None:
        entry = self._entries.get(digest)
        if entry is not None:
            self._entries.move_to_end(digest)
        return entry

    def put(self, entry: CachedPrompt) -> list[str]:
        """Store ``entry`` (one over the whole limit is not stored); returns the digests evicted for it."""
        digest = entry.key.digest
        self.remove(digest)
        if entry.size > self.limit:
            return []
        evicted = []
        while self.bytes + entry.size > self.limit:
            old, gone = self._entries.popitem(last=False)
            self.bytes -= gone.size
            evicted.append(old)
        self._entries[digest] = entry
        self.bytes += entry.size
        return evicted

    def remove(self, digest: str) -> bool:
        entry = self._entries.pop(digest, None)
        if entry is not None:
            self.bytes -= entry.size
        return entry is not None

    def drop(self, which: Callable[[PromptKey], bool]) -> list[str]:
        """Remove every entry whose key ``which`` picks; returns their digests."""
        gone = [digest for digest, entry in self._entries.items() if which(entry.key)]
        for digest in gone:
            self.remove(digest)
        return gone
