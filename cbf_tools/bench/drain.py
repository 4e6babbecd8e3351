"""``chatterbox-fast bench drain``: a rolling restart of ``serve --processes 2`` under calls; how many were dropped.

It starts ``serve --processes 2`` on 127.0.0.1 with eSpeak, then places ``--calls`` calls at a steady pace, each on a
fresh connection: two of three a WebSocket session that streams its text in pieces (as an LLM's tokens come) and waits
for ``done``, one of three a ``POST /v1/tts`` read to its end. After the first tenth of them it sends the supervisor
SIGHUP (gateway/host/processes.py: each gateway process replaced in turn, the old one handing the port over and
draining) and goes on placing calls while that happens. A call does what docs/deploying/scaling.md asks of a client:
closed with 1012 (or refused with ``draining``) before its end, it reconnects and sends its text again (at most
``RETRIES`` times; counted as retried). A call that ends any other way (an error, a reset or refused connection, a
cut stream, no ``done`` in time) is dropped.

Prints a table and, last, one JSON line. Exit 1 unless no call was dropped and every gateway process was replaced.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, WebSocketException

from cbf_tools.bench import Summary, report
from cbf_tools.bench.gateway import TEXTS
from cbf_tools.peers.local_server import ServerFailed, local_server, quiet_client_logs

RESTART_CLOSE_CODE = 1012
RETRIES = 3
CALL_TIMEOUT_S = 60.0
PIECE_PAUSE_S = 0.2  # between the pieces of a WebSocket call's text: it is in flight for a while
PROCESSES = 2


class Retry(Exception):
    """The server said to reconnect (1012, or ``draining``) before the call's end."""


@dataclass
class Tally:
    done: int = 0
    retried: int = 0  # calls that had to reconnect at least once
    dropped: list[str] = field(default_factory=list)  # why each dropped call failed


async def _ws_call(base: str, text: str) -> None:
    """One WebSocket call: the text in pieces, then ``end``; returns at its ``done``."""
    async with connect(base.replace("http", "ws", 1) + "/v1/stream") as ws:
        words = text.split()
        for start in range(0, len(words), 3):
            await ws.send(json.dumps({"type": "text", "text": " ".join(words[start:start + 3]) + " "}))
            await asyncio.sleep(PIECE_PAUSE_S)
        await ws.send(json.dumps({"type": "end"}))
        try:
            async for message in ws:
                if isinstance(message, bytes):
                    continue
                event = json.loads(message)
                if event["type"] == "done":
                    return
                if event["type"] == "error":
                    if event["code"] == "draining":
                        raise Retry("refused: draining")
                    raise RuntimeError(f"error {event['code']}: {event['message']}")
        except ConnectionClosed as exc:
            if exc.rcvd is not None and exc.rcvd.code == RESTART_CLOSE_CODE:
                raise Retry("closed with 1012") from None
            raise
        code = ws.close_code
        if code == RESTART_CLOSE_CODE:
            raise Retry("closed with 1012")
        raise RuntimeError(f"closed with {code} before done")


async def _http_call(base: str, text: str) -> None:
    """One ``POST /v1/tts`` on a connection of its own, read to its end."""
    async with httpx.AsyncClient(timeout=CALL_TIMEOUT_S) as http:
        async with http.stream("POST", base + "/v1/tts", json={"text": text, "cache": False}) as response:
            if response.status_code == 503 and "draining" in (await response.aread()).decode(errors="replace"):
                raise Retry("refused: draining")
            if response.status_code != 200:
                raise RuntimeError(f"HTTP {response.status_code}")
            audio = sum([len(piece) async for piece in response.aiter_bytes()])
            if not audio:
                raise RuntimeError("no audio")


