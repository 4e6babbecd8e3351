"""The continuous-batching loop: one thread owns the ``BatchDecoder`` and serves token requests from any thread.

Between two decode steps it admits waiting requests into free slots, earliest listener deadline first, and prefills
the ones admitted together in one batched prefill; after each
step it drops cancelled slots (so a cancel takes effect within one step) and hands finished slots' tokens to their
futures. Stop tokens are read back every ``check_every`` steps, not every step. On CUDA the thread works on the
decoder's own device and a stream of its own, so its steps do not queue behind S3Gen's or PerTh's kernels, and
graphs captured for that device replay there. ``call`` runs other work on that same thread (the CUDA-graph captures
and their self-check at warm-up). A sticky CUDA error (engine/device_errors.py) ends the worker instead of failing
every later step.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from engine import device_errors

from .base import Cancelled
from .t3_batch import BatchDecoder, Join
from .t3_static import VoicePrefix

log = logging.getLogger("chatterbox_fast.engine")


@dataclass(order=True)
class TokenRequest:
    """Speech tokens wanted for one chunk. Ordered by deadline (when its listener runs out of audio)."""

    deadline: float
    order: int
    voice: Any = field(compare=False)
    text_tokens: torch.Tensor = field(compare=False)
    budget: int = field(compare=False)  # most tokens to sample after the first
    seed: int = field(compare=False)
    cancel: threading.Event = field(compare=False)
    future: Future[list[int]] = field(compare=False, default_factory=Future)


class DecodeLoop:
    def __init__(self, decoder: BatchDecoder, prefix_for: Callable[[Any], VoicePrefix], check_every: int = 4,
                 name: str = "t3-decode") -> None:
        self.decoder = decoder
        self.prefix_for = prefix_for
        self.check_every = check_every
        self.steps = 0
        self.most_live = 0  # the most slots ever decoded in one step (a figure for benchmarks and tests)
        self.most_joined = 0  # the most requests ever prefilled together
        self.busy_since: float | None = None  # monotonic start of the step or prefill running now (engine/watchdog.py)
        self._pending: list[TokenRequest] = []
        self._calls: list[tuple[Callable[[], Any], Future[Any]]] = []
        self._order = itertools.count()
        self._running: dict[int, TokenRequest] = {}
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, voice: Any, text_tokens: torch.Tensor, budget: int, seed: int, cancel: threading.Event,
               deadline: float) -> Future[list[int]]:
        """Queue a request; its future gets the tokens (stop token excluded) or raises ``Cancelled``."""
        request = TokenRequest(deadline, next(self._order), voice, text_tokens, budget, seed, cancel)
        with self._wake:
            if self._closed:
                raise RuntimeError("the decode loop is closed")
            heapq.heappush(self._pending, request)
            self._wake.notify()
        return request.future

    def call(self, fn: Callable[[], Any]) -> Future[Any]:
        """Run ``fn`` on the loop's thread (its device and stream) before the next admission; its result or error
        goes to the future."""
        future: Future[Any] = Future()
        with self._wake:
            if self._closed:
                raise RuntimeError("the decode loop is closed")
            self._calls.append((fn, future))
            self._wake.notify()
        return future

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join()

    def _run(self) -> None:
        with torch.inference_mode(), on_device(self.decoder.device):
            while self._admit():
                if self.decoder.live:
                    self.busy_since = time.monotonic()
                    try:
                        self._step()
                    finally:
                        self.busy_since = None

    def _admit(self) -> bool:
        """Move waiting requests into free slots, earliest deadline first; False once closed."""
        with self._wake:
            while not self._pending and not self._calls and not self.decoder.live and not self._closed:
                self._wake.wait()
            calls, self._calls = self._calls, []
        for fn, future in calls:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:
                    future.set_exception(exc)
        with self._wake:
            if self._closed:
                for request in self._pending + list(self._running.values()):
                    request.future.cancel() or request.future.set_exception(Cancelled())
                return False
            admitted = []
            while self._pending and len(admitted) < self._free_slots():
                admitted.append(heapq.heappop(self._pending))
        if admitted:
            self.busy_since = time.monotonic()
            try:
                joining = self._joining(admitted)
                if joining:
                    self._join(joining)
            finally:
                self.busy_since = None
        return True

    def _joining(self, admitted: list[TokenRequest]) -> list[tuple[TokenRequest, Join]]:
        """The admitted requests still wanted, each with its slot, its voice's prefix and its generator."""
        joining: list[tuple[TokenRequest, Join]] = []
        for request in admitted:
            if not request.future.set_running_or_notify_cancel():
                continue
            if request.cancel.is_set():
                request.future.set_exception(Cancelled())
                continue
            slot = self.decoder.free_slot(taken=[join.slot for _, join in joining])
            assert slot is not None
            generator = torch.Generator(self.decoder.device).manual_seed(request.seed)
            try:
                prefix = self.prefix_for(request.voice)
            except Exception as exc:  # a voice whose prefix fails fails alone
                log.exception("voice prefix failed")
                request.future.set_exception(exc)
                continue
            joining.append((request, Join(slot, prefix, request.text_tokens, generator, request.budget)))
        return joining

    def _join(self, joining: list[tuple[TokenRequest, Join]]) -> None:
        """Prefill every joining request together; if that fails, each alone (afresh): one bad request fails alone."""
        try:
            self.decoder.join_many([join for _, join in joining])
        except Exception as exc:
            if len(joining) > 1:
                for request, join in joining:
                    fresh = torch.Generator(self.decoder.device).manual_seed(request.seed)
                    self._join([(request, replace(join, generator=fresh))])
                return
            log.exception("prefill failed")
            self.decoder.leave(joining[0][1].slot)
            joining[0][0].future.set_exception(exc)
            return
        self.most_joined = max(self.most_joined, len(joining))
        for request, join in joining:
            self._running[join.slot] = request

    def _free_slots(self) -> int:
        return self.decoder.slots - len(self.decoder.live)

    def _step(self) -> None:
        try:
            self.most_live = max(self.most_live, len(self.decoder.live))
            finished = set(self.decoder.advance())
            self.steps += 1
            if self.steps % self.check_every == 0 or finished:
                finished.update(self.decoder.stopped_slots())
            for slot in self.decoder.live:
                request = self._running[slot]
                if request.cancel.is_set():
                    self._finish(slot, Cancelled())
                elif slot in finished:
                    self._finish(slot, self.decoder.tokens_of(slot))
        except Exception as exc:  # a failed step fails the requests in it, never the loop
            log.exception("decode step failed")
            device_errors.check(exc)  # unless the device is gone for good: then the worker ends
            for slot in self.decoder.live:
                self._finish(slot, exc)

    def _finish(self, slot: int, outcome: list[int] | BaseException) -> None:
        request = self._running.pop(slot)
        self.decoder.leave(slot)
        if isinstance(outcome, BaseException):
            request.future.set_exception(outcome)
        else:
            request.future.set_result(outcome)


@contextlib.contextmanager
def on_device(device: torch.device) -> Iterator[None]:
    """On CUDA: ``device`` current and a stream of its own for the calling thread; elsewhere nothing."""
    if device.type != "cuda":
        yield
        return
    with torch.cuda.device(device), torch.cuda.stream(torch.cuda.Stream(device)):
        yield
