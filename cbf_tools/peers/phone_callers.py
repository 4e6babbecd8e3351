"""The phone stacks' side of a media-stream WebSocket, for benchmarks and tests: replicas written from each vendor's
documentation (Twilio's "Media Streams - WebSocket Messages", Telnyx's "Stream call media over WebSocket" AsyncAPI
page, Asterisk's WebSocket channel driver page, JSON control format, mod_audio_stream's README; SignalWire's cXML
<Stream>; Plivo's audio streaming events; Vonage's Voice API WebSockets guide; Exotel's Stream and Voicebot applet
page; Asterisk's AudioSocket, over TCP, is cbf_tools/peers/audiosocket_peer.py). None of these carriers ships a
simulator: each class is a replica, as faithful as its vendor's pages are.

Each does what its stack documents: ``start`` (the stream's opening frames), 20 ms of the caller's audio every 20 ms
(Exotel: 100 ms every 100 ms) on a fixed schedule (silence, or what ``voice`` says), our audio played from a buffer at
real time, each mark answered once the audio before it has played, the buffer (marks included) emptied on a clear
(Plivo and Vonage say so), ``dtmf``, and ``hang_up`` (Twilio, Telnyx and Exotel send ``stop``; Asterisk, Plivo and
Vonage close the socket). Each records when each of our frames arrived (``arrived``), what played when
(``heard_between``) and when each clear came (``cleared_at``): the caller's side of barge-in timings. ``connect_call``
opens one on a gateway.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import time
import uuid
from typing import Any, AsyncIterator, Callable
from urllib.parse import urlencode

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from cbf_tools.peers.polling import until

Heard = tuple[str, Any] | None  # ("media", bytes) / ("mark", name) / ("clear", None); None: nothing for us
Voice = Callable[[float], bytes | None]  # the caller's 20 ms frame to send at a monotonic time (None: silence)
FRAME_S = 0.02  # the caller's audio per media frame
QUIET_S = 0.3  # a stack without a clear: the gateway's audio has stopped once none has arrived for this long


class PlayingStack:
    """The common part: subclasses speak the dialect (``opening``, ``heard``, ``echo``, ``caller_frame``,
    ``dtmf_frame``, ``stop_frame``)."""

    path = ""
    subprotocols: list[str] | None = None
    bytes_per_second = 8000
    sample_bytes = 1
    silence = b"\xff" * 160  # one frame (``frame_s``) of the caller's silence on this stack's wire
    codec = "pcmu"
    frame_s = FRAME_S  # the caller's audio per message
    has_clear = True  # False: the stack has no clear (the gateway stops sending; what was sent plays)

    def __init__(self, ws: ClientConnection, call_id: str) -> None:
        self.ws, self.call_id = ws, call_id
        self.audio = bytearray()
        self.frames: list[bytes] = []
        self.arrived: list[float] = []  # when each of ``frames`` arrived (monotonic s)
        self.marks_echoed: list[str] = []
        self.clears = 0
        self.cleared_at: list[float] = []
        self.voice: Voice = lambda at: None
        self._playout: list[tuple[float, bytes]] = []  # what plays from when; a clear cuts what had not played
        self._plays_until = 0.0
        self._echoes: list[asyncio.TimerHandle] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.closed = asyncio.Event()

    @classmethod
    def target(cls, call_id: str, params: dict[str, str]) -> str:
        """The path and query it dials (its ``params`` go in its opening frames, but for a stack without one)."""
        return cls.path

    def opening(self, params: dict[str, str]) -> list[str]: ...

    def heard(self, frame: str | bytes) -> Heard: ...

    def echo(self, name: str) -> str: ...

    def caller_frame(self, n: int, audio: bytes) -> str | bytes: ...

    def dtmf_frame(self, digit: str) -> str: ...

    def stop_frame(self) -> str | None:
        return None

    def clear_answer(self) -> str | None:
        """What the stack says once it has emptied its buffer on a clear (None: nothing)."""
        return None

    async def start(self, **params: str) -> None:
        """The stream's opening frames (``params``: <Parameter>s or channel variables: key, voice, text), then the
        caller's audio and our playout."""
        for frame in self.opening(params):
            await self.ws.send(frame)
        self._tasks = [asyncio.create_task(self._receive()), asyncio.create_task(self._caller_audio())]

    async def dtmf(self, digit: str) -> None:
        await self.ws.send(self.dtmf_frame(digit))

    async def hang_up(self) -> None:
        """End the call (again: nothing more)."""
        if (frame := self.stop_frame()) is not None:
            await self._send_quietly(frame)
        await self.ws.close()  # while still reading: the gateway's close frame is behind its last audio
        for task in self._tasks:
            task.cancel()

    async def cleared(self, before: int = 0, timeout: float = 2.0) -> None:
        """Until the gateway has sent more than ``before`` clears."""
        await until(lambda: self.clears > before, timeout, "the gateway sent no clear")

    async def silenced(self, before: int = 0, timeout: float = 2.0) -> None:
        """Until the gateway has stopped this call's audio: its clear (more than ``before``), or, on a stack that has
        none, ``QUIET_S`` with no audio arriving."""
        if self.has_clear:
            await self.cleared(before, timeout)
            return
        await until(lambda: not self.arrived or time.monotonic() - self.arrived[-1] >= QUIET_S, timeout,
                    "the gateway's audio did not stop")

    def heard_between(self, start: float, end: float) -> bytes:
        """What the caller heard from ``start`` to ``end`` (monotonic s), on this stack's wire: our audio where it
        played, silence elsewhere."""
        def at(seconds: float) -> int:
            return max(0, round(seconds * self.bytes_per_second / self.sample_bytes)) * self.sample_bytes

        out = bytearray(self.silence[:self.sample_bytes] * (at(end - start) // self.sample_bytes))
        for begins, audio in reversed(self._playout):
            if begins >= end:
                continue
            skip = at(start - begins)
            if skip >= len(audio):
                break  # this piece, and every one before it, ended before ``start``
            into = at(begins - start)
            piece = audio[skip:skip + len(out) - into]
            out[into:into + len(piece)] = piece
        return bytes(out)

    async def _caller_audio(self) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with contextlib.suppress(ConnectionClosed):  # the call is over
            for n in itertools.count(1):
                await self.ws.send(self.caller_frame(n, self.voice(loop.time()) or self.silence))
                await asyncio.sleep(max(0.0, started + n * self.frame_s - loop.time()))

    async def _receive(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            async for frame in self._frames():
                kind, value = self.heard(frame) or (None, None)
                now = loop.time()
                if kind == "media":
                    self.audio += value
                    self.frames.append(value)
                    self.arrived.append(now)
                    self._playout.append((max(now, self._plays_until), value))
                    self._plays_until = max(now, self._plays_until) + len(value) / self.bytes_per_second
                elif kind == "mark":
                    self._echoes.append(loop.call_at(max(now, self._plays_until), self._echo, value))
                elif kind == "clear":
                    self.clears += 1
                    self.cleared_at.append(now)
                    for handle in self._echoes:
                        handle.cancel()
                    self._cut(now)
                    self._plays_until = now
                    if (answer := self.clear_answer()) is not None:
                        self._tasks.append(asyncio.ensure_future(self._send_quietly(answer)))
        finally:
            self.closed.set()

    async def _frames(self) -> AsyncIterator[str | bytes]:
        with contextlib.suppress(ConnectionClosed):
            async for frame in self.ws:
                yield frame

    def _cut(self, now: float) -> None:
        """A clear: what had not played by ``now`` never plays."""
        kept = [(begins, audio) for begins, audio in self._playout if begins < now]
        if kept:
            begins, audio = kept[-1]
            played = round((now - begins) * self.bytes_per_second / self.sample_bytes) * self.sample_bytes
            kept[-1] = (begins, audio[:played])
        self._playout = kept

    def _echo(self, name: str) -> None:
        self.marks_echoed.append(name)
        self._tasks.append(asyncio.ensure_future(self._send_quietly(self.echo(name))))

    async def _send_quietly(self, frame: str) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self.ws.send(frame)


class TwilioCaller(PlayingStack):
    path = "/v1/twilio"

    def __init__(self, ws: ClientConnection, call_id: str) -> None:
        super().__init__(ws, call_id)
        self.stream_sid = "MZ" + uuid.uuid4().hex

    def opening(self, params: dict[str, str]) -> list[str]:
        return [json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}), json.dumps({
            "event": "start", "sequenceNumber": "1", "streamSid": self.stream_sid, "start": {
                "accountSid": "AC" + "0" * 32, "streamSid": self.stream_sid, "callSid": self.call_id,
                "tracks": ["inbound"], "customParameters": params,
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}})]

    def caller_frame(self, n: int, audio: bytes) -> str:
        return json.dumps({"event": "media", "sequenceNumber": str(n + 1), "streamSid": self.stream_sid,
                           "media": {"track": "inbound", "chunk": str(n), "timestamp": str(n * 20),
                                     "payload": base64.b64encode(audio).decode()}})

    def heard(self, frame: str | bytes) -> Heard:
        msg = json.loads(frame)
        if msg["event"] == "media":
            return "media", base64.b64decode(msg["media"]["payload"])
        return (msg["event"], msg.get("mark", {}).get("name")) if msg["event"] in ("mark", "clear") else None

    def echo(self, name: str) -> str:
        return json.dumps({"event": "mark", "streamSid": self.stream_sid, "mark": {"name": name}})

    def dtmf_frame(self, digit: str) -> str:
        return json.dumps({"event": "dtmf", "streamSid": self.stream_sid,
                           "dtmf": {"track": "inbound_track", "digit": digit}})

    def stop_frame(self) -> str:
        return json.dumps({"event": "stop", "streamSid": self.stream_sid,
                           "stop": {"accountSid": "AC" + "0" * 32, "callSid": self.call_id}})


class TelnyxCaller(TwilioCaller):
    """Telnyx's frames are Twilio's with snake-case ids (``stream_id``, ``call_control_id``); PCMA here."""

    path = "/v1/telnyx"
    codec = "pcma"
    silence = b"\xd5" * 160

    def opening(self, params: dict[str, str]) -> list[str]:
        return [json.dumps({"event": "connected", "version": "1.0.0"}), json.dumps({
            "event": "start", "sequence_number": "1", "stream_id": self.stream_sid, "start": {
                "user_id": "3E6F995F", "call_control_id": self.call_id, "call_session_id": "ff55a038",
                "from": "+13122010094", "to": "+13122123456", "custom_parameters": params,
                "media_format": {"encoding": "PCMA", "sample_rate": 8000, "channels": 1}}})]

    def caller_frame(self, n: int, audio: bytes) -> str:
        return json.dumps({"event": "media", "sequence_number": str(n + 1), "stream_id": self.stream_sid,
                           "media": {"track": "inbound", "chunk": str(n), "timestamp": str(n * 20),
                                     "payload": base64.b64encode(audio).decode()}})

    def echo(self, name: str) -> str:
        return json.dumps({"event": "mark", "stream_id": self.stream_sid, "mark": {"name": name}})

    def dtmf_frame(self, digit: str) -> str:
        return json.dumps({"event": "dtmf", "stream_id": self.stream_sid, "dtmf": {"digit": digit}})

    def stop_frame(self) -> str:
        return json.dumps({"event": "stop", "stream_id": self.stream_sid,
                           "stop": {"user_id": "3E6F995F", "call_control_id": self.call_id}})


class BinaryMediaStack(PlayingStack):
    """A stack whose audio is BINARY frames both ways (16-bit PCM at 16 kHz, 20 ms of 640 bytes from the caller) and
    whose control is JSON TEXT (``control``: what one of our commands is)."""

    bytes_per_second = 16000 * 2
    sample_bytes = 2
    FRAME = 640
    silence = bytes(FRAME)

    def caller_frame(self, n: int, audio: bytes) -> bytes:
        return audio

    def heard(self, frame: str | bytes) -> Heard:
        return ("media", frame) if isinstance(frame, bytes) else self.control(json.loads(frame))

    def control(self, msg: dict[str, Any]) -> Heard: ...


class AsteriskChannel(BinaryMediaStack):
    """chan_websocket dialled with ``c(slin16)f(json)``: 20 ms frames of 640 bytes."""

    path = "/v1/asterisk"
    subprotocols = ["media"]  # websocket_client.conf: protocols = media
    codec = "slin16"

    def opening(self, params: dict[str, str]) -> list[str]:
        variables = {f"CBF_{name.upper()}": value for name, value in params.items()}
        return [json.dumps({"event": "MEDIA_START", "connection_id": "e226e283-c90a",
                            "channel": "WebSocket/cbf/0x5140001a0040", "channel_id": self.call_id,
                            "format": "slin16", "optimal_frame_size": self.FRAME, "ptime": 20,
                            "channel_variables": {"MEDIA_WEBSOCKET_CONNECTION_ID": "e226e283-c90a", **variables}})]

    def control(self, msg: dict[str, Any]) -> Heard:
        return {"MARK_MEDIA": ("mark", msg.get("correlation_id")), "FLUSH_MEDIA": ("clear", None)}.get(msg["command"])

    def echo(self, name: str) -> str:
        return json.dumps({"event": "MEDIA_MARK_PROCESSED", "channel_id": self.call_id, "correlation_id": name})

    def dtmf_frame(self, digit: str) -> str:
        return json.dumps({"event": "DTMF_END", "channel_id": self.call_id, "digit": digit})

    def flow(self, off: bool) -> str:
        return json.dumps({"event": "MEDIA_XOFF" if off else "MEDIA_XON", "channel_id": self.call_id})


class SignalWireCaller(TwilioCaller):
    """SignalWire's <Connect><Stream> (cXML, its Twilio-compatible API): Twilio's frames, with SignalWire's ids (UUIDs
    where Twilio has CA/MZ/AC ones), on ``/v1/twilio``."""

    def __init__(self, ws: ClientConnection, call_id: str) -> None:
        super().__init__(ws, call_id)
        self.stream_sid = str(uuid.uuid4())

    def opening(self, params: dict[str, str]) -> list[str]:
        return [json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}), json.dumps({
            "event": "start", "sequenceNumber": "1", "streamSid": self.stream_sid, "start": {
                "accountSid": "8b8f6a4e-6c5e-4f5a-9a55-0c3a8f1d2e7b", "streamSid": self.stream_sid,
                "callSid": self.call_id, "tracks": ["inbound"], "customParameters": params,
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}})]


