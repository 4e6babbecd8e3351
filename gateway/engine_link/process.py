"""Runs the embedded engine worker as a child process and restarts it when it dies.

The gateway never imports torch: the worker is ``chatterbox-fast engine`` in its own process, reached over a Unix
socket. A dead worker is noticed at once (its process exits), reported in the log and /health, and restarted, unless
it exited with ``REFUSED_EXIT_CODE``: then it cannot start (no weights, no GPU, no watermark...), restarting would
only repeat that, and its one-sentence reason (written to a file named by ``--refusal-report``) is kept for /health.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

log = logging.getLogger("chatterbox_fast.gateway")
REFUSED_EXIT_CODE = 3  # `chatterbox-fast engine` could not start for a reason no restart fixes


class WorkerRefused(RuntimeError):
    """The worker cannot start; the message is its one-sentence reason with the fix."""


class EngineProcess:
    def __init__(self, engine_args: list[str], on_refusal_at_start: Callable[[str], None] | None = None) -> None:
        """``on_refusal_at_start`` is told the reason when the very first worker refuses (``serve`` and the tools
        then stop with that sentence); later refusals, and any without it, are logged once."""
        self._dir = tempfile.mkdtemp(prefix="cbf-engine-")
        self.url = "unix:" + str(Path(self._dir) / "engine.sock")
        self._report = Path(self._dir) / "refusal.txt"
        self._argv = [sys.executable, "-m", "gateway.cli", "engine", "--listen", self.url,
                      "--refusal-report", str(self._report), *engine_args]
        self._on_refusal_at_start = on_refusal_at_start
        self.secret = secrets.token_urlsafe(32)  # in the child's environment, never on its command line
        self.proc: asyncio.subprocess.Process | None = None
        self.restarts = 0
        self.last_exit: int | None = None
        self.refusal: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def start(self) -> None:
        self._task = asyncio.create_task(self._supervise())

    async def _supervise(self) -> None:
        backoff = 1.0
        while not self._stopping:
            started = time.monotonic()
            self.proc = await asyncio.create_subprocess_exec(*self._argv, stdin=asyncio.subprocess.DEVNULL,
                                                             env={**os.environ, "CBF_ENGINE_SECRET": self.secret})
            log.info("engine worker started (pid %d)", self.proc.pid)
            self.last_exit = await self.proc.wait()
            if self._stopping:
                return
            if self.last_exit == REFUSED_EXIT_CODE:
                self._refused()
                return
            self.restarts += 1
            log.error("engine worker exited with code %s; restarting in %.0f s", self.last_exit, backoff)
            await asyncio.sleep(backoff)
            backoff = 1.0 if time.monotonic() - started > 60 else min(backoff * 2, 30.0)

    def _refused(self) -> None:
        try:
            self.refusal = self._report.read_text().strip()
        except OSError:
            self.refusal = f"the engine worker refused to start (exit code {REFUSED_EXIT_CODE}); see its log above"
        if self.restarts == 0 and self._on_refusal_at_start is not None:
            self._on_refusal_at_start(self.refusal)
        else:
            log.error("engine worker cannot start, not restarting it: %s", self.refusal)

    async def stop(self) -> None:
        self._stopping = True
        if self.alive:
            assert self.proc is not None
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.proc.kill()
        if self._task:
            self._task.cancel()
        shutil.rmtree(self._dir, ignore_errors=True)
