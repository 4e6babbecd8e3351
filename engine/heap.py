"""Hands freed heap back to the system now and then, in the gateway and the engine worker alike; holds the cyclic
garbage collector off while a large library is imported.

glibc keeps what a burst of utterances freed (in the arenas of the threads that allocated it: encoders, resamplers,
the model) for reuse instead of returning it, so a long-running process's resident size creeps up while its live
objects do not: `bench soak` measured +1.3 MiB a minute with tracemalloc and gc object counts flat, and flat memory
with ``malloc_trim`` every 30 s. Where the C library has no ``malloc_trim`` (musl, macOS) this does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import gc
import logging
import sys
from collections.abc import Callable, Iterator
from functools import cache

log = logging.getLogger("chatterbox_fast.engine")

TRIM_EVERY_S = 30.0


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return getattr(libc, "malloc_trim", None)


def trim() -> bool:
    """Return the heap's free pages to the system at once; False where the C library cannot."""
    malloc_trim = _malloc_trim()
    if malloc_trim is None:
        return False
    malloc_trim(0)
    return True


async def trim_forever(every_s: float = TRIM_EVERY_S) -> None:
    """``trim`` every ``every_s`` seconds until cancelled, in a thread (it walks the whole heap; ctypes lets the GIL
    go, so the event loop's 20 ms ticks never wait on it)."""
    if _malloc_trim() is None:
        log.debug("no malloc_trim in this C library: freed heap stays with the process")
        return
    while True:
        await asyncio.sleep(every_s)
        await asyncio.to_thread(trim)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a large library is imported (torch; PerTh with librosa, scipy
    and numba; Chatterbox with transformers), and what an import that loaded new modules built frozen
    (``gc.freeze``): hundreds of thousands of objects that live as long as the process, which each full collection of
    the growing heap walked again and again, and every later one would walk too (a pause on the thread that speaks).
    ``gc.freeze`` keeps everything then alive from every later collection, so each caller imports before its process
    loads a model (the worker's first torch, PerTh and Turbo imports): a model stays collectable (an idle unload
    frees its cycles), and so does anything made later; an import already done freezes nothing."""
    enabled = gc.isenabled()
    modules = len(sys.modules)
    gc.disable()
    try:
        yield
    finally:
        if len(sys.modules) > modules:
            gc.freeze()
        if enabled:
            gc.enable()
