"""``chatterbox-fast bench tenants``: what the keys file's checks cost, and whether a tenant flooding at 10x its limit
moves another tenant's first audio.

1. The checks, in this process (gateway/guard/tenants.py and tenancy.py with real Prometheus metrics): what one
   request costs (its key looked up among 8 and among 1000, a session opened and closed, an utterance started and
   ended, its characters taken) and what one chunk costs (a tenant's utterance counting it), in microseconds.
2. The flood: ``serve`` (eSpeak) with a keys file of two tenants: ``steady`` (no limits) speaks ``--sessions``
   streams of POST /v1/tts one utterance after another, its time to first byte measured, while ``flood``
   (``chars_per_minute = --flood-cpm``, ``max_utterances_in_flight = --flood-limit``) sends nothing, then all its
   limits allow (1x: its limit's worth of clients back to back, each waiting out a refusal's Retry-After), then text
   paced at ten times its rate, ten times as many at once (10x: the excess refused with 429, Retry-After ignored). The flood runs in a process of its own. The phases alternate ``--rounds`` times; steady's p50/p95
   in each, and the change 10x makes against 1x (the target: under 10 %).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from cbf_tools.bench.gateway import TEXTS, BenchError, HttpClient, percentile
from cbf_tools.peers.local_server import ServerFailed, local_server, quiet_client_logs
from engine.protocol import Chunk, ChunkHeader, Done
from gateway.guard.keys_file import Client, key_digest
from gateway.guard.tenancy import LiveSocket, Tenancy, TenantUtterance
from gateway.metrics import Metrics

STEADY_KEY = "steady-bench-key-0123456789"
FLOOD_KEY = "flood-bench-key-0123456789"
PHASES = ("alone", "flood_1x", "flood_10x")


def _tenancy(keys: int) -> Tenancy:
    tenancy = Tenancy(None, (), Metrics())
    clients = [Client(f"t{i}", key_digest(f"bench-key-{i:012d}"), max_sessions=10**6,
                      max_utterances_in_flight=10**6, chars_per_minute=10**9) for i in range(keys)]
    tenancy.tenants.replace(clients, time.monotonic())
    return tenancy


def check_costs(iterations: int) -> dict[str, float]:
    """Microseconds per request's checks (with 8 and 1000 keys) and per chunk."""
    figures: dict[str, float] = {}
    for keys in (8, 1000):
        tenancy = _tenancy(keys)
        tenants = tenancy.tenants
        key = f"bench-key-{keys - 1:012d}"
        rounds = iterations if keys <= 8 else max(1, iterations // 50)
        start = time.perf_counter()
        for _ in range(rounds):
            name = tenants.identify(key).name
            tenants.open_session(name)
            tenancy.charge(name, 60)
            tenants.start_utterance(name, "default")
            tenants.end_utterance(name)
            tenants.close_session(name)
        figures[f"request_us_{keys}_keys"] = round(1e6 * (time.perf_counter() - start) / rounds, 2)
    figures["chunk_us"] = round(asyncio.run(_chunk_cost(iterations)), 3)
    figures["socket_send_us"] = round(asyncio.run(_send_cost(iterations)), 3)
    return figures


async def _send_cost(count: int) -> float:
    """Microseconds the watch on a tenant's WebSocket (LiveSocket) adds to each message it sends."""
    async def send(message: dict[str, Any]) -> None:
        return None

    watched = LiveSocket({"type": "websocket"}, send).send
    message = {"type": "websocket.send", "bytes": b""}
    times = []
    for target in (send, watched):
        start = time.perf_counter()
        for _ in range(count):
            await target(message)
        times.append(time.perf_counter() - start)
    return 1e6 * max(0.0, times[1] - times[0]) / count


class _Chunks:
    """An engine utterance stand-in that yields ``count`` chunks of 100 ms and a done."""

    def __init__(self, count: int) -> None:
        self.id, self.count = "bench", count
        self.pcm = bytes(4800)

    async def events(self):
        header = ChunkHeader("bench", 0, "x", 0.0, 0.1, 0.01)
        for _ in range(self.count):
            yield Chunk(header, self.pcm)
        yield Done("bench", self.count, 0.1 * self.count, 0.01 * self.count)


async def _chunk_cost(count: int) -> float:
    """Microseconds a tenant's utterance adds per chunk (counted against the same loop without it)."""
    tenancy = _tenancy(8)

    async def loop(utterance: Any) -> float:
        start = time.perf_counter()
        async for _ in utterance.events():
            pass
        return time.perf_counter() - start

    bare = await loop(_Chunks(count))
    tenancy.tenants.start_utterance("t0", "default")
    counted = await loop(TenantUtterance(_Chunks(count), "t0", tenancy, time.monotonic()))
    return 1e6 * max(0.0, counted - bare) / count


def keys_file(folder: Path, flood_limit: int, flood_cpm: int) -> Path:
    path = folder / "keys.toml"
    path.write_text(f'[keys.steady]\nkey = "{STEADY_KEY}"\n\n[keys.flood]\nkey = "{FLOOD_KEY}"\n'
                    f"max_utterances_in_flight = {flood_limit}\nchars_per_minute = {flood_cpm}\n")
    return path


async def _steady(url: str, sessions: int, utterances: int) -> list[float]:
    clients = [HttpClient(url, STEADY_KEY, "default") for _ in range(sessions)]

    async def one(index: int, client: HttpClient) -> list[float]:
        await asyncio.sleep(0.1 * index)
        times = []
        for k in range(utterances):
            result = await client.speak(TEXTS[(index + k) % len(TEXTS)])
            if result.ttfa_s is not None:
                times.append(result.ttfa_s)
        return times

    try:
        runs = await asyncio.gather(*(one(i, c) for i, c in enumerate(clients)))
    finally:
        for client in clients:
            await client.close()
    return [t for run in runs for t in run]


async def _flood(url: str, chars_per_minute: float, streams: int, stop: Any, honour: bool,
                 answered: Any = None) -> dict[str, int]:
    """Until ``stop`` is set: ``honour``, ``streams`` clients speaking back to back that wait out each refusal's
    Retry-After (a tenant using all its limits allow); else POST /v1/tts paced at ``chars_per_minute`` characters
    of text, ``streams`` at once, Retry-After ignored. How many were accepted and refused. ``answered`` (an event)
    is set once the server has answered the first of them."""
    counts = {"accepted": 0, "refused": 0}
    gate = asyncio.Semaphore(streams)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {FLOOD_KEY}"},
                                 timeout=60, limits=httpx.Limits(max_connections=streams + 4)) as http:
        async def one(text: str) -> float:
            async with gate:
                async with http.stream("POST", "/v1/tts", json={"text": text, "format": "pcm"}) as reply:
                    if answered is not None:
                        answered.set()
                    await reply.aread()
            counts["accepted" if reply.status_code == 200 else "refused"] += 1
            return float(reply.headers.get("retry-after", 0)) if reply.status_code == 429 else 0.0

        async def honouring(index: int) -> None:
            k = index
            while not stop.is_set():
                k += 1
                if wait := await one(TEXTS[k % len(TEXTS)]):
                    deadline = time.monotonic() + wait
                    while not stop.is_set() and time.monotonic() < deadline:
                        await asyncio.sleep(0.1)

        if honour:
            await asyncio.gather(*(honouring(i) for i in range(streams)))
            return counts

        sending: set[asyncio.Task[None]] = set()
        k = 0
        while not stop.is_set():
            text = TEXTS[k % len(TEXTS)]
            k += 1
            task = asyncio.create_task(one(text))
            sending.add(task)
            task.add_done_callback(sending.discard)
            await asyncio.sleep(60.0 * len(text) / chars_per_minute)
        await asyncio.gather(*sending, return_exceptions=True)
    return counts


