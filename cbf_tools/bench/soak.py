"""``chatterbox-fast bench soak``: many callers of every transport behaving like real and careless ones for minutes
on end (an hour: ``--minutes 60 --callers 50``), the server's memory while they do, and optionally chaos under them.

``--callers`` (or ``--sessions``) are shared among the transports (``MIX``, or as many as ``--webrtc``, ``--sse``,
... say; the rest use the WebSocket). Each WebSocket caller loops until the time is up, choosing at random (seeded)
to speak a sentence and listen to the end, play it at 0.9x real time reporting its ``playout`` (its own buffer running
dry counts as an underrun), stream one token by token, barge in once audio starts, stop reading for a few seconds, or
hang up mid-sentence and dial again; each WebRTC caller (Opus and PCMU in turn) speaks, barges in, or
hangs up and offers again; each HTTP caller streams ``POST /v1/tts`` (raw audio, or ndjson with its ``done``) and
each OpenAI SSE caller ``/v1/audio/speech``, sometimes hung up at the first audio; each ElevenLabs caller (pipecat's
multi-stream-input) speaks a context to its ``isFinal``, closes it once audio starts, or drops the socket; each
Wyoming caller (Home Assistant's client) synthesizes in one piece or streamed, or hangs up at its first audio; each
phone caller places calls in turn from Twilio, Telnyx, Asterisk, Plivo, Vonage, Exotel (a replica of the stack,
cbf_tools/peers/phone_callers.py, driven by a controller attached by the call's id), jambonz, FreeSWITCH
(mod_audio_stream) and Asterisk's AudioSocket (cbf_tools/peers/audiosocket_peer.py, over TCP; ``--phone-stacks`` picks
fewer), each speaking, barging in (the stack must see its clear, or, on FreeSWITCH and AudioSocket, which have none,
the audio stop) or hanging up; half the controllers listen to their caller's audio (native
or PCM16), and on some turns the caller talks over the gateway (the deploy gate's clip: the gateway's own barge-in
stops it, and the stack must see its clear).

Every few seconds the bench reads ``/health`` and, when it started the server itself, the resident memory (RSS, read
with psutil) of its gateway and engine worker processes; every ``--report-every`` s (a minute) it prints one line: that
interval's turns, errors, underruns and first audio (p50/p95: from the text leaving the caller to the first audio
there), the memory now, and the chaos so far. Then a summary per transport, the memory's growth per minute after
``--warm-up``, the prompt cache's hits and misses (callers repeat a few texts, so a served server's cache takes
many of their speaks: cancels, hang-ups and barge-ins land on cached utterances too), and a JSON line.

Chaos (a server it starts only): ``--kill-worker-every S`` SIGKILLs the engine worker every S s (the embedded one,
which the gateway starts again; with ``--workers 2`` the soak's own, in turn, each started again at once while the
other is up); ``--restart-gateway-every S`` (with ``--processes N``) sends SIGTERM to one gateway process at a time:
it drains and its parent starts another. Per transport it counts the turns completed, those failed with
``engine_unavailable`` (what failover brings to 0), the ``failovers`` ``done`` reported, the calls the server dropped,
the sessions a drain let go (1012: the caller dials again) and the refusals (a full or draining process).

Exit status 1 when a server error or timeout happened, a call was dropped or a turn failed for want of an engine
(both only without chaos: under it they are its figures), a session or a client connection was left open, an engine
utterance was left in flight (``/health``'s ``engines[].in_flight``), the server was not ``ok`` at the end, or (on runs
of 4 minutes or more, no gateway restarted) the gateway's memory grew after the warm-up by more than ``--max-growth``
MiB per minute.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import itertools
import json
import random
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from urllib.parse import urlsplit

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus

from cbf_tools.bench import caller_voices
from cbf_tools.bench.chaos import Chaos, Served
from cbf_tools.bench.engine import percentile
from cbf_tools.bench.faults import (CARTESIA_PATH, DEEPGRAM_PATH, ELEVENLABS_PATH, JAMBONZ_PATH, SERVER_FAILURES,
                                    TRY_AGAIN_LATER, error_code)
from cbf_tools.bench.procs import rss_mib
from cbf_tools.peers.local_server import ServerFailed, Workers, free_port, local_server, quiet_client_logs
from cbf_tools.peers.audiosocket_peer import connect_audiosocket
from cbf_tools.peers.phone_callers import PlayingStack, connect_call
from cbf_tools.peers.rtc_listener import Listener
from cbf_tools.peers.ws_player import Refused, play
from engine.protocol import ProtocolError
from gateway.telephony.audiosocket import keyed_uuid
from gateway.wyoming.wire import Event, EventReader, encode

SAMPLE_EVERY_S = 5.0
PHONE_STACKS = ("twilio", "telnyx", "asterisk", "jambonz", "plivo", "vonage", "exotel", "freeswitch", "audiosocket")
AUDIOSOCKET_KEY = "bench-soak-audiosocket-key"  # the --audiosocket-key of a server started here
AUDIOSOCKET_KIND = 0x12  # its calls' audio: 16 kHz
# Each transport's share of the callers where its flag does not say how many; the WebSocket takes the rest (0.1).
MIX = {"webrtc": 0.2, "phone": 0.2, "sse": 0.1, "wyoming": 0.1, "http": 0.1, "elevenlabs": 0.05, "cartesia": 0.05,
       "deepgram": 0.05, "vapi": 0.05}
WEBRTC_CODECS = ("opus", "pcmu")  # the WebRTC callers', in turn
TRANSPORTS = ("websocket", "webrtc-opus", "webrtc-pcmu", "http", "sse", "elevenlabs", "cartesia", "deepgram", "vapi",
              "wyoming", *PHONE_STACKS)
CARTESIA_REQUEST = {"model_id": "sonic-3", "voice": {"mode": "id", "id": "default"}, "add_timestamps": True,
                    "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16000}}
TURN_TIMEOUT_S = 60.0
PLAYER_CHOICES, PLAYER_RATE = (0.45, 0.55), 0.9  # a WebSocket turn's draws that play at 0.9x, reporting playout
REFUSED_PAUSE_S = 0.5  # a refused caller tries again after this
SETTLE_S = 20.0  # after the run: how long the sessions may take to close, and the server to say ok
MIN_MINUTES_FOR_GROWTH = 4.0  # shorter runs are mostly warm-up: growth over them says little
CALLER_TURN_S = 1.5  # what a caller says over the gateway: this much of the clip
VAD_SILENCE_S = 0.5  # after it, until the VAD has heard them stop (its minimum silence, 0.3 s, and some)
REFUSALS = {"session_limit", "draining"}  # a full or draining gateway process: try again (elsewhere)
DECODE_TAIL_S = 0.15  # WebRTC: `done` leaves once playout ends; the last frames are decoded just after it
SERVICE_RESTART = 1012  # the close code of a session a draining gateway let go: the caller dials again

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
    """One transport's figures."""

    errors_seen: list[str]  # every transport's: the first few server errors and dropped calls, to look into
    done: int = 0  # turns heard to their end
    cancelled: int = 0
    hung_up: int = 0
    barged_in: int = 0  # the caller's speech stopped the gateway's (phone calls)
    listened: int = 0  # phone calls whose controller listened to the caller
    slow_reads: int = 0
    played_out: int = 0  # WebSocket turns played at 0.9x by a caller reporting its playout
    server_errors: int = 0
    timeouts: int = 0
    underruns: int = 0  # the stream ran dry after first audio (``done.underruns``: WebRTC, phone calls; a WebSocket
    # caller that plays and reports: its own buffer)
    engine_unavailable: int = 0  # turns failed for want of an engine worker: what failover brings to 0
    failovers: int = 0  # an utterance's moves to another worker, as ``done.failovers`` reports them
    dropped: int = 0  # calls the server ended before the caller did (a socket closed, a stream cut short)
    reconnects: int = 0  # sessions a draining gateway let go (1012): the caller dials again
    refused: int = 0  # refusals of a full or draining gateway process: the caller tries again
    first_audio: list[tuple[float, float]] = field(default_factory=list)  # (monotonic s when, seconds)

    def error(self, what: str) -> None:
        self.server_errors += 1
        self.note(what)

    def note(self, what: str) -> None:
        """What went wrong, kept among the first few (server errors, dropped calls)."""
        if len(self.errors_seen) < 10:
            self.errors_seen.append(what)

    def drop(self, what: str) -> None:
        """A call the server ended before the caller did."""
        self.dropped += 1
        self.note(what)

    def heard(self, seconds: float) -> None:
        """A turn's first audio, ``seconds`` after its text left the caller."""
        self.first_audio.append((time.monotonic(), seconds))

    async def judge(self, code: str | None, message: str = "") -> None:
        """An error's code: the engine away or a refusal (then a pause before the caller tries again, as a client
        backs off), or a server error (what no careless caller may cause)."""
        if code == "engine_unavailable":
            self.engine_unavailable += 1
        elif code in REFUSALS:
            self.refused += 1
        elif code in SERVER_FAILURES:
            self.error(f"{code}: {message}")
        if code == "engine_unavailable" or code in REFUSALS:
            await asyncio.sleep(REFUSED_PAUSE_S)

    def ended(self, event: dict[str, Any]) -> None:
        """A turn's last event (an error was judged as it came)."""
        if event["type"] == "done":
            self.done += 1
            self.failovers += event.get("failovers") or 0
            self.underruns += event.get("underruns") or 0
        self.cancelled += event["type"] == "cancelled"

    def closed(self, exc: ConnectionClosed) -> None:
        """A socket the server closed: a drain's 1012, a full server's 1013, or a dropped call."""
        code = exc.rcvd.code if exc.rcvd is not None else None
        if code == SERVICE_RESTART:
            self.reconnects += 1
        elif code == TRY_AGAIN_LATER:
            self.refused += 1
        else:
            self.drop(f"closed: {exc!r}")

    def counts(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.type == "int"}


