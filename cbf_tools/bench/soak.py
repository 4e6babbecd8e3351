"""``chatterbox-fast bench soak``: many sessions behaving like real and careless callers for minutes on end, and the
server's memory while they do.

Each WebSocket session loops until the time is up, choosing at random (seeded) to speak a sentence and listen to the
end, stream one token by token, barge in once audio starts, stop reading for a few seconds, or hang up mid-sentence
and dial again; each WebRTC session speaks, barges in, or hangs up and offers again; each OpenAI SSE caller streams
a reply or hangs up at its first audio; each Wyoming caller (Home Assistant's client) synthesizes in one piece or
streamed, or hangs up at its first audio; each phone caller places calls in turn from Twilio, Telnyx, Asterisk (a
replica of the stack, cbf_tools/peers/phone_callers.py, driven by a controller attached by the call's id) and jambonz,
each speaking, barging in (the stack must see its clear) or hanging up; half the controllers listen to their caller's
audio (native or PCM16), and on some turns the caller talks over the gateway (the deploy gate's clip: the gateway's
own barge-in stops it, and the stack must see its clear). Every few seconds the bench reads
the resident memory (VmRSS) of the gateway and of its engine worker from /proc (only when it started the server
itself). It prints the figures and a JSON line; exit status 1 when a server error or timeout happened, a session was
left open, an engine utterance was left in flight (``/health``'s ``engines[].in_flight``), or (on runs of 4 minutes
or more) the gateway's memory grew over the second half by more than ``--max-growth`` MiB per minute.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import random
import sys
import time
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from cbf_tools.bench import caller_voices
from cbf_tools.bench.faults import SERVER_FAILURES
from cbf_tools.peers.local_server import ServerFailed, free_port, local_server, quiet_client_logs
from cbf_tools.peers.phone_callers import PlayingStack, connect_call
from cbf_tools.peers.rtc_listener import Listener
from engine.protocol import ProtocolError
from gateway.wyoming.wire import Event, EventReader, encode

SAMPLE_EVERY_S = 5.0
PHONE_STACKS = ("twilio", "telnyx", "asterisk", "jambonz")
JAMBONZ_PATH = "/v1/jambonz/tts?voice=default&language=en-US&sampleRate=8000"
TURN_TIMEOUT_S = 60.0
MIN_MINUTES_FOR_GROWTH = 4.0  # shorter runs are mostly warm-up: growth over them says little
CALLER_TURN_S = 1.5  # what a caller says over the gateway: this much of the clip
VAD_SILENCE_S = 0.5  # after it, until the VAD has heard them stop (its minimum silence, 0.3 s, and some)

# What callers say: as an LLM writes it (markdown, money, a time, a link, an emoji) and as a phone stack sends it
# (SSML), so the text front end runs under the load; the OpenAI callers ask for a speed.
TEXTS = (
    "All right, your **table for two** is ready now.",
    "Okay, I moved your booking to Thursday at 7:30 pm; the deposit is $25.",
    '<speak>Of course. <break time="300ms"/>Your parcel left the warehouse this morning.</speak>',
    "Excellent 🎉, that is all done: see [your order](https://example.com/o/42). Anything else?",
)
SPEEDS = {TEXTS[1]: 1.25, TEXTS[3]: 0.8}  # by text, so the callers' random draws are the seed's as before


@dataclass
class Tally:
    done: int = 0
    cancelled: int = 0
    hung_up: int = 0
    barged_in: int = 0  # the caller's speech stopped the gateway's (phone calls)
    listened: int = 0  # phone calls whose controller listened to the caller
    slow_reads: int = 0
    server_errors: int = 0
    timeouts: int = 0
    underruns: int = 0  # WebRTC: the server's jitter buffer ran dry (done.underruns)
    errors_seen: list[str] = field(default_factory=list)

    def error(self, what: str) -> None:
        self.server_errors += 1
        if len(self.errors_seen) < 10:
            self.errors_seen.append(what)


def _fail_on(event: dict[str, Any], tally: Tally) -> None:
    if event.get("type") == "error" and event.get("code") in SERVER_FAILURES:
        tally.error(f"{event.get('code')}: {event.get('message')}")


async def _until(ws: ClientConnection, kinds: set[str], tally: Tally) -> dict[str, Any]:
    """Read (and drop audio) until an event of ``kinds``."""
    while True:
        frame = await ws.recv()
        if isinstance(frame, str):
            event = json.loads(frame)
            _fail_on(event, tally)
            if event["type"] in kinds:
                return event


async def _websocket_turn(ws: ClientConnection, rng: random.Random, tally: Tally) -> bool:
    """One turn; False when the caller hung up (the socket is gone)."""
    text = rng.choice(TEXTS)
    choice = rng.random()
    if choice < 0.15:  # an LLM's tokens
        for word in text.split():
            await ws.send(json.dumps({"type": "text", "text": word + " "}))
            await asyncio.sleep(rng.uniform(0.0, 0.05))
        await ws.send('{"type": "end"}')
    else:
        await ws.send(json.dumps({"type": "speak", "text": text}))
    if choice < 0.55:
        event = await _until(ws, {"done", "error"}, tally)
        tally.done += event["type"] == "done"
    elif choice < 0.75:  # barge-in once audio starts
        await _until(ws, {"chunk"}, tally)
        await ws.send('{"type": "cancel"}')
        await _until(ws, {"cancelled"}, tally)
        tally.cancelled += 1
    elif choice < 0.85:  # a listener that stops reading for a while, then reads on
        await asyncio.sleep(rng.uniform(1.0, 4.0))
        tally.slow_reads += 1
        await _until(ws, {"done", "error"}, tally)
    else:  # hang up mid-sentence
        await _until(ws, {"chunk"}, tally)
        tally.hung_up += 1
        return False
    return True


async def _websocket_caller(url: str, headers: dict[str, str], rng: random.Random, deadline: float,
                            tally: Tally) -> None:
    while time.monotonic() < deadline:
        try:
            async with connect(url.replace("http", "ws", 1) + "/v1/stream", additional_headers=headers,
                               max_size=None) as ws:
                await _until(ws, {"ready"}, tally)
                while time.monotonic() < deadline:
                    if not await asyncio.wait_for(_websocket_turn(ws, rng, tally), TURN_TIMEOUT_S):
                        break
        except TimeoutError:
            tally.timeouts += 1
        except (ConnectionClosed, OSError) as exc:
            tally.error(f"websocket dropped: {exc!r}")


async def _webrtc_caller(url: str, headers: dict[str, str], rng: random.Random, deadline: float,
                         tally: Tally) -> None:
    while time.monotonic() < deadline:
        listener = Listener.create()
        try:
            async with httpx.AsyncClient(headers=headers, timeout=30) as http:
                reply = await http.post(url + "/v1/webrtc/offer", json={"sdp": await listener.offer(),
                                                                       "type": "offer"})
            reply.raise_for_status()
            await listener.accept(reply.json()["sdp"])
            await listener.wait_for(lambda: listener.channel.readyState == "open" and listener.events, 15)
            while time.monotonic() < deadline:
                seen = len(listener.events)
                listener.channel.send(json.dumps({"type": "speak", "text": rng.choice(TEXTS)}))
                choice = rng.random()
                if choice < 0.2:
                    tally.hung_up += 1
                    break
                ended = lambda: next((e for e in listener.events[seen:]  # noqa: E731
                                      if e["type"] in ("done", "cancelled", "error")), None)
                if choice < 0.45:
                    await listener.wait_for(lambda: any(e["type"] == "chunk" for e in listener.events[seen:]),
                                            TURN_TIMEOUT_S)
                    listener.channel.send('{"type": "cancel"}')
                await listener.wait_for(ended, TURN_TIMEOUT_S)
                event = ended()
                _fail_on(event, tally)
                tally.done += event["type"] == "done"
                tally.cancelled += event["type"] == "cancelled"
                tally.underruns += event.get("underruns") or 0
        except TimeoutError:
            tally.timeouts += 1
        except httpx.HTTPError as exc:
            tally.error(f"webrtc offer failed: {exc!r}")
        finally:
            await listener.close()


async def _sse_caller(url: str, headers: dict[str, str], rng: random.Random, deadline: float, tally: Tally) -> None:
    """OpenAI's SSE speech stream, as LiveKit's OpenAI plugin reads it; sometimes hung up at the first audio."""
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=TURN_TIMEOUT_S) as http:
        while time.monotonic() < deadline:
            text = rng.choice(TEXTS)
            body = {"model": "gpt-4o-mini-tts", "voice": rng.choice(("ash", "default")), "input": text,
                    "response_format": rng.choice(("pcm", "mp3", "opus")), "stream_format": "sse",
                    "speed": SPEEDS.get(text, 1.0)}
            hang_up = rng.random() < 0.25
            try:
                async with http.stream("POST", "/v1/audio/speech", json=body) as reply:
                    if reply.status_code == 503:  # the session limit: a refusal, not an error
                        await asyncio.sleep(0.5)
                        continue
                    reply.raise_for_status()
                    async for line in reply.aiter_lines():
                        event = json.loads(line[6:]) if line.startswith("data: ") else {}
                        if event.get("type") == "error":
                            _fail_on({"type": "error", **event["error"]}, tally)
                            break
                        if event.get("type") == "speech.audio.done":
                            tally.done += 1
                        elif hang_up and event:
                            tally.hung_up += 1
                            break
            except httpx.TimeoutException:
                tally.timeouts += 1
            except httpx.HTTPError as exc:
                tally.error(f"sse stream failed: {exc!r}")


async def _wyoming_caller(host: str, port: int, rng: random.Random, deadline: float, tally: Tally) -> None:
    """Home Assistant's Wyoming client: one-shot or streamed syntheses, sometimes hung up at the first audio."""
    while time.monotonic() < deadline:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            await asyncio.wait_for(_wyoming_turn(reader, writer, rng, tally), TURN_TIMEOUT_S)
        except TimeoutError:
            tally.timeouts += 1
        except (ConnectionError, ProtocolError) as exc:
            tally.error(f"wyoming connection failed: {exc!r}")
        finally:
            writer.close()


