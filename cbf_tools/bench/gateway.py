"""``chatterbox-fast bench gateway``: what clients of one transport get, with N sessions speaking at once.

Each of ``--sessions`` concurrent sessions speaks ``--utterances`` texts one after another, waiting (like a listener)
until one has played before sending the next, and the bench measures at the client:

- time to first audio: from the text leaving the client to the first audio there. WebRTC: the first decoded 20 ms
  frame with speech energy (RMS above ``SPEECH_RMS``), with the aiortc receiver's jitter-buffer prefetch set to 0
  (aiortc's default of 4 frames adds 80 ms that is the test client's, not the server's); WebSocket: the first binary
  frame; HTTP: the first body byte of ``POST /v1/tts`` (24 kHz PCM). For WebRTC and WebSocket the server's own TTFA
  (``done.ttfa``: text in to first chunk into the session) is subtracted too, which leaves the transport's share.
- underruns after first audio. WebRTC: the server's ``done.underruns`` (its jitter buffer ran dry), and gaps in the
  decoded audio (an utterance's loud span longer than its audio); WebSocket, HTTP: a listener who plays from the first
  byte at 1x starves (``cbf_tools.gate.deploy.count_underruns``). WebSocket with ``--playback-rate R`` and/or
  ``--report-playout``: a listener that plays at R times real time as the audio arrives, and reports its position
  (``playout``) every 100 ms (``cbf_tools.peers.ws_player``): its buffer running dry before the utterance's end.
- server CPU per stream: CPU seconds of the server process and its descendants (the engine worker), read with
  psutil, over the window in which every session is connected, divided by stream-seconds (sessions x window). Only
  when the bench started the server itself (without ``--url``).

Its clients send ``cache: false``, so what is measured is the engine's path. With ``--prompt-cache`` each session says
each of its texts twice in a row, the prompt cache allowed: the first is a miss (unless another session said it
first), the second a hit (``done.cached``; HTTP: ``X-Prompt-Cache``), and the first audio of hits and misses is
printed apart (docs/prompt-cache.md).

Without ``--url`` it starts ``chatterbox-fast serve`` on 127.0.0.1 with the engine flags (default ``--engine espeak``).
With ``--tls`` (ws and http) that server serves https and wss with a server certificate for 127.0.0.1 signed by a
throwaway CA made in a temporary folder (``cbf_tools.peers.certificates``), and the clients trust that CA alone.
Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import ssl
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

from engine.protocol import SAMPLE_RATE
from cbf_tools.bench import report, slow_readers
from cbf_tools.bench.engine import percentile
from cbf_tools.bench.procs import tree_cpu
from cbf_tools.gate.deploy import count_underruns
from cbf_tools.peers.certificates import make_certificates, trusting
from cbf_tools.peers.local_server import ServerFailed, local_server, quiet_client_logs
from cbf_tools.peers.rtc_listener import SPEECH_RMS, Listener
from cbf_tools.peers.ws_player import Refused, play

TEXTS = (  # vowel-initial, so the first decoded frame of speech is not a quiet consonant
    "All right, your table for two is ready now.",
    "Okay, I have moved your booking to Thursday evening at seven.",
    "Of course. Your parcel left the warehouse this morning and should arrive tomorrow.",
    "Excellent, that is all done. Is there anything else I can help you with today?",
)
PCM_BYTES_PER_SECOND = SAMPLE_RATE * 2  # /v1/tts and the WebSocket default: s16le mono at the engine's rate
FRAME_S = 0.020
GAP_TOLERANCE_FRAMES = 2  # codec edges: a decoded loud span may exceed the audio by this much without a gap
DECODE_TAIL_S = 0.15  # `done` leaves once playout ends; the last frames are decoded just after it
PAUSE_JITTER_S = 0.2  # added at random to --pause: texts arrive at a random phase of the 20 ms tick
UTTERANCE_TIMEOUT_S = 60.0
TARGET_P50_MS = {"webrtc": 30.0, "ws": 5.0}  # transport share of time to first audio
TARGET_OPUS_STREAMS = 20  # concurrent Opus streams with zero underruns
TARGETS = "WebRTC loopback p50 <= 30 ms; WS p50 <= 5 ms; >= 20 concurrent Opus streams with zero underruns"
TLS_TRANSPORTS = ("ws", "http")  # over the gateway's own TLS; WebRTC's media is DTLS-SRTP whatever signals it


class BenchError(Exception):
    """A session could not be set up or an utterance failed."""


@dataclass
class Result:
    """One utterance as a client got it."""

    ttfa_s: float | None  # text sent -> first audio at the client; None when no audio came
    server_ttfa_s: float | None  # done.ttfa (WebRTC, WebSocket)
    audio_s: float
    server_underruns: int | None  # done.underruns (WebRTC)
    client_underruns: int  # WebRTC: 1 when the decoded audio has a gap; else the simulated listener's
    starved_s: float  # WebRTC: length of the decoded gaps; else the simulated listener's wait
    reports: int = 0  # ``playout`` messages the WebSocket listener sent
    cached: bool = False  # served from the prompt cache (done.cached; HTTP: X-Prompt-Cache)


class Client(Protocol):
    """One session of a transport; ``speak`` returns once a listener has heard the whole utterance."""

    async def connect(self) -> None: ...

    async def speak(self, text: str) -> Result: ...

    async def close(self) -> None: ...


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


async def _heard(sent: float, arrivals: list[tuple[float, float]], server_ttfa_s: float | None,
                 cached: bool) -> Result:
    """A byte stream's utterance as a listener playing from the first byte at 1x hears it; returns once it has.

    ``sent``: perf_counter when the text left; ``arrivals``: (seconds after ``sent``, audio seconds received so far).
    """
    underruns, starved = count_underruns(arrivals)
    first = arrivals[0][0] if arrivals else None
    audio_s = arrivals[-1][1] if arrivals else 0.0
    await asyncio.sleep(max(0.0, sent + (first or 0.0) + audio_s + starved - time.perf_counter()))
    return Result(ttfa_s=first, server_ttfa_s=server_ttfa_s, audio_s=audio_s, server_underruns=None,
                  client_underruns=underruns, starved_s=starved, cached=cached)


class WebRTCClient:
    """A listening aiortc peer; text over its data channel, speech on its audio track. ``cache``: whether its
    speaks may come from the prompt cache (off: what is measured is the engine's path)."""

    def __init__(self, url: str, api_key: str | None, voice: str, codec: str, cache: bool = False) -> None:
        self.url, self.api_key, self.voice, self.codec, self.cache = url, api_key, voice, codec, cache
        self.listener = Listener.create(codecs=[codec], prefetch=0)

    async def connect(self) -> None:
        async with httpx.AsyncClient(headers=_headers(self.api_key), timeout=30) as http:
            reply = await http.post(self.url + "/v1/webrtc/offer", json={
                "sdp": await self.listener.offer(), "type": "offer", "voice": self.voice, "codec": self.codec})
        if reply.status_code != 200:
            raise BenchError(f"POST /v1/webrtc/offer answered HTTP {reply.status_code}: {reply.text[:200]}")
        await self.listener.accept(reply.json()["sdp"])
        channel = self.listener.channel
        await self.listener.wait_for(lambda: channel.readyState == "open" and bool(self.listener.events), 30)

    async def speak(self, text: str) -> Result:
        listener, seen = self.listener, len(self.listener.events)
        sent = time.time()
        listener.channel.send(json.dumps({"type": "speak", "text": text, "cache": self.cache}))
        await listener.wait_for(lambda: any(e["type"] in ("done", "error") for e in listener.events[seen:]),
                                UTTERANCE_TIMEOUT_S)
        end = next(e for e in listener.events[seen:] if e["type"] in ("done", "error"))
        if end["type"] == "error":
            raise BenchError(f"{end['code']}: {end['message']}")
        await asyncio.sleep(DECODE_TAIL_S)  # `done` comes once the utterance has played out
        frames = [f for f in listener.frames if f.at >= sent]
        loud = [i for i, f in enumerate(frames) if f.rms > SPEECH_RMS]
        audio_s = float(end["audio_seconds"])
        gap_frames = 0
        if loud:
            expected = math.ceil(audio_s / FRAME_S - 1e-9)
            gap_frames = max(0, loud[-1] - loud[0] + 1 - expected - GAP_TOLERANCE_FRAMES)
        return Result(ttfa_s=frames[loud[0]].at - sent if loud else None, server_ttfa_s=end.get("ttfa"),
                      audio_s=audio_s, server_underruns=end.get("underruns"), client_underruns=int(gap_frames > 0),
                      starved_s=gap_frames * FRAME_S, cached=bool(end.get("cached")))

    async def close(self) -> None:
        await self.listener.close()


class WebSocketClient:
    """``/v1/stream``: JSON text in, 24 kHz PCM binary frames and events out (``cache`` as WebRTCClient's)."""

    def __init__(self, url: str, api_key: str | None, voice: str, rate: float | None = None,
                 report: bool = False, cache: bool = False, verify: ssl.SSLContext | None = None) -> None:
        self.url = url.replace("http", "ws", 1) + "/v1/stream"  # https -> wss
        self.verify = verify  # wss: the context that checks the server's certificate (None: the system's CAs)
        self.api_key, self.voice, self.cache = api_key, voice, cache
        self.rate, self.report = rate, report  # a playing listener (ws_player) where either is set
        self.ws: ClientConnection | None = None
        self.audio = b""  # the last utterance's audio (not kept by a playing listener)

    async def connect(self) -> None:
        self.ws = await connect(self.url, additional_headers=_headers(self.api_key), open_timeout=30,
                                **({"ssl": self.verify} if self.verify is not None else {}))
        ready = json.loads(await asyncio.wait_for(self.ws.recv(), 30))
        if ready.get("type") != "ready":
            raise BenchError(f"expected a ready event, got {ready}")
        await self.ws.send(json.dumps({"type": "config", "voice": self.voice, "format": "pcm_s16le",
                                       "sample_rate": SAMPLE_RATE}))

    async def speak(self, text: str) -> Result:
        assert self.ws is not None
        if self.rate is not None or self.report:
            try:
                played = await play(self.ws, text, rate=self.rate or 1.0, report=self.report, cache=self.cache,
                                    bytes_per_second=PCM_BYTES_PER_SECOND, timeout=UTTERANCE_TIMEOUT_S)
            except Refused as exc:
                raise BenchError(str(exc)) from None
            return Result(ttfa_s=played.ttfa_s, server_ttfa_s=played.done.get("ttfa"), audio_s=played.audio_s,
                          server_underruns=None, client_underruns=played.underruns, starved_s=played.starved_s,
                          reports=played.reports)
        arrivals: list[tuple[float, float]] = []
        received = 0
        audio = bytearray()
        sent = time.perf_counter()
        await self.ws.send(json.dumps({"type": "speak", "text": text, "cache": self.cache}))
        while True:
            frame = await asyncio.wait_for(self.ws.recv(), UTTERANCE_TIMEOUT_S)
            if isinstance(frame, bytes):
                audio += frame
                received += len(frame)
                arrivals.append((time.perf_counter() - sent, received / PCM_BYTES_PER_SECOND))
                continue
            event = json.loads(frame)
            if event["type"] == "error":
                raise BenchError(f"{event['code']}: {event['message']}")
            if event["type"] == "done":
                break
        self.audio = bytes(audio)
        return await _heard(sent, arrivals, event.get("ttfa"), bool(event.get("cached")))

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()


class HttpClient:
    """``POST /v1/tts`` streaming 24 kHz PCM, one request per utterance."""

    def __init__(self, url: str, api_key: str | None, voice: str, cache: bool = False,
                 verify: ssl.SSLContext | None = None) -> None:
        self.cache = cache
        self.http = httpx.AsyncClient(base_url=url, headers=_headers(api_key), verify=verify or True,
                                      timeout=httpx.Timeout(UTTERANCE_TIMEOUT_S, connect=10))
        self.voice = voice

    async def connect(self) -> None:
        return None

    async def speak(self, text: str) -> Result:
        arrivals: list[tuple[float, float]] = []
        received = 0
        sent = time.perf_counter()
        body = {"text": text, "voice": self.voice, "format": "pcm", "sample_rate": SAMPLE_RATE, "cache": self.cache}
        async with self.http.stream("POST", "/v1/tts", json=body) as response:
            if response.status_code != 200:
                await response.aread()
                raise BenchError(f"POST /v1/tts answered HTTP {response.status_code}: {response.text[:200]}")
            cached = response.headers.get("x-prompt-cache") == "hit"
            async for data in response.aiter_bytes():
                if data:
                    received += len(data)
                    arrivals.append((time.perf_counter() - sent, received / PCM_BYTES_PER_SECOND))
        return await _heard(sent, arrivals, None, cached)

    async def close(self) -> None:
        await self.http.aclose()


def make_client(args: argparse.Namespace, url: str, verify: ssl.SSLContext | None = None) -> Client:
    """A session of ``args.transport`` on the server at ``url`` (https: its certificate checked with ``verify``)."""
    if args.transport == "webrtc":
        return WebRTCClient(url, args.api_key, args.voice, args.codec, args.prompt_cache)
    if args.transport == "ws":
        return WebSocketClient(url, args.api_key, args.voice, args.playback_rate, args.report_playout,
                               args.prompt_cache, verify)
    return HttpClient(url, args.api_key, args.voice, args.prompt_cache, verify)


@contextlib.contextmanager
def served(args: argparse.Namespace, engine_args: list[str],
           tls: dict[str, Path] | None = None) -> Iterator[tuple[str, int]]:
    """Run ``chatterbox-fast serve`` on 127.0.0.1 with the engine flags of ``args``; yield (base URL, pid). ``tls``:
    the files of ``make_certificates``, served with ``--tls-cert/--tls-key`` (the URL is then https)."""
    flags = ["--max-sessions", str(max(32, args.sessions)), *engine_args, "--log-level", "warning",
             *(["--stall-timeout", f"{args.stall_timeout:g}"] if args.stall_timeout else []),
             *(["--keys-file", args.keys_file] if args.keys_file else []),
             *(["--tls-cert", str(tls["cert"]), "--tls-key", str(tls["key"])] if tls else [])]
    try:
        with local_server(flags, quiet=True, verify=trusting(tls["ca"]) if tls else True) as served_at:
            yield served_at
    except ServerFailed as exc:
        raise BenchError(str(exc)) from None


async def _drive(client: Client, index: int, args: argparse.Namespace) -> list[Result]:
    """One session: its share of the stagger, then its utterances, each after the last was heard and a pause."""
    await asyncio.sleep(args.stagger * index / args.sessions)
    results = []
    texts = [TEXTS[(index + k) % len(TEXTS)] for k in range(args.utterances)]
    if args.prompt_cache:  # each twice in a row: a miss (unless another session said it first), then a hit
        texts = [f"{text} That was number {index * args.utterances + k}." for k, text in enumerate(texts)
                 for _ in range(2)]
    for k, text in enumerate(texts):
        if k:
            await asyncio.sleep(args.pause + random.uniform(0, PAUSE_JITTER_S))
        results.append(await client.speak(text))
    return results


async def measure(args: argparse.Namespace, url: str, pid: int | None,
                  verify: ssl.SSLContext | None = None) -> dict[str, Any]:
    """Connect every session, run them all at once, and summarise (``verify``: as ``make_client``'s)."""
    async with httpx.AsyncClient(headers=_headers(args.api_key), timeout=UTTERANCE_TIMEOUT_S,
                                 verify=verify or True) as http:
        engine = (await http.get(url + "/health")).json().get("engine") or {}
        warm = await http.post(url + "/v1/tts", json={"text": "Warming up.", "voice": args.voice, "format": "pcm"})
        if warm.status_code != 200:
            raise BenchError(f"warm-up POST /v1/tts answered HTTP {warm.status_code}: {warm.text[:200]}")
    clients = [make_client(args, url, verify) for _ in range(args.sessions)]
    readers: list[ClientConnection] = []
    slow = None
    try:
        if args.slow_readers:
            slow = await slow_readers.cost(url, pid, args.slow_readers, _headers(args.api_key), readers,
                                           slow_readers.settle_s(args.stall_timeout))
        await asyncio.gather(*(c.connect() for c in clients))
        cpu0, start = (tree_cpu(pid) if pid else None), time.monotonic()
        runs = await asyncio.gather(*(_drive(c, i, args) for i, c in enumerate(clients)), return_exceptions=True)
        window = time.monotonic() - start
        cpu1 = tree_cpu(pid) if pid else None
        for c in clients:
            with contextlib.suppress(Exception):
                await c.close()
        if slow is not None:
            slow["sent_s"] = await slow_readers.sent(url, _headers(args.api_key), readers)
    finally:
        for c in clients:
            with contextlib.suppress(Exception):
                await c.close()
        await slow_readers.close(readers)
    errors = [f"{type(r).__name__}: {r}" for r in runs if isinstance(r, BaseException)]
    results = [m for r in runs if not isinstance(r, BaseException) for m in r]
    cpu = (cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]) if cpu0 and cpu1 else None
    return {**summarise(args, engine, url if pid is None else "started", results, errors, window, cpu),
            "slow_readers": slow}