class PlivoCaller(PlayingStack):
    """Plivo's bidirectional <Stream> (Plivo's "Audio streaming" XML and event pages): L16 8 kHz, its default; the
    parameters as ``extraHeaders``; checkpoints answered ``playedStream`` once played, ``clearAudio`` with
    ``clearedAudio``; the call ends with the socket closing."""

    path = "/v1/plivo"
    bytes_per_second = 8000 * 2
    sample_bytes = 2
    silence = bytes(320)
    codec = "l16-8000"

    def __init__(self, ws: ClientConnection, call_id: str) -> None:
        super().__init__(ws, call_id)
        self.stream_id = str(uuid.uuid4())
        self.formats: list[tuple[str, int]] = []  # each playAudio's (contentType, sampleRate)

    def opening(self, params: dict[str, str]) -> list[str]:
        return [json.dumps({"sequenceNumber": 0, "event": "start", "start": {
            "callId": self.call_id, "streamId": self.stream_id, "accountId": "MA" + "0" * 18, "tracks": ["inbound"],
            "mediaFormat": {"encoding": "audio/x-l16", "sampleRate": 8000}}, "extra_headers": json.dumps(params)})]

    def caller_frame(self, n: int, audio: bytes) -> str:
        return json.dumps({"sequenceNumber": n, "streamId": self.stream_id, "event": "media", "media": {
            "track": "inbound", "timestamp": str(int(time.time() * 1000)), "chunk": n,
            "payload": base64.b64encode(audio).decode()}, "extra_headers": "{}"})

    def heard(self, frame: str | bytes) -> Heard:
        msg = json.loads(frame)
        if msg["event"] == "playAudio":
            self.formats.append((msg["media"]["contentType"], msg["media"]["sampleRate"]))
            return "media", base64.b64decode(msg["media"]["payload"])
        return {"checkpoint": ("mark", msg.get("name")), "clearAudio": ("clear", None)}.get(msg["event"])

    def echo(self, name: str) -> str:
        return json.dumps({"event": "playedStream", "streamId": self.stream_id, "name": name})

    def clear_answer(self) -> str:
        return json.dumps({"event": "clearedAudio", "streamId": self.stream_id, "sequenceNumber": 0})

    def dtmf_frame(self, digit: str) -> str:
        return json.dumps({"event": "dtmf", "streamId": self.stream_id, "dtmf": {"track": "inbound", "digit": digit}})