def _flooder(url: str, chars_per_minute: float, streams: int, stop: Any, out: Any, honour: bool,
             answered: Any = None) -> None:
    """The flood in a process of its own: its client's CPU is not the steady tenant's measuring loop's."""
    quiet_client_logs()
    out.put(asyncio.run(_flood(url, chars_per_minute, streams, stop, honour, answered)))


async def _phase(url: str, phase: str, args: argparse.Namespace, counts: dict[str, int]) -> list[float]:
    times = {"alone": 0, "flood_1x": 1, "flood_10x": 10}[phase]
    if not times:
        return await _steady(url, args.sessions, args.utterances)
    context = multiprocessing.get_context("spawn")
    stop, out, answered = context.Event(), context.Queue(), context.Event()
    flooder = context.Process(target=_flooder, args=(url, times * args.flood_cpm, times * args.flood_limit, stop,
                                                     out, times == 1, answered), daemon=True)
    flooder.start()
    try:
        # the flood under way before steady speaks: its process started (a spawned Python: seconds on a busy
        # machine) and the server answering it, and 2 s of it
        await asyncio.sleep(2.0)
        if not await asyncio.to_thread(answered.wait, 60):
            raise BenchError("the flooding tenant's first request was not answered within 60 s")
        return await _steady(url, args.sessions, args.utterances)
    finally:
        stop.set()
        for key, value in (await asyncio.to_thread(out.get, True, 120)).items():
            counts[key] += value
        flooder.join(10)