def _ms(values: list[float], q: float) -> float | None:
    return round(1000 * percentile(values, q), 1) if values else None


def summarise(args: argparse.Namespace, engine: dict[str, Any], server: str, results: list[Result],
              errors: list[str], window_s: float, cpu: tuple[float, float] | None) -> dict[str, Any]:
    """The JSON result: latency percentiles, underruns, CPU per stream-second."""
    ttfa = [r.ttfa_s for r in results if r.ttfa_s is not None]
    server_ttfa = [r.server_ttfa_s for r in results if r.server_ttfa_s is not None]
    share = [r.ttfa_s - r.server_ttfa_s for r in results if r.ttfa_s is not None and r.server_ttfa_s is not None]
    stream_s = args.sessions * window_s
    webrtc, ws = args.transport == "webrtc", args.transport == "ws"
    summary: dict[str, Any] = {
        "bench": "gateway", "transport": args.transport, "tls": bool(args.tls), "codec": args.codec if webrtc else None,
        "receiver_prefetch": 0 if webrtc else None, "sessions": args.sessions, "pause_s": args.pause,
        "playback_rate": (args.playback_rate or 1.0) if ws else None,
        "playout_reports": sum(r.reports for r in results) if ws and args.report_playout else None,
        "utterances": len(results),
        "errors": len(errors), "engine": engine.get("engine"), "server": server,
        "ttfa_p50_ms": _ms(ttfa, 0.5), "ttfa_p95_ms": _ms(ttfa, 0.95),
        "server_ttfa_p50_ms": _ms(server_ttfa, 0.5), "server_ttfa_p95_ms": _ms(server_ttfa, 0.95),
        "transport_p50_ms": _ms(share, 0.5), "transport_p95_ms": _ms(share, 0.95),
        "no_audio": sum(r.ttfa_s is None for r in results),
        "underruns_server": sum(r.server_underruns or 0 for r in results) if webrtc else None,
        "underruns_client": sum(r.client_underruns for r in results),
        "starved_ms": round(1000 * sum(r.starved_s for r in results), 1),
        "audio_s": round(sum(r.audio_s for r in results), 2), "window_s": round(window_s, 2),
        "stream_s": round(stream_s, 2),
        "gateway_cpu_s": None, "engine_cpu_s": None, "cpu_ms_per_stream_s": None, "server_cpu_pct": None,
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }
    if args.prompt_cache:
        for name, plural, picked in (("hit", "hits", True), ("miss", "misses", False)):
            first = [r.ttfa_s for r in results if r.cached is picked and r.ttfa_s is not None]
            summary.update({f"cache_{plural}": sum(r.cached is picked for r in results),
                            f"cache_{name}_ttfa_p50_ms": _ms(first, 0.5),
                            f"cache_{name}_ttfa_p95_ms": _ms(first, 0.95)})
    if cpu is not None:
        total = cpu[0] + cpu[1]
        summary.update(gateway_cpu_s=round(cpu[0], 3), engine_cpu_s=round(cpu[1], 3),
                       cpu_ms_per_stream_s=round(1000 * total / stream_s, 2) if stream_s else None,
                       server_cpu_pct=round(100 * total / window_s, 1) if window_s else None)
    for error in errors[:5]:
        print(f"bench gateway: session failed: {error}", file=sys.stderr)
    return summary