class Turn:
    """One turn's clock: from its text leaving the caller to its first audio there."""

    def __init__(self, tally: Tally) -> None:
        self.tally, self.sent, self.audio = tally, time.monotonic(), False

    def heard(self) -> None:
        if not self.audio:
            self.audio = True
            self.tally.heard(time.monotonic() - self.sent)


@dataclass
class Line:
    """What every caller of a run shares: the server, its headers, and when the run ends."""

    url: str
    headers: dict[str, str]
    deadline: float
    audiosocket: tuple[int | None, str | None] = (None, None)  # the server's AudioSocket port and key
    gap: float = 0.0  # --gap: the run alternates this long of turns with this long of none (0: turns throughout)
    started: float = field(default_factory=time.monotonic)

    @property
    def open(self) -> bool:
        return time.monotonic() < self.deadline

    async def turn_due(self) -> bool:
        """Whether a caller may start another turn (the run is not over), after waiting out a quiet spell: with
        ``gap``, every caller keeps quiet in the second half of each 2 x ``gap`` s, so the server goes idle together
        (``--unload-after`` shorter than that unloads its model, and the next turn reloads it)."""
        if self.gap > 0:
            into = (time.monotonic() - self.started) % (2 * self.gap)
            if into >= self.gap:
                await asyncio.sleep(min(2 * self.gap - into, max(0.0, self.deadline - time.monotonic())))
        return self.open

    def ws(self, path: str) -> str:
        return self.url.replace("http", "ws", 1) + path


async def _until(ws: ClientConnection, kinds: set[str], tally: Tally, turn: Turn | None = None) -> dict[str, Any]:
    """Read until an event of ``kinds`` (audio: the turn's first audio); every error judged on the way."""
    while True:
        frame = await ws.recv()
        if isinstance(frame, bytes):
            if turn is not None:
                turn.heard()
            continue
        event = json.loads(frame)
        if event.get("type") == "error":
            await tally.judge(event.get("code"), event.get("message", ""))
        if event["type"] in kinds:
            return event


async def _websocket_turn(ws: ClientConnection, rng: random.Random, tally: Tally) -> bool:
    """One turn; False when the caller hung up (the socket is gone)."""
    text = rng.choice(TEXTS)
    choice = rng.random()
    turn = Turn(tally)
    if PLAYER_CHOICES[0] <= choice < PLAYER_CHOICES[1]:  # a player at 0.9x real time that reports its playout
        try:
            played = await play(ws, text, rate=PLAYER_RATE, report=True, timeout=TURN_TIMEOUT_S)
        except Refused as exc:
            await tally.judge(exc.code, str(exc))
            return True
        if played.ttfa_s is not None:
            tally.heard(played.ttfa_s)
        tally.played_out += 1
        tally.underruns += played.underruns
        tally.ended(played.done)
        return True
    if choice < 0.15:  # an LLM's tokens
        for word in text.split():
            await ws.send(json.dumps({"type": "text", "text": word + " "}))
            await asyncio.sleep(rng.uniform(0.0, 0.05))
        await ws.send('{"type": "end"}')
    else:
        await ws.send(json.dumps({"type": "speak", "text": text}))
    if choice < 0.55:
        tally.ended(await _until(ws, {"done", "error"}, tally, turn))
    elif choice < 0.75:  # barge-in once audio starts
        if (await _until(ws, {"chunk", "error"}, tally, turn))["type"] == "chunk":
            await ws.send('{"type": "cancel"}')
            tally.ended(await _until(ws, {"cancelled"}, tally))
    elif choice < 0.85:  # a listener that stops reading for a while, then reads on
        await asyncio.sleep(rng.uniform(1.0, 4.0))
        tally.slow_reads += 1  # (its first audio is when it reads again: not the server's)
        tally.ended(await _until(ws, {"done", "error"}, tally))
    elif (await _until(ws, {"chunk", "error"}, tally, turn))["type"] == "chunk":  # hang up mid-sentence
        tally.hung_up += 1
        return False
    return True


