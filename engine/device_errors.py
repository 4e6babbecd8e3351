"""Errors after which a CUDA context is useless: a device-side assert, an illegal address, a launch failure.

CUDA reports these "sticky" errors on every later call in the process, so a worker that caught one and went on would
answer every request with an error while looking alive to its watchdog. ``check`` hands such an error to the handler
the worker registered (engine/watchdog.py: write the report, exit with the stalled code, a fresh worker starts);
without one (tests, the GPU kit) it only logs. Recognised by message, so this module needs no torch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger("chatterbox_fast.engine")

STICKY = ("device-side assert", "illegal memory access", "illegal address", "illegal instruction",
          "misaligned address", "unspecified launch failure", "uncorrectable ecc", "cuda error: unknown error",
          "hardware stack error", "launch timed out")

_handler: Callable[[str], None] | None = None


def sticky_cuda_error(exc: BaseException) -> str | None:
    """The first line of ``exc``'s message when it is a sticky CUDA error, else None."""
    text = str(exc)
    lowered = text.lower()
    if "cuda" not in lowered or not any(marker in lowered for marker in STICKY):
        return None
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def on_sticky_error(handler: Callable[[str], None] | None) -> None:
    """Register what happens on a sticky error (once, by the worker command); None removes it."""
    global _handler
    _handler = handler


def check(exc: BaseException) -> None:
    """Call the handler with a reason if ``exc`` is a sticky CUDA error (the worker cannot go on after it)."""
    message = sticky_cuda_error(exc)
    if message is None:
        return
    reason = f"the GPU failed for good ({message}): every later call on it would fail too"
    log.error("%s", reason)
    if _handler is not None:
        _handler(reason)