def _cell(value: float | None, unit: str = " ms") -> str:
    return "-" if value is None else f"{value:.1f}{unit}"


def render(s: dict[str, Any]) -> str:
    """The short human-readable table printed above the JSON line."""
    how = {"webrtc": f"{s['codec']}, first decoded frame with speech energy, receiver jitter-buffer prefetch 0",
           "ws": f"first binary frame; played at {s['playback_rate'] or 1:g}x, "
                 + ("reporting playout" if s["playout_reports"] is not None else "no playout reports"),
           "http": "first body byte of POST /v1/tts"}[s["transport"]]
    lines = [
        f"bench gateway: {s['transport']}{' over TLS' if s['tls'] else ''} ({how}); {s['sessions']} sessions, "
        f"{s['utterances']} utterances, "
        f"{s['errors']} errors; engine {s['engine']}; server {s['server']}; load {s['loadavg_1m']}",
        f"{'':34s}{'p50':>10s}{'p95':>10s}",
        f"{'time to first audio (client)':34s}{_cell(s['ttfa_p50_ms']):>10s}{_cell(s['ttfa_p95_ms']):>10s}",
        f"{'  server TTFA (done.ttfa)':34s}{_cell(s['server_ttfa_p50_ms']):>10s}{_cell(s['server_ttfa_p95_ms']):>10s}",
        f"{'  transport share (difference)':34s}{_cell(s['transport_p50_ms']):>10s}{_cell(s['transport_p95_ms']):>10s}",
        f"underruns after first audio: server {'-' if s['underruns_server'] is None else s['underruns_server']}, "
        f"{'decoded gaps' if s['transport'] == 'webrtc' else 'simulated listener'} {s['underruns_client']} "
        f"({s['starved_ms']:.0f} ms); utterances without audio {s['no_audio']}",
    ]
    if "cache_hits" in s:
        for name, plural in (("hit", "hits"), ("miss", "misses")):
            lines.append(f"{'  prompt cache ' + plural + ' (' + str(s[f'cache_{plural}']) + ')':34s}"
                         f"{_cell(s[f'cache_{name}_ttfa_p50_ms']):>10s}{_cell(s[f'cache_{name}_ttfa_p95_ms']):>10s}")
    if s["cpu_ms_per_stream_s"] is not None:
        lines.append(f"server CPU: {s['server_cpu_pct']:.1f} % of a core over {s['window_s']:.1f} s (gateway "
                     f"{s['gateway_cpu_s']:.2f} s, engine {s['engine_cpu_s']:.2f} s) = "
                     f"{s['cpu_ms_per_stream_s']:.1f} CPU-ms per stream-second")
    else:
        lines.append("server CPU: not measured (the bench did not start the server)")
    if s.get("slow_readers"):
        lines.append(slow_readers.render(s["slow_readers"]))
    lines.append(f"targets: {TARGETS}")
    target = TARGET_P50_MS.get(s["transport"])
    if target is not None and s["transport_p50_ms"] is not None:
        verdict = "met" if s["transport_p50_ms"] <= target else "not met"
        lines.append(f"  {s['transport']} transport share p50 {s['transport_p50_ms']:.1f} ms vs <= {target:.0f} ms: "
                     f"{verdict}")
    if s["transport"] == "webrtc" and s["codec"] == "opus":
        clean = s["errors"] == 0 and s["underruns_server"] == 0 and s["underruns_client"] == 0
        verdict = "met" if clean and s["sessions"] >= TARGET_OPUS_STREAMS else (
            f"zero underruns at {s['sessions']} streams (target needs {TARGET_OPUS_STREAMS})" if clean else "not met")
        lines.append(f"  {s['sessions']} concurrent Opus streams, underruns {s['underruns_server']} server / "
                     f"{s['underruns_client']} decoded: {verdict}")
    return "\n".join(lines)