async def _opened(ws: ClientConnection, tally: Tally) -> bool:
    """Until the session's ``ready``; False when it was refused (its error judged)."""
    return (await _until(ws, {"ready", "error"}, tally))["type"] == "ready"


@contextlib.contextmanager
def _counted(tally: Tally, what: str) -> Iterator[None]:
    """How a caller's connection ended, when not well: a timeout, a close (by its code), any other socket failure a
    drop (``what`` names it), a handshake the server cut short (its socket closed with no reply) among them."""
    try:
        yield
    except TimeoutError:
        tally.timeouts += 1
    except ConnectionClosed as exc:
        tally.closed(exc)
    except (OSError, InvalidMessage) as exc:
        tally.drop(f"{what}: {exc!r}")


async def _websocket_caller(line: Line, rng: random.Random, tally: Tally) -> None:
    while await line.turn_due():
        with _counted(tally, "websocket"):
            async with connect(line.ws("/v1/stream"), additional_headers=line.headers, max_size=None) as ws:
                if not await _opened(ws, tally):
                    continue
                while await line.turn_due():
                    if not await asyncio.wait_for(_websocket_turn(ws, rng, tally), TURN_TIMEOUT_S):
                        break


async def _refused(reply: httpx.Response, tally: Tally) -> None:
    """A reply other than 200: a refusal or the engine away (then a pause), else a server error."""
    await reply.aread()
    code = None
    with contextlib.suppress(ValueError, KeyError, TypeError):
        code = reply.json()["error"]["code"]
    if code in REFUSALS or code == "engine_unavailable":
        await tally.judge(code)
    else:
        tally.error(f"{reply.request.url.path}: HTTP {reply.status_code} {code}")


@contextlib.asynccontextmanager
async def _posted(http: httpx.AsyncClient, path: str, body: dict[str, Any], tally: Tally,
                  what: str) -> AsyncIterator[httpx.Response | None]:
    """A streamed POST's reply, None when it was refused (judged: ``_refused``); a timeout counted, and a stream cut
    short a drop (``what`` names it), whether in the request or in the reading of its body."""
    try:
        async with http.stream("POST", path, json=body) as reply:
            if reply.status_code != 200:
                await _refused(reply, tally)
                yield None
            else:
                yield reply
    except httpx.TimeoutException:
        tally.timeouts += 1
    except httpx.HTTPError as exc:
        tally.drop(f"{what}: {exc!r}")


async def _webrtc_caller(line: Line, rng: random.Random, tally: Tally, codec: str) -> None:
    while await line.turn_due():
        listener = Listener.create(codecs=[codec], prefetch=0)
        try:
            async with httpx.AsyncClient(headers=line.headers, timeout=30) as http:
                reply = await http.post(line.url + "/v1/webrtc/offer", json={"sdp": await listener.offer(),
                                                                            "type": "offer"})
            if reply.status_code != 200:
                await _refused(reply, tally)
                continue
            await listener.accept(reply.json()["sdp"])
            await listener.wait_for(lambda: listener.channel.readyState == "open" and listener.events, 15)
            # a call set up takes its turn even when setting it up outlasted the run (DTLS on a loaded machine)
            while await _webrtc_turn(listener, rng, tally) and await line.turn_due():
                await asyncio.sleep(DECODE_TAIL_S)  # its last frames: not the next turn's first audio
        except TimeoutError:
            tally.timeouts += 1
        except httpx.HTTPError as exc:
            tally.drop(f"webrtc offer: {exc!r}")
        finally:
            await listener.close()


async def _webrtc_turn(listener: Listener, rng: random.Random, tally: Tally) -> bool:
    """One turn over the data channel: heard to its end, cancelled once audio starts, or hung up (False, as when
    the server ended the call: a drain's ``closing`` said first, or not)."""
    events, seen, sent = listener.events, len(listener.events), time.time()
    ending = ("done", "cancelled", "error")

    def first(*kinds: str) -> dict[str, Any] | None:
        return next((e for e in events[seen:] if e["type"] in kinds), None)

    def gone() -> bool:
        return listener.channel.readyState != "open" or any(e["type"] == "closing" for e in events)

    if not gone():
        listener.channel.send(json.dumps({"type": "speak", "text": rng.choice(TEXTS)}))
        choice = rng.random()
        if choice < 0.2:
            tally.hung_up += 1
            return False
        if choice < 0.45:
            await listener.wait_for(lambda: first("chunk", *ending) or gone(), TURN_TIMEOUT_S)
            if not (first(*ending) or gone()):
                listener.channel.send('{"type": "cancel"}')
        await listener.wait_for(lambda: first(*ending) or gone(), TURN_TIMEOUT_S)
    if (event := first(*ending)) is None:
        if any(e["type"] == "closing" for e in events):
            tally.reconnects += 1
        else:
            tally.drop("webrtc: the data channel closed")
        return False
    if event["type"] == "error":
        await tally.judge(event.get("code"), event.get("message", ""))
    tally.ended(event)
    if loud := listener.loud(since=sent):  # its first 20 ms of speech, decoded
        tally.heard(loud[0].at - sent)
    return True


async def _http_caller(line: Line, rng: random.Random, tally: Tally) -> None:
    """``POST /v1/tts`` streamed: raw audio (done when it ends cleanly) or ndjson lines (its ``done`` and ``error``
    lines); sometimes hung up at the first audio."""
    async with httpx.AsyncClient(base_url=line.url, headers=line.headers, timeout=TURN_TIMEOUT_S) as http:
        while await line.turn_due():
            text, timed, hang_up = rng.choice(TEXTS), rng.random() < 0.5, rng.random() < 0.2
            body = ({"text": text, "format": "ndjson"} if timed
                    else {"text": text, "format": rng.choice(("pcm", "mp3", "wav")), "stream": True})
            turn = Turn(tally)
            async with _posted(http, "/v1/tts", body, tally, "http stream") as reply:
                if reply is None:
                    continue
                pieces = reply.aiter_lines() if timed else reply.aiter_bytes()
                async for piece in pieces:
                    event = json.loads(piece) if timed else {"type": "chunk"}
                    if event["type"] == "error":
                        await tally.judge(event.get("code"), event.get("message", ""))
                        break
                    if event["type"] == "done":
                        tally.ended(event)
                    elif event["type"] == "chunk":
                        turn.heard()
                        if hang_up:
                            tally.hung_up += 1
                            break
                else:
                    tally.done += not timed  # the raw stream ended cleanly