class VonageCaller(BinaryMediaStack):
    """Vonage's Voice API WebSocket (its "WebSockets" guide): ``websocket:connected`` with the NCCO's headers (the
    call's ``uuid``, the key), then binary L16 16 kHz 20 ms frames both ways; ``notify`` answered
    ``websocket:notify`` once played, ``clear`` with ``websocket:cleared``; the call ends with the socket closing."""

    path = "/v1/vonage"
    codec = "l16-16000"

    def opening(self, params: dict[str, str]) -> list[str]:
        return [json.dumps({"event": "websocket:connected", "content-type": "audio/l16;rate=16000",
                            "uuid": self.call_id, **params})]

    def control(self, msg: dict[str, Any]) -> Heard:
        if msg.get("action") == "notify":
            return "mark", msg["payload"]["name"]
        return ("clear", None) if msg.get("action") == "clear" else None

    def echo(self, name: str) -> str:
        return json.dumps({"event": "websocket:notify", "payload": {"name": name}})

    def clear_answer(self) -> str:
        return json.dumps({"event": "websocket:cleared"})

    def dtmf_frame(self, digit: str) -> str:
        return json.dumps({"event": "websocket:dtmf", "digit": digit, "duration": 260})


class ExotelCaller(TwilioCaller):
    """Exotel's Voicebot applet (its "Working with the Stream and Voicebot Applet" page): Twilio's shape with
    snake-case ids, 16-bit PCM 8 kHz in ~100 ms messages, numbers as strings; marks echoed once played."""

    path = "/v1/exotel"
    bytes_per_second = 8000 * 2
    sample_bytes = 2
    frame_s = 0.1
    silence = bytes(1600)
    codec = "l16-8000"

    def opening(self, params: dict[str, str]) -> list[str]:
        return [json.dumps({"event": "connected"}), json.dumps({
            "event": "start", "sequence_number": "1", "stream_sid": self.stream_sid, "start": {
                "stream_sid": self.stream_sid, "call_sid": self.call_id, "account_sid": "exotel-account",
                "from": "09999999999", "to": "08047491899", "custom_parameters": params,
                "media_format": {"encoding": "raw/slin", "sample_rate": "8000", "bit_rate": "128kbps"}}})]

    def caller_frame(self, n: int, audio: bytes) -> str:
        return json.dumps({"event": "media", "sequence_number": str(n + 1), "stream_sid": self.stream_sid,
                           "media": {"chunk": str(n), "timestamp": str(n * 100),
                                     "payload": base64.b64encode(audio).decode()}})

    def echo(self, name: str) -> str:
        return json.dumps({"event": "mark", "sequence_number": "0", "stream_sid": self.stream_sid,
                           "mark": {"name": name}})

    def dtmf_frame(self, digit: str) -> str:
        return json.dumps({"event": "dtmf", "sequence_number": "0", "stream_sid": self.stream_sid,
                           "dtmf": {"duration": "1000", "digit": digit}})

    def stop_frame(self) -> str:
        return json.dumps({"event": "stop", "sequence_number": "0", "stream_sid": self.stream_sid,
                           "stop": {"call_sid": self.call_id, "account_sid": "exotel-account", "reason": "callended"}})


