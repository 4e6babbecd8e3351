"""``chatterbox-fast bench cpu``: what one gateway process costs per WebRTC stream, against a bare aiortc peer.

The gateway (``serve``, the simulated engine unless told otherwise) and the bare aiortc + Starlette peer of ``bench
edge`` (``cbf_tools/peers/edge.py``: an instant tone, aiortc's own sender and encoder) both run pinned to
``--server-core`` (every thread); this process, its listening aiortc peers and the gateway's engine worker run on
``--client-core``, where the listeners (``--client-nice``, 10 by default) give way to the worker: they stand in for
callers on other machines. For each codec and stream count, gateway then peer (alternating which goes first), ``N``
listeners connect and speak back to back (``bench gateway``'s client: the next text after ``done`` and a short pause);
after ``--warm-up`` seconds the server process's own CPU time (user + system, all its threads, read with psutil; not
its children) is read over ``--seconds``, and divided by the stream-seconds (``N`` x the window). The gateway's
``done.underruns`` of the utterances that ended after the warm-up are summed, and told apart by cause from its
``/metrics``: those where the missing audio had reached the gateway and was still being encoded
(``cbf_underruns_in_gateway_total``) against those where the engine's audio came late; beside them its engine worker's
CPU (a worker that cannot keep up on the shared client core starves the streams whatever the gateway does). The
listeners decode nothing (``Deaf``): they count the RTP packets that reach them, 50 per stream-second while the server
keeps up. Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator

import httpx
from prometheus_client.parser import text_string_to_metric_families

from cbf_tools.bench import Summary, report
from cbf_tools.bench.edge import peer_server
from cbf_tools.bench.gateway import TEXTS, BenchError, WebRTCClient
from cbf_tools.bench.procs import descendants, threads, tree_cpu
from cbf_tools.peers.local_server import ServerFailed, local_server, quiet_client_logs

CONNECT_BATCH = 10  # listeners that set up their connection at once (each a DTLS handshake on the pinned server)
PAUSE_S = 0.2  # after a `done`, before the next text (plus up to PAUSE_JITTER_S at random)
PAUSE_JITTER_S = 0.2
STOP_WAIT_S = 15.0  # utterances in flight when the window closes may end within this
TARGET_RATIO = {"opus": 0.5, "pcmu": 0.4}  # gateway / peer CPU per stream-second at TARGET_STREAMS, at most
TARGET_STREAMS = 20
CLEAN_STREAMS = 40  # Opus streams in one process with no underrun


def lower_priority(by: int) -> None:
    """The calling thread's niceness raised by ``by`` (on Linux a thread's own; the threads it starts inherit it),
    leaving the process's other threads, and the servers started before, as they were."""
    tid = threading.get_native_id()
    os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + by)


def pin(pid: int, core: int) -> None:
    """Every thread of ``pid`` onto ``core`` (threads it starts later inherit their starter's)."""
    for tid in threads(pid):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, {core})


class Deaf:
    """A listener's receiver that counts the RTP packets routed to it and decodes none: the bench measures the
    server, and 40 decoding aiortc listeners would fill the client core (then their connections lag and fail)."""

    def __init__(self, client: WebRTCClient) -> None:
        self.packets = 0
        client.listener.pc.getTransceivers()[0].receiver._handle_rtp_packet = self._count

    async def _count(self, packet: object, arrival_time_ms: int) -> None:
        self.packets += 1


async def _speaking(client: WebRTCClient, index: int, stop: asyncio.Event,
                    ended: list[tuple[float, int, bool]]) -> None:
    """Speak back to back until ``stop``; each utterance's (end time, server underruns, failed) into ``ended``."""
    k = index
    while not stop.is_set():
        try:
            result = await client.speak(TEXTS[k % len(TEXTS)])
            ended.append((time.monotonic(), result.server_underruns or 0, False))
        except (BenchError, TimeoutError):
            ended.append((time.monotonic(), 0, True))
        k += 1
        await asyncio.sleep(PAUSE_S + random.uniform(0, PAUSE_JITTER_S))


