"""The prompt cache of one gateway process: lookups, stores, drops, warm-up, and its figures.

``start`` is where a request whose whole text is known at its start (/v1/tts, /v1/audio/speech, a WebSocket or
WebRTC ``speak``, a controller's speak) gets its utterance: a hit is served from memory (or the directory, then kept
in memory), a miss starts the engine's and records it. (Text that streams in, Wyoming's and ElevenLabs' included, is
not looked up: its whole is not known at its start.) Entries are scoped by API key
(store.scope_for); the warm-up prompts (--prompts) are heard by every caller.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from engine.protocol import Reading
from engine.traces import NO_SPAN, Span
from gateway.engine_link.failover import FailoverUtterance
from gateway.engine_link.pool import EnginePool
from gateway.metrics import Metrics
from gateway.prompt_cache.disk import DirectoryStore
from gateway.prompt_cache.prompts_file import Prompt
from gateway.prompt_cache.shared_drops import SharedDrops
from gateway.prompt_cache.store import SCOPE_WARM, CachedPrompt, CacheSettings, LruBytes, PromptKey, scope_for
from gateway.prompt_cache.utterances import CachedUtterance, RecordingUtterance, Spoken

log = logging.getLogger("chatterbox_fast.gateway")
MIB = 1024 * 1024


class PromptCache:
    def __init__(self, settings: CacheSettings, engine: EnginePool, guarded: Callable[[], bool],
                 metrics: Metrics, shared_dir: str | None = None) -> None:
        """``guarded``: whether keys are in force now (a keys file's reload may change it); ``shared_dir``: the
        directory of ``serve --processes N``, through which its processes tell each other their drops."""
        self.settings, self.engine, self.guarded, self.metrics = settings, engine, guarded, metrics
        self.memory = LruBytes(int(settings.memory_mib * MIB))
        self.directory = (DirectoryStore(Path(settings.directory), int(settings.directory_mib * MIB))
                          if settings.enabled and settings.directory else None)
        self.counts = {"hits": 0, "misses": 0, "stored": 0, "evicted": 0, "dropped": 0}
        self.warm_up = {"prompts": len(settings.prompts), "done": 0, "failed": 0}
        self._epoch = 0  # bumped by every drop: a recording begun before it is not stored after it
        self._engine: str | None = None  # the last ready engine and weights: a hit needs no worker up
        self.siblings = SharedDrops(shared_dir) if shared_dir and settings.enabled else None
        self._gauge()

    def _key(self, voice: str, text: str, reading: Reading, scope: str | None) -> PromptKey | None:
        if (ready := self.engine.ready) is not None:
            self._engine = f"{ready.engine}|{ready.weights}"
        if scope is None or self._engine is None:
            return None
        return PromptKey.of(scope, self._engine, voice, text, reading)

    async def start(self, voice: str, reading: Reading, text: str, *, api_key: str | None,
                    tenant: str | None = None, use: bool = True, span: Span = NO_SPAN) -> Spoken:
        """The utterance of ``text`` (its caller then sends the text and the end as to any): a ``CachedUtterance``
        on a hit, else the engine pool's, recorded when it may be cached. ``use``: the request's ``cache``;
        ``span``: the utterance's trace (gateway/traces.py)."""
        scope = scope_for(api_key, tenant, self.guarded(), self.settings.shared_across_keys)
        key = self._key(voice, text, reading, scope) if use and self.settings.enabled else None
        if key is not None:
            entry = await self._lookup(key) or await self._lookup(replace(key, scope=SCOPE_WARM))
            self._count("hit" if entry else "miss")
            if entry is not None:
                return CachedUtterance(entry, text, span)
        utterance = await self.engine.start(voice, reading, span)
        if key is None:
            return utterance
        return self._recorded(utterance, key, text)

    async def _lookup(self, key: PromptKey) -> CachedPrompt | None:
        self._siblings_drops()
        if (entry := self.memory.get(key.digest)) is not None and entry.key == key:
            return entry
        if self.directory is not None and key.digest in self.directory:
            epoch = self._epoch
            entry = await asyncio.to_thread(self.directory.get, key)
            if entry is not None and epoch == self._epoch:
                self._keep(entry)
                return entry
        return None

    def _count(self, outcome: str) -> None:
        self.counts["hits" if outcome == "hit" else "misses"] += 1
        self.metrics.prompt_cache.labels(outcome).inc()

    def _keep(self, entry: CachedPrompt) -> None:
        evicted = self.memory.put(entry)
        self.counts["evicted"] += len(evicted)
        self._gauge()

    def _recorded(self, utterance: FailoverUtterance, key: PromptKey, text: str) -> RecordingUtterance:
        """``utterance`` recorded for the cache: stored once whole, unless a drop came while it was said."""
        epoch = self._epoch

        def store(entry: CachedPrompt) -> None:
            self._siblings_drops()
            if epoch == self._epoch:
                self._store(entry)

        return RecordingUtterance(utterance, key, text, self.memory.limit, store)

    def _store(self, entry: CachedPrompt) -> None:
        self._keep(entry)
        self.counts["stored"] += 1
        if self.directory is not None and self.directory.usable:
            asyncio.get_running_loop().run_in_executor(None, self.directory.put, entry)

    def drop(self, what: str, name: str) -> None:
        """Every entry said with voice ``name`` (``what`` "voices") or read with lexicon ``name`` (``what``
        "lexicons"): it was uploaded again or deleted. The other processes of ``serve --processes N`` are told."""
        if self.siblings is not None:
            self.siblings.tell(what, name)
        self._drop(what, name)

    def _siblings_drops(self) -> None:
        """Carry out the drops other processes told since the last look."""
        for what, name in self.siblings.news() if self.siblings is not None else []:
            self._drop(what, name)

    def _drop(self, what: str, name: str) -> None:
        self._epoch += 1
        which = lambda key: key.uses(what, name)  # noqa: E731
        self.counts["dropped"] += len(self.memory.drop(which))
        if self.directory is not None:
            self.directory.drop(which)
        self._gauge()

    def _gauge(self) -> None:
        self.metrics.prompt_cache_bytes.labels("memory").set(self.memory.bytes)
        if self.directory is not None:
            self.metrics.prompt_cache_bytes.labels("directory").set(self.directory.bytes)

    async def warm(self, prompts: Sequence[Prompt]) -> None:
        """Say each warm-up prompt once, when an engine is ready, into the scope every caller hears."""
        if not prompts or not self.settings.enabled:
            return
        await self.engine.wait_ready(float("inf"))
        for prompt in prompts:
            key = self._key(prompt.voice, prompt.text, prompt.reading, SCOPE_WARM)
            try:
                if key is None or await self._lookup(key) is None:
                    await self._say(prompt, key)
                self.warm_up["done"] += 1
            except Exception as exc:  # an unknown voice, the worker gone...: the others are said all the same
                self.warm_up["failed"] += 1
                log.warning("prompt cache warm-up: %r not said: %s", prompt.text[:60], exc)
        log.info("prompt cache warm-up: %d of %d prompts ready", self.warm_up["done"], self.warm_up["prompts"])

    async def _say(self, prompt: Prompt, key: PromptKey | None) -> None:
        if key is None:
            raise RuntimeError("no engine is ready")
        utterance = self._recorded(await self.engine.start(prompt.voice, prompt.reading), key, prompt.text)
        await utterance.text(prompt.text)
        await utterance.end()
        async for _ in utterance.events():
            pass

    def health(self) -> dict[str, Any]:
        """For /health."""
        body: dict[str, Any] = {"enabled": self.settings.enabled, **self.counts, "entries": len(self.memory),
                                "bytes": self.memory.bytes, "limit_bytes": self.memory.limit,
                                "shared_across_keys": self.settings.shared_across_keys}
        if self.warm_up["prompts"]:
            body["warm_up"] = dict(self.warm_up)
        if self.directory is not None:
            body["directory"] = {"path": str(self.directory.path), "usable": self.directory.usable,
                                 "entries": len(self.directory), "bytes": self.directory.bytes,
                                 "limit_bytes": self.directory.limit,
                                 **({"problem": self.directory.problem} if self.directory.problem else {})}
        return body