class FreeSwitchStream(PlayingStack):
    """mod_audio_stream started with ``uuid_audio_stream <uuid> start <url> mono 8k``: binary 20 ms frames of L16
    (little-endian) at 8 kHz; no opening frame (the call, its rate and key are in the URL it dials). It plays each
    ``streamAudio`` message (a file, played by the dialplan's listener) in turn; there are no marks and no clear."""

    path = "/v1/freeswitch"
    has_clear = False
    rate = 8000
    bytes_per_second = 8000 * 2
    sample_bytes = 2
    codec = "slin"
    silence = bytes(320)

    @classmethod
    def target(cls, call_id: str, params: dict[str, str]) -> str:
        return cls.path + "?" + urlencode({"call": call_id, "rate": f"{cls.rate // 1000}k", **params})

    def opening(self, params: dict[str, str]) -> list[str]:
        return []

    def caller_frame(self, n: int, audio: bytes) -> bytes:
        return audio

    def heard(self, frame: str | bytes) -> Heard:
        msg = json.loads(frame)
        data = msg.get("data", {}) if msg.get("type") == "streamAudio" else {}
        if data.get("audioDataType") != "raw" or data.get("sampleRate") != self.rate:
            raise ValueError(f"mod_audio_stream cannot play {frame[:200]!r} on a {self.rate} Hz stream")
        return "media", base64.b64decode(data["audioData"])