async def _sse_caller(line: Line, rng: random.Random, tally: Tally) -> None:
    """OpenAI's SSE speech stream, as LiveKit's OpenAI plugin reads it; sometimes hung up at the first audio."""
    async with httpx.AsyncClient(base_url=line.url, headers=line.headers, timeout=TURN_TIMEOUT_S) as http:
        while await line.turn_due():
            text = rng.choice(TEXTS)
            body = {"model": "gpt-4o-mini-tts", "voice": rng.choice(("ash", "default")), "input": text,
                    "response_format": rng.choice(("pcm", "mp3", "opus")), "stream_format": "sse",
                    "speed": SPEEDS.get(text, 1.0)}
            hang_up = rng.random() < 0.25
            turn = Turn(tally)
            async with _posted(http, "/v1/audio/speech", body, tally, "sse stream") as reply:
                if reply is None:
                    continue
                async for event_line in reply.aiter_lines():
                    event = json.loads(event_line[6:]) if event_line.startswith("data: ") else {}
                    if event.get("type") == "error":
                        await tally.judge(event["error"].get("code"), event["error"].get("message", ""))
                        break
                    if event.get("type") == "speech.audio.delta":
                        turn.heard()
                    if event.get("type") == "speech.audio.done":
                        tally.done += 1
                    elif hang_up and event:
                        tally.hung_up += 1
                        break


ContextTurn = Callable[[ClientConnection, str, random.Random, Tally], Awaitable[bool]]


async def _contexts_caller(line: Line, rng: random.Random, tally: Tally, path: str, turn: ContextTurn) -> None:
    """A vendor socket's caller, as pipecat uses one: a context a turn on one socket (``turn``: one context, False
    when it dropped the socket), a new socket after a drop, until the run ends."""
    while await line.turn_due():
        with _counted(tally, path):
            async with connect(line.ws(path), additional_headers=line.headers, max_size=None) as ws:
                for n in itertools.count():
                    if not await line.turn_due() or not await asyncio.wait_for(turn(ws, f"c{n}", rng, tally), TURN_TIMEOUT_S):
                        break


async def _elevenlabs_turn(ws: ClientConnection, context: str, rng: random.Random, tally: Tally) -> bool:
    """pipecat's way with ElevenLabs' multi-stream-input socket: a context a turn, its text flushed; heard to its
    ``isFinal``, closed again once audio starts (an interruption), or the socket dropped at the first audio."""
    close = json.dumps({"context_id": context, "close_context": True})
    choice, turn, failed = rng.random(), Turn(tally), False
    await ws.send(json.dumps({"text": rng.choice(TEXTS) + " ", "context_id": context, "flush": True}))
    closed = choice < 0.6
    if closed:
        await ws.send(close)  # it speaks what was flushed, then says isFinal
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("contextId", context) != context:
            continue  # the tail of a context closed before
        if (code := error_code(reply)) is not None:
            await tally.judge(code, reply.get("message", ""))
            failed = True
        elif reply.get("isFinal"):
            tally.done += choice < 0.6 and not failed
            return True
        elif reply.get("audio") and not turn.audio:
            turn.heard()
            if choice >= 0.85:
                tally.hung_up += 1
                return False
            tally.cancelled += not closed  # the caller speaks: pipecat closes the context again
        if not closed and (failed or turn.audio):
            await ws.send(close)
            closed = True


async def _cartesia_turn(ws: ClientConnection, context: str, rng: random.Random, tally: Tally) -> bool:
    """pipecat's way with Cartesia's socket: a context a turn, its text in ``continue`` pieces, ended by an empty
    transcript (``continue: false``); heard to its ``done``, cancelled once audio starts (an interruption), or the
    socket dropped at the first audio."""
    choice, text, turn = rng.random(), rng.choice(TEXTS), Turn(tally)
    middle = text.find(" ", len(text) // 2)
    pieces = [text] if text.startswith("<speak>") or middle < 0 else [text[:middle + 1], text[middle + 1:]]
    request = {**CARTESIA_REQUEST, "context_id": context}
    for piece in pieces:
        await ws.send(json.dumps({**request, "transcript": piece, "continue": True}))
    await ws.send(json.dumps({**request, "transcript": "", "continue": False}))  # the SDK's no_more_inputs()
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("context_id") != context:
            continue  # the tail of a context cancelled before
        if reply.get("type") == "error":
            await tally.judge(error_code(reply), reply.get("message", ""))
            return True  # their error ends the context
        if reply.get("type") == "done":
            tally.done += 1
            return True
        if reply.get("type") == "chunk" and not turn.audio:
            turn.heard()
            if choice >= 0.85:
                tally.hung_up += 1
                return False
            if choice >= 0.6:  # the caller speaks: pipecat cancels the context
                await ws.send(json.dumps({"context_id": context, "cancel": True}))
                tally.cancelled += 1
                return True


async def _deepgram_caller(line: Line, rng: random.Random, tally: Tally) -> None:
    """pipecat's way with Deepgram's speak socket: a turn's text in pieces, then ``Flush``; heard to its ``Flushed``,
    cleared once audio starts (an interruption: ``Clear``, then ``Cleared``), or the socket dropped at the first
    audio. A socket refused before it opens (a draining or full process: HTTP 503) is a refusal."""
    while await line.turn_due():
        with _counted(tally, "deepgram"):
            try:
                async with connect(line.ws(DEEPGRAM_PATH), additional_headers=line.headers, max_size=None) as ws:
                    if json.loads(await ws.recv()).get("type") != "Metadata":
                        tally.error("deepgram: no Metadata first")
                    while await line.turn_due() and await asyncio.wait_for(_deepgram_turn(ws, rng, tally), TURN_TIMEOUT_S):
                        pass
            except InvalidStatus as exc:
                if exc.response.status_code == 503:
                    await tally.judge("session_limit")
                else:
                    tally.error(f"deepgram: HTTP {exc.response.status_code}")


async def _deepgram_turn(ws: ClientConnection, rng: random.Random, tally: Tally) -> bool:
    """One utterance; False when the caller dropped the socket."""
    choice, turn = rng.random(), Turn(tally)
    for word in rng.choice(TEXTS).split():
        await ws.send(json.dumps({"type": "Speak", "text": word + " "}))
    await ws.send('{"type": "Flush"}')
    cleared = False
    while True:
        reply = await ws.recv()
        if isinstance(reply, bytes):
            turn.heard()
            if choice >= 0.85:
                tally.hung_up += 1
                return False
            if choice >= 0.6 and not cleared:
                await ws.send('{"type": "Clear"}')
                cleared = True
            continue
        message = json.loads(reply)
        if message.get("type") == "Warning":
            await tally.judge(str(message.get("code", "")).lower(), message.get("description", ""))
        elif message.get("type") == "Flushed" and not cleared:
            tally.done += 1
            return True
        elif message.get("type") == "Cleared":
            tally.cancelled += 1
            return True


async def _vapi_caller(line: Line, rng: random.Random, tally: Tally) -> None:
    """Vapi's custom-voice webhook: a voice-request a turn, its PCM read to the end; sometimes hung up at the first
    audio (the caller spoke over it)."""
    key = line.headers.get("Authorization", "")[len("Bearer "):]
    async with httpx.AsyncClient(base_url=line.url, headers={"X-VAPI-SECRET": key} if key else {},
                                 timeout=TURN_TIMEOUT_S) as http:
        while await line.turn_due():
            body = {"message": {"type": "voice-request", "text": rng.choice(TEXTS),
                                "sampleRate": rng.choice((8000, 16000, 24000))}}
            hang_up, turn = rng.random() < 0.2, Turn(tally)
            async with _posted(http, "/v1/vapi?voice=default", body, tally, "vapi stream") as reply:
                if reply is None:
                    continue
                async for _ in reply.aiter_bytes():
                    turn.heard()
                    if hang_up:
                        tally.hung_up += 1
                        break
                else:
                    tally.done += 1


async def _wyoming_caller(host: str, port: int, line: Line, rng: random.Random, tally: Tally) -> None:
    """Home Assistant's Wyoming client: one-shot or streamed syntheses, sometimes hung up at the first audio."""
    while await line.turn_due():
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError as exc:
            tally.drop(f"wyoming connect: {exc!r}")
            await asyncio.sleep(REFUSED_PAUSE_S)
            continue
        try:
            await asyncio.wait_for(_wyoming_turn(reader, writer, rng, tally), TURN_TIMEOUT_S)
        except TimeoutError:
            tally.timeouts += 1
        except (ConnectionError, ProtocolError) as exc:
            tally.drop(f"wyoming connection: {exc!r}")
        finally:
            writer.close()


async def _wyoming_turn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rng: random.Random,
                        tally: Tally) -> None:
    text, streamed, hang_up = rng.choice(TEXTS), rng.random() < 0.5, rng.random() < 0.2
    turn = Turn(tally)
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
                await tally.judge(event.data.get("code"), event.data.get("text", ""))
                return
            if event.type == last:
                tally.done += 1
                return
            if event.type == "audio-chunk":
                turn.heard()
                if hang_up:
                    tally.hung_up += 1
                    return
    tally.drop("wyoming connection closed mid-turn")


