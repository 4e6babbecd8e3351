"""One generation at a time on the device, most urgent first.

Several utterances share one model. A first-in-first-out queue would make a new caller's first chunk wait behind
other callers' long chunks, and a listener about to run dry wait behind one with seconds in hand. Each job instead
carries a deadline (when its listener would run out of audio: now for a first chunk, now + buffered audio for a later
one) and the single device thread always takes the earliest. An engine whose model runs in another server that
serves several requests at once (engine/engines/http.py) gets that many threads, each taking the earliest.

``Gathered`` sits on the device queue for calls that take many items at once (S3Gen over several callers' chunks):
items that arrive close together run as one call, and a call never waits for company beyond a small window.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from engine import device_errors


class DeviceQueue:
    def __init__(self, name: str = "gen", threads: int = 1) -> None:
        self._jobs: list[tuple[float, int, Callable[..., Any], tuple[Any, ...], Future[Any]]] = []
        self._order = itertools.count()  # equal deadlines keep their arrival order
        self._ready = threading.Condition()
        self._closed = False
        self._running: dict[int, float] = {}  # thread ident -> monotonic start of the call it runs now
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}" if threads > 1 else name,
                                          daemon=True) for i in range(threads)]
        for thread in self._threads:
            thread.start()

    @property
    def busy_since(self) -> float | None:
        """Monotonic start of the oldest call running now; None while every thread waits (engine/watchdog.py)."""
        return min(list(self._running.values()), default=None)  # list(): one step, as threads come and go

    def submit(self, deadline: float, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run ``fn(*args)`` on the device thread, before every queued job with a later deadline."""
        future: Future[Any] = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("the device queue is closed")
            heapq.heappush(self._jobs, (deadline, next(self._order), fn, args, future))
            self._ready.notify()
        return future

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        for thread in self._threads:
            thread.join()

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._jobs and not self._closed:
                    self._ready.wait()
                if not self._jobs:
                    return
                _, _, fn, args, future = heapq.heappop(self._jobs)
            if not future.set_running_or_notify_cancel():
                continue
            me = threading.get_ident()
            self._running[me] = time.monotonic()
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to the awaiting coroutine, never lost on this thread
                future.set_exception(exc)
                device_errors.check(exc)  # a sticky CUDA error ends the worker (engine/device_errors.py)
            finally:
                del self._running[me]


def closes_at(arrived: float, earliest_deadline: float, window_s: float) -> float:
    """When a gathering call stops waiting for more items: ``window_s`` after its first item arrived, or after its
    earliest listener deadline where that came first (a listener already past its deadline waits less)."""
    return min(arrived, earliest_deadline) + window_s


@dataclass(order=True)
class _Item:
    deadline: float
    order: int
    arrived: float = field(compare=False)
    value: Any = field(compare=False)
    future: Future[Any] = field(compare=False, default_factory=Future)


class Gathered:
    """``run(items) -> results`` on the device queue over every item waiting when it starts (at most ``max_items``,
    earliest deadline first). A call starts at its earliest item's deadline, like any device job; if it finds fewer
    than ``max_items`` it waits for more until ``closes_at``. A call that raises is retried item by item, so one bad
    item fails alone."""

    def __init__(self, queue: DeviceQueue, run: Callable[[Sequence[Any]], list[Any]], max_items: int,
                 window_s: float) -> None:
        self.queue, self.run, self.max_items, self.window_s = queue, run, max_items, window_s
        self.sizes: list[int] = []  # items per call, in order (for benchmarks and tests)
        self._pending: list[_Item] = []
        self._order = itertools.count()
        self._queued: float | None = None  # the deadline of the earliest call queued and not yet started
        self._more = threading.Condition()

    def submit(self, deadline: float, value: Any) -> Future[Any]:
        item = _Item(deadline, next(self._order), time.monotonic(), value)
        with self._more:
            heapq.heappush(self._pending, item)
            self._more.notify()
            self._queue_call(deadline)
        return item.future

    def _queue_call(self, deadline: float) -> None:
        if self._queued is None or deadline < self._queued:
            self._queued = deadline
            self.queue.submit(deadline, self._call)

    def _take(self) -> list[_Item]:
        with self._more:
            self._queued = None
            while self._pending and len(self._pending) < self.max_items:
                wait = closes_at(min(i.arrived for i in self._pending), self._pending[0].deadline,
                                 self.window_s) - time.monotonic()
                if wait <= 0:
                    break
                self._more.wait(wait)
            taken = [heapq.heappop(self._pending) for _ in range(min(self.max_items, len(self._pending)))]
            if self._pending:
                self._queue_call(self._pending[0].deadline)
        return [item for item in taken if item.future.set_running_or_notify_cancel()]

    def _call(self) -> None:
        items = self._take()
        if not items:
            return
        self.sizes.append(len(items))
        try:
            results = self.run([item.value for item in items])
        except BaseException as exc:
            if len(items) == 1:
                items[0].future.set_exception(exc)
                return
            for item in items:
                self._alone(item)
            return
        for item, result in zip(items, results):
            item.future.set_result(result)

    def _alone(self, item: _Item) -> None:
        try:
            item.future.set_result(self.run([item.value])[0])
        except BaseException as exc:
            item.future.set_exception(exc)
