"""The Wyoming TTS server (``--wyoming-port``): a TCP listener beside the HTTP one. Each connection is a
``translate.Conversation``; its utterances go straight to the engine, one at a time, as an HTTP speech request's do
(no session), and their audio goes out as ``audio-chunk`` events of at most ``CHUNK_S`` as chunks are made.

The engine is told what the client has taken of that audio (what was written less what waits in the connection's
buffers and the kernel's send queue: gateway/playout.py), so it generates no more than serve --client-lead past it,
and a connection whose client takes nothing of what waits for it for the stall timeout is closed.

Wyoming has no authentication: with API keys set the port listens on loopback unless ``--wyoming-host`` says
otherwise (``listen_host``). A connection that shows nothing for the idle timeout is closed (never while a
synthesis for it is under way: under load its first audio can take longer), and one that has sent no event yet
holds a place among the connections not yet authenticated (gateway/guard/silent_sockets.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from importlib.metadata import PackageNotFoundError, version

from engine.protocol import ProtocolError
from gateway.engine_link.client import EngineRequestError, EngineUnavailable
from gateway.engine_link.failover import FailoverUtterance
from gateway.playout import Outbound, WrittenAudio, report_playout
from gateway.sessions.registry import SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.guard.silent_sockets import Admission, IdleClock, until_idle
from gateway.host.protocols import close_stream
from gateway.traces import utterance_span
from gateway.utterance_stream import MetricsLabel, UtteranceStats, chunks
from gateway.websocket import until_stalled
from gateway.wyoming import translate
from gateway.wyoming.translate import RATE, WIDTH, Cancel, Describe, Finish, Reply, Say, Start
from gateway.wyoming.wire import Event, EventReader, encode

log = logging.getLogger("chatterbox_fast.gateway")
CHUNK_S = 0.1  # audio per audio-chunk event at most
READ_BYTES = 64 * 1024
LINGER_S = 1.0  # a connection refused mid-way: how long its client's last bytes are read and dropped
TRANSPORT = "wyoming"


def listen_host(host: str, wyoming_host: str | None, guarded: bool) -> str:
    """Where the Wyoming port listens: ``wyoming_host`` if given; else loopback when API keys guard the HTTP port
    (Wyoming cannot ask for one), else the HTTP port's host."""
    if wyoming_host:
        return wyoming_host
    return "127.0.0.1" if guarded else host


def _version() -> str:
    try:
        return version("chatterbox-fast")
    except PackageNotFoundError:
        return "dev"