@cache
def _caller_turn(codec: str, frame_s: float = caller_voices.FRAME_S) -> list[bytes]:
    """``CALLER_TURN_S`` of the clip from its onset, on the wire of a stack whose codec is ``codec`` (in frames of
    ``frame_s``)."""
    frames = caller_voices.wire_frames(caller_voices.clip_pcm(caller_voices.WIRE[codec][0]), codec, frame_s)
    return frames[:round(CALLER_TURN_S / frame_s)]


async def _caller_talks(agent: ClientConnection, caller: PlayingStack, tally: Tally) -> bool:
    """The caller says its turn over the gateway's speech, then falls silent; True when the gateway stopped for it
    (``interrupted``), False when its speech ended first."""
    speech = caller_voices.Speech(_caller_turn(caller.codec, caller.frame_s), time.monotonic())
    caller.voice = speech
    interrupted = (await _until(agent, {"interrupted", "done"}, tally))["type"] == "interrupted"
    while not speech.said:
        await asyncio.sleep(0.05)
    await asyncio.sleep(VAD_SILENCE_S)  # quiet again before the next turn
    return interrupted


async def _media_stream_call(line: Line, stack: str, rng: random.Random, tally: Tally) -> None:
    """One call from ``stack``, driven by a controller, until the time is up or the caller hangs up."""
    call_id = f"soak-{stack}-{rng.getrandbits(64):x}"
    if stack == "audiosocket":  # Asterisk's TCP protocol: the call's id is a UUID, tagged with the server's key
        port, key = line.audiosocket
        assert port is not None
        call_id = keyed_uuid(key) if key else str(uuid.UUID(int=rng.getrandbits(128)))
        caller: PlayingStack = await connect_audiosocket(urlsplit(line.url).hostname or "127.0.0.1", port, call_id,
                                                         AUDIOSOCKET_KIND)
    else:
        caller = await connect_call(line.url, stack, call_id, line.headers)
    try:
        async with connect(line.ws(f"/v1/stream?session={call_id}&wait=10"),
                           additional_headers=line.headers) as agent:
            if not await _opened(agent, tally):
                return
            if rng.random() < 0.5:  # the caller's audio to the controller, read (and dropped) with its events
                await agent.send(json.dumps({"type": "listen", "format": rng.choice(("native", "pcm16"))}))
                tally.listened += 1
            while await line.turn_due():
                await agent.send(json.dumps({"type": "speak", "text": rng.choice(TEXTS)}))
                sent, choice = time.monotonic(), rng.random()
                if choice < 0.4:
                    tally.ended(await _until(agent, {"done", "error"}, tally))
                elif (await _until(agent, {"chunk", "error"}, tally))["type"] == "error":
                    continue
                elif choice < 0.8:  # barge-in: the stack drops what it holds
                    clears, by_caller = caller.clears, choice < 0.6
                    if by_caller and not await _caller_talks(agent, caller, tally):
                        tally.done += 1  # it ended before the caller was heard
                    else:
                        if not by_caller:
                            await agent.send('{"type": "cancel"}')
                            await _until(agent, {"cancelled"}, tally)
                        await caller.silenced(clears, timeout=10)
                        tally.barged_in += by_caller
                        tally.cancelled += not by_caller
                else:
                    tally.hung_up += 1
                    await caller.hang_up()
                    await _until(agent, {"ended"}, tally)
                    return
                if heard := [at for at in caller.arrived if at >= sent]:  # the stack's first audio frame
                    tally.heard(heard[0] - sent)
    finally:
        await caller.hang_up()