async def _wyoming_turn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rng: random.Random,
                        tally: Tally) -> None:
    text, streamed, hang_up = rng.choice(TEXTS), rng.random() < 0.5, rng.random() < 0.2
    if streamed:
        writer.write(encode(Event("synthesize-start", {"voice": {"name": "default"}})))
        for word in text.split():
            writer.write(encode(Event("synthesize-chunk", {"text": word + " "})))
            await writer.drain()
            await asyncio.sleep(rng.uniform(0.0, 0.03))
        writer.write(encode(Event("synthesize", {"text": text})) + encode(Event("synthesize-stop")))
    else:
        writer.write(encode(Event("synthesize", {"text": text})))
    await writer.drain()
    last, events = "synthesize-stopped" if streamed else "audio-stop", EventReader()
    while data := await reader.read(65536):
        for event in events.feed(data):
            if event.type == "error":
                _fail_on({"type": "error", **event.data}, tally)
                return
            if event.type == last:
                tally.done += 1
                return
            if hang_up and event.type == "audio-chunk":
                tally.hung_up += 1
                return
    tally.error("wyoming connection closed mid-turn")


@cache
def _caller_turn(codec: str) -> list[bytes]:
    """``CALLER_TURN_S`` of the clip from its onset, on the wire of a stack whose codec is ``codec``."""
    frames = caller_voices.wire_frames(caller_voices.clip_pcm(caller_voices.WIRE[codec][0]), codec)
    return frames[:round(CALLER_TURN_S / caller_voices.FRAME_S)]


