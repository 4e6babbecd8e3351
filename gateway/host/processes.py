"""``serve --processes N``: the embedded engine workers (one, or one per ``--engine-devices`` entry; or the
``--engine-url`` ones) and N gateway processes on one port, each gateway process reaching every worker.

One gateway process carries about 20 Opus streams per core; a GPU host feeds more. Each gateway process is a plain
``serve`` configured through its environment (CBF_*, so no API key or secret shows on a command line), binding the
shared port with SO_REUSEPORT: the kernel spreads new connections over the processes, and each owns the WebRTC
sessions it answered. They share one directory, PROMETHEUS_MULTIPROC_DIR: prometheus-client's multiprocess mode adds
their metrics up for /metrics, and each writes its /health snapshot there (gateway/host/siblings.py). A gateway process
that dies is restarted with back-off; one that cannot start (exit code 3: its one sentence is already printed), or an
embedded worker that cannot start, stops them all.

SIGTERM drains every process at once (gateway/host/drain.py) and waits for them. SIGHUP restarts them one at a time
without refusing a call: a new process for the slot starts and, once it takes connections on the port, the old one
gets SIGUSR2 (it closes its listening socket, so the kernel gives every new connection to the others, and exits once
its sessions are done); then the next slot. (Not SIGHUP: a gateway process with a keys file reloads it on SIGHUP.
Each process watches its keys file itself, so an edited file is in force everywhere within a second.)
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
from gateway.engine_link.process import REFUSED_EXIT_CODE
from gateway.engine_link.workers import EmbeddedWorkers, WorkersFile
from gateway.host.siblings import SiblingHealth

log = logging.getLogger("chatterbox_fast.gateway")
STABLE_S = 60.0
STOP_MARGIN_S = 15.0  # past the drain grace: a gateway process that has not exited by then is killed
SERVING_TIMEOUT_S = 120.0  # a rolling restart's new process that does not take connections by then is given up


class GatewayProcesses:
    def __init__(self, count: int, env: dict[str, str], engine_args: list[str], devices: tuple[str, ...],
                 rtc_slices: list[tuple[int, int]] | None, drain_grace_s: float) -> None:
        """``env``: the gateway's configuration as CBF_* variables; ``engine_args``: flags for the embedded workers,
        started when ``env`` names no CBF_ENGINE_URL, one per entry of ``devices`` (none: one); ``rtc_slices``: each process's own UDP range (--rtc-ports);
        ``drain_grace_s``: how long a stopping process may drain (--drain-grace)."""
        self.count, self.rtc_slices, self.stop_timeout_s = count, rtc_slices, drain_grace_s + STOP_MARGIN_S
        self.shared_dir = tempfile.mkdtemp(prefix="cbf-gateways-")
        self.env = {**env, "CBF_PROCESSES": "1", "CBF_REUSE_PORT": "true", "PROMETHEUS_MULTIPROC_DIR": self.shared_dir,
                    "CBF_SUPERVISOR_PID": str(os.getpid())}
        self.engine = (None if env.get("CBF_ENGINE_URL") else
                       EmbeddedWorkers(engine_args, devices, self._engine_refused))
        self._workers_file = WorkersFile(self.shared_dir)
        self.refusal: str | None = None  # why an embedded worker cannot start
        self.refused = False  # it, or a gateway process, cannot start
        self._done = asyncio.Event()
        self._procs: dict[int, asyncio.subprocess.Process] = {}  # each slot's process
        self._live: set[asyncio.subprocess.Process] = set()  # with those a rolling restart is draining
        self._siblings = SiblingHealth(self.shared_dir)
        self._rolling: asyncio.Task[None] | None = None

    def _engine_refused(self, reason: str) -> None:
        self.refusal, self.refused = reason, True
        self._done.set()

    async def run(self) -> int:
        """Until SIGTERM or SIGINT: 0; a process or the worker that cannot start: exit code 3."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._done.set)
        loop.add_signal_handler(signal.SIGHUP, self._restart)
        if self.engine is not None:
            self.engine.start()
            self.env.update(CBF_ENGINE_URL=",".join(self.engine.urls), CBF_ENGINE_SECRET=self.engine.secret)
        tasks = [asyncio.create_task(self._supervise(index)) for index in range(self.count)]
        if self.engine is not None:
            tasks.append(asyncio.create_task(self._report_workers(self.engine)))
        await self._done.wait()
        if self._rolling is not None:
            tasks.append(self._rolling)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._stop_all()
        shutil.rmtree(self.shared_dir, ignore_errors=True)
        return REFUSED_EXIT_CODE if self.refused else 0

    async def _report_workers(self, workers: EmbeddedWorkers) -> None:
        """Every half second: the workers' pids and states, for each gateway process's /health."""
        while True:
            self._workers_file.write(workers.health())
            await asyncio.sleep(0.5)

    async def _spawn(self, index: int) -> asyncio.subprocess.Process:
        env = dict(self.env)
        if self.rtc_slices is not None:
            env["CBF_RTC_PORTS"] = "%d-%d" % self.rtc_slices[index]
        if index:  # the shared Wyoming port is announced once: its name would clash with itself
            env.pop("CBF_WYOMING_ZEROCONF", None)
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "gateway.cli", "serve",
                                                    stdin=asyncio.subprocess.DEVNULL, env=env)
        self._live.add(proc)
        log.info("gateway process %d started (pid %d)", index, proc.pid)
        return proc

    async def _supervise(self, index: int) -> None:
        backoff = Backoff(1.0, 30.0)
        while True:
            started = asyncio.get_running_loop().time()
            proc = self._procs[index] = await self._spawn(index)
            code = await proc.wait()
            self._forget(proc)
            while self._procs[index] is not proc:  # a rolling restart replaced it (and drained it): watch the new one
                proc = self._procs[index]
                code = await proc.wait()
                self._forget(proc)
            if code == REFUSED_EXIT_CODE:
                self.refused = True
                self._done.set()
                return
            if asyncio.get_running_loop().time() - started > STABLE_S:
                backoff.reset()
            delay = backoff.next()
            log.error("gateway process %d (pid %d) exited with %d; restarting in %.1f s", index, proc.pid, code, delay)
            await asyncio.sleep(delay)

    def _restart(self) -> None:
        """SIGHUP: replace every gateway process, one at a time (a second SIGHUP during a restart changes nothing)."""
        if self._rolling is None or self._rolling.done():
            self._rolling = asyncio.create_task(self._roll())
        else:
            log.warning("SIGHUP: a rolling restart is under way already")

    async def _roll(self) -> None:
        log.info("rolling restart of %d gateway processes", self.count)
        for index in range(self.count):
            old = self._procs.get(index)
            if old is None or old.returncode is not None:
                continue  # being restarted after a crash anyway
            new = await self._spawn(index)
            serving = await self._until_serving(new)
            if not serving or self._procs.get(index) is not old:  # (the old one died meanwhile: restarted already)
                if not serving:
                    log.error("rolling restart stopped: the new gateway process %d (pid %d) did not take connections",
                              index, new.pid)
                if new.returncode is None:
                    new.kill()
                await new.wait()
                self._forget(new)
                if not serving:
                    return
                continue
            self._procs[index] = new
            log.info("gateway process %d (pid %d) replaced by pid %d: draining it", index, old.pid, new.pid)
            old.send_signal(signal.SIGUSR2)
        log.info("rolling restart done")

    async def _until_serving(self, proc: asyncio.subprocess.Process) -> bool:
        """Whether ``proc`` reports itself ok and taking connections on the port before it exits or a timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SERVING_TIMEOUT_S
        while proc.returncode is None and loop.time() < deadline:
            if any(s["pid"] == proc.pid and s["status"] == "ok" and s.get("listening")
                   for s in self._siblings.read_all()):
                return True
            await asyncio.sleep(0.2)
        return False

    def _forget(self, proc: asyncio.subprocess.Process) -> None:
        """A gone process's live gauges and /health snapshot leave the shared directory."""
        self._live.discard(proc)
        mark_process_dead(proc.pid, self.shared_dir)
        self._siblings.remove(proc.pid)

    async def _stop_all(self) -> None:
        procs = [proc for proc in self._live if proc.returncode is None]
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                await asyncio.wait_for(proc.wait(), self.stop_timeout_s)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if self.engine is not None:
            await self.engine.stop()


def serve_processes(count: int, env: dict[str, str], engine_args: list[str], devices: tuple[str, ...],
                    rtc_slices: list[tuple[int, int]] | None, drain_grace_s: float) -> tuple[int, str | None]:
    """The exit code, and an embedded worker's reason when it cannot start (for ``serve`` to say)."""
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)  # the supervisor keeps no metrics of its own
    processes = GatewayProcesses(count, env, engine_args, devices, rtc_slices, drain_grace_s)
    code = 0
    with contextlib.suppress(KeyboardInterrupt):
        code = asyncio.run(processes.run())
    return code, processes.refusal