async def _jambonz_call(line: Line, rng: random.Random, tally: Tally) -> None:
    """jambonz's TTS socket: text streamed, each answer heard to its end, stopped, or the socket dropped."""
    async with connect(line.ws(JAMBONZ_PATH), additional_headers=line.headers) as ws:
        if (code := error_code(json.loads(await ws.recv()))) is not None:  # connect, or a refusal
            await tally.judge(code)
            return
        while await line.turn_due():
            turn = Turn(tally)
            for word in rng.choice(TEXTS).split():
                await ws.send(json.dumps({"type": "stream", "text": word + " "}))
            await ws.send('{"type": "flush"}')
            choice = rng.random()
            frame = await ws.recv()
            if isinstance(frame, str):
                event = json.loads(frame)
                await tally.judge(error_code(event), event.get("error", ""))
                continue
            turn.heard()
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


async def _phone_caller(line: Line, rng: random.Random, tallies: dict[str, Tally], first: int,
                        stacks: tuple[str, ...]) -> None:
    for n in itertools.count(first):
        if not await line.turn_due():
            return
        stack = stacks[n % len(stacks)]
        tally = tallies[stack]
        with _counted(tally, f"{stack} call"):
            call = _jambonz_call(line, rng, tally) if stack == "jambonz" else _media_stream_call(line, stack, rng,
                                                                                                 tally)
            await asyncio.wait_for(call, max(line.deadline - time.monotonic(), 0) + TURN_TIMEOUT_S)


def growth_per_minute(samples: list[tuple[float, float]], warm_up_s: float = float("inf")) -> float | None:
    """Least-squares slope of (seconds, MiB) samples after ``warm_up_s`` (at most the first half), in MiB per
    minute."""
    after = [s for s in samples if s[0] >= min(warm_up_s, samples[-1][0] / 2)] if samples else []
    if len(after) < 3:
        return None
    n = len(after)
    mean_t, mean_m = sum(t for t, _ in after) / n, sum(m for _, m in after) / n
    spread = sum((t - mean_t) ** 2 for t, _ in after)
    if spread == 0:
        return None
    return 60 * sum((t - mean_t) * (m - mean_m) for t, m in after) / spread


def open_in_every_process(health: dict[str, Any], figure: str) -> int:
    """/health's ``figure`` (sessions, connections) summed over every gateway process (``serve --processes N``: each
    one's last snapshot)."""
    return sum(p[figure] or 0 for p in health["processes"]) if "processes" in health else health[figure]


def leaked_connections(health: dict[str, Any]) -> int:
    """Client connections open in every gateway process beyond the bench's own (the one asking /health); 0 from a
    server that does not say."""
    if "connections" not in health:
        return 0
    return max(0, open_in_every_process(health, "connections") - 1)


def mix(callers: int, given: dict[str, int | None]) -> dict[str, int]:
    """How many callers each transport has: as ``given`` where it says, the rest shared by ``MIX`` (rounded down),
    the WebSocket's what is left. ValueError when ``given`` says more than ``callers``."""
    counts = {kind: n for kind, n in given.items() if n is not None}
    left = callers - sum(counts.values())
    if left < 0:
        raise ValueError(f"{', '.join(f'--{k} {n}' for k, n in counts.items())}: more than the {callers} callers")
    unsaid = [kind for kind in MIX if kind not in counts]
    weight = sum(MIX[kind] for kind in unsaid) + 1 - sum(MIX.values())
    counts |= {kind: int(left * MIX[kind] / weight) for kind in unsaid}
    return counts | {"websocket": callers - sum(counts.values())}


def _first_audio(values: list[float]) -> dict[str, float | None]:
    return {f"first_audio_p{q}_s": round(percentile(values, q / 100), 3) if values else None for q in (50, 95)}


class Watch:
    """The figures as the run goes: /health and the memory every SAMPLE_EVERY_S, one line every ``report_every``."""

    def __init__(self, tallies: dict[str, Tally], served: Served | None, chaos: Chaos | None,
                 report_every: float) -> None:
        self.tallies, self.served, self.chaos, self.report_every = tallies, served, chaos, report_every
        self.memory: dict[str, list[tuple[float, float]]] = {"gateway": [], "worker": []}
        self.intervals: list[dict[str, Any]] = []
        self.sessions = self.most_sessions = 0
        self.unloads_seen, self._unloaded = 0, False  # /health saying a worker unloaded (--unload-after): a floor
        self.started = time.monotonic()
        self._last: dict[str, int] = self.totals()

    def totals(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for tally in self.tallies.values():
            for name, value in tally.counts().items():
                totals[name] = totals.get(name, 0) + value
        return totals

    async def run(self, http: httpx.AsyncClient, stop: asyncio.Event) -> None:
        report_at = self.started + self.report_every
        while not stop.is_set():
            with contextlib.suppress(httpx.TransportError):  # a gateway process going away as it answered
                health = (await http.get("/health")).json()
                self.sessions = open_in_every_process(health, "sessions")
                unloaded = any(e.get("state") == "unloaded" for e in health.get("engines") or ())
                self.unloads_seen += unloaded and not self._unloaded
                self._unloaded = unloaded
            self.most_sessions = max(self.most_sessions, self.sessions)
            at = time.monotonic() - self.started
            if self.served is not None:
                for name, pids in self.served.pids().items():
                    if rss := [m for m in map(rss_mib, pids) if m is not None]:
                        self.memory[name].append((at, sum(rss)))
            if self.chaos is not None:
                self.chaos.observe()
            if time.monotonic() >= report_at:
                self.intervals.append(self.interval(report_at))
                print(render_interval(self.intervals[-1]), flush=True)
                report_at += self.report_every
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), min(SAMPLE_EVERY_S, max(0.0, report_at - time.monotonic())))

    def interval(self, now: float) -> dict[str, Any]:
        """What happened since the last line (the memory and the chaos: as they are now)."""
        totals = self.totals()
        since = now - self.report_every
        first = [s for tally in self.tallies.values() for at, s in tally.first_audio if since <= at < now]
        figures = {name: totals[name] - self._last[name] for name in totals}
        self._last = totals
        return {"minute": round((now - self.started) / 60, 2), "turns": sum(figures[k] for k in (
                    "done", "cancelled", "barged_in", "hung_up")), **figures, **_first_audio(first),
                "sessions": self.sessions,
                "memory_mib": {name: round(samples[-1][1], 1) for name, samples in self.memory.items() if samples},
                **({"chaos": self.chaos.figures()} if self.chaos is not None else {})}


def render_interval(i: dict[str, Any]) -> str:
    line = (f"  {i['minute']:6.2f} min: {i['turns']} turns ({i['done']} done), {i['server_errors']} server errors, "
            f"{i['timeouts']} timeouts, {i['underruns']} underruns; first audio p50 {i['first_audio_p50_s']} s, "
            f"p95 {i['first_audio_p95_s']} s; {i['sessions']} sessions")
    line += "".join(f"; {name} {mib} MiB" for name, mib in i["memory_mib"].items())
    if "chaos" in i:
        line += (f"; chaos so far {_chaos_words(i['chaos'])}: in this interval {i['failovers']} failovers, "
                 f"{i['engine_unavailable']} engine_unavailable, {i['dropped']} dropped, {i['reconnects']} "
                 f"reconnects, {i['refused']} refused")
    return line


