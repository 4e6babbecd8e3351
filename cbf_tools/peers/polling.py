"""Waiting, in a peer or a bench, on what another task does: a condition looked at every 10 ms until a deadline."""

from __future__ import annotations

import asyncio
import time
from typing import Callable


async def within(condition: Callable[[], bool], timeout: float) -> bool:
    """Whether ``condition`` holds within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def until(condition: Callable[[], bool], timeout: float, what: object = "condition not met in time") -> None:
    """Until ``condition`` holds; ``TimeoutError(what)`` after ``timeout`` seconds (``what``: a message, or the state
    that should have changed, shown as it is then)."""
    if not await within(condition, timeout):
        raise TimeoutError(what)