async def _caller_talks(agent: ClientConnection, caller: PlayingStack, tally: Tally) -> bool:
    """The caller says its turn over the gateway's speech, then falls silent; True when the gateway stopped for it
    (``interrupted``), False when its speech ended first."""
    speech = caller_voices.Speech(_caller_turn(caller.codec), time.monotonic())
    caller.voice = speech
    interrupted = (await _until(agent, {"interrupted", "done"}, tally))["type"] == "interrupted"
    while not speech.said:
        await asyncio.sleep(0.05)
    await asyncio.sleep(VAD_SILENCE_S)  # quiet again before the next turn
    return interrupted


async def _media_stream_call(url: str, headers: dict[str, str], stack: str, rng: random.Random, deadline: float,
                             tally: Tally) -> None:
    """One call from ``stack``, driven by a controller, until the time is up or the caller hangs up."""
    call_id = f"soak-{stack}-{rng.getrandbits(64):x}"
    caller = await connect_call(url, stack, call_id, headers)
    try:
        async with connect(url.replace("http", "ws", 1) + f"/v1/stream?session={call_id}&wait=10",
                           additional_headers=headers) as agent:
            await _until(agent, {"ready"}, tally)
            if rng.random() < 0.5:  # the caller's audio to the controller, read (and dropped) with its events
                await agent.send(json.dumps({"type": "listen", "format": rng.choice(("native", "pcm16"))}))
                tally.listened += 1
            while time.monotonic() < deadline:
                await agent.send(json.dumps({"type": "speak", "text": rng.choice(TEXTS)}))
                choice = rng.random()
                if choice < 0.4:
                    event = await _until(agent, {"done", "error"}, tally)
                    tally.done += event["type"] == "done"
                    continue
                await _until(agent, {"chunk"}, tally)
                if choice < 0.8:  # barge-in: the stack drops what it holds
                    clears, by_caller = caller.clears, choice < 0.6
                    if by_caller and not await _caller_talks(agent, caller, tally):
                        tally.done += 1  # it ended before the caller was heard
                        continue
                    if not by_caller:
                        await agent.send('{"type": "cancel"}')
                        await _until(agent, {"cancelled"}, tally)
                    await caller.cleared(clears, timeout=10)
                    tally.barged_in += by_caller
                    tally.cancelled += not by_caller
                    continue
                tally.hung_up += 1
                await caller.hang_up()
                await _until(agent, {"ended"}, tally)
                return
    finally:
        await caller.hang_up()