class _Connection:
    """One client: its conversation, the synthesis under way, the order of what is written to it."""

    def __init__(self, state: GatewayState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.state, self.reader, self.writer = state, reader, writer
        self.conversation = translate.Conversation(state.settings.max_text_chars)
        self.outbound = Outbound.on(writer.transport)
        self._writing = asyncio.Lock()
        self._speaking: asyncio.Task[None] | None = None
        self.idle = IdleClock(state.settings.idle_timeout_s, busy=self.speaking)
        self._texts: asyncio.Queue[str | None] = asyncio.Queue()  # a stream's text; None: its end
        self._ended = False  # our side ended (``close_gently``): nothing more is written

    def speaking(self) -> bool:
        """Whether a synthesis is under way for this client."""
        return self._speaking is not None and not self._speaking.done()

    async def send(self, event: Event) -> None:
        """``ConnectionResetError`` once our side has ended or the connection is closing (asyncio's writer would
        raise ``RuntimeError`` after ``write_eof``), so a synthesis still writing ends like one whose client went."""
        async with self._writing:
            if self._ended or self.writer.is_closing():
                raise ConnectionResetError("the connection is closing")
            data = encode(event)
            self.writer.write(data)
            self.outbound.wrote(len(data))
            await self.writer.drain()
        self.idle.touch()

    def stalled(self, now: float) -> bool:
        """Whether what was written has waited for the client, none of it taken, for the stall timeout."""
        return self.outbound.stalled(now, self.state.settings.stall_timeout_s)

    @property
    def stall_reason(self) -> str:
        return f"not reading: no audio taken for {self.state.settings.stall_timeout_s:g} s"

    async def close_gently(self, last: Event) -> None:
        """``last`` (an error), then the end of our side and of the synthesis under way (no audio after ``last``),
        then drop what the client still sends for a moment: closing with its bytes unread would reset the
        connection, and the client could lose ``last``."""
        async with self._writing:  # after any event being written, never inside one
            self.writer.write(encode(last))
            await self.writer.drain()
            self._ended = True
            self.writer.write_eof()
        await self.stop()
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(LINGER_S):
                while await self.reader.read(READ_BYTES):
                    pass

    async def read(self, waiting: Admission) -> None:
        """The client's events until it goes; ``ProtocolError`` for a stream that cannot be read on."""
        events = EventReader()
        while data := await self.reader.read(READ_BYTES):
            self.idle.touch()
            for event in events.feed(data):
                waiting.leave()
                for command in self.conversation.receive(event):
                    await self._run(command)

    async def _run(self, command: translate.Command) -> None:
        match command:
            case Reply(event=event):
                await self.send(event)
            case Describe():
                try:
                    voices = [v["name"] for v in await self.state.engine.list_voices()]
                except (EngineUnavailable, EngineRequestError) as exc:
                    await self.send(translate.error(exc.code, str(exc)).event)
                    return
                await self.send(translate.info(voices, _version()))
            case Start(voice=voice, text=text):
                self._texts = asyncio.Queue()
                if text is not None:
                    self._texts.put_nowait(text)
                    self._texts.put_nowait(None)
                self._speaking = asyncio.create_task(self._speak(voice, self._texts))
            case Say(text=text):
                self._texts.put_nowait(text)
            case Finish():
                self._texts.put_nowait(None)
            case Cancel():
                await self.stop()

    async def _speak(self, voice: str, texts: asyncio.Queue[str | None]) -> None:
        token = object()
        try:
            self.state.sessions.add(token, TRANSPORT)
        except SessionLimitReached as exc:
            await self._after(self.conversation.failed(exc.code, str(exc)))
            return
        utterance: FailoverUtterance | None = None
        tasks: list[asyncio.Task[None]] = []
        sent, at, started = WrittenAudio(self.outbound), 0, False
        try:
            utterance = await self.state.engine.start(voice, span=utterance_span(self.state.traces, TRANSPORT, voice))
            tasks = [asyncio.create_task(_feed(utterance, texts)),
                     asyncio.create_task(report_playout(utterance, sent.taken))]
            step = int(RATE * CHUNK_S) * WIDTH
            async for chunk in chunks(utterance, UtteranceStats(time.monotonic()),
                                      to=MetricsLabel(self.state.metrics, TRANSPORT)):
                if not started:
                    started = True
                    await self.send(translate.audio_start())
                for start in range(0, len(chunk.pcm), step):
                    piece = chunk.pcm[start:start + step]
                    await self.send(translate.audio_chunk(piece, at))
                    at += len(piece) // WIDTH
                    sent.wrote(len(piece) / WIDTH / RATE)
            if not started:
                await self.send(translate.audio_start())
            await self.send(translate.audio_stop(at))
            commands = self.conversation.spoken()
        except ConnectionError as exc:
            log.info("wyoming connection ended while an utterance was being written (%s); its synthesis stops", exc)
            return
        except (EngineUnavailable, EngineRequestError) as exc:
            self.state.metrics.errors.labels(exc.code).inc()
            commands = self.conversation.failed(exc.code, str(exc))
            if started:  # audio cut short: no audio-stop, so no client takes it for the whole; the connection ends
                log.warning("wyoming synthesis failed mid-way (%s: %s); closing the connection", exc.code, exc)
                with contextlib.suppress(ConnectionError):
                    await self.send(commands[0].event)
                self.writer.close()
                return
        finally:
            for task in tasks:
                task.cancel()
            self.state.sessions.remove(token)
            if utterance is not None:
                await utterance.cancel()  # a no-op once finished; stops the engine when the client went away
        await self._after(commands)

    async def _after(self, commands: list[translate.Command]) -> None:
        for command in commands:
            await self._run(command)

    async def stop(self) -> None:
        """The synthesis under way ends now (its engine work too)."""
        if self._speaking is not None:
            self._speaking.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await self._speaking
            self._speaking = None


async def _feed(utterance: FailoverUtterance, texts: asyncio.Queue[str | None]) -> None:
    with contextlib.suppress(EngineUnavailable):
        while (text := await texts.get()) is not None:
            await utterance.text(text)
        await utterance.end()


async def serve_connection(state: GatewayState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    state.wyoming_clients.add(writer)
    try:
        await _serve(state, reader, writer)
    finally:
        state.wyoming_clients.discard(writer)


async def _serve(state: GatewayState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    connection = _Connection(state, reader, writer)
    try:
        if (waiting := state.unauthenticated.enter()) is None:
            await connection.close_gently(translate.error("too_many_unauthenticated",
                                                          state.unauthenticated.full_message).event)
            return
        reading = asyncio.create_task(connection.read(waiting))
        idling = asyncio.create_task(until_idle(connection.idle))
        stalling = asyncio.create_task(until_stalled(connection))
        try:
            await asyncio.wait({reading, idling, stalling}, return_when=asyncio.FIRST_COMPLETED)
            if idling.done():
                log.info("wyoming connection closed: %s", connection.idle.reason)
            elif stalling.done():
                log.info("wyoming connection closed: %s", connection.stall_reason)
            elif isinstance(exc := reading.exception(), ProtocolError):
                log.info("wyoming connection closed: %s", exc)
                await connection.close_gently(translate.error("bad_event", str(exc)).event)
            elif exc is not None:
                raise exc
        finally:
            waiting.leave()
            reading.cancel()
            idling.cancel()
            stalling.cancel()
            await connection.stop()
    except ConnectionError:
        pass  # the client went away
    finally:
        await close_stream(writer)


async def start(state: GatewayState, sock: socket.socket) -> asyncio.Server:
    """Serve Wyoming on ``sock`` (bound by the CLI: a port in use is one sentence before anything starts)."""
    server = await asyncio.start_server(lambda r, w: serve_connection(state, r, w), sock=sock)
    host, port = sock.getsockname()[:2]
    log.info("wyoming tts on tcp://%s:%d", host, port)
    return server
