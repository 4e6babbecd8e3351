"""Idle unload: the model freed after ``--unload-after`` seconds with no utterance (or on demand: POST
/v1/admin/unload), loaded again by the next utterance that needs it (or POST /v1/admin/load).

The model is in one of four states, announced to every gateway in a new ``ready`` on each change (/health's
``engine.state``): ``loaded``, ``unloading``, ``unloaded``, ``loading``. Unloading drops every reference the worker
holds to the engine (its place taken by a ``ParkedEngine`` that keeps only what describes it), closes its threads,
collects and hands the freed heap back to the system (``malloc_trim``): a CPU engine's weights leave the process's
memory, a GPU engine's the device's. The voices' conditionals stay, in host memory. Loading goes through the same
path as a cold start: ``load_engine``, then ``warmup`` (for Turbo the CUDA graphs' start-up self-checks), then a
first chunk.

Everything here runs on the worker's event loop; loading and unloading themselves run in a thread. An utterance
``use``s the engine from its first device call to its end: one arriving while the model unloads waits for that, then
loads it again; nothing unloads while one is in use.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from engine import heap
from engine.engines.base import EngineError, EngineInfo

log = logging.getLogger("chatterbox_fast.engine")

LOADED, UNLOADING, UNLOADED, LOADING = "loaded", "unloading", "unloaded", "loading"
STATES = (LOADED, UNLOADING, UNLOADED, LOADING)
POLL_S = 0.1  # how often the idle clock is looked at (unloaded within this much of --unload-after)


class ModelUnloaded(EngineError, AttributeError):
    """What asking a parked engine for its model raises (an AttributeError too: ``hasattr`` and ``getattr`` with a
    default answer as for an engine without that attribute)."""


class ParkedEngine:
    """What stands in for an unloaded engine: its description (the greeting, traces, the planner's device), its
    conditionals' file suffix and rate; no model. Any device call is a bug: the worker loads before it makes one."""

    def __init__(self, engine: Any) -> None:
        self.info: EngineInfo = engine.info
        self.sample_rate: int = engine.sample_rate
        self.conditionals_suffix: str = engine.conditionals_suffix
        self.busy_since: float | None = None

    def prompt_cache(self) -> dict[str, int] | None:
        return None  # freed with the model

    def named_voices(self) -> dict[str, Any]:
        return {}

    def __getattr__(self, name: str) -> Any:
        raise ModelUnloaded(f"the model is unloaded (asked for {name!r})", "unloaded")


class Residency:
    """The model's state, and the utterances using it. ``swap_out()`` (in a thread) parks the engine and returns how
    the voices' conditionals were moved; ``swap_in()`` (in a thread) loads and warms a new one."""

    def __init__(self, swap_out: Callable[[], None], swap_in: Callable[[], None],
                 announce: Callable[[str], Awaitable[None]], unload_after: float | None = None) -> None:
        self.state = LOADED
        self.unload_after = unload_after
        self.users = 0
        self.last_used = time.monotonic()
        self.last_reload_s: float | None = None
        self.unloads = 0
        self._swap_out = swap_out
        self._swap_in = swap_in
        self._announce = announce
        self._changed = asyncio.Condition()
        self._loading: asyncio.Task[float] | None = None

    async def _set(self, state: str) -> None:
        async with self._changed:
            self.state = state
            self._changed.notify_all()
        await self._announce(state)

    async def use(self) -> float | None:
        """Wait until the model is loaded (loading it if it is not), and count the caller as using it until
        ``done()``. Returns the seconds the caller waited for a reload, or None when it was loaded."""
        waited_from: float | None = None
        while True:
            if self.state == LOADED:
                self.users += 1
                return None if waited_from is None else round(time.monotonic() - waited_from, 4)
            if waited_from is None:
                waited_from = time.monotonic()
            if self.state == UNLOADED:
                await self.load()  # raises when loading fails: this caller fails with it
                continue
            async with self._changed:
                await self._changed.wait_for(lambda: self.state in (LOADED, UNLOADED))

    def done(self) -> None:
        self.users -= 1
        self.last_used = time.monotonic()

    async def load(self) -> float | None:
        """Load the model now (the one load under way, if any); the seconds it took, None when it was loaded."""
        while self.state == UNLOADING:
            async with self._changed:
                await self._changed.wait_for(lambda: self.state != UNLOADING)
        if self.state == LOADED:
            return None
        if self._loading is None:
            self._loading = asyncio.create_task(self._load())
        loading = self._loading
        return await asyncio.shield(loading)

    async def _load(self) -> float:
        await self._set(LOADING)
        t0 = time.monotonic()
        try:
            await asyncio.to_thread(self._swap_in)
        except BaseException as exc:
            log.error("loading the model again failed: %s", exc)
            self._loading = None
            await self._set(UNLOADED)
            if isinstance(exc, EngineError):
                raise
            raise EngineError(f"loading the model again failed: {type(exc).__name__}: {exc}", "load_failed") from exc
        took = time.monotonic() - t0
        self.last_reload_s = round(took, 4)
        self.last_used = time.monotonic()
        self._loading = None
        await self._set(LOADED)
        log.info("model loaded again in %.2f s", took)
        return round(took, 4)

    async def unload(self) -> bool:
        """Free the model now unless something uses it (False then); True once it is unloaded (or was)."""
        if self.state in (UNLOADED, UNLOADING):
            async with self._changed:
                await self._changed.wait_for(lambda: self.state != UNLOADING)
            return self.state == UNLOADED
        if self.state != LOADED or self.users:
            return False
        await self._set(UNLOADING)
        t0 = time.monotonic()
        try:
            await asyncio.to_thread(self._swap_out)
        except BaseException:
            log.exception("unloading the model failed; it stays loaded")
            await self._set(LOADED)
            return False
        self.unloads += 1
        await self._set(UNLOADED)
        log.info("model unloaded in %.2f s (idle %.1f s)", time.monotonic() - t0, time.monotonic() - self.last_used)
        return True

    def idle(self, now: float) -> bool:
        return (self.unload_after is not None and self.state == LOADED and not self.users
                and now - self.last_used >= self.unload_after)

    async def watch(self, busy: Callable[[], bool]) -> None:
        """Unload once idle for ``unload_after`` seconds; ``busy()``: utterances that have not started using it yet."""
        while True:
            await asyncio.sleep(POLL_S)
            now = time.monotonic()
            if busy():
                self.last_used = now
            elif self.idle(now):
                await self.unload()


def release_memory() -> None:
    """What an unloaded engine left behind handed back: objects collected, the freed heap returned, the CUDA caching
    allocator's blocks given back to the device where torch is loaded."""
    gc.collect()
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    heap.trim()
