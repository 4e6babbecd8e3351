"""Counting the operations the host dispatches: on a GPU at Turbo's sizes each one is a kernel launch of a few
microseconds of host time, so the count bounds how fast an eager call can be, whatever the arithmetic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from torch.utils._python_dispatch import TorchDispatchMode

T = TypeVar("T")
LAUNCH_US = (4.0, 6.0)  # the usual host time per eager kernel launch on a GPU (an estimate, not a measurement here)


class _Counter(TorchDispatchMode):
    """Counts every aten operation that reaches the dispatcher below autograd (views and in-place ops included)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        self.count += 1
        return func(*args, **(kwargs or {}))


def count_ops(fn: Callable[[], T]) -> tuple[int, T]:
    """``fn()``'s result and the number of aten operations it dispatched."""
    with _Counter() as counter:
        result = fn()
    return counter.count, result


def launch_ms(ops: int) -> list[float]:
    """The host time ``ops`` eager launches cost at ``LAUNCH_US`` (low, high), in ms: an estimate."""
    return [round(ops * us / 1000, 1) for us in LAUNCH_US]
