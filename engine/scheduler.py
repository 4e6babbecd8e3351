"""One generation at a time on the device, most urgent first.

Several utterances share one model. A first-in-first-out queue would make a new caller's first chunk wait behind
other callers' long chunks, and a listener about to run dry wait behind one with seconds in hand. Each job instead
carries a deadline (when its listener would run out of audio: now for a first chunk, now + buffered audio for a later
one) and the single device thread always takes the earliest. An engine whose model runs in another server that
serves several requests at once (engine/engines/http.py) gets that many threads, each taking the earliest.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable


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
            finally:
                del self._running[me]
