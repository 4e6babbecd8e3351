"""``bench gateway --slow-readers N``: what WebSocket clients that stop reading cost the server (issue 49 item 4).

Before the bench's sessions run, N clients each ask ``/v1/stream`` for a 5,000-character utterance (~5 min of audio)
and never read (``cbf_tools.peers.stopping_reader``: the kernel soon stops taking for them too). Once the server has
had ``SETTLE_S`` (or half its ``--stall-timeout``) to send them what it will, the bench reads the resident memory of the gateway process and of its
workers against what it was just before they came, and the gateway's ``/health`` ``queued_audio``; then the
sessions run beside them as usual (compare their first audio with a run without ``--slow-readers``). Once they are
done the bench waits for the server to close the slow readers (its ``--stall-timeout``, 30 s by default) and reads
what each had been sent: the audio itself (what the gateway let go to a client that took none of it: its lead, and
what the client's own buffers absorbed), and the ``chunk`` events, whose durations add up to what the gateway had
received from the worker for it (the rest of that, beyond the audio sent, is what the gateway held). Resident memory is noisy (the
allocator keeps freed pages, and hands some back): compare runs, and use more than one reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from cbf_tools.bench.procs import descendants, rss_mib
from cbf_tools.peers.stopping_reader import stopping_socket

SENTENCE = "The quick brown fox jumps over the lazy dog, and then it runs far away across the field. "
TEXT = (SENTENCE * 57)[:5000]  # the longest utterance the server takes by default: ~5 min of eSpeak, 14 MB of PCM
BYTES_PER_S = 48000  # the socket's default format: 24 kHz s16le
CLOSED_WITHIN_S = 60.0  # the server's default stall timeout (30 s), with room
SETTLE_S = 8.0  # the server sends what it will well within this (its lead is 3 s), and closes them only at 30 s
SERVER_STALL_S = 30.0  # serve's --stall-timeout by default


async def open_readers(url: str, count: int, headers: dict[str, str]) -> list[ClientConnection]:
    """``count`` sessions that each ask for ``TEXT`` and will read nothing more (their ``ready`` apart)."""
    readers = []
    for _ in range(count):
        reader = await connect(url.replace("http", "ws", 1) + "/v1/stream", additional_headers=headers,
                               sock=await stopping_socket(url), max_queue=1, compression=None, ping_interval=None,
                               max_size=None, close_timeout=1)
        readers.append(reader)
        await reader.send(json.dumps({"type": "speak", "text": TEXT, "cache": False}))
    return readers


def _memory(pid: int | None) -> tuple[float | None, float | None]:
    """The gateway process's resident MiB, and its workers' together (None: not known, e.g. with ``--url``)."""
    if pid is None:
        return None, None
    workers = [rss_mib(child) or 0.0 for child in descendants(pid)]
    return rss_mib(pid), sum(workers) if workers else None


def settle_s(stall_timeout: float | None) -> float:
    """How long to let the slow readers settle on a server with ``stall_timeout`` (None: serve's default): while
    they are still open."""
    return min(SETTLE_S, (stall_timeout or SERVER_STALL_S) / 2)


async def cost(url: str, pid: int | None, count: int, headers: dict[str, str], readers: list[ClientConnection],
               settle: float = SETTLE_S) -> dict[str, Any]:
    """Open ``count`` slow readers into ``readers`` (the caller closes them), wait ``settle`` seconds, and what they
    cost: resident MiB in all and per reader, gateway and workers, and the gateway's queued audio."""
    gateway0, workers0 = _memory(pid)
    readers += await open_readers(url, count, headers)
    await asyncio.sleep(settle)
    gateway1, workers1 = _memory(pid)
    async with httpx.AsyncClient(headers=headers, timeout=10) as http:
        queued = (await http.get(url + "/health")).json().get("queued_audio") or {}

    def grew(before: float | None, after: float | None) -> tuple[float | None, float | None]:
        if before is None or after is None:
            return None, None
        return round(after - before, 2), round((after - before) / count, 2)

    (gateway, gateway_each), (workers, workers_each) = grew(gateway0, gateway1), grew(workers0, workers1)
    return {"count": count, "text_chars": len(TEXT), "settle_s": settle,
            "gateway_rss_mib": gateway1 and round(gateway1, 1), "gateway_grew_mib": gateway,
            "gateway_grew_mib_each": gateway_each, "workers_grew_mib": workers, "workers_grew_mib_each": workers_each,
            "queued_bytes": queued.get("bytes"), "queued_max_utterance_bytes": queued.get("max_utterance_bytes")}


async def sent(url: str, headers: dict[str, str], readers: list[ClientConnection]) -> list[tuple[float, float]]:
    """Once the server has closed every session (the slow readers after its stall timeout; call this after the
    sessions beside them), for each slow reader: the seconds of audio it had been sent (24 kHz s16le, the default
    format), and those its ``chunk`` events announced (what the gateway had from the worker for it)."""
    async with httpx.AsyncClient(headers=headers, timeout=10) as http:
        for _ in range(int(CLOSED_WITHIN_S / 0.5)):
            if (await http.get(url + "/health")).json().get("sessions") == 0:
                break
            await asyncio.sleep(0.5)
        else:
            raise TimeoutError(f"the slow readers were not closed within {CLOSED_WITHIN_S:g} s")
    seconds = []
    for reader in readers:
        received, announced = 0, 0.0
        with contextlib.suppress(ConnectionClosed, TimeoutError):
            while True:
                if isinstance(message := await asyncio.wait_for(reader.recv(), 10), bytes):
                    received += len(message)
                elif (event := json.loads(message)).get("type") == "chunk":
                    announced += event["duration"]
        seconds.append((round(received / BYTES_PER_S, 2), round(announced, 2)))
    return seconds


async def close(readers: list[ClientConnection]) -> None:
    for reader in readers:
        with contextlib.suppress(Exception):
            reader.transport.abort()  # it reads nothing: a close handshake would wait for it


def render(s: dict[str, Any]) -> str:
    """The table's line for the slow readers."""
    def mib(value: float | None) -> str:
        return "-" if value is None else f"{value:+.2f} MiB"

    return (f"slow readers: {s['count']} WebSocket clients asking {s['text_chars']:,} characters each, reading "
            f"nothing, after {s['settle_s']:g} s: gateway {mib(s['gateway_grew_mib'])} "
            f"({mib(s['gateway_grew_mib_each'])} each), workers {mib(s['workers_grew_mib'])} "
            f"({mib(s['workers_grew_mib_each'])} each); queued in the gateway {s['queued_bytes']} bytes "
            f"(the most for one utterance {s['queued_max_utterance_bytes']}); target <= 1 MB each; "
            f"before their close, seconds of audio sent / received from the worker: "
            f"{', '.join(f'{a:g}/{b:g}' for a, b in s.get('sent_s') or []) or '-'}")