async def _jambonz_call(url: str, headers: dict[str, str], rng: random.Random, deadline: float,
                        tally: Tally) -> None:
    """jambonz's TTS socket: text streamed, each answer heard to its end, stopped, or the socket dropped."""
    async with connect(url.replace("http", "ws", 1) + JAMBONZ_PATH, additional_headers=headers) as ws:
        await ws.recv()  # connect
        while time.monotonic() < deadline:
            for word in rng.choice(TEXTS).split():
                await ws.send(json.dumps({"type": "stream", "text": word + " "}))
            await ws.send('{"type": "flush"}')
            choice = rng.random()
            frame = await ws.recv()
            if isinstance(frame, str):
                _fail_on(json.loads(frame), tally)
                continue
            if choice < 0.5:  # heard to its end: a second without audio
                with contextlib.suppress(TimeoutError):
                    while True:
                        await asyncio.wait_for(ws.recv(), 1.0)
                tally.done += 1
            elif choice < 0.8:
                await ws.send('{"type": "stop"}')
                tally.cancelled += 1
                with contextlib.suppress(TimeoutError):
                    while True:
                        await asyncio.wait_for(ws.recv(), 0.5)
            else:
                tally.hung_up += 1
                return


async def _phone_caller(url: str, headers: dict[str, str], rng: random.Random, deadline: float, tally: Tally,
                        first: int) -> None:
    for n in itertools.count(first):
        if time.monotonic() >= deadline:
            return
        stack = PHONE_STACKS[n % len(PHONE_STACKS)]
        try:
            call = (_jambonz_call(url, headers, rng, deadline, tally) if stack == "jambonz"
                    else _media_stream_call(url, headers, stack, rng, deadline, tally))
            await asyncio.wait_for(call, max(deadline - time.monotonic(), 0) + TURN_TIMEOUT_S)
        except TimeoutError:
            tally.timeouts += 1
        except (ConnectionClosed, OSError) as exc:
            tally.error(f"{stack} call dropped: {exc!r}")


def rss_mib(pid: int | None) -> float | None:
    """Resident memory of ``pid`` in MiB, from /proc; None when unknown or gone."""
    if pid is None:
        return None
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    return None


