"""``chatterbox-fast bench fleet``: 2 gateways x 2 engine workers behind Debian's nginx, then one of each killed.

It starts on 127.0.0.1 two eSpeak engine workers (``engine --listen``), two gateways (``serve --engine-url A,B``) and
nginx (the system's ``nginx`` binary, unprivileged, with a config written to a temporary directory that includes
deploy/nginx/proxy.conf, the settings compose.scale.yaml ships). Every session connects through nginx and speaks one
text after another (the bench gateway's clients: a WebSocket listener playing at 1x, an aiortc peer decoding Opus).

- Steady phase (``--steady`` s): utterances, errors and underruns; how the sessions spread over the gateways (each
  gateway's /health ``sessions``, sampled) and the utterances over the workers (each gateway's ``started`` per worker).
- Fault phase (``--after`` s): one worker and one gateway are SIGKILLed at once. A session whose gateway is gone
  (its socket closes, or no ``done`` comes within ``LOST_AFTER_S``) reconnects through nginx: the bench counts those
  reconnects and whether each was served afterwards. The other sessions keep their connection; an utterance that was
  in flight on the killed worker goes on on the surviving one (gateway/engine_link/failover.py: no error), and so do
  their next utterances.

Prints a table and, last, one JSON line. Exit 1 unless the steady phase had no error and no underrun, sessions and
utterances spread over both gateways and both workers, and every session of the killed gateway was served again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx
from websockets.exceptions import WebSocketException

from cbf_tools.bench import Summary, report
from cbf_tools.bench.gateway import TEXTS, BenchError, Client, Result, WebRTCClient, WebSocketClient
from cbf_tools.peers.local_server import (ROOT, ServerFailed, engines_available, free_port, local_server,
                                         local_workers, stop)

NGINX = "/usr/sbin/nginx"
LOST_AFTER_S = 12.0  # an utterance with no `done` by then: its gateway is taken for gone
SAMPLE_S = 0.1  # how often the gateways' /health is sampled


@dataclass
class SessionLog:
    """What one client session went through."""

    transport: str
    phase: str = "steady"  # the phase the next record lands in
    utterances: dict[str, int] = field(default_factory=lambda: {"steady": 0, "faults": 0})
    underruns: dict[str, int] = field(default_factory=lambda: {"steady": 0, "faults": 0})
    errors: dict[str, list[str]] = field(default_factory=lambda: {"steady": [], "faults": []})
    reconnects: int = 0
    served_after_reconnect: int = 0

    def heard(self, result: Result) -> None:
        self.utterances[self.phase] += 1
        self.underruns[self.phase] += (result.server_underruns or 0) + result.client_underruns
        if self.reconnects:
            self.served_after_reconnect += 1


def _wait_port(host: str, port: int, proc: subprocess.Popen, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise BenchError(f"{what} exited with code {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
            return
        if time.monotonic() > deadline:
            raise BenchError(f"{what} did not start")
        time.sleep(0.1)


def nginx_config(tmp: Path, port: int, gateways: list[str]) -> str:
    """An unprivileged nginx on 127.0.0.1:``port`` balancing ``gateways`` (host:port) with deploy/nginx/proxy.conf."""
    servers = "\n    ".join(f"server {g} max_fails=1 fail_timeout=30s;" for g in gateways)
    temp = "\n  ".join(f"{kind}_temp_path {tmp / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi",
                                                                       "scgi"))
    return f"""worker_processes 1;
