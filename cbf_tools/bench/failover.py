"""``chatterbox-fast bench failover``: utterances whose engine worker is SIGKILLed mid-way while another is up.

Two engine workers on Unix sockets (the simulated engine around eSpeak, ``--sim-rtf`` times real time: an utterance
is still being generated seconds after its first chunk) behind one gateway (``serve --engine-url A,B``). Each
utterance is spoken over the WebSocket (``/v1/stream``) or the HTTP stream (``/v1/tts`` as ndjson), in turn; as its
first chunk arrives the worker saying it is SIGKILLed, then started again while the other says the rest. Per
utterance: whether it ended with ``done`` and no error, the ``failovers`` and ``failover_gap`` (the gateway's: from
the worker's loss to the next worker's first chunk) in it, the longest wait between two chunks at the client, and
whether the chunks' caller spans say every word of the text once, in order (none repeated, none skipped).

Prints a table and, last, one JSON line. Exit 1 unless every utterance completed, moved once and said every word
once. Targets (issue 32, this 2-core machine): 100 of 100, gap p95 <= 1.0 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import httpx
from websockets.asyncio.client import connect

from cbf_tools.bench.engine import percentile
from cbf_tools.peers.local_server import Workers, engines_available, local_server, quiet_client_logs

TEXT = ("The first train leaves at nine in the morning. It stops at every station along the coast. "
        "Passengers for the islands change at the harbour, where the ferry waits. The last train comes back "
        "late at night, and it does not stop at the small stations. Tickets are sold on board.")
TRANSPORTS = ("ws", "http")
OnChunk = Callable[[int], None]  # run (in a thread) as the n-th chunk arrives, from 1


class SpeechFailed(Exception):
    """The utterance ended with an error event or line (its JSON is the message)."""


@dataclass
class Spoken:
    chunks: list[dict[str, Any]]
    done: dict[str, Any]
    longest_wait_s: float  # between two chunks at the client (the first excluded)


def said_once(chunks: list[dict[str, Any]], text: str) -> str | None:
    """None when the chunks, numbered on from 0 and in audio order, speak every word of ``text`` once in order (their
    caller spans follow one another without overlap and together cover it); else what is wrong."""
    if not chunks:
        return "no chunks"
    if [c["seq"] for c in chunks] != list(range(len(chunks))):
        return f"seq {[c['seq'] for c in chunks]}"
    spans = [c["span"] for c in chunks]
    if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
        return f"overlapping spans (words said twice): {spans}"
    if " ".join(text[a:b] for a, b in spans).split() != text.split() or text[spans[-1][1]:].strip():
        return f"spans {spans} do not cover the text word for word"
    offsets = [c["offset"] for c in chunks]
    if offsets != sorted(offsets):
        return f"audio offsets out of order: {offsets}"
    return None


def _auth(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


async def speak_ws(url: str, text: str, on_chunk: OnChunk, key: str | None = None) -> Spoken:
    async with connect(url.replace("http", "ws", 1) + "/v1/stream", additional_headers=_auth(key)) as ws:
        await ws.send(json.dumps({"type": "speak", "text": text, "cache": False}))  # said by a worker, to kill
        chunks, arrivals = [], []
        while True:
            frame = await asyncio.wait_for(ws.recv(), 60)
            if isinstance(frame, bytes):
                continue
            event = json.loads(frame)
            if event["type"] == "error":
                raise SpeechFailed(frame)
            if event["type"] == "chunk":
                chunks.append(event)
                arrivals.append(time.monotonic())
                await asyncio.to_thread(on_chunk, len(chunks))
            elif event["type"] == "done":
                return Spoken(chunks, event, _longest(arrivals))


def speak_http(url: str, text: str, on_chunk: OnChunk, key: str | None = None) -> Spoken:
    chunks, arrivals = [], []
    with httpx.stream("POST", url + "/v1/tts", json={"text": text, "format": "ndjson", "cache": False},
                      headers=_auth(key), timeout=60) as reply:
        if reply.status_code != 200:
            raise SpeechFailed(reply.read().decode())
        for line in reply.iter_lines():
            event = json.loads(line)
            if event["type"] == "chunk":
                chunks.append(event)
                arrivals.append(time.monotonic())
                on_chunk(len(chunks))
            elif event["type"] == "done":
                return Spoken(chunks, event, _longest(arrivals))
            else:
                raise SpeechFailed(line)
    raise SpeechFailed("the stream ended without done")


def _longest(arrivals: list[float]) -> float:
    return max((b - a for a, b in zip(arrivals, arrivals[1:])), default=0.0)


def speak(transport: str, url: str, text: str, on_chunk: OnChunk, key: str | None = None) -> Spoken:
    """One utterance over ``transport`` (with API key ``key`` where the server wants one)."""
    if transport == "ws":
        return asyncio.run(speak_ws(url, text, on_chunk, key))
    return speak_http(url, text, on_chunk, key)


class Fleet:
    """Workers a and b on Unix sockets in ``base``, and which of them says an utterance now (the gateway's /health)."""

    def __init__(self, base: Path, flags: tuple[str, ...]) -> None:
        self.base, self.workers = base, Workers(*flags)

    def listen(self, name: str) -> str:
        return f"unix:{self.base / name}.sock"

    def start(self, name: str, *flags: str) -> None:
        """Worker ``name``, with ``flags`` after the fleet's."""
        self.workers.start(self.listen(name), "--voices-dir", str(self.base / f"voices-{name}"), *flags)

    def start_both(self) -> str:
        """Workers a and b, once both listen; the gateway's --engine-url for them."""
        for name in ("a", "b"):
            self.start(name)
        for name in ("a", "b"):
            self.workers.wait_listening(self.listen(name))
        return f"{self.listen('a')},{self.listen('b')}"

    def kill_the_speaking_one(self, url: str) -> str:
        """SIGKILL the one worker with an utterance in flight; its name."""
        engines = httpx.get(url + "/health").json()["engines"]
        busy = [e["url"] for e in engines if e["in_flight"]]
        if len(busy) != 1:
            raise RuntimeError(f"expected one worker speaking, /health says {engines}")
        self.workers.kill(busy[0])
        return next(name for name in ("a", "b") if self.listen(name) == busy[0])


def trial(fleet: Fleet, url: str, transport: str, text: str) -> dict[str, Any]:
    """One utterance, its worker killed at its first chunk and started again at once."""
    if not engines_available(url, 120):
        raise RuntimeError("the restarted worker did not come back")

    def kill_at_first(n: int) -> None:
        if n == 1:
            fleet.start(fleet.kill_the_speaking_one(url))

    try:
        spoken = speak(transport, url, text, kill_at_first)
    except SpeechFailed as exc:
        return {"transport": transport, "completed": False, "error": str(exc)[:200]}
    return {"transport": transport, "completed": True, "failovers": spoken.done.get("failovers", 0),
            "gap_s": spoken.done.get("failover_gap"), "longest_wait_s": round(spoken.longest_wait_s, 3),
            "wrong": said_once(spoken.chunks, text)}


def summary(trials: list[dict[str, Any]]) -> dict[str, Any]:
    done = [t for t in trials if t["completed"]]
    gaps = [t["gap_s"] for t in done if t["gap_s"] is not None]
    waits = [t["longest_wait_s"] for t in done]
    return {
        "utterances": len(trials), "completed": len(done), "moved_once": sum(t["failovers"] == 1 for t in done),
        "said_once": sum(t["wrong"] is None for t in done),
        "errors": [t["error"] for t in trials if not t["completed"]][:5],
        "wrong": [t["wrong"] for t in done if t["wrong"]][:5],
        "gap_p50_s": round(percentile(gaps, 0.5), 3) if gaps else None,
        "gap_p95_s": round(percentile(gaps, 0.95), 3) if gaps else None,
        "gap_max_s": round(max(gaps), 3) if gaps else None,
        "client_wait_p95_s": round(percentile(waits, 0.95), 3) if waits else None,
        "per_transport": {tr: sum(t["transport"] == tr and t["completed"] and t["wrong"] is None for t in trials)
                          for tr in TRANSPORTS},
    }


def run(args: argparse.Namespace) -> int:
    quiet_client_logs()
    flags = ("--engine", "simulated", "--sim-rtf", str(args.sim_rtf), "--sim-fixed", "0.1")
    with tempfile.TemporaryDirectory(prefix="cbf-failover-") as tmp:
        fleet = Fleet(Path(tmp), flags)
        try:
            engines = fleet.start_both()
            with local_server(["--engine-url", engines, "--log-level", "warning"], quiet=True) as (url, _):
                trials = []
                for i in range(args.utterances):
                    trials.append(trial(fleet, url, TRANSPORTS[i % len(TRANSPORTS)], TEXT))
                    t = trials[-1]
                    print(f"{i + 1:4d} {t['transport']:5s} " + (
                        f"moved {t['failovers']}x, gap {t['gap_s']} s, longest wait {t['longest_wait_s']} s, "
                        f"{'said once' if t['wrong'] is None else t['wrong']}" if t["completed"]
                        else f"FAILED {t['error']}"), flush=True)
        finally:
            fleet.workers.stop()
    result = summary(trials)
    print(f"{result['completed']}/{result['utterances']} completed, {result['moved_once']} moved once, "
          f"{result['said_once']} said every word once; gap p50 {result['gap_p50_s']} s, p95 {result['gap_p95_s']} s, "
          f"max {result['gap_max_s']} s (target p95 <= 1.0); longest wait at the client p95 "
          f"{result['client_wait_p95_s']} s")
    print(json.dumps(result))
    ok = result["completed"] == result["moved_once"] == result["said_once"] == result["utterances"]
    return 0 if ok else 1