async def underruns_in_gateway(url: str, http: httpx.AsyncClient) -> float | None:
    """The gateway's ``cbf_underruns_in_gateway_total`` over its transports (None from a server without it: the
    peer)."""
    reply = await http.get(url + "/metrics")
    if reply.status_code != 200:
        return None
    return sum(sample.value for family in text_string_to_metric_families(reply.text)
               if family.name == "cbf_underruns_in_gateway" for sample in family.samples
               if sample.name == "cbf_underruns_in_gateway_total")


async def point(url: str, pid: int, codec: str, streams: int, args: argparse.Namespace) -> dict[str, Any]:
    """One server at one stream count: connect, speak, measure the window, close."""
    clients = [WebRTCClient(url, None, "default", codec) for _ in range(streams)]
    ears = [Deaf(c) for c in clients]
    stop, ended = asyncio.Event(), []
    tasks: list[asyncio.Task[None]] = []
    http = httpx.AsyncClient(timeout=10)
    try:
        for i in range(0, streams, CONNECT_BATCH):
            await asyncio.gather(*(c.connect() for c in clients[i:i + CONNECT_BATCH]))
        for i, c in enumerate(clients):
            tasks.append(asyncio.create_task(_speaking(c, i, stop, ended)))
            await asyncio.sleep(min(1.0, args.warm_up) / streams)  # texts at different phases
        await asyncio.sleep(args.warm_up)
        cpu0, t0, heard0 = tree_cpu(pid), time.monotonic(), sum(e.packets for e in ears)
        in_gateway0 = await underruns_in_gateway(url, http)
        await asyncio.sleep(args.seconds)
        cpu1, t1, heard1 = tree_cpu(pid), time.monotonic(), sum(e.packets for e in ears)
        stop.set()
        await asyncio.wait(tasks, timeout=STOP_WAIT_S)
        in_gateway1 = await underruns_in_gateway(url, http)
    finally:
        await http.aclose()
        for task in tasks:
            task.cancel()
        for c in clients:
            with contextlib.suppress(Exception):
                await c.close()
    counted = [e for e in ended if e[0] >= t0]
    window = t1 - t0
    own = cpu1[0] - cpu0[0]
    return {"codec": codec, "streams": streams, "window_s": round(window, 2), "cpu_s": round(own, 3),
            "cpu_ms_per_stream_s": round(1000 * own / (streams * window), 2),
            "engine_cpu_pct": round(100 * (cpu1[1] - cpu0[1]) / window, 1),
            "packets_per_stream_s": round((heard1 - heard0) / (streams * window), 1),
            "utterances": sum(not e[2] for e in counted), "errors": sum(e[2] for e in counted),
            "underruns": sum(e[1] for e in counted),
            "underruns_in_gateway": None if in_gateway0 is None or in_gateway1 is None else
            round(in_gateway1 - in_gateway0)}


@contextlib.contextmanager
def servers(args: argparse.Namespace, engine_args: list[str]) -> Iterator[dict[str, tuple[str, int]]]:
    """The gateway and the bare peer, each pinned to the server core, the gateway's worker to the client core."""
    flags = ["--max-sessions", str(2 * max(args.streams)), *engine_args, "--log-level", "warning"]
    with local_server(flags, quiet=True) as (gateway, gateway_pid), peer_server() as (peer, peer_pid):
        pin(gateway_pid, args.server_core)
        pin(peer_pid, args.server_core)
        for child in descendants(gateway_pid):
            pin(child, args.client_core if args.engine_core is None else args.engine_core)
        yield {"gateway": (gateway, gateway_pid), "peer": (peer, peer_pid)}


async def _warm(url: str) -> None:
    async with httpx.AsyncClient(timeout=60) as http:
        reply = await http.post(url + "/v1/tts", json={"text": "Warming up.", "format": "pcm"})
        if reply.status_code != 200:
            raise BenchError(f"warm-up POST /v1/tts answered HTTP {reply.status_code}: {reply.text[:200]}")