pid {tmp / 'nginx.pid'};
error_log {tmp / 'error.log'} warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  {temp}
  map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}
  upstream gateways {{
    {servers}
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      include {ROOT / 'deploy' / 'nginx' / 'proxy.conf'};
    }}
  }}
}}
"""


@dataclass
class Fleet:
    balancer: str  # the URL clients use
    gateways: list[tuple[str, int]]  # (URL, pid)
    workers: list[tuple[str, subprocess.Popen]]  # (engine URL, process)


@contextlib.contextmanager
def fleet(max_sessions: int) -> Iterator[Fleet]:
    """Two eSpeak workers, two gateways using both, nginx in front; all on 127.0.0.1, torn down afterwards."""
    if not os.access(NGINX, os.X_OK):
        raise BenchError(f"{NGINX} not found: install Debian's nginx (scripts/install-fleet-tools)")
    with tempfile.TemporaryDirectory(prefix="cbf-fleet-") as tmp_name, contextlib.ExitStack() as stack:
        tmp = Path(tmp_name)
        listens = [f"127.0.0.1:{free_port()}" for _ in range(2)]
        try:
            procs = stack.enter_context(local_workers(listens, "--voices-dir", str(tmp / "voices")))
        except ServerFailed as exc:
            raise BenchError(str(exc)) from None
        workers = [(f"ws://{listen}", proc) for listen, proc in zip(listens, procs)]
        engine_urls = ",".join(url for url, _ in workers)
        gateways = [stack.enter_context(local_server(["--engine-url", engine_urls, "--max-sessions", str(max_sessions),
                                                      "--log-level", "warning"], quiet=True))
                    for _ in range(2)]
        for url, _ in gateways:
            if not engines_available(url, 60):
                raise BenchError(f"gateway {url} did not connect to both workers")
        port = free_port()
        (tmp / "nginx.conf").write_text(nginx_config(tmp, port, [url.split("//")[1] for url, _ in gateways]))
        nginx = subprocess.Popen([NGINX, "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-g", "daemon off;"],
                                 stderr=subprocess.DEVNULL)
        stack.callback(stop, nginx)
        _wait_port("127.0.0.1", port, nginx, "nginx")
        yield Fleet(f"http://127.0.0.1:{port}", gateways, workers)


class Sampler:
    """Samples every gateway's /health: the most sessions each held, and how many utterances each gateway started on
    each worker."""

    def __init__(self, gateways: list[str]) -> None:
        self.gateways = gateways
        self.sessions: dict[str, int] = {url: 0 for url in gateways}
        self.last_sessions: dict[str, int] = {url: 0 for url in gateways}
        self.started: dict[tuple[str, str], int] = {}  # (gateway, worker) -> utterances started

    def started_on(self, worker: str) -> int:
        return sum(n for (_, w), n in self.started.items() if w == worker)

    async def run(self, http: httpx.AsyncClient) -> None:
        while True:
            for url in self.gateways:
                with contextlib.suppress(httpx.HTTPError, ValueError):
                    body = (await http.get(url + "/health", timeout=2)).json()
                    self.last_sessions[url] = body["sessions"]
                    self.sessions[url] = max(self.sessions[url], body["sessions"])
                    for engine in body["engines"]:
                        self.started[url, engine["url"]] = engine["started"]
            await asyncio.sleep(SAMPLE_S)


async def _session(make: Any, log: SessionLog, index: int, start_in: float, stop_at: float, pause: float) -> None:
    """After ``start_in`` seconds, speak until ``stop_at``; on a lost gateway, reconnect through the balancer and go
    on."""
    await asyncio.sleep(start_in)
    client: Client | None = None
    k = index
    while time.monotonic() < stop_at:
        try:
            if client is None:
                client = make()
                await asyncio.wait_for(client.connect(), 30)
            log.heard(await asyncio.wait_for(client.speak(TEXTS[k % len(TEXTS)]), LOST_AFTER_S))
        except BenchError as exc:  # an error event: the session itself is still there
            log.errors[log.phase].append(str(exc))
        except (OSError, TimeoutError, WebSocketException, httpx.HTTPError, KeyError) as exc:
            log.errors[log.phase].append(f"lost: {type(exc).__name__}")
            log.reconnects += 1
            if client is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(client.close(), 5)
            client = None
        k += 1
        await asyncio.sleep(pause)
    if client is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.close(), 5)


async def measure(args: argparse.Namespace, f: Fleet) -> dict[str, Any]:
    logs = [SessionLog("ws") for _ in range(args.ws_sessions)] + [SessionLog("webrtc")
                                                                 for _ in range(args.webrtc_sessions)]

    def maker(log: SessionLog) -> Any:
        if log.transport == "ws":
            return lambda: WebSocketClient(f.balancer, None, "default")
        return lambda: WebRTCClient(f.balancer, None, "default", "opus")

    gateway_urls = [url for url, _ in f.gateways]
    sampler = Sampler(gateway_urls)
    async with httpx.AsyncClient() as http:
        sampling = asyncio.create_task(sampler.run(http))
        start = time.monotonic()
        stop_at = start + args.steady + args.after
        sessions = [asyncio.create_task(_session(maker(log), log, i, args.stagger * i / len(logs), stop_at,
                                                 args.pause)) for i, log in enumerate(logs)]
        await asyncio.sleep(args.steady)
        steady = {"sessions_per_gateway": list(sampler.sessions.values()),
                  "utterances_per_worker": [sampler.started_on(url) for url, _ in f.workers]}
        dead_gateway_url, dead_pid = f.gateways[0]
        on_dead_gateway = sampler.last_sessions[dead_gateway_url]
        for log in logs:
            log.phase = "faults"
        f.workers[1][1].send_signal(signal.SIGKILL)
        os.kill(dead_pid, signal.SIGKILL)
        await asyncio.gather(*sessions)
        sampling.cancel()
    reconnected = [log for log in logs if log.reconnects]
    errors_after = [e for log in logs if not log.reconnects for e in log.errors["faults"]]
    return {
        "bench": "fleet", "gateways": 2, "workers": 2, "balancer": "nginx", "ws_sessions": args.ws_sessions,
        "webrtc_sessions": args.webrtc_sessions, "steady_s": args.steady, "after_s": args.after,
        "stagger_s": args.stagger, "pause_s": args.pause,
        "steady": {**steady,
                   "utterances": sum(log.utterances["steady"] for log in logs),
                   "errors": sum(len(log.errors["steady"]) for log in logs),
                   "underruns": sum(log.underruns["steady"] for log in logs),
                   "underruns_by_transport": _by_transport(logs, "steady")},
        "faults": {"killed": ["gateway 1 (SIGKILL)", "worker 2 (SIGKILL)"],
                   "sessions_on_killed_gateway": on_dead_gateway,
                   "sessions_reconnected": len(reconnected),
                   "reconnected_and_served": sum(1 for log in reconnected if log.served_after_reconnect),
                   "reconnected_by_transport": {t: sum(1 for log in reconnected if log.transport == t)
                                                for t in ("ws", "webrtc")},
                   "utterances": sum(log.utterances["faults"] for log in logs),
                   "other_sessions_errors": len(errors_after),
                   "other_sessions_error_codes": sorted({e.split(":")[0] for e in errors_after}),
                   "underruns": sum(log.underruns["faults"] for log in logs),
                   "underruns_by_transport": _by_transport(logs, "faults")},
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def _by_transport(logs: list[SessionLog], phase: str) -> dict[str, int]:
    return {t: sum(log.underruns[phase] for log in logs if log.transport == t) for t in ("ws", "webrtc")}


def verdict(s: dict[str, Any]) -> list[str]:
    """What the fleet promises and did not keep (empty: every promise kept)."""
    steady, faults = s["steady"], s["faults"]
    failed = []
    if steady["errors"] or steady["underruns"]:
        failed.append(f"steady phase: {steady['errors']} errors, {steady['underruns']} underruns (want 0 and 0)")
    if min(steady["sessions_per_gateway"]) == 0:
        failed.append(f"sessions did not spread over both gateways: {steady['sessions_per_gateway']}")
    if min(steady["utterances_per_worker"]) == 0:
        failed.append(f"utterances did not spread over both workers: {steady['utterances_per_worker']}")
    if faults["other_sessions_errors"]:
        failed.append(f"sessions on the surviving gateway saw {faults['other_sessions_errors']} errors "
                      f"({', '.join(faults['other_sessions_error_codes'])}; want 0: their utterances move)")
    if faults["reconnected_and_served"] < faults["sessions_on_killed_gateway"]:
        failed.append(f"{faults['sessions_on_killed_gateway']} sessions were on the killed gateway, "
                      f"{faults['reconnected_and_served']} were served again after reconnecting")
    return failed


def render(s: dict[str, Any]) -> str:
    steady, faults = s["steady"], s["faults"]
    lines = [
        f"bench fleet: 2 gateways x 2 eSpeak workers behind nginx; {s['ws_sessions']} WebSocket + "
        f"{s['webrtc_sessions']} WebRTC sessions; load {s['loadavg_1m']}",
        f"steady ({s['steady_s']:.0f} s): {steady['utterances']} utterances, {steady['errors']} errors, "
        f"{steady['underruns']} underruns {steady['underruns_by_transport']}; sessions per gateway (most at once) {steady['sessions_per_gateway']}, "
        f"utterances started per worker {steady['utterances_per_worker']}",
        f"faults ({s['after_s']:.0f} s after killing gateway 1 and worker 2): {faults['sessions_on_killed_gateway']} "
        f"sessions were on the killed gateway; {faults['sessions_reconnected']} reconnected through nginx "
        f"({faults['reconnected_by_transport']}), {faults['reconnected_and_served']} served again; other sessions: "
        f"{faults['other_sessions_errors']} errors {faults['other_sessions_error_codes']}; "
        f"{faults['utterances']} utterances, {faults['underruns']} underruns {faults['underruns_by_transport']}",
    ]
    lines += [f"NOT KEPT: {line}" for line in verdict(s)] or ["every promise kept"]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if logging.getLogger().getEffectiveLevel() >= logging.INFO:
        for name in ("httpx", "aioice", "aiortc"):
            logging.getLogger(name).setLevel(logging.WARNING)

    def bench() -> Summary:
        with fleet(args.ws_sessions + args.webrtc_sessions + 8) as f:
            return asyncio.run(measure(args, f))

    return report("fleet", bench, (BenchError, httpx.HTTPError, OSError), lambda summary: bool(verdict(summary)), render)