async def _bench(args: argparse.Namespace, engine_args: list[str]) -> dict[str, Any]:
    if args.url:
        return await measure(args, args.url.rstrip("/"), None)
    if not args.tls:
        with served(args, engine_args) as (url, pid):
            return await measure(args, url, pid)
    with tempfile.TemporaryDirectory(prefix="cbf-bench-tls-") as folder:  # a throwaway CA, gone with the server
        tls = make_certificates(Path(folder))
        with served(args, engine_args, tls) as (url, pid):
            return await measure(args, url, pid, trusting(tls["ca"]))


def run(args: argparse.Namespace, engine_args: list[str]) -> int:
    """Measure, print the table and the JSON line; exit status 1 when a session failed, 2 when nothing ran."""
    if args.sessions < 1 or args.utterances < 1:
        print("bench gateway: --sessions and --utterances must be at least 1", file=sys.stderr)
        return 2
    if (args.playback_rate is not None or args.report_playout) and args.transport != "ws":
        print("bench gateway: --playback-rate and --report-playout are for --transport ws", file=sys.stderr)
        return 2
    if args.tls and args.transport not in TLS_TRANSPORTS:
        print(f"bench gateway: --tls is for --transport ws and http (WebRTC's media is encrypted with DTLS "
              f"whatever its signalling goes over), not {args.transport}", file=sys.stderr)
        return 2
    if args.tls and args.url:
        print("bench gateway: --tls is for the server the bench starts; for a running one give --url its https:// "
              "address", file=sys.stderr)
        return 2
    if args.playback_rate is not None and not 0 < args.playback_rate < math.inf:
        print("bench gateway: --playback-rate must be > 0", file=sys.stderr)
        return 2
    quiet_client_logs()
    return report("gateway", lambda: asyncio.run(_bench(args, engine_args)),
                  (BenchError, httpx.HTTPError, WebSocketException, OSError),
                  lambda summary: bool(summary["errors"]) or not summary["utterances"], render,
                  transport=args.transport)
