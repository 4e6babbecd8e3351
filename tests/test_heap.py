"""engine/heap.py: freed heap really goes back to the system (glibc's malloc_trim, read from /proc)."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest

from cbf_tools.bench.procs import rss_mib as resident_mib
from engine import heap

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or heap._malloc_trim() is None,
                                reason="glibc's malloc_trim")


def rss_mib() -> float:
    return resident_mib(os.getpid())


def fragment_the_heap() -> list[bytes]:
    """~200 MiB in 2 KiB blocks (above pymalloc's size, so malloc's), then all but one in 64 freed: the pages in
    between hold only free chunks, which glibc keeps (the kept blocks pin the heap's top, so it cannot shrink)."""
    blocks = [bytes(2048 - 33) + bytes([i % 256]) for i in range(100_000)]
    kept = blocks[::64]
    del blocks
    return kept


def test_trim_returns_the_free_pages_between_live_blocks():
    kept = fragment_the_heap()
    before = rss_mib()
    assert heap.trim()
    after = rss_mib()
    assert before - after > 100, (before, after)
    assert len(kept) == 1563  # the live blocks are untouched


def test_trim_forever_trims_on_its_period_until_cancelled():
    async def main() -> tuple[float, float]:
        kept = fragment_the_heap()
        before = rss_mib()
        task = asyncio.create_task(heap.trim_forever(every_s=0.05))
        deadline = time.monotonic() + 30
        while (after := rss_mib()) > before - 101:  # until a trim has run (in a thread: later on a busy machine)
            if time.monotonic() > deadline:
                break  # the assertion below says by how much it fell short
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        del kept
        return before, after

    before, after = asyncio.run(main())
    assert before - after > 100, (before, after)


def test_an_import_of_new_modules_is_frozen_and_a_repeated_one_leaves_the_collector_as_it_was(tmp_path, monkeypatch):
    """collector_paused: the collector off inside; what a first import built frozen (never walked again), a cycle
    made after it collected as before; an import already done freezes nothing."""
    import gc
    import weakref

    (tmp_path / "cbf_heap_probe.py").write_text("TABLE = {i: [i] for i in range(1000)}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    frozen = gc.get_freeze_count()
    with heap.collector_paused():
        assert not gc.isenabled()
        import cbf_heap_probe  # noqa: F401
    assert gc.isenabled() and gc.get_freeze_count() >= frozen + 1000
    frozen = gc.get_freeze_count()
    with heap.collector_paused():
        import cbf_heap_probe  # noqa: F401,F811
    # nothing more frozen (fewer is another thread freeing frozen objects meanwhile: a CI run saw 2 fewer)
    assert gc.get_freeze_count() <= frozen
    del sys.modules["cbf_heap_probe"]

    class Node:
        pass

    cycle = Node()
    cycle.me = cycle
    gone = weakref.ref(cycle)
    del cycle
    gc.collect()
    assert gone() is None