def _chaos_words(chaos: dict[str, int]) -> str:
    return ", ".join(f"{value} {name.replace('_', ' ')}" for name, value in chaos.items())


async def measure(url: str, args: argparse.Namespace, wyoming_port: int | None, served: Served | None = None,
                  audiosocket: tuple[int | None, str | None] | None = None) -> dict[str, Any]:
    """``audiosocket``: the AudioSocket port and key of a server started here (else --url's flags say them)."""
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    callers = mix(args.sessions, {kind: getattr(args, kind) for kind in MIX})
    if wyoming_port is None:
        callers["websocket"] += callers["wyoming"]
        callers["wyoming"] = 0
    errors_seen: list[str] = []
    tallies = {name: Tally(errors_seen) for name in TRANSPORTS}
    audiosocket = audiosocket or (args.audiosocket_port, args.audiosocket_key)
    line = Line(url, headers, time.monotonic() + args.minutes * 60, audiosocket, args.gap)
    # only jambonz's socket under several processes: a controller reaches a call only on the process holding it
    stacks = tuple(stack for stack in args.phone_stacks or PHONE_STACKS
                   if stack != "audiosocket" or audiosocket[0] is not None) if args.processes == 1 else ("jambonz",)
    chaos = (Chaos(served, args.kill_worker_every, args.restart_gateway_every)
             if served is not None and (args.kill_worker_every or args.restart_gateway_every) else None)
    watch = Watch(tallies, served, chaos, args.report_every)
    rng = random.Random(args.seed)
    runs: list[Coroutine[Any, Any, None]] = [
        _webrtc_caller(line, random.Random(rng.random()), tallies[f"webrtc-{codec}"], codec)
        for codec in itertools.islice(itertools.cycle(WEBRTC_CODECS), callers["webrtc"])]
    runs += [_sse_caller(line, random.Random(rng.random()), tallies["sse"]) for _ in range(callers["sse"])]
    host = urlsplit(url).hostname or "127.0.0.1"
    runs += [_wyoming_caller(host, wyoming_port, line, random.Random(rng.random()), tallies["wyoming"])
             for _ in range(callers["wyoming"])]
    runs += [_phone_caller(line, random.Random(rng.random()), tallies, n, stacks) for n in range(callers["phone"])]
    runs += [_websocket_caller(line, random.Random(rng.random()), tallies["websocket"])
             for _ in range(callers["websocket"])]
    runs += [_http_caller(line, random.Random(rng.random()), tallies["http"]) for _ in range(callers["http"])]
    runs += [_contexts_caller(line, random.Random(rng.random()), tallies["elevenlabs"], ELEVENLABS_PATH,
                              _elevenlabs_turn) for _ in range(callers["elevenlabs"])]
    runs += [_contexts_caller(line, random.Random(rng.random()), tallies["cartesia"], CARTESIA_PATH, _cartesia_turn)
             for _ in range(callers["cartesia"])]
    runs += [_deepgram_caller(line, random.Random(rng.random()), tallies["deepgram"])
             for _ in range(callers["deepgram"])]
    runs += [_vapi_caller(line, random.Random(rng.random()), tallies["vapi"]) for _ in range(callers["vapi"])]
    if chaos is not None:
        runs.append(chaos.run(line.deadline))
    stop = asyncio.Event()
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=10) as http:
        watching = asyncio.create_task(watch.run(http, stop))
        await asyncio.gather(*runs)
        stop.set()
        await watching
        health = await _settled(http, chaos.whole if chaos is not None else lambda: True)
    left, in_flight = open_in_every_process(health, "sessions"), _in_flight(health)
    warm_up_s = args.warm_up * 60
    restarted = {"worker": args.kill_worker_every, "gateway": args.restart_gateway_every}  # growth: the restarts'
    memory = {name: {"start_mib": round(samples[0][1], 1), "peak_mib": round(max(m for _, m in samples), 1),
                     "end_mib": round(samples[-1][1], 1),
                     "growth_mib_per_min": None if restarted[name] else _round(growth_per_minute(samples, warm_up_s))}
              for name, samples in watch.memory.items() if samples}
    every_first = [s for tally in tallies.values() for _, s in tally.first_audio]
    return {"bench": "soak", "minutes": args.minutes, "sessions": args.sessions, "callers": callers,
            "processes": args.processes, "workers": args.workers, "most_sessions_at_once": watch.most_sessions,
            "unload_after": args.unload_after, "gap": args.gap, "unloads_seen": watch.unloads_seen,
            **watch.totals(), **_first_audio(every_first), "leaked_sessions": left,
            "leaked_connections": leaked_connections(health), "leaked_utterances": in_flight,
            "status_at_end": health["status"], "warm_up_min": min(args.warm_up, args.minutes / 2), "memory": memory,
            "transports": {name: {**tally.counts(), **_first_audio([s for _, s in tally.first_audio])}
                           for name, tally in tallies.items()},
            "chaos": chaos.figures() if chaos is not None else None,
            "prompt_cache": {k: v for k, v in (health.get("prompt_cache") or {}).items()  # the answering process's
                             if k in ("hits", "misses", "entries", "bytes")},
            "intervals": watch.intervals, "errors_seen": errors_seen}


def _in_flight(health: dict[str, Any]) -> int:
    return sum(engine.get("in_flight") or 0 for engine in health.get("engines", []))


async def _settled(http: httpx.AsyncClient, whole: Callable[[], bool]) -> dict[str, Any]:
    """/health once no session or client connection (but the bench's) is open, no engine utterance is in flight, it
    says ok and the server is ``whole`` again (under chaos: its processes back), or its last answer after SETTLE_S."""
    deadline, health = time.monotonic() + SETTLE_S, None
    while True:
        with contextlib.suppress(httpx.TransportError):
            health = (await http.get("/health")).json()
        settled = (health is not None and health["status"] == "ok"
                   and not (open_in_every_process(health, "sessions") or _in_flight(health)
                            or leaked_connections(health)) and whole())
        if settled or (health is not None and time.monotonic() > deadline):
            return health
        if time.monotonic() > deadline:
            raise ServerFailed("/health did not answer after the run")
        await asyncio.sleep(0.2)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def failed(summary: dict[str, Any], max_growth: float) -> bool:
    growth = (summary["memory"].get("gateway") or {}).get("growth_mib_per_min")
    grew = summary["minutes"] >= MIN_MINUTES_FOR_GROWTH and growth is not None and growth > max_growth
    unexplained = not summary["chaos"] and (summary["engine_unavailable"] or summary["dropped"])
    return bool(summary["server_errors"] or summary["timeouts"] or summary["leaked_sessions"]
                or summary["leaked_connections"] or summary["leaked_utterances"] or summary["status_at_end"] != "ok"
                or unexplained or grew)