class FreeSwitchStream16(FreeSwitchStream):
    """``... mono 16k``."""

    rate = 16000
    bytes_per_second = 16000 * 2
    codec = "slin16"
    silence = bytes(640)


STACKS: dict[str, type[PlayingStack]] = {"twilio": TwilioCaller, "telnyx": TelnyxCaller, "asterisk": AsteriskChannel,
                                         "signalwire": SignalWireCaller, "plivo": PlivoCaller,
                                         "vonage": VonageCaller, "exotel": ExotelCaller,
                                         "freeswitch": FreeSwitchStream, "freeswitch16": FreeSwitchStream16}


async def connect_call(url: str, stack: str, call_id: str, headers: dict[str, str] | None = None,
                       query: str = "", **params: str) -> PlayingStack:
    """A call from ``stack`` (a name in STACKS) to the gateway at ``url`` (http://HOST:PORT), started; ``query``:
    what follows the path (``?key=...``) in the URL the stack dials."""
    kind = STACKS[stack]
    target = kind.target(call_id, params)
    ws = await connect(url.replace("http", "ws", 1) + target + (query.replace("?", "&", 1) if "?" in target else query),
                       additional_headers=headers or {},
                       max_size=None, subprotocols=kind.subprotocols)
    caller = kind(ws, call_id)
    await caller.start(**params)
    return caller
