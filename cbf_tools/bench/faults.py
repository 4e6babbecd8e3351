"""``chatterbox-fast bench faults``: generated hostile inputs (cbf_tools/bench/hostile_inputs.py) on every surface a client
reaches (WebSocket, and its ``playout`` reports lying while utterances play, ElevenLabs-compatible multi-stream-input,
Cartesia's socket (mangled requests, unknown contexts, cancels of ended ones, floods of contexts, sockets closed
mid-context) and its bytes and SSE routes, Deepgram's speak socket and its REST route (mangled queries too), Vapi's
custom-voice webhook, data-channel and controller messages; the phone stacks' sockets: Twilio, Telnyx, Asterisk,
Plivo, Vonage, Exotel and FreeSWITCH media streams, jambonz's TTS socket; Asterisk's AudioSocket on its TCP port
(cbf_tools/bench/faults_audiosocket.py); POST /v1/tts, /v1/audio/speech (its SSE
streams too), /v1/webrtc/offer and /v1/whep with mangled SDP, /v1/voices and /v1/lexicons with mangled uploads, Wyoming events on
its TCP port; keys files (the started server runs with one, every surface presenting its key: a few hostile ones are
written over it, each reload refused with the keys kept); and the caller's side of phone calls: the caller's audio mangled, before ``start`` and in floods, and a
call's controller's ``listen`` and ``barge_in`` mangled, beside a sound call that must go on as if nothing happened;
and slow clients that send nothing, half a request head or half a body, each owed a 4xx and a closed connection
within the server's ``--request-timeout``), then what they did to a real server. Each figure must be 0: server errors (HTTP 5xx, a stream cut short, a socket the
server dropped, an engine failure event, caller audio that should have been dropped and counted and was not),
engine connections the gateway lost, embedded-worker restarts, sessions and client connections still open once every
client has gone (/health's ``connections``),
stored voices lost, and turns of the sound call that failed. A media stream the server closes for a bad frame (code
4400) is a refusal."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import secrets
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from cbf_tools.bench import faults_credentials as credentials
from cbf_tools.bench.faults_audiosocket import audiosocket
from cbf_tools.bench.hostile_inputs import (CALLER_CONTROL_FIELDS, DEEPGRAM_FIELDS, DEEPGRAM_QUERIES,
                                     DEEPGRAM_REST_FIELDS, ELEVENLABS_FIELDS, EXOTEL_FIELDS, JAMBONZ_FIELDS,
                                     MEDIA_STREAM_FIELDS, OPENAI_FIELDS, PLIVO_FIELDS, TTS_FIELDS, VAPI_FIELDS,
                                     asterisk_frames, caller_media, cartesia_bodies, cartesia_messages,
                                     freeswitch_frames, freeswitch_queries, http_bodies,
                                     keys_files, lexicon_uploads, offer_bodies, playout_lies, voice_uploads,
                                     vonage_frames, websocket_messages,
                                     whep_offers, wyoming_frames)
from cbf_tools.peers.local_server import ServerFailed, free_port, local_server, quiet_client_logs
from cbf_tools.peers.phone_callers import PlayingStack, connect_call
from cbf_tools.peers.rtc_listener import Listener
from gateway.guard.keys_file import KeysFileError, parse
from gateway.guard.tenancy import WATCH_INTERVAL_S
from gateway.host.protocols import REQUEST_TIMEOUT_S, STUCK_CLOSE_S
from gateway.http import sse
from gateway.settings import GatewaySettings
from gateway.telephony.call import DUPLICATE_CLOSE_CODE
from gateway.wyoming.wire import Event, EventReader, encode

SERVER_FAILURES = {"engine_error", "engine_unavailable"}  # events no client input may cause
TRY_AGAIN_LATER = 1013  # the close code of a socket refused because the server is full
WEBSOCKET_CLIENTS = 4
HTTP_CONCURRENCY = 4


ELEVENLABS_PATH = "/v1/text-to-speech/default/multi-stream-input?output_format=pcm_16000"
CARTESIA_PATH = "/cartesia/tts/websocket"
JAMBONZ_PATH = "/v1/jambonz/tts?voice=default&language=en-US&sampleRate=8000"
DEEPGRAM_PATH = "/deepgram/v1/speak?model=aura-2-thalia-en&encoding=linear16&sample_rate=16000"
FRAMES_PER_CALL = 10
# A media stream closed for a frame that is not its dialect's (4400), or because the server is full (1013: the
# offers of the surfaces before are still waiting to connect): refusals.
REFUSAL_CLOSE_CODES = (4400, 1013)
REUSED_IDS = 0.1  # the share of phone calls a second stream with the same call id follows at once (refused: 4409)
BAD_FRAME = 4400
EARLY_MEDIA = 0.1  # of the caller-audio calls: their first frame before ``start``
FLOODS = 0.2  # of the others: a flood after their frames
FLOOD_FRAMES = 250  # 5 s of sound audio at once, 4 s past the burst the gateway lets through
BENCH_KEY = "bench-faults-key-0123456789"  # the started server's keys file's one client, without limits
GOOD_KEYS = f'[keys.bench]\nkey = "{BENCH_KEY}"\n'
LIVE_RELOADS = 5  # of the hostile keys files: written over the server's own, each reload refused with the keys kept
BYSTANDER_TEXT = "All right, your table for two is ready now."
# A server's --webrtc-setup-timeout by default: a WebRTC offer that never connects holds its session this long
SETUP_TIMEOUT_S = GatewaySettings.webrtc_setup_timeout_s
SLOW_CLIENTS = 60  # at most, at once: a third send nothing, a third half a request head, a third half a body
SLOW_PARTS = (b"", b"GET /health HTTP/1.1\r\nHost: bench\r\n",
              b"POST /v1/tts HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: 99\r\n\r\n{")
STARTED_REQUEST_TIMEOUT_S = 5.0  # the --request-timeout of a server started here
STARTED_ORIGIN = "https://app.bench-faults.example"  # the --cors-origins of a server started here
STARTED_AUDIOSOCKET_KEY = "bench-faults-audiosocket-key"  # the --audiosocket-key of a server started here


def error_code(event: dict[str, Any]) -> str | None:
    """The error code of an event of ours (``type: error``) or of theirs (ElevenLabs' ``error``, Cartesia's
    ``error_code``, Deepgram's ``Warning``, its codes in capitals), else None."""
    if event.get("type") == "Warning":
        return str(event.get("code", "")).lower()
    if event.get("type") == "error" or "error" in event:
        return event.get("code") or event.get("error_code")
    return None


def _count(counts: dict[str, int], event: dict[str, Any]) -> None:
    """An error event counted as a server error (no client input may cause it) or a refusal."""
    if (code := error_code(event)) is not None:
        counts["server_errors" if code in SERVER_FAILURES else "refused"] += 1


async def _websocket(url: str, messages: list[str], headers: dict[str, str], session: str | None = None,
                     clients: int = WEBSOCKET_CLIENTS, path: str = "/v1/stream",
                     farewell: str | None = '{"type": "cancel"}') -> dict[str, int]:
    """The messages spread over a few sockets at ``path``, every event read, ``farewell`` sent last; server errors
    and refusals counted. With ``session``, the sockets are controllers of that WebRTC session (one after another:
    a new one takes over)."""
    counts = {"server_errors": 0, "refused": 0}
    path += f"?session={session}" if session else ""

    async def read(ws: ClientConnection) -> None:
        async for frame in ws:
            if isinstance(frame, str):
                _count(counts, json.loads(frame))

    async def client(share: list[str]) -> None:
        async with connect(url.replace("http", "ws", 1) + path, additional_headers=headers,
                           max_size=None) as ws:
            reader = asyncio.create_task(read(ws))
            try:
                for message in share:
                    await ws.send(message)
                    await asyncio.sleep(0.002)  # a fast client, not a flood the socket's buffers hide
                if farewell is not None:
                    await ws.send(farewell)
                await asyncio.sleep(0.5)
                await ws.close()
                await reader
            except ConnectionClosed as exc:
                # 1013 "try again later": the server full (the hostile offers' sessions are held a while), a refusal
                # it announced; any other close mid-way is the server dropping the socket
                full = exc.rcvd is not None and exc.rcvd.code == TRY_AGAIN_LATER
                counts["refused" if full else "server_errors"] += 1
            finally:
                reader.cancel()

    await asyncio.gather(*(client(messages[i::clients]) for i in range(clients)))
    return counts


async def _controller(url: str, messages: list[str], headers: dict[str, str]) -> dict[str, int]:
    """The messages sent by a controller attached to a real WHEP session (a PCMU bridge without a data channel)."""
    listener = Listener.create(codecs=["pcmu"], datachannel=False)
    try:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
            # the hostile offers before it leave sessions that never connect, held SETUP_TIMEOUT_S: with enough of
            # them the server is full (503) until they are dropped, so this sound bridge waits for room as one would
            await _sessions_left(http)
            reply = await http.post("/v1/whep", content=await listener.offer(),
                                    headers={"content-type": "application/sdp"})
            reply.raise_for_status()
        await listener.accept(reply.text)
        await listener.wait_for(lambda: listener.pc.connectionState == "connected", timeout=15)
        return await _websocket(url, messages, headers, session=reply.headers["location"].rsplit("/", 1)[1],
                                clients=1)
    finally:
        await listener.close()


async def _phone(url: str, stack: str, frames: list[str | bytes], headers: dict[str, str],
                 rng: random.Random) -> dict[str, int]:
    """The frames sent on calls from ``stack`` (FRAMES_PER_CALL each, WEBSOCKET_CLIENTS calls at once), each call
    started properly (sometimes with a hostile greeting; sometimes followed at once by a second stream with its call
    id, which must be closed with 4409 and leave the first alone) and hung up; a call the server closed with another
    code than 1000 or a refusal's, or did not close, counts as a server error (its close code listed)."""
    counts = {"server_errors": 0, "refused": 0}
    calls = [frames[i:i + FRAMES_PER_CALL] for i in range(0, len(frames), FRAMES_PER_CALL)]
    greetings = [websocket_messages(rng, 1)[0][:200] if rng.random() < 0.3 else "" for _ in calls]
    reused = [rng.random() < REUSED_IDS for _ in calls]  # drawn here: the calls run concurrently

    async def call(share: list[str | bytes], greeting: str, reuse: bool) -> None:
        call_id = f"fuzz-{uuid.uuid4().hex}"
        caller = await connect_call(url, stack, call_id, headers, text=greeting)
        if reuse:  # the same call id again, the first live (its controller ready): 4409
            async with connect(url.replace("http", "ws", 1) + f"/v1/stream?session={call_id}&wait=10",
                               additional_headers=headers) as agent:
                await asyncio.wait_for(agent.recv(), 10)
                twin = await connect_call(url, stack, call_id, headers)
                _judge_close(counts, await _close_code(twin), DUPLICATE_CLOSE_CODE)
                await twin.hang_up()
        try:
            for frame in share:
                await caller.ws.send(frame)
                await asyncio.sleep(0.002)
            await caller.hang_up()
        except ConnectionClosed:
            pass
        _judge_close(counts, await _close_code(caller))

    pending = iter(zip(calls, greetings, reused))

    async def worker() -> None:
        for share, greeting, reuse in pending:
            await call(share, greeting, reuse)

    await asyncio.gather(*(worker() for _ in range(WEBSOCKET_CLIENTS)))
    return counts


async def _freeswitch(url: str, frames: list[str | bytes], queries: list[str], headers: dict[str, str],
                      rng: random.Random) -> dict[str, int]:
    """mod_audio_stream calls with mangled frames (``_phone``), and as many more whose URL names no usable call or
    rate: each must be closed with 4400 before any audio."""
    counts = await _phone(url, "freeswitch", frames, headers, rng)
    for query in queries[::FRAMES_PER_CALL]:
        try:
            async with connect(url.replace("http", "ws", 1) + "/v1/freeswitch?" + query,
                               additional_headers=headers) as ws:
                await ws.send(bytes(320))
                await asyncio.wait_for(ws.recv(), 10)
                counts["server_errors"] += 1  # something came back on a stream it should have refused
                counts.setdefault("close_codes", []).append(f"answered {query}")
        except ConnectionClosed as closed:
            _judge_close(counts, closed.rcvd.code if closed.rcvd else None, BAD_FRAME)
        except TimeoutError:
            counts["server_errors"] += 1
    return counts


async def _close_code(caller: PlayingStack, within: float = 10.0) -> int | None:
    """The code the server closed the call's socket with (None: it did not close it within ``within`` s)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(caller.closed.wait(), within)
    return caller.ws.close_code


def _judge_close(counts: dict[str, Any], code: int | None, expected: int | None = None) -> None:
    """A media stream's close code (None: not closed): exactly ``expected`` where given (or 1013: the server is full),
    else 1000 or a refusal's. A refusal's is counted as refused; any other a server error, its code listed."""
    allowed = {1000, *REFUSAL_CLOSE_CODES} if expected is None else {expected, 1013}
    if code not in allowed:
        counts["server_errors"] += 1
        counts.setdefault("close_codes", []).append(code)  # what to look into
    elif code in REFUSAL_CLOSE_CODES:
        counts["refused"] += 1


async def _caller_audio(url: str, frames: list[tuple[str, str | bytes]], headers: dict[str, str],
                        http: httpx.AsyncClient, rng: random.Random) -> dict[str, Any]:
    """The caller's audio, hostile (``caller_media``), on Twilio calls of FRAMES_PER_CALL frames, WEBSOCKET_CLIENTS at
    once. Some calls send their first frame before ``start`` (they must be closed with 4400); the rest start, send a
    flood of sound audio first (some of them) and then their frames, and hang up (they must close with 1000, or 4400
    at a binary frame). /health's ``caller_audio`` must count every rejected frame that arrived, and most of each
    flood as flooded; a frame miscounted is a server error."""
    counts: dict[str, Any] = {"server_errors": 0, "refused": 0}
    expected = {"rejected": 0, "flooded": 0}
    before = (await http.get("/health")).json()["caller_audio"]
    plans = [(frames[i:i + FRAMES_PER_CALL], rng.random() < EARLY_MEDIA, rng.random() < FLOODS)
             for i in range(0, len(frames), FRAMES_PER_CALL)]

    async def early(share: list[tuple[str, str | bytes]]) -> None:
        ws = await connect(url.replace("http", "ws", 1) + "/v1/twilio", additional_headers=headers)
        try:
            with contextlib.suppress(ConnectionClosed):
                await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
                await ws.send(share[0][1])
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ws.wait_closed(), 10)
            _judge_close(counts, ws.close_code, 4400)
        finally:
            await ws.close()

    async def started(share: list[tuple[str, str | bytes]], flood: bool) -> None:
        caller = await connect_call(url, "twilio", f"fuzz-{uuid.uuid4().hex}", headers)
        rejected, closes = 0, False
        try:
            if flood:
                for n in range(FLOOD_FRAMES):
                    await caller.ws.send(caller.caller_frame(n, caller.silence))
                expected["flooded"] += FLOOD_FRAMES // 2
            for outcome, frame in share:
                await caller.ws.send(frame)
                closes = outcome == "closes"
                if closes:
                    break
                rejected += outcome == "rejected"
                await asyncio.sleep(0.002)
            if not closes:  # else the server's 4400 comes first: a hang-up would race it
                await caller.hang_up()
        except ConnectionClosed:
            pass
        expected["rejected"] += rejected
        _judge_close(counts, await _close_code(caller), 4400 if closes else 1000)
        await caller.hang_up()  # the replica's own tasks end, if they have not

    pending = iter(plans)

    async def worker() -> None:
        for share, before_start, flood in pending:
            await (early(share) if before_start else started(share, flood))

    await asyncio.gather(*(worker() for _ in range(WEBSOCKET_CLIENTS)))
    after = (await http.get("/health")).json()["caller_audio"]
    counts["rejected"] = after["rejected"] - before["rejected"]
    counts["flooded"] = after["flooded"] - before["flooded"]
    if counts["rejected"] != expected["rejected"] or counts["flooded"] < expected["flooded"]:
        counts["server_errors"] += 1
        counts["expected"] = expected  # what to look into
    return counts


async def _call_controller(url: str, messages: list[str], headers: dict[str, str]) -> dict[str, Any]:
    """Controller messages about the caller's side (``listen``, ``barge_in``: ``CALLER_CONTROL_FIELDS``) on
    WEBSOCKET_CLIENTS Twilio calls at once, a share each; every call must then hang up as a sound one does (1000)."""
    counts: dict[str, Any] = {"server_errors": 0, "refused": 0}

    async def call(share: list[str]) -> None:
        call_id = f"fuzz-{uuid.uuid4().hex}"
        caller = await connect_call(url, "twilio", call_id, headers)
        try:
            got = await _websocket(url, share, headers, clients=1, path=f"/v1/stream?session={call_id}&wait=10")
        finally:
            await caller.hang_up()
        for name in ("server_errors", "refused"):
            counts[name] += got[name]
        _judge_close(counts, await _close_code(caller), 1000)

    await asyncio.gather(*(call(messages[i::WEBSOCKET_CLIENTS]) for i in range(WEBSOCKET_CLIENTS)))
    return counts


async def _bystander(url: str, headers: dict[str, str], stop: asyncio.Event) -> dict[str, int]:
    """A sound Twilio call beside the hostile ones: its controller listens and speaks one sentence after another until
    ``stop``. A turn that does not end ``done`` (heard to its end by the marks), or in which no caller audio reached
    the listener, is a failure."""
    figures = {"turns": 0, "failures": 0}
    call_id = f"bystander-{uuid.uuid4().hex}"
    caller = await connect_call(url, "twilio", call_id, headers)
    try:
        async with connect(url.replace("http", "ws", 1) + f"/v1/stream?session={call_id}&wait=10",
                           additional_headers=headers, max_size=None) as agent:
            await agent.recv()  # ready
            await agent.send('{"type": "listen"}')
            while not stop.is_set():
                await agent.send(json.dumps({"type": "speak", "text": BYSTANDER_TEXT}))
                heard, end = 0, None
                async with asyncio.timeout(30):
                    while end is None:
                        event = json.loads(await agent.recv())
                        heard += event["type"] == "caller_audio"
                        end = event["type"] if event["type"] in ("done", "cancelled", "error", "ended") else None
                figures["turns"] += 1
                figures["failures"] += end != "done" or not heard
    except (ConnectionClosed, TimeoutError, OSError):
        figures["failures"] += 1
    finally:
        await caller.hang_up()
    return figures


def _json(bodies: list[str]) -> list[tuple[str, bytes]]:
    return [("application/json", body.encode("utf-8", "surrogatepass")) for body in bodies]


async def _http(url: str, route: str, requests: list[tuple[str, bytes]], headers: dict[str, str],
                method: str = "POST") -> dict[str, int]:
    """``requests`` ((content type, body) pairs) sent to ``route`` a few at a time; 5xx other than a session-limit
    refusal and dropped connections count as server errors."""
    counts = {"server_errors": 0, "refused": 0, "accepted": 0}
    pending = iter(requests)

    async def worker(http: httpx.AsyncClient) -> None:
        for content_type, body in pending:
            try:
                reply = await http.request(method, route, content=body, headers={"content-type": content_type})
            except httpx.HTTPError:  # a stream aborted mid-way, a dropped connection
                counts["server_errors"] += 1
                continue
            if reply.status_code == 503 and _refusal_code(reply) == "session_limit":
                counts["refused"] += 1
            elif reply.headers.get("content-type", "").startswith(sse.CONTENT_TYPE):
                _count_sse(counts, reply.text)
            elif reply.status_code >= 500:
                counts["server_errors"] += 1
            elif reply.status_code >= 400:
                counts["refused"] += 1
            else:
                counts["accepted"] += 1

    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        await asyncio.gather(*(worker(http) for _ in range(HTTP_CONCURRENCY)))
    return counts


def _refusal_code(reply: httpx.Response) -> str | None:
    """An error reply's code: ours (``{"error": {"code"}}``) or Deepgram's (``{"err_code"}``, in capitals)."""
    body = reply.json()
    return body.get("error", {}).get("code") if "error" in body else str(body.get("err_code", "")).lower() or None


async def _http_queries(url: str, path: str, queries: tuple[str, ...], requests: list[tuple[str, bytes]],
                        headers: dict[str, str]) -> dict[str, int]:
    """``requests`` shared among ``path`` with each of ``queries`` in turn; their counts added up."""
    shares = [await _http(url, f"{path}?{query}", requests[i::len(queries)], headers)
              for i, query in enumerate(queries)]
    return {name: sum(share[name] for share in shares) for name in shares[0]}


def _count_sse(counts: dict[str, int], body: str) -> None:
    """An SSE speech stream (OpenAI's or Cartesia's): accepted when it ends with ``done``; its ``error`` event counted
    as any other."""
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    last = events[-1] if events else {}
    if last.get("type") in ("speech.audio.done", "done"):
        counts["accepted"] += 1
    elif last.get("type") == "error":
        _count(counts, {"type": "error", "code": last["error"]["code"] if isinstance(last.get("error"), dict)
                        else last.get("error_code")})
    else:
        counts["server_errors"] += 1  # neither done nor an error: cut short


async def _wyoming(host: str, port: int, frames: list[bytes], clients: int = WEBSOCKET_CLIENTS) -> dict[str, int]:
    """The frames spread over a few connections to the Wyoming port, every event read, a ``describe`` last. A
    connection the server closes after an ``error`` event (a stream it cannot read on) is opened again for the rest;
    one it closes without saying why, or that leaves the last ``describe`` unanswered, is a server error."""
    counts = {"server_errors": 0, "refused": 0}

    async def read(reader: asyncio.StreamReader, seen: list[Event]) -> None:
        events = EventReader()
        with contextlib.suppress(ConnectionResetError):  # a reset after the server's last event is a close
            while data := await reader.read(65536):
                for event in events.feed(data):
                    seen.append(event)
                    if event.type == "error":
                        _count(counts, {"type": "error", "code": event.data.get("code")})

    async def client(pending: list[bytes]) -> None:
        while True:
            reader, writer = await asyncio.open_connection(host, port)
            seen: list[Event] = []
            asked = None  # where the last describe went out
            reading = asyncio.create_task(read(reader, seen))
            try:
                while pending and not reading.done():
                    writer.write(pending.pop(0))
                    await writer.drain()
                    await asyncio.sleep(0.002)
                if not reading.done():
                    asked = len(seen)
                    writer.write(encode(Event("describe")))
                    await writer.drain()
                    await asyncio.wait_for(_until(lambda: reading.done() or any(
                        e.type == "info" for e in seen[asked:])), 30)
            except (ConnectionError, TimeoutError):
                pass
            finally:
                writer.close()
                reading.cancel()
            if reading.done() and not reading.cancelled() and reading.exception() is not None:
                counts["server_errors"] += 1  # it sent what is not Wyoming
                return
            if asked is not None and any(e.type == "info" for e in seen[asked:]):
                return
            if not any(e.type == "error" for e in seen):
                counts["server_errors"] += 1  # closed, or silent, without an error event
                return

    await asyncio.gather(*(client(frames[i::clients]) for i in range(clients)))
    return counts


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.01)


async def _datachannel(url: str, messages: list[str], headers: dict[str, str]) -> dict[str, int]:
    """The messages sent over a real WebRTC session's data channel; error events and a channel the server closed
    counted as on the WebSocket."""
    counts = {"server_errors": 0, "refused": 0}
    listener = Listener.create()
    try:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
            reply = await http.post("/v1/webrtc/offer", json={"sdp": await listener.offer(), "type": "offer"})
            reply.raise_for_status()
        await listener.accept(reply.json()["sdp"])
        channel = listener.channel
        await listener.wait_for(lambda: channel.readyState == "open", timeout=15)
        for message in messages:
            if channel.readyState != "open":
                break
            channel.send(message)
            await asyncio.sleep(0.002)
        channel.send('{"type": "cancel"}')
        await asyncio.sleep(0.5)
        if channel.readyState != "open":
            counts["server_errors"] += 1  # the server closed the channel
    finally:
        await listener.close()
    for event in listener.events:
        _count(counts, event)
    return counts


async def _keys_file(http: httpx.AsyncClient, path: Path | None, files: list[bytes],
                    rng: random.Random) -> dict[str, int]:
    """Every hostile keys file parsed (refused with a KeysFileError, or taken); a few written over the server's own
    file: each refused (``/health`` shows why) with the keys before it still opening speech, then the good file
    back."""
    counts = {"server_errors": 0, "refused": 0, "taken": 0}
    refused = []
    for data in files:
        try:
            parse(data.decode("utf-8"))
            counts["taken"] += 1
        except (KeysFileError, UnicodeDecodeError):
            counts["refused"] += 1
            refused.append(data)
        except Exception:  # anything else would be the server's own error on a reload
            counts["server_errors"] += 1
    if path is None:
        return counts
    await _sessions_left(http)  # room for its speech: the hostile offers' never-connecting sessions dropped
    for data in [*rng.sample(refused, min(LIVE_RELOADS, len(refused))), GOOD_KEYS.encode()]:
        path.write_bytes(data)
        await asyncio.sleep(WATCH_INTERVAL_S + 0.5)
        keys = (await http.get("/health")).json().get("keys", {})
        spoken = await http.post("/v1/tts", json={"text": "Still here."})
        if spoken.status_code != 200 or ("reload_error" in keys) != (data != GOOD_KEYS.encode()):
            counts["server_errors"] += 1
    return counts


def _engine_figures(health: dict[str, Any]) -> tuple[int, int]:
    """Engine connections lost so far, and restarts of the embedded workers (every one of --engine-devices)."""
    return (sum(e.get("lost", 0) for e in health["engines"]),
            sum(worker["restarts"] for worker in health.get("workers") or ()))


async def _sessions_left(http: httpx.AsyncClient, within: float = SETUP_TIMEOUT_S + 5) -> int:
    """Sessions still open once every client has gone (a WebRTC offer never connected is dropped after
    the server's --webrtc-setup-timeout, SETUP_TIMEOUT_S by default)."""
    deadline = time.monotonic() + within
    while (sessions := (await http.get("/health")).json()["sessions"]) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return sessions


async def _slow_requests(url: str, count: int, request_timeout_s: float) -> dict[str, int]:
    """Slow clients (slowloris), all at once: each must get a 4xx (a 408, or the 401 a keyed server gives a head
    without a key) and its connection closed within the server's --request-timeout; a connection held past it, or
    another answer, is the server's error."""
    host, port = urlsplit(url).hostname or "127.0.0.1", urlsplit(url).port or 80

    async def client(part: bytes) -> str:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(part)
        try:
            async with asyncio.timeout(request_timeout_s + 10):
                reply = await reader.read()  # to the end: the server closes it
        except (TimeoutError, ConnectionError):
            return "server_errors"
        finally:
            writer.close()
        return "refused" if reply.startswith(b"HTTP/1.1 4") else "server_errors"

    outcomes = await asyncio.gather(*(client(SLOW_PARTS[i % len(SLOW_PARTS)]) for i in range(min(count, SLOW_CLIENTS))))
    return {"server_errors": outcomes.count("server_errors"), "refused": outcomes.count("refused")}


async def _connections_left(http: httpx.AsyncClient, before: int | None,
                            within: float = STUCK_CLOSE_S + 5) -> int | None:
    """Client connections open beyond ``before`` once every client has gone (one closed on a client that reads
    nothing is reset STUCK_CLOSE_S after its close; idle keep-alive ones go after uvicorn's 5 s); None when the
    server does not say."""
    if before is None:
        return None
    deadline = time.monotonic() + within
    while (now := (await http.get("/health")).json()["connections"]) > before and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    return max(0, now - before)


async def _voices(http: httpx.AsyncClient) -> set[str]:
    return {voice["name"] for voice in (await http.get("/v1/voices")).json()["voices"]}


async def measure(url: str, count: int, seed: int, api_key: str | None, wyoming_port: int | None = None,
                  keys_path: Path | None = None, request_timeout_s: float = REQUEST_TIMEOUT_S,
                  token_secret: str | None = None, allowed_origin: str | None = None,
                  audiosocket_port: int | None = None, audiosocket_key: str | None = None) -> dict[str, Any]:
    """``keys_path``: the started server's keys file, rewritten by the keys-file surface (then left as it was);
    ``request_timeout_s``: the server's --request-timeout, which the slow clients wait out beside the other
    surfaces; ``token_secret``: the server's --token-secret, where known (claims it never minted are then signed with
    it too); ``allowed_origin``: one origin of its --cors-origins, where known (near misses of it are tried). The
    tokens surface needs ``api_key`` (to mint with), the origins surface a server with --cors-origins: without, each
    is left out, and said so."""
    rng = random.Random(seed)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
        health = (await http.get("/health")).json()
        lost_before, restarts_before = _engine_figures(health)
        sessions_before = health["sessions"]  # left by an earlier seed's run on this server: counted there
        connections_before = health.get("connections")  # this client's own among them
        voices_before = await _voices(http)
        started = time.monotonic()
        slow = asyncio.create_task(_slow_requests(url, count, request_timeout_s))
        # The caller's side first: the hostile offers below leave sessions that never connect, held for
        # SETUP_TIMEOUT_S, and those would fill the session limit under these calls on a fast machine.
        stop = asyncio.Event()
        bystanding = asyncio.create_task(_bystander(url, headers, stop))
        caller_side = {
            "caller audio": await _caller_audio(url, caller_media(rng, count), headers, http, rng),
            "call controller": await _call_controller(url, websocket_messages(rng, count, CALLER_CONTROL_FIELDS),
                                                      headers),
        }
        stop.set()
        bystander = await bystanding
        surfaces = {
            "websocket": await _websocket(url, websocket_messages(rng, count), headers),
            "playout": await _websocket(url, playout_lies(rng, count), headers),
            "elevenlabs": await _websocket(url, websocket_messages(rng, count, ELEVENLABS_FIELDS), headers,
                                           path=ELEVENLABS_PATH, farewell=None),
            "cartesia": await _websocket(url, cartesia_messages(rng, count), headers, path=CARTESIA_PATH,
                                         farewell=None),
            "/cartesia/tts/bytes": await _http(url, "/cartesia/tts/bytes", _json(cartesia_bodies(rng, count)),
                                               headers),
            "/cartesia/tts/sse": await _http(url, "/cartesia/tts/sse", _json(cartesia_bodies(rng, count)), headers),
            "datachannel": await _datachannel(url, websocket_messages(rng, count), headers),
            "/v1/tts": await _http(url, "/v1/tts", _json(http_bodies(rng, count, TTS_FIELDS)), headers),
            "/v1/audio/speech": await _http(url, "/v1/audio/speech",
                                            _json(http_bodies(rng, count, OPENAI_FIELDS)), headers),
            "/v1/webrtc/offer": await _http(url, "/v1/webrtc/offer", _json(offer_bodies(rng, count)), headers),
            "controller": await _controller(url, websocket_messages(rng, count), headers),
            "/v1/twilio": await _phone(url, "twilio", websocket_messages(rng, count, MEDIA_STREAM_FIELDS), headers,
                                       rng),
            "/v1/telnyx": await _phone(url, "telnyx", websocket_messages(rng, count, MEDIA_STREAM_FIELDS), headers,
                                       rng),
            "/v1/asterisk": await _phone(url, "asterisk", asterisk_frames(rng, count), headers, rng),
            "/v1/plivo": await _phone(url, "plivo", websocket_messages(rng, count, PLIVO_FIELDS), headers, rng),
            "/v1/vonage": await _phone(url, "vonage", vonage_frames(rng, count), headers, rng),
            "/v1/exotel": await _phone(url, "exotel", websocket_messages(rng, count, EXOTEL_FIELDS), headers, rng),
            "/v1/freeswitch": await _freeswitch(url, freeswitch_frames(rng, count), freeswitch_queries(rng, count),
                                                headers, rng),
            "/v1/jambonz/tts": await _websocket(url, websocket_messages(rng, count, JAMBONZ_FIELDS), headers,
                                                path=JAMBONZ_PATH, farewell='{"type": "stop"}'),
            "/v1/whep": await _http(url, "/v1/whep", whep_offers(rng, count), headers),
            "/v1/voices": await _http(url, "/v1/voices", voice_uploads(rng, count), headers),
            "/v1/lexicons": await _http(url, "/v1/lexicons/fuzz", lexicon_uploads(rng, count), headers, "PUT"),
            "deepgram": await _websocket(url, websocket_messages(rng, count, DEEPGRAM_FIELDS), headers,
                                         path=DEEPGRAM_PATH, farewell='{"type": "Clear"}'),
            "/deepgram/v1/speak": await _http_queries(url, "/deepgram/v1/speak", DEEPGRAM_QUERIES,
                                                      _json(http_bodies(rng, count, DEEPGRAM_REST_FIELDS)), headers),
            "/v1/vapi": await _http(url, "/v1/vapi", _json(http_bodies(rng, count, VAPI_FIELDS)), headers),
            "keys file": await _keys_file(http, keys_path, keys_files(rng, count, GOOD_KEYS), rng),
        }
        left_out = []
        await _sessions_left(http)  # room for their sound inputs: the hostile offers' never-connecting sessions gone
        if api_key:  # (their own generators: the other surfaces' inputs stay what they were for a seed)
            surfaces["tokens"] = await credentials.tokens(url, http, count, random.Random(f"{seed} tokens"),
                                                          token_secret)
        else:
            left_out.append("tokens (no API key to mint with)")
        if await credentials.allowed_origins(url):
            surfaces["origins"] = await credentials.origins(url, count, random.Random(f"{seed} origins"), api_key,
                                                            allowed_origin)
        else:
            left_out.append("origins (the server allows every origin: no --cors-origins)")
        surfaces |= caller_side
        surfaces["slow requests"] = await slow
        if wyoming_port is not None:
            surfaces["wyoming"] = await _wyoming(urlsplit(url).hostname or "127.0.0.1", wyoming_port,
                                                 wyoming_frames(rng, count))
        if audiosocket_port is not None:
            surfaces["audiosocket"] = await audiosocket(urlsplit(url).hostname or "127.0.0.1", audiosocket_port,
                                                        audiosocket_key, random.Random(f"{seed} audiosocket"), count)
        else:
            left_out.append("audiosocket (no --audiosocket-port)")
        leaked = await _sessions_left(http)
        connections_left = await _connections_left(http, connections_before)
        voices_after = await _voices(http)
        for name in voices_after - voices_before:  # what the uploads stored: leave the server as it was
            await http.delete(f"/v1/voices/{name}")
        await http.delete("/v1/lexicons/fuzz")
        health = (await http.get("/health")).json()
    lost, restarts = _engine_figures(health)
    return {"bench": "faults", "inputs_per_surface": count, "seed": seed, "surfaces": surfaces,
            "server_errors": sum(s["server_errors"] for s in surfaces.values()),
            "let_through": sum(s.get("let_through", 0) for s in surfaces.values()), "left_out": left_out,
            "dropped_engine_connections": lost - lost_before, "worker_restarts": restarts - restarts_before,
            "leaked_sessions": max(0, leaked - sessions_before), "leaked_connections": connections_left,
            "lost_voices": sorted(voices_before - voices_after), "bystander": bystander,
            "health": health["status"], "seconds": round(time.monotonic() - started, 1)}


def render(summary: dict[str, Any]) -> str:
    lines = [f"bench faults: {summary['inputs_per_surface']} hostile inputs per surface (seed {summary['seed']}), "
             f"{summary['seconds']} s"]
    for name, counts in summary["surfaces"].items():
        lines.append(f"  {name:<18} server errors {counts['server_errors']:>4}   refused {counts['refused']:>5}"
                     + (f"   let through {counts['let_through']}" if "let_through" in counts else ""))
    if summary.get("left_out"):
        lines.append(f"  left out: {'; '.join(summary['left_out'])}")
    lines.append(f"  server errors {summary['server_errors']}, let through {summary.get('let_through', 0)}, "
                 f"dropped engine connections "
                 f"{summary['dropped_engine_connections']}, worker restarts {summary['worker_restarts']}, "
                 f"leaked sessions {summary['leaked_sessions']}, leaked connections "
                 f"{_figure(summary['leaked_connections'])}, lost voices {len(summary['lost_voices'])}; "
                 f"/health {summary['health']}")
    lines.append(f"  a sound call beside the caller-side surfaces: {summary['bystander']['turns']} turns, "
                 f"{summary['bystander']['failures']} failed")
    return "\n".join(lines)


def combined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several seeds' runs on one server as one summary: every figure added up (the lost voices: each named once),
    ``health`` the last run's; each run's own summary in ``runs``."""
    total = {name: sum(run.get(name) or 0 for run in runs)
             for name in ("server_errors", "let_through", "dropped_engine_connections", "worker_restarts",
                          "leaked_sessions", "leaked_connections")}
    return {"bench": "faults", "inputs_per_surface": runs[0]["inputs_per_surface"],
            "seeds": [run["seed"] for run in runs], "surface_count": len(runs[0]["surfaces"]), **total,
            "seconds": round(sum(run["seconds"] for run in runs), 1),
            "lost_voices": sorted({name for run in runs for name in run["lost_voices"]}),
            "bystander": {name: sum(run["bystander"][name] for run in runs) for name in ("turns", "failures")},
            "health": runs[-1]["health"], "runs": runs}


def render_combined(summary: dict[str, Any]) -> str:
    return (f"bench faults: {len(summary['seeds'])} seeds x {summary['inputs_per_surface']} hostile inputs on "
            f"{summary['surface_count']} surfaces, {summary['seconds']} s: server errors {summary['server_errors']}, "
            f"let through {summary['let_through']}, "
            f"dropped engine connections {summary['dropped_engine_connections']}, worker restarts "
            f"{summary['worker_restarts']}, leaked sessions {summary['leaked_sessions']}, leaked connections "
            f"{_figure(summary['leaked_connections'])}, lost voices "
            f"{len(summary['lost_voices'])}; a sound call beside them {summary['bystander']['turns']} turns, "
            f"{summary['bystander']['failures']} failed; /health {summary['health']}")


def _figure(value: int | None) -> str:
    return "not reported" if value is None else str(value)


def failed(summary: dict[str, Any]) -> bool:
    return bool(summary["server_errors"] or summary.get("let_through") or summary["dropped_engine_connections"]
                or summary["worker_restarts"]
                or summary["leaked_sessions"] or summary["leaked_connections"] or summary["lost_voices"]
                or summary["health"] != "ok"
                or summary["bystander"]["failures"] or not summary["bystander"]["turns"])


def run(args: argparse.Namespace) -> int:
    """Exit status 1 when any figure is not 0; the last line is the summary as JSON. ``--seeds N``: N runs on the
    same server, seeds ``--seed`` on, each printed as it ends, then one line of their totals."""
    quiet_client_logs()
    try:
        if args.url:
            summary = _seeds(args, args.url, args.api_key, args.wyoming_port, None, args.request_timeout,
                             args.token_secret, args.allowed_origin, (args.audiosocket_port, args.audiosocket_key))
        else:
            port, audiosocket_port = free_port(), free_port()
            secret = secrets.token_urlsafe(32)
            with tempfile.TemporaryDirectory(prefix="cbf-bench-faults-") as folder:
                keys_path = Path(folder) / "keys.toml"
                keys_path.write_text(GOOD_KEYS)
                with local_server(["--engine", "espeak", "--log-level", "warning", "--wyoming-port", str(port),
                                   "--keys-file", str(keys_path), "--request-timeout", str(STARTED_REQUEST_TIMEOUT_S),
                                   "--cors-origins", STARTED_ORIGIN, "--audiosocket-port", str(audiosocket_port),
                                   "--audiosocket-key", STARTED_AUDIOSOCKET_KEY],
                                  env={**os.environ, "CBF_TOKEN_SECRET": secret}, quiet=True) as (url, _):
                    summary = _seeds(args, url, BENCH_KEY, port, keys_path, STARTED_REQUEST_TIMEOUT_S, secret,
                                     STARTED_ORIGIN, (audiosocket_port, STARTED_AUDIOSOCKET_KEY))
    except (ServerFailed, OSError, httpx.HTTPError) as exc:
        print(f"bench faults: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 1 if failed(summary) else 0


def _seeds(args: argparse.Namespace, url: str, api_key: str | None, wyoming_port: int | None,
           keys_path: Path | None, request_timeout_s: float, token_secret: str | None = None,
           allowed_origin: str | None = None,
           audiosocket: tuple[int | None, str | None] = (None, None)) -> dict[str, Any]:
    runs = []
    for seed in range(args.seed, args.seed + args.seeds):
        runs.append(asyncio.run(measure(url, args.count, seed, api_key, wyoming_port, keys_path, request_timeout_s,
                                        token_secret, allowed_origin, *audiosocket)))
        print(render(runs[-1]), flush=True)
    if len(runs) == 1:
        return runs[0]
    print(render_combined(summary := combined(runs)))
    return summary