def render(s: dict[str, Any]) -> str:
    mixed = ", ".join(f"{n} {kind}" for kind, n in s["callers"].items() if n)
    lines = [f"bench soak: {s['sessions']} callers ({mixed}) for {s['minutes']} min on {s['processes']} gateway "
             f"process(es), {s['most_sessions_at_once']} sessions at once at most (sampled)",
             f"  turns: {s['done']} done, {s['cancelled']} cancelled, {s['barged_in']} stopped by the caller's "
             f"speech, {s['hung_up']} hung up, {s['slow_reads']} slow reads, {s['played_out']} played at 0.9x "
             f"reporting playout; {s['listened']} phone calls listened to; "
             f"underruns {s['underruns']}; first audio p50 {s['first_audio_p50_s']} s, p95 {s['first_audio_p95_s']} s",
             f"  server errors {s['server_errors']}, timeouts {s['timeouts']}, engine_unavailable "
             f"{s['engine_unavailable']}, failovers {s['failovers']}, dropped {s['dropped']}, reconnects "
             f"{s['reconnects']}, refused {s['refused']}; leaked sessions {s['leaked_sessions']}, connections "
             f"{s['leaked_connections']}, engine utterances "
             f"left in flight {s['leaked_utterances']}; /health {s['status_at_end']} at the end",
             *([f"  --unload-after {s['unload_after']} s, --gap {s['gap']} s: the model seen unloaded "
                f"{s['unloads_seen']} times (/health, sampled)"] if s.get("unload_after") else []),
             "  prompt cache (the process /health asked): " + (", ".join(f"{k} {v}" for k, v in
                                                                      s["prompt_cache"].items()) or "off"),
             f"  {'transport':<12} {'done':>6} {'cancel':>6} {'hungup':>6} {'p50 s':>6} {'p95 s':>6} {'errors':>6} "
             f"{'unavail':>7} {'failov':>6} {'drop':>5} {'reconn':>6} {'refuse':>6}"]
    for name, t in s["transports"].items():
        if any(t.values()):  # a transport with no caller, or no call (a phone stack left out)
            lines.append(f"  {name:<12} {t['done']:>6} {t['cancelled'] + t['barged_in']:>6} {t['hung_up']:>6} "
                         f"{_cell(t['first_audio_p50_s'])} {_cell(t['first_audio_p95_s'])} "
                         f"{t['server_errors'] + t['timeouts']:>6} {t['engine_unavailable']:>7} {t['failovers']:>6} "
                         f"{t['dropped']:>5} {t['reconnects']:>6} {t['refused']:>6}")
    for name, m in s["memory"].items():
        lines.append(f"  {name:<8} RSS {m['start_mib']} MiB at start, peak {m['peak_mib']}, end {m['end_mib']}; "
                     f"growth after {s['warm_up_min']} min of warm-up {m['growth_mib_per_min']} MiB/min")
    if s["chaos"]:
        lines.append(f"  chaos: {_chaos_words(s['chaos'])}")
    lines += [f"  seen: {e}" for e in s["errors_seen"]]
    return "\n".join(lines)


def _cell(seconds: float | None) -> str:
    return f"{'-' if seconds is None else seconds:>6}"


def _chaos_refusal(args: argparse.Namespace) -> str | None:
    if args.restart_gateway_every and args.processes < 2:
        return "--restart-gateway-every needs --processes 2 or more (the parent starts a gateway process again)"
    if args.url and (args.kill_worker_every or args.restart_gateway_every or args.processes > 1 or args.workers
                     or args.unload_after):
        return ("--kill-worker-every, --restart-gateway-every, --processes, --workers and --unload-after are for a "
                "server it starts")
    return None


def run(args: argparse.Namespace) -> int:
    quiet_client_logs()
    try:
        mix(args.sessions, {kind: getattr(args, kind) for kind in MIX})
    except ValueError as exc:
        print(f"bench soak: {exc}", file=sys.stderr)
        return 2
    if args.phone_stacks and (unknown := set(args.phone_stacks) - set(PHONE_STACKS)):
        print(f"bench soak: --phone-stacks expected some of {','.join(PHONE_STACKS)}, got {','.join(sorted(unknown))}",
              file=sys.stderr)
        return 2
    if (refusal := _chaos_refusal(args)) is not None:
        print(f"bench soak: {refusal}", file=sys.stderr)
        return 2
    try:
        if args.url:
            summary = asyncio.run(measure(args.url, args, args.wyoming_port))
        else:
            summary = _soak_here(args)
    except (ServerFailed, OSError, httpx.HTTPError) as exc:
        print(f"bench soak: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(render(summary))
    print(json.dumps(summary))
    return 1 if failed(summary, args.max_growth) else 0


def _soak_here(args: argparse.Namespace) -> dict[str, Any]:
    """On a server started here (eSpeak, or the simulated engine: ``--sim-rtf``): its embedded worker, or
    ``--workers`` of the soak's own."""
    port, audiosocket_port = free_port(), free_port()
    engine = ["--engine", "simulated", "--sim-rtf", str(args.sim_rtf)] if args.sim_rtf else ["--engine", "espeak"]
    engine += ["--unload-after", str(args.unload_after)] if args.unload_after else []
    flags = [*engine, "--log-level", "warning", "--wyoming-port", str(port), "--processes", str(args.processes),
             "--audiosocket-port", str(audiosocket_port), "--audiosocket-key", AUDIOSOCKET_KEY,
             "--max-sessions", str(max(32, 2 * args.sessions))]  # room for every caller: refusals are the chaos'
    workers = Workers(*engine)
    with tempfile.TemporaryDirectory(prefix="cbf-soak-") as tmp:
        listens = tuple(f"unix:{Path(tmp) / f'worker-{n}.sock'}" for n in range(args.workers))
        try:
            for listen in listens:
                workers.start(listen)
            for listen in listens:
                workers.wait_listening(listen)
            with local_server(flags + (["--engine-url", ",".join(listens)] if listens else []),
                              quiet=True) as (url, pid):
                served = Served(pid, workers if listens else None, listens)
                return asyncio.run(measure(url, args, port, served, (audiosocket_port, AUDIOSOCKET_KEY)))
        finally:
            workers.stop()
