"""Runs the embedded engine worker as a child process and restarts it when it dies.

The gateway never imports torch: the worker is ``chatterbox-fast engine`` in its own process, reached over a Unix
socket. A dead worker is noticed at once (its process exits), reported in the log and /health (why, and the back-off before
the restart), and restarted, unless it exited with ``REFUSED_EXIT_CODE``: then it cannot start (no weights, no GPU,
no watermark...), restarting would only repeat that, and its one-sentence reason (written to a file named by
``--refusal-report``) is kept for /health. A worker whose device stalled exits with ``STALLED_EXIT_CODE`` and says so
in the same file; it is restarted. The worker watches this process (``--parent-pid``) and exits when it is gone.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from gateway.engine_link.backoff import Backoff

log = logging.getLogger("chatterbox_fast.gateway")
REFUSED_EXIT_CODE = 3  # `chatterbox-fast engine` could not start for a reason no restart fixes
STALLED_EXIT_CODE = 4  # its device made no progress for --device-stall-seconds; a restart may well fix it
STABLE_S = 60.0  # a worker that ran this long was healthy: the next restart waits the shortest back-off again


class WorkerRefused(RuntimeError):
    """The worker cannot start; the message is its one-sentence reason with the fix."""


class EngineProcess:
    def __init__(self, engine_args: list[str], on_refusal_at_start: Callable[[str], None] | None = None,
                 on_stderr: Callable[[str], None] | None = None, secret: str | None = None,
                 device: str | None = None) -> None:
        """``on_refusal_at_start`` is told the reason when the very first worker refuses (``serve`` and the tools
        then stop with that sentence); later refusals, and any without it, are logged once. ``on_stderr``: told
        each line the worker writes to its stderr (else it shares this process's). ``secret``: the one it is
        reached with (workers of one gateway share one; default: a new one); ``device``: its ``--device``, from
        ``serve --engine-devices`` (None: the engine flags' own)."""
        self._dir = tempfile.mkdtemp(prefix="cbf-engine-")
        self.url = "unix:" + str(Path(self._dir) / "engine.sock")
        self._report = Path(self._dir) / "refusal.txt"
        self._argv = [sys.executable, "-m", "gateway.cli", "engine", "--listen", self.url,
                      "--refusal-report", str(self._report), "--parent-pid", str(os.getpid()), *engine_args,
                      *(["--device", device] if device is not None else [])]  # (the last --device given wins)
        self.device = device
        self._on_refusal_at_start = on_refusal_at_start
        self._on_stderr = on_stderr
        self._reader: asyncio.Task[None] | None = None
        self.secret = secret or secrets.token_urlsafe(32)  # in the child's environment, never on its command line
        self.proc: asyncio.subprocess.Process | None = None
        self.restarts = 0
        self.last_exit: int | None = None
        self.last_exit_reason: str | None = None
        self.backoff_s: float | None = None  # the wait before the pending restart; None while one runs
        self.refusal: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def start(self) -> None:
        self._task = asyncio.create_task(self._supervise())

    async def _supervise(self) -> None:
        backoff = Backoff(1.0, 30.0)
        while not self._stopping:
            started = time.monotonic()
            self._report.unlink(missing_ok=True)
            # Its own session: a Ctrl-C in the terminal (SIGINT to the foreground group) or a signal to the group
            # reaches the gateway alone, which stops the worker when it is done with it (and --parent-pid ends the
            # worker if the gateway dies without doing so).
            self.proc = await asyncio.create_subprocess_exec(*self._argv, stdin=asyncio.subprocess.DEVNULL,
                                                             env={**os.environ, "CBF_ENGINE_SECRET": self.secret},
                                                             start_new_session=True,
                                                             stderr=None if self._on_stderr is None
                                                             else asyncio.subprocess.PIPE)
            if self._on_stderr is not None:
                self._reader = asyncio.create_task(self._read_stderr(self.proc))
            self.backoff_s = None
            log.info("engine worker%s started (pid %d)", self._on_device(), self.proc.pid)
            self.last_exit = await self.proc.wait()
            if self._stopping:
                return
            # A killed worker leaves its socket file: gone, the next worker is connected to the moment it listens
            # (gateway/engine_link/client.py), not at the back-off's next try of a refused connection (up to 2 s).
            Path(self.url[5:]).unlink(missing_ok=True)
            self.last_exit_reason = self._exit_reason(self.last_exit)
            if self.last_exit == REFUSED_EXIT_CODE:
                self._refused()
                return
            self.restarts += 1
            if time.monotonic() - started > STABLE_S:
                backoff.reset()
            self.backoff_s = backoff.next()
            log.error("engine worker%s stopped (%s); restarting in %.1f s", self._on_device(), self.last_exit_reason,
                      self.backoff_s)
            await asyncio.sleep(self.backoff_s)

    async def _read_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None and self._on_stderr is not None
        async for line in proc.stderr:
            self._on_stderr(line.decode(errors="replace").rstrip("\n"))

    def _exit_reason(self, code: int) -> str:
        """What the worker said before it exited (a refusal, a stalled device), else its exit code or signal."""
        try:
            said = self._report.read_text().strip()
        except OSError:
            said = ""
        if said:
            return said
        if code >= 0:
            return f"exit code {code}"
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"

    def _refused(self) -> None:
        if self.last_exit_reason == f"exit code {REFUSED_EXIT_CODE}":  # it said nothing
            self.last_exit_reason = (f"the engine worker refused to start (exit code {REFUSED_EXIT_CODE}); "
                                     "see its log above")
        self.refusal = self.last_exit_reason
        if self.restarts == 0 and self._on_refusal_at_start is not None:
            self._on_refusal_at_start(self.refusal)
        else:
            log.error("engine worker%s cannot start, not restarting it: %s", self._on_device(), self.refusal)

    def _on_device(self) -> str:
        return f" on {self.device}" if self.device else ""

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