def growth_per_minute(samples: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, MiB) samples over their second half, in MiB per minute."""
    half = [s for s in samples if s[0] >= samples[-1][0] / 2] if samples else []
    if len(half) < 3:
        return None
    n = len(half)
    mean_t, mean_m = sum(t for t, _ in half) / n, sum(m for _, m in half) / n
    spread = sum((t - mean_t) ** 2 for t, _ in half)
    if spread == 0:
        return None
    return 60 * sum((t - mean_t) * (m - mean_m) for t, m in half) / spread


async def _sample(url: str, headers: dict[str, str], gateway_pid: int | None, stop: asyncio.Event,
                  out: dict[str, list[tuple[float, float]]]) -> int:
    """Memory samples until ``stop``; returns the most sessions seen at once."""
    started, most = time.monotonic(), 0
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=10) as http:
        while not stop.is_set():
            health = (await http.get("/health")).json()
            most = max(most, health["sessions"])
            at = time.monotonic() - started
            for name, pid in (("gateway", gateway_pid), ("worker", (health.get("worker") or {}).get("pid"))):
                if (mib := rss_mib(pid if gateway_pid else None)) is not None:
                    out[name].append((at, mib))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SAMPLE_EVERY_S)
    return most


async def measure(url: str, gateway_pid: int | None, args: argparse.Namespace,
                  wyoming_port: int | None) -> dict[str, Any]:
    tally = Tally()
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    memory: dict[str, list[tuple[float, float]]] = {"gateway": [], "worker": []}
    deadline = time.monotonic() + args.minutes * 60
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample(url, headers, gateway_pid, stop, memory))
    rng = random.Random(args.seed)
    callers = [_webrtc_caller(url, headers, random.Random(rng.random()), deadline, tally) for _ in range(args.webrtc)]
    callers += [_sse_caller(url, headers, random.Random(rng.random()), deadline, tally) for _ in range(args.sse)]
    wyoming = args.wyoming if wyoming_port is not None else 0
    callers += [_wyoming_caller(urlsplit(url).hostname or "127.0.0.1", wyoming_port, random.Random(rng.random()),
                                deadline, tally) for _ in range(wyoming)]
    callers += [_phone_caller(url, headers, random.Random(rng.random()), deadline, tally, first=n)
                for n in range(args.phone)]
    callers += [_websocket_caller(url, headers, random.Random(rng.random()), deadline, tally)
                for _ in range(max(0, args.sessions - args.webrtc - args.sse - wyoming - args.phone))]
    await asyncio.gather(*callers)
    stop.set()
    most_sessions = await sampler
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=10) as http:
        settle = time.monotonic() + 20
        while True:
            health = (await http.get("/health")).json()
            left = health["sessions"]
            in_flight = sum(engine.get("in_flight") or 0 for engine in health.get("engines", []))
            if not (left or in_flight) or time.monotonic() > settle:
                break
            await asyncio.sleep(0.2)
    figures: dict[str, Any] = {}
    for name, samples in memory.items():
        if samples:
            figures[name] = {"start_mib": round(samples[0][1], 1), "peak_mib": round(max(m for _, m in samples), 1),
                             "end_mib": round(samples[-1][1], 1),
                             "growth_mib_per_min_second_half": _round(growth_per_minute(samples))}
    return {"bench": "soak", "minutes": args.minutes, "sessions": args.sessions, "webrtc": args.webrtc,
            "sse": args.sse, "wyoming": wyoming, "phone": args.phone,
            "most_sessions_at_once": most_sessions, "done": tally.done, "cancelled": tally.cancelled,
            "hung_up": tally.hung_up, "barged_in": tally.barged_in, "listened": tally.listened,
            "slow_reads": tally.slow_reads, "server_errors": tally.server_errors,
            "timeouts": tally.timeouts, "webrtc_underruns": tally.underruns, "leaked_sessions": left,
            "leaked_utterances": in_flight,
            "memory": figures, "errors_seen": tally.errors_seen}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def failed(summary: dict[str, Any], max_growth: float) -> bool:
    growth = (summary["memory"].get("gateway") or {}).get("growth_mib_per_min_second_half")
    grew = summary["minutes"] >= MIN_MINUTES_FOR_GROWTH and growth is not None and growth > max_growth
    return bool(summary["server_errors"] or summary["timeouts"] or summary["leaked_sessions"]
                or summary["leaked_utterances"] or grew)


def render(s: dict[str, Any]) -> str:
    lines = [f"bench soak: {s['sessions']} sessions ({s['webrtc']} WebRTC, {s['sse']} OpenAI SSE, {s['wyoming']} "
             f"Wyoming, {s['phone']} phone) for {s['minutes']} min, "
             f"{s['most_sessions_at_once']} at once at most (sampled)",
             f"  turns: {s['done']} done, {s['cancelled']} cancelled, {s['barged_in']} stopped by the caller's "
             f"speech, {s['hung_up']} hung up, {s['slow_reads']} slow reads; {s['listened']} phone calls listened to; "
             f"WebRTC underruns {s['webrtc_underruns']}",
             f"  server errors {s['server_errors']}, timeouts {s['timeouts']}, leaked sessions {s['leaked_sessions']}, "
             f"engine utterances left in flight {s['leaked_utterances']}"]
    for name, m in s["memory"].items():
        lines.append(f"  {name:<8} RSS {m['start_mib']} MiB at start, peak {m['peak_mib']}, end {m['end_mib']}; "
                     f"second-half growth {m['growth_mib_per_min_second_half']} MiB/min")
    lines += [f"  error: {e}" for e in s["errors_seen"]]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    quiet_client_logs()
    if args.webrtc + args.sse + args.wyoming > args.sessions:
        print("bench soak: --webrtc, --sse and --wyoming callers are among --sessions: more than it", file=sys.stderr)
        return 2
    try:
        if args.url:
            summary = asyncio.run(measure(args.url, None, args, args.wyoming_port))
        else:
            port = free_port()
            with local_server(["--engine", "espeak", "--log-level", "warning", "--wyoming-port", str(port)],
                              quiet=True) as (url, pid):
                summary = asyncio.run(measure(url, pid, args, port))
    except (ServerFailed, OSError, httpx.HTTPError) as exc:
        print(f"bench soak: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(render(summary))
    print(json.dumps(summary))
    return 1 if failed(summary, args.max_growth) else 0
