"""``chatterbox-fast serve`` (and ``chatterbox-fast engine``) on 127.0.0.1 in child processes, for the benchmarks
and the tests."""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Sequence

import httpx

ROOT = Path(__file__).resolve().parents[2]


class ServerFailed(RuntimeError):
    """The server exited or did not become ready."""


def quiet_client_logs() -> None:
    """At the default level, no log line per health poll, request or ICE check of a benchmark's own clients."""
    if logging.getLogger().getEffectiveLevel() >= logging.INFO:
        for name in ("httpx", "aioice", "aiortc", "python_multipart"):
            logging.getLogger(name).setLevel(logging.WARNING)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def local_server(flags: Sequence[str], *, env: dict[str, str] | None = None, quiet: bool = False,
                 ready_timeout: float = 120.0, verify: ssl.SSLContext | bool = True) -> Iterator[tuple[str, int]]:
    """Start the gateway with ``flags``; yield (base URL, pid) once /health says the engine is ready. With
    ``--tls-cert`` among the flags the URL is https, its certificate checked with ``verify`` (a context trusting
    its CA)."""
    port = free_port()
    argv = [sys.executable, "-m", "gateway.cli", "serve", "--host", "127.0.0.1", "--port", str(port), *flags]
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL if quiet else None)
    url = f"{'https' if '--tls-cert' in flags else 'http'}://127.0.0.1:{port}"
    try:
        wait_healthy(proc, url, ready_timeout, "the server", verify)
        yield url, proc.pid
    finally:
        stop(proc)


def wait_healthy(proc: subprocess.Popen, url: str, timeout: float, what: str,
                 verify: ssl.SSLContext | bool = True) -> None:
    """Until ``url``/health answers 200; ``ServerFailed`` when ``proc`` exits first or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    # one client: each httpx.get builds an SSL context, ~35 ms of CPU a poll
    with httpx.Client(timeout=2, verify=verify) as http:
        while True:
            if proc.poll() is not None:
                raise ServerFailed(f"{what} exited with code {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if http.get(url + "/health").status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise ServerFailed(f"{what} did not become ready")
            time.sleep(0.05)


def engines_available(url: str, within: float) -> bool:
    """Whether ``url``'s /health lists every engine worker as available within ``within`` seconds (its status is ok
    with one of several, so a tool that needs them all waits here)."""
    deadline = time.monotonic() + within
    with httpx.Client(timeout=10) as http:  # one client: each httpx.get builds an SSL context, ~35 ms of CPU a poll
        while not all(e["available"] for e in http.get(url + "/health").json()["engines"]):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
    return True


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 15 s."""
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _listening(listen: str) -> bool:
    if listen.startswith("unix:"):
        return Path(listen[5:]).exists()
    host, _, port = listen.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        return True
    except OSError:
        return False


class Workers:
    """Engine worker processes, ``engine --listen L`` (HOST:PORT or unix:/path), each killed and started again by its
    address: the benchmarks' and tests' fleets (a killed worker's Unix socket file is replaced by the next one)."""

    def __init__(self, *flags: str) -> None:
        """``flags``: every worker's (the engine: eSpeak unless they say otherwise)."""
        self.flags = flags if "--engine" in flags else ("--engine", "espeak", *flags)
        self.procs: dict[str, subprocess.Popen] = {}
        self.flags_of: dict[str, tuple[str, ...]] = {}

    def start(self, listen: str, *flags: str) -> None:
        """One worker on ``listen``, with ``flags`` after the group's (the later of a flag given twice wins)."""
        self.flags_of[listen] = (*self.flags, *flags)
        self.procs[listen] = subprocess.Popen([sys.executable, "-m", "gateway.cli", "engine", "--listen", listen,
                                               "--log-level", "warning", *self.flags_of[listen]], cwd=ROOT)

    def wait_listening(self, listen: str, timeout: float = 120.0) -> None:
        """Until the worker on ``listen`` accepts connections (it listens once its engine is warm); for a Unix
        socket, until its file is there (so not after a kill: wait for the gateway to see it instead)."""
        deadline = time.monotonic() + timeout
        while not _listening(listen):
            if (code := self.procs[listen].poll()) is not None:
                raise ServerFailed(f"the worker on {listen} exited with code {code}")
            if time.monotonic() > deadline:
                raise ServerFailed(f"the worker on {listen} did not start")
            time.sleep(0.1)

    def kill(self, listen: str) -> None:
        """SIGKILL: no goodbye to its gateways."""
        proc = self.procs.pop(listen)
        proc.kill()
        proc.wait(15)

    def stop(self) -> None:
        for proc in self.procs.values():
            stop(proc)
        self.procs.clear()


@contextlib.contextmanager
def local_workers(listens: Sequence[str], *flags: str, ready_timeout: float = 120.0) -> Iterator[list[subprocess.Popen]]:
    """eSpeak engine workers, ``engine --listen L`` for each of ``listens`` (HOST:PORT or unix:/path) with ``flags``;
    yields their processes once each accepts connections."""
    workers = Workers(*flags)
    try:
        for listen in listens:
            workers.start(listen)
        for listen in listens:
            workers.wait_listening(listen, ready_timeout)
        yield [workers.procs[listen] for listen in listens]
    finally:
        workers.stop()