async def measure(targets: dict[str, tuple[str, int]], args: argparse.Namespace) -> dict[str, Any]:
    """Every (codec, streams) point on both servers, alternating which goes first."""
    await _warm(targets["gateway"][0])
    rows = []
    for k, (codec, streams) in enumerate((c, n) for c in args.codecs for n in args.streams):
        order = ["gateway", "peer"] if k % 2 == 0 else ["peer", "gateway"]
        got = {name: await point(*targets[name], codec, streams, args) for name in order}
        ratio = round(got["gateway"]["cpu_ms_per_stream_s"] / got["peer"]["cpu_ms_per_stream_s"], 2) \
            if got["peer"]["cpu_ms_per_stream_s"] else None
        rows.append({"codec": codec, "streams": streams, "gateway": got["gateway"], "peer": got["peer"],
                     "ratio": ratio, "loadavg_1m": round(os.getloadavg()[0], 2)})
    return summarise(rows, args)


def summarise(rows: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    met: dict[str, bool | None] = {}
    for codec, target in TARGET_RATIO.items():
        row = next((r for r in rows if r["codec"] == codec and r["streams"] == TARGET_STREAMS), None)
        met[f"{codec}_ratio_at_{TARGET_STREAMS}"] = None if row is None or row["ratio"] is None else \
            row["ratio"] <= target
    clean = next((r for r in rows if r["codec"] == "opus" and r["streams"] == CLEAN_STREAMS), None)
    met[f"opus_underruns_at_{CLEAN_STREAMS}"] = None if clean is None else \
        clean["gateway"]["underruns"] == 0 and clean["gateway"]["errors"] == 0
    return {"bench": "cpu", "seconds": args.seconds, "warm_up_s": args.warm_up, "server_core": args.server_core,
            "client_core": args.client_core, "rows": rows, "targets": {**TARGET_RATIO, "streams": TARGET_STREAMS,
                                                                       "clean_opus_streams": CLEAN_STREAMS},
            "met": met}


def render(s: dict[str, Any]) -> str:
    lines = [f"bench cpu: CPU-ms per stream-second of the server process, pinned to core {s['server_core']} "
             f"(listeners and the engine worker on core {s['client_core']}); {s['seconds']:g} s a point after "
             f"{s['warm_up_s']:g} s",
             f"{'codec':7s}{'streams':>8s}{'gateway':>10s}{'peer':>10s}{'ratio':>8s}{'underruns':>11s}{'in gw':>7s}"
             f"{'utterances':>12s}{'errors':>8s}{'pkt/s':>7s}{'engine':>8s}{'load':>7s}"]
    for r in s["rows"]:
        g, p = r["gateway"], r["peer"]
        lines.append(f"{r['codec']:7s}{r['streams']:>8d}{g['cpu_ms_per_stream_s']:>10.1f}"
                     f"{p['cpu_ms_per_stream_s']:>10.1f}{_ratio(r['ratio']):>8s}{g['underruns']:>11d}"
                     f"{'-' if g['underruns_in_gateway'] is None else g['underruns_in_gateway']:>7}"
                     f"{g['utterances']:>12d}{g['errors'] + p['errors']:>8d}"
                     f"{min(g['packets_per_stream_s'], p['packets_per_stream_s']):>7.1f}{g['engine_cpu_pct']:>7.0f}%"
                     f"{r['loadavg_1m']:>7.1f}")
    for name, ok in s["met"].items():
        lines.append(f"  target {name}: {'-' if ok is None else 'met' if ok else 'not met'}")
    return "\n".join(lines)


def _ratio(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def run(args: argparse.Namespace, engine_args: list[str]) -> int:
    """Measure, print the table and the JSON line; exit status 1 when an utterance failed, 2 when nothing ran."""
    if min(args.streams) < 1 or args.seconds <= 0 or args.warm_up < 0 or args.server_core == args.client_core:
        print("bench cpu: --streams >= 1, --seconds > 0, --warm-up >= 0, two different cores", file=sys.stderr)
        return 2
    quiet_client_logs()
    os.sched_setaffinity(0, {args.client_core})  # this process, its listeners (the servers are pinned as they start)

    def bench() -> Summary:
        with servers(args, engine_args) as targets, \
                ThreadPoolExecutor(1, initializer=lower_priority, initargs=(args.client_nice,)) as listeners:
            return listeners.submit(asyncio.run, measure(targets, args)).result()

    return report("cpu", bench, (BenchError, ServerFailed, httpx.HTTPError, OSError, TimeoutError),
                  lambda summary: any(r[n]["errors"] for r in summary["rows"] for n in ("gateway", "peer")), render)
