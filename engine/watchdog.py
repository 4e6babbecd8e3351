"""Ends the worker process when it can no longer be useful, so that its supervisor (the gateway's, or an
orchestrator's) starts a fresh one: when its gateway is gone, when its device stops making progress, and when a
sticky CUDA error leaves the device useless.

Both run on threads of their own and leave with ``os._exit``: a device call that hangs cannot be cancelled, and a
thread stuck in one would keep a normal exit (and the device's memory) waiting forever.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("chatterbox_fast.engine")


def exit_with_parent(parent_pid: int, poll_s: float = 0.5) -> None:
    """Exit as soon as ``parent_pid`` is no longer this process's parent (it died, even by SIGKILL)."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        log.error("the gateway that started this worker (pid %d) is gone; exiting", parent_pid)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def watch_device(devices: Sequence[Any], stall_s: float, exit_code: int, report: Path | None) -> None:
    """Exit with ``exit_code`` once one device call (a chunk's generation, a voice's conditionals; a batching engine's
    decode step or prefill) has run for ``stall_s`` seconds without returning, saying why in ``report`` (read by the
    supervisor for /health). ``devices``: what runs device calls, each with ``busy_since`` (``Synthesizer.watched``)."""

    def watch() -> None:
        while True:
            time.sleep(min(1.0, stall_s / 4))
            now = time.monotonic()
            if any(since is not None and now - since > stall_s for since in (d.busy_since for d in devices)):
                exit_for(f"the device made no progress for {stall_s:g} s (a generation hung)", exit_code, report)

    threading.Thread(target=watch, name="device-watchdog", daemon=True).start()


def exit_on_sticky_errors(exit_code: int, report: Path | None) -> None:
    """A sticky CUDA error anywhere on the device (engine/device_errors.py) ends the worker like a stalled device."""
    from engine import device_errors

    device_errors.on_sticky_error(lambda reason: exit_for(reason, exit_code, report))


def exit_for(reason: str, exit_code: int, report: Path | None) -> None:
    """Say ``reason`` in the log and in ``report`` (the supervisor shows it in /health), then exit at once."""
    log.error("%s; exiting, for a fresh worker to start", reason)
    if report is not None:
        report.write_text(reason + "\n")
    os._exit(exit_code)
