"""``serve --processes N``: one engine worker (or the ``--engine-url`` ones) and N gateway processes on one port.

One gateway process carries about 20 Opus streams per core; a GPU host feeds more. Each gateway process is a plain
``serve`` configured through its environment (CBF_*, so no API key or secret shows on a command line), binding the
shared port with SO_REUSEPORT: the kernel spreads new connections over the processes, and each owns the WebRTC
sessions it answered. They share one directory, PROMETHEUS_MULTIPROC_DIR: prometheus-client's multiprocess mode adds
their metrics up for /metrics, and each writes its /health snapshot there (gateway/host/siblings.py). A gateway process
that dies is restarted with back-off; one that cannot start (exit code 3: its one sentence is already printed), or an
embedded worker that cannot start, stops them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile

from prometheus_client.multiprocess import mark_process_dead

from gateway.engine_link.backoff import Backoff
from gateway.engine_link.process import REFUSED_EXIT_CODE, EngineProcess
from gateway.host.siblings import SiblingHealth

log = logging.getLogger("chatterbox_fast.gateway")
STABLE_S = 60.0


class GatewayProcesses:
    def __init__(self, count: int, env: dict[str, str], engine_args: list[str],
                 rtc_slices: list[tuple[int, int]] | None = None) -> None:
        """``env``: the gateway's configuration as CBF_* variables; ``engine_args``: flags for the embedded worker,
        started when ``env`` names no CBF_ENGINE_URL; ``rtc_slices``: each process's own UDP range (--rtc-ports)."""
        self.count, self.rtc_slices = count, rtc_slices
        self.shared_dir = tempfile.mkdtemp(prefix="cbf-gateways-")
        self.env = {**env, "CBF_PROCESSES": "1", "CBF_REUSE_PORT": "true", "PROMETHEUS_MULTIPROC_DIR": self.shared_dir}
        self.engine = None if env.get("CBF_ENGINE_URL") else EngineProcess(engine_args, self._engine_refused)
        self.refusal: str | None = None  # why the embedded worker cannot start
        self.refused = False  # it, or a gateway process, cannot start
        self._done = asyncio.Event()
        self._procs: dict[int, asyncio.subprocess.Process] = {}
        self._siblings = SiblingHealth(self.shared_dir)

    def _engine_refused(self, reason: str) -> None:
        self.refusal, self.refused = reason, True
        self._done.set()

    async def run(self) -> int:
        """Until SIGTERM or SIGINT: 0; a process or the worker that cannot start: exit code 3."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._done.set)
        if self.engine is not None:
            self.engine.start()
            self.env.update(CBF_ENGINE_URL=self.engine.url, CBF_ENGINE_SECRET=self.engine.secret)
        tasks = [asyncio.create_task(self._supervise(index)) for index in range(self.count)]
        await self._done.wait()
        for task in tasks:
            task.cancel()
        await self._stop_all()
        shutil.rmtree(self.shared_dir, ignore_errors=True)
        return REFUSED_EXIT_CODE if self.refused else 0

    async def _supervise(self, index: int) -> None:
        backoff = Backoff(1.0, 30.0)
        while True:
            started = asyncio.get_running_loop().time()
            env = dict(self.env)
            if self.rtc_slices is not None:
                env["CBF_RTC_PORTS"] = "%d-%d" % self.rtc_slices[index]
            if index:  # the shared Wyoming port is announced once: its name would clash with itself
                env.pop("CBF_WYOMING_ZEROCONF", None)
            proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "gateway.cli", "serve",
                                                        stdin=asyncio.subprocess.DEVNULL, env=env)
            self._procs[index] = proc
            log.info("gateway process %d started (pid %d)", index, proc.pid)
            code = await proc.wait()
            self._forget(proc.pid)
            if code == REFUSED_EXIT_CODE:
                self.refused = True
                self._done.set()
                return
            if asyncio.get_running_loop().time() - started > STABLE_S:
                backoff.reset()
            delay = backoff.next()
            log.error("gateway process %d (pid %d) exited with %d; restarting in %.1f s", index, proc.pid, code, delay)
            await asyncio.sleep(delay)

    def _forget(self, pid: int) -> None:
        """A gone process's live gauges and /health snapshot leave the shared directory."""
        mark_process_dead(pid, self.shared_dir)
        self._siblings.remove(pid)

    async def _stop_all(self) -> None:
        procs = [proc for proc in self._procs.values() if proc.returncode is None]
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if self.engine is not None:
            await self.engine.stop()


def serve_processes(count: int, env: dict[str, str], engine_args: list[str],
                    rtc_slices: list[tuple[int, int]] | None = None) -> tuple[int, str | None]:
    """The exit code, and the embedded worker's reason when it cannot start (for ``serve`` to say)."""
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)  # the supervisor keeps no metrics of its own
    processes = GatewayProcesses(count, env, engine_args, rtc_slices)
    code = 0
    with contextlib.suppress(KeyboardInterrupt):
        code = asyncio.run(processes.run())
    return code, processes.refusal