async def _call(base: str, index: int, tally: Tally) -> None:
    place = _http_call if index % 3 == 2 else _ws_call
    text = TEXTS[index % len(TEXTS)]
    for attempt in range(RETRIES + 1):
        try:
            await asyncio.wait_for(place(base, text), CALL_TIMEOUT_S)
        except Retry:
            if attempt == 0:
                tally.retried += 1
            continue
        except (OSError, TimeoutError, WebSocketException, httpx.HTTPError, RuntimeError) as exc:
            tally.dropped.append(f"call {index}: {type(exc).__name__}: {exc}")
            return
        tally.done += 1
        return
    tally.dropped.append(f"call {index}: still told to reconnect after {RETRIES} retries")


def _processes(base: str) -> list[dict[str, Any]]:
    with contextlib.suppress(httpx.HTTPError, ValueError):
        return httpx.get(base + "/health", timeout=5).json()["processes"]
    return []


async def _until(condition: Any, timeout: float) -> float | None:
    """When ``condition()`` first held (monotonic seconds), asked every 0.1 s; None after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(condition):
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.1)
    return time.monotonic()


async def measure(base: str, supervisor: int, calls: int, interval: float) -> dict[str, Any]:
    """Place ``calls`` calls ``interval`` s apart, SIGHUP ``supervisor`` after the first tenth; the figures."""
    if await _until(lambda: sum(p["status"] == "ok" for p in _processes(base)) == PROCESSES, 60) is None:
        raise ServerFailed(f"the {PROCESSES} gateway processes did not report ok")
    before = {p["pid"] for p in _processes(base)}
    tally, placed, restart_at = Tally(), [], max(1, calls // 10)
    placed_at: list[float] = []
    hup = time.monotonic()
    rolled: asyncio.Task[float | None] | None = None
    for index in range(calls):
        if index == restart_at:
            os.kill(supervisor, signal.SIGHUP)
            hup = time.monotonic()
            rolled = asyncio.create_task(_until(lambda: not before & {p["pid"] for p in _processes(base)} and sum(
                p["status"] == "ok" for p in _processes(base)) == PROCESSES, 120))
        placed.append(asyncio.create_task(_call(base, index, tally)))
        placed_at.append(time.monotonic())
        await asyncio.sleep(interval)
    rolled_by = await rolled if rolled is not None else None
    await asyncio.gather(*placed)
    after = {p["pid"] for p in _processes(base)}
    return {"bench": "drain", "calls": calls, "done": tally.done, "dropped": len(tally.dropped),
            "retried": tally.retried, "restart_after_calls": restart_at,
            "calls_placed_during_restart": sum(hup <= at <= (rolled_by or at) for at in placed_at),
            "replaced": rolled_by is not None and not before & after,
            "restart_s": None if rolled_by is None else round(rolled_by - hup, 1),
            "why_dropped": tally.dropped[:10]}


def render(summary: dict[str, Any]) -> str:
    return "\n".join([
        f"bench drain: serve --processes {PROCESSES}, SIGHUP after {summary['restart_after_calls']} of "
        f"{summary['calls']} calls",
        "  every process replaced: " + (f"yes, in {summary['restart_s']} s, {summary['calls_placed_during_restart']} "
                                         "calls placed meanwhile" if summary["replaced"] else "NO"),
        f"  calls done {summary['done']}, dropped {summary['dropped']}, retried after 1012 or draining "
        f"{summary['retried']}",
        *(f"  dropped: {why}" for why in summary["why_dropped"]),
    ])


def run(args: argparse.Namespace) -> int:
    quiet_client_logs()
    flags = ["--processes", str(PROCESSES), "--engine", "espeak", "--drain-grace", str(args.drain_grace),
             "--log-level", "warning"]

    def bench() -> Summary:
        with local_server(flags, env=dict(os.environ), quiet=True) as (base, supervisor):
            return asyncio.run(measure(base, supervisor, args.calls, args.interval))

    return report("drain", bench, (ServerFailed, httpx.HTTPError, OSError),
                  lambda summary: summary["dropped"] > 0 or not summary["replaced"], render)