async def flood(url: str, args: argparse.Namespace) -> dict[str, Any]:
    times: dict[str, list[float]] = {phase: [] for phase in PHASES}
    counts = {phase: {"accepted": 0, "refused": 0} for phase in PHASES}
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {STEADY_KEY}"}, timeout=60) as http:
        await http.post(url + "/v1/tts", json={"text": "Warming up."})
    for _ in range(args.rounds):
        for phase in PHASES:
            times[phase] += await _phase(url, phase, args, counts[phase])
    out: dict[str, Any] = {}
    for phase in PHASES:
        out[phase] = {"utterances": len(times[phase]), "ttfa_p50_ms": _ms(times[phase], 0.5),
                      "ttfa_p95_ms": _ms(times[phase], 0.95), "flood": counts[phase]}
    base, loud = out["flood_1x"]["ttfa_p95_ms"], out["flood_10x"]["ttfa_p95_ms"]
    out["p95_change_10x_vs_1x_pct"] = round(100 * (loud - base) / base, 1) if base and loud else None
    return out


def _ms(values: list[float], q: float) -> float | None:
    return round(1000 * percentile(values, q), 1) if values else None


def run(args: argparse.Namespace) -> int:
    quiet_client_logs()
    summary: dict[str, Any] = {"bench": "tenants", "checks": check_costs(args.checks)}
    checks = summary["checks"]
    print(f"checks: {checks['request_us_8_keys']} us a request (8 keys), {checks['request_us_1000_keys']} us "
          f"(1000 keys), {checks['chunk_us']} us a chunk, {checks['socket_send_us']} us a WebSocket message sent")
    if not args.no_flood:
        with tempfile.TemporaryDirectory(prefix="cbf-bench-tenants-") as folder:
            keys = keys_file(Path(folder), args.flood_limit, args.flood_cpm)
            flags = ["--engine", "espeak", "--keys-file", str(keys), "--max-sessions", "64", "--log-level", "warning"]
            try:
                with local_server(flags, quiet=True) as (url, _):
                    summary["flood"] = asyncio.run(flood(url, args))
            except (ServerFailed, BenchError) as exc:
                print(f"bench tenants: {exc}")
                return 1
        for phase in PHASES:
            row = summary["flood"][phase]
            print(f"{phase:>10}: steady's first audio p50 {row['ttfa_p50_ms']} ms, p95 {row['ttfa_p95_ms']} ms "
                  f"({row['utterances']} utterances); flood accepted {row['flood']['accepted']}, refused "
                  f"{row['flood']['refused']}")
        print(f"steady's p95, flood at 10x its limit vs at 1x: {summary['flood']['p95_change_10x_vs_1x_pct']} % "
              "(target: under 10 %)")
    print(json.dumps(summary))
    return 0
