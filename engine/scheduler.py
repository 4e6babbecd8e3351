"""One generation at a time on the device, most urgent first.

Several utterances share one model. A first-in-first-out queue would make a new caller's first chunk wait behind
other callers' long chunks, and a listener about to run dry wait behind one with seconds in hand. Each job instead
carries a deadline (when its listener would run out of audio: now for a first chunk, now + buffered audio for a later
one) and the single device thread always takes the earliest.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable

from engine import device_errors


class DeviceQueue:
    def __init__(self, name: str = "gen") -> None:
        self._jobs: list[tuple[float, int, Callable[..., Any], tuple[Any, ...], Future[Any]]] = []
        self._order = itertools.count()  # equal deadlines keep their arrival order
        self._ready = threading.Condition()
        self._closed = False
        self.busy_since: float | None = None  # monotonic start of the call running now (engine/watchdog.py)
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

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
            self._ready.notify()
        self._thread.join()

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
            self.busy_since = time.monotonic()
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to the awaiting coroutine, never lost on this thread
                future.set_exception(exc)
                device_errors.check(exc)  # a sticky CUDA error ends the worker (engine/device_errors.py)
            finally:
                self.busy_since = None
