"""Runs the embedded engine worker as a child process and restarts it when it dies.

The gateway never imports torch: the worker is ``chatterbox-fast engine`` in its own process, reached over a Unix
socket. A dead worker is noticed at once (its process exits), reported in the log and /health, and restarted.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger("chatterbox_fast.gateway")


class EngineProcess:
    def __init__(self, engine_args: list[str]) -> None:
        self._dir = tempfile.mkdtemp(prefix="cbf-engine-")
        self.url = "unix:" + str(Path(self._dir) / "engine.sock")
        self._argv = [sys.executable, "-m", "gateway.cli", "engine", "--listen", self.url, *engine_args]
        self.proc: asyncio.subprocess.Process | None = None
        self.restarts = 0
        self.last_exit: int | None = None
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
            self.proc = await asyncio.create_subprocess_exec(*self._argv, stdin=asyncio.subprocess.DEVNULL)
            log.info("engine worker started (pid %d)", self.proc.pid)
            self.last_exit = await self.proc.wait()
            if self._stopping:
                return
            self.restarts += 1
            log.error("engine worker exited with code %s; restarting in %.0f s", self.last_exit, backoff)
            await asyncio.sleep(backoff)
            backoff = 1.0 if time.monotonic() - started > 60 else min(backoff * 2, 30.0)

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
        try:
            os.unlink(self.url[5:])
            os.rmdir(self._dir)
        except OSError:
            pass
