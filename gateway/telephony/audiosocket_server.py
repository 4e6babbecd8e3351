"""The AudioSocket server (``--audiosocket-port``): a TCP listener beside the HTTP one, each connection one Asterisk
call (gateway/telephony/audiosocket.py speaks the protocol), driven as a Twilio call is: the agent attaches with
``WS /v1/stream?session=<the call's UUID>``.

Who may call: an address in ``--audiosocket-allow`` (checked before anything is read) and/or a UUID tagged with
``--audiosocket-key`` (checked once the UUID and the first audio have come, before any audio is sent). A connection
that has not shown its call within ``START_TIMEOUT_S`` holds a place among the connections not yet authenticated
(gateway/guard/silent_sockets.py) until then; one silent for ``IDLE_S`` mid-call (a peer gone without a FIN) ends.
A frame that is not AudioSocket's ends its call with a hang-up frame and one log line; the server goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from dataclasses import dataclass

from engine.protocol import ProtocolError
from gateway.host.protocols import STUCK_CLOSE_S, close_stream
from gateway.listen.caller import FloodGuard
from gateway.shared_state import GatewayState
from gateway.telephony import audiosocket, events
from gateway.telephony.audiosocket import Audio, CallId, FrameReader, Opening
from gateway.telephony.call import PhoneCall, PhoneSink
from gateway.telephony.events import Dtmf, Stop
from gateway.websocket import until_stalled

log = logging.getLogger("chatterbox_fast.gateway")
START_TIMEOUT_S = 10.0  # the UUID and the first audio must have come by then
IDLE_S = 20.0  # Asterisk sends a frame every 20 ms: a call silent this long has lost its peer
READ_BYTES = 64 * 1024
DTMF_PER_S = 20  # digits past this rate (a flood) are dropped
TRANSPORT = "audiosocket"
CODECS = {8000: "slin", 16000: "slin16", 24000: "slin24", 32000: "slin32", 44100: "slin44", 48000: "slin48"}


@dataclass(frozen=True)
class Policy:
    """Who may call: a key the UUID must be tagged with, and/or the peer addresses allowed (none: any)."""

    key: str | None
    allow: tuple = ()

    @classmethod
    def of(cls, key: str | None, allow: tuple[str, ...]) -> "Policy":
        return cls(key, audiosocket.parse_networks(",".join(allow)))


class SocketCall(PhoneCall):
    """A call on a TCP connection: ``ended`` is set once it closes, from whichever side (the server's drain too)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.ended = asyncio.Event()
        self.reason = ""  # why it was closed, where the server closed it (a drain, the shutdown)

    async def close(self, reason: str) -> None:
        if not self.ended.is_set():
            self.reason = reason
        self.ended.set()
        await super().close(reason)


class _Connection:
    def __init__(self, state: GatewayState, policy: Policy, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.state, self.policy, self.reader, self.writer = state, policy, reader, writer
        peer = writer.get_extra_info("peername")
        self.peer = str(peer[0]) if isinstance(peer, tuple) else "?"
        self.frames = FrameReader()
        self.backlog: list[tuple[int, bytes]] = []  # frames read past the opening's

    async def send(self, frame: str | bytes) -> None:
        assert isinstance(frame, bytes)
        if self.writer.is_closing():
            raise ConnectionResetError("the connection is closing")
        self.writer.write(frame)
        await self.writer.drain()

    async def read_frames(self) -> list[tuple[int, bytes]]:
        """The next frames; EOFError once the peer has closed its side."""
        if self.backlog:
            frames, self.backlog = self.backlog, []
            return frames
        while True:
            data = await asyncio.wait_for(self.reader.read(READ_BYTES), IDLE_S)
            if not data:
                raise EOFError
            if frames := self.frames.feed(data):
                return frames

    async def opening(self) -> tuple[CallId, Audio]:
        """The call's UUID and first audio (ProtocolError, EOFError, TimeoutError)."""
        opening = Opening()
        async with asyncio.timeout(START_TIMEOUT_S):
            while True:
                frames = await self.read_frames()
                for n, (kind, payload) in enumerate(frames):
                    if (first := opening.feed(audiosocket.parse(kind, payload))) is not None:
                        self.backlog = frames[n + 1:]
                        assert opening.call is not None
                        return opening.call, first

    def refusal(self, call: CallId) -> str | None:
        if self.policy.key is not None:
            return audiosocket.key_refusal(self.policy.key, call.call_id, time.time())
        return None

    async def hang_up(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.write(audiosocket.frame(audiosocket.HANGUP))
            await asyncio.wait_for(self.writer.drain(), 1.0)


async def _serve(state: GatewayState, connection: _Connection) -> None:
    if connection.policy.allow and not audiosocket.peer_allowed(connection.policy.allow, connection.peer):
        log.info("audiosocket connection from %s refused: not in --audiosocket-allow", connection.peer)
        return
    if (waiting := state.unauthenticated.enter()) is None:
        log.info("audiosocket connection from %s refused: %s", connection.peer, state.unauthenticated.full_message)
        return
    try:
        call_id, first = await connection.opening()
    except (ProtocolError, EOFError, TimeoutError) as exc:
        reason = {EOFError: "it hung up or closed", TimeoutError: f"no UUID and audio within {START_TIMEOUT_S:g} s"}.get(
            type(exc), f"bad frame: {exc}")
        log.info("audiosocket connection from %s closed before its call: %s", connection.peer, reason)
        await connection.hang_up()
        return
    finally:
        waiting.leave()
    if (refusal := connection.refusal(call_id)) is not None:
        log.info("audiosocket call %s from %s refused: %s", call_id.call_id, connection.peer, refusal)
        await connection.hang_up()
        return
    await _run_call(state, connection, call_id, first)


async def _run_call(state: GatewayState, connection: _Connection, call_id: CallId, first: Audio) -> None:
    rate = first.rate
    sink = PhoneSink(audiosocket.Outbound(first.kind), connection.send, "pcm", rate, state.settings.stall_timeout_s,
                     round(rate * audiosocket.FRAME_S) * 2)
    call = SocketCall(state, call_id.call_id, TRANSPORT, sink, "default", CODECS[rate])
    sink.echo = call.open_caller("pcm", rate)
    if (refused := await call.open()) is not None:
        log.info("audiosocket call %s from %s refused: %s", call.id, connection.peer, refused[1])
        await connection.hang_up()
        return
    log.info("audiosocket call %s from %s started (%s)", call.id, connection.peer, CODECS[rate])
    await call.hear(first.pcm, None)
    receiving = asyncio.create_task(_receive(connection, call, first.kind))
    watching = asyncio.create_task(until_stalled(sink))
    ending = asyncio.create_task(call.ended.wait())
    reason = "the call was closed by the server"
    try:
        await asyncio.wait({receiving, watching, ending}, return_when=asyncio.FIRST_COMPLETED)
        if ending.done():
            reason = call.reason or reason
        elif watching.done():
            reason = "asterisk stopped reading"
        elif receiving.done() and not receiving.cancelled():
            reason = _outcome(receiving)
    finally:
        for task in (receiving, watching, ending):
            task.cancel()
        log.info("audiosocket call %s ended: %s", call.id, reason)
        await call.close(reason)
    if not reason.startswith(("the call ended", "asterisk reported", "the connection")):
        await connection.hang_up()  # our side ends it: Asterisk hangs up the channel


def _outcome(receiving: asyncio.Task[str]) -> str:
    exc = receiving.exception()
    if isinstance(exc, ProtocolError):
        return f"bad frame: {exc}"
    if isinstance(exc, (EOFError, ConnectionError)):
        return "the connection was dropped"
    if isinstance(exc, TimeoutError):
        return f"nothing from asterisk for {IDLE_S:g} s"
    if exc is not None:
        log.warning("an audiosocket call's frames broke off: %r", exc)
        return f"the stream broke off: {type(exc).__name__}"
    return receiving.result()


async def _receive(connection: _Connection, call: SocketCall, kind: int) -> str:
    """Asterisk's frames into the call until it hangs up; returns why the call ended (raises for a bad frame)."""
    digits = FloodGuard()
    while True:
        for frame_kind, payload in await connection.read_frames():
            match audiosocket.parse(frame_kind, payload):
                case Audio(kind=k, pcm=pcm) if k == kind:
                    await call.hear(pcm, None)
                case Audio(rate=rate):
                    raise events.bad(f"audio at {rate} Hz in a call at {call.sink.rate} Hz")
                case Dtmf(digit=digit):
                    if digits.admit(1 / DTMF_PER_S, time.monotonic()):
                        call.dtmf(digit)
                case Stop():
                    return "the call ended (hang-up)"
                case audiosocket.Failed(code=code):
                    return f"asterisk reported an error (code {code})"
                case CallId():
                    raise events.bad("a second UUID frame")


class AudioSocketServer:
    """The listener and its connections: ``close`` stops both."""

    def __init__(self, state: GatewayState, policy: Policy) -> None:
        self.state, self.policy = state, policy
        self.server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, sock: socket.socket) -> asyncio.Server:
        self.server = await asyncio.start_server(self._connected, sock=sock)
        host, port = sock.getsockname()[:2]
        log.info("asterisk audiosocket on tcp://%s:%d", host, port)
        return self.server

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        self.state.audiosocket_clients.add(writer)
        try:
            await _serve(self.state, _Connection(self.state, self.policy, reader, writer))
        except ConnectionError:
            pass  # the peer went away
        finally:
            self.state.audiosocket_clients.discard(writer)
            self._connections.discard(task)
            await close_stream(writer)

    async def close(self) -> None:
        """Stop listening; the calls are closed by the app's shutdown, then any connection left is ended."""
        if self.server is not None:
            self.server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(set(self._connections), timeout=STUCK_CLOSE_S)


def listen_refusal(host: str, key: str | None, allow: tuple[str, ...]) -> str | None:
    """Why the AudioSocket port may not listen on ``host`` (one sentence), None when it may: AudioSocket carries no
    credentials, so beyond loopback a key or an allow-list must say who may call."""
    from gateway.guard.operator_safety import loopback

    if loopback(host) or key or allow:
        return None
    return (f"--audiosocket-host {host} reaches beyond this machine and AudioSocket carries no credentials: set "
            "--audiosocket-key (CBF_AUDIOSOCKET_KEY) or --audiosocket-allow (CBF_AUDIOSOCKET_ALLOW), or listen on "
            "127.0.0.1")
