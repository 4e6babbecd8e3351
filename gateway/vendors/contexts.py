"""Many contexts on one WebSocket, each context one of our sessions (gateway/sessions/session.py): what the hosted-TTS
dialects' sockets share (ElevenLabs' stream-input sockets, Cartesia's), so that each vendor's endpoint keeps only its
translator's commands and its replies.

``ContextSocket`` sends JSON replies in order (stall-watched, counted for playout), opens a context's session, ends
it (its session closed off the caller's task), lets a drain go once every context is quiet, and closes what is left.
``ContextSink`` is the playout accounting every context's sink has. ``serve`` races the socket's reader against its
idle clock, a stalled client, a drain and the vendor's own end, and says which came first.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from starlette.websockets import WebSocket

from gateway.guard.auth import tenant_of
from gateway.guard.silent_sockets import IdleClock, until_idle
from gateway.playout import Outbound, SentAudio, WrittenAudio
from gateway.sessions.session import Session
from gateway.shared_state import GatewayState
from gateway.sink import AudioSink
from gateway.websocket import STALLED_CLOSE_CODE, SendWatch, until_stalled

log = logging.getLogger("chatterbox_fast.gateway")
POLICY_VIOLATION = 1008  # the vendors' close code for a refused request (and for a socket idle past its timeout)


class ContextSink(AudioSink):
    """A context's sink: what of its audio was sent, and what the client has taken of it (of the socket's bytes)."""

    def __init__(self, socket: "ContextSocket") -> None:
        self.socket = socket
        self._sent = SentAudio()
        self._taken = WrittenAudio(socket.outbound)

    def restart(self) -> None:
        """A new utterance's audio begins."""
        self._sent.reset()
        self._taken.reset()

    def counted(self, seconds: float) -> None:
        """``seconds`` of audio went out in the reply just sent."""
        self._sent.sent(seconds)
        self._taken.wrote(seconds)

    def played_seconds(self) -> float:
        return self._sent.taken()

    def taken_seconds(self) -> float:
        """What the client has taken: what was sent, less what still waits in the connection's buffers."""
        return self._taken.taken()


@dataclass(eq=False)
class Context:
    """One context: its id and session. An id may be used again once ended: a new context, not this one."""

    id: str | None
    sink: ContextSink
    session: Session | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)


class ContextSocket:
    """One client socket: its contexts and the order of what is sent on it. ``transport``: its sessions' label in
    the metrics (the dialect)."""

    def __init__(self, ws: WebSocket, state: GatewayState, idle: IdleClock, transport: str) -> None:
        self.ws, self.state, self.idle, self.transport = ws, state, idle, transport  # idle: touched in and out
        idle.busy = self.speaking  # and never idle while a context speaks: its client waits on us
        self.contexts: dict[str | None, Context] = {}  # by id: the context now taking that id's messages
        self.live: set[Context] = set()  # every context not yet ended (an id used again may leave one finishing)
        self._watch = SendWatch(state.settings.stall_timeout_s)
        self.outbound = Outbound(ws.scope)  # what its client has taken of the bytes sent to it
        self._ending: set[asyncio.Task[None]] = set()  # sessions being closed after their context ended

    def speaking(self) -> bool:
        """Whether any context has a turn queued or playing."""
        return any(entry.session is not None and entry.session.speaking for entry in self.live)

    async def send(self, reply: dict[str, Any]) -> None:
        text = json.dumps(reply, separators=(",", ":"), ensure_ascii=False)  # as send_json, its size known
        with self._watch.sending():
            await self.ws.send_text(text)
        self.outbound.wrote(len(text.encode()))
        self.idle.touch()

    def stalled(self, now: float) -> bool:
        """Whether a send has waited for the client longer than the stall timeout, or what was sent has (bytes wait
        in the connection's buffers and the client has taken none of them for that long: ``Outbound``)."""
        return self._watch.stalled(now) or self.outbound.stalled(now, self.state.settings.stall_timeout_s)

    async def open(self, entry: Context, voice: str, on_event: Callable[[Context, dict[str, Any]], Awaitable[None]]
                   ) -> None:
        """``entry``'s session opened (raises ``SessionLimitReached``: nothing kept) and the context live."""

        async def events(event: dict[str, Any]) -> None:
            await on_event(entry, event)

        entry.session = Session(self.state, entry.sink, events, transport=self.transport, voice=voice,
                                tenant=tenant_of(self.ws))
        await entry.session.open()
        self.contexts[entry.id] = entry
        self.live.add(entry)

    def end(self, entry: Context) -> bool:
        """``entry`` is over: its id free, its session closed (in a task of its own: not from its own player's
        task). False when it had ended already."""
        if self.contexts.get(entry.id) is entry:
            del self.contexts[entry.id]
        if entry.finished.is_set():
            return False
        entry.finished.set()
        self.live.discard(entry)
        if entry.session is not None:
            task = asyncio.get_running_loop().create_task(entry.session.close())
            self._ending.add(task)
            task.add_done_callback(self._ending.discard)
        return True

    async def released(self) -> None:
        """Returns once a drain lets this socket go: each of its contexts has nothing left to say (or the grace is
        over)."""
        await self.state.drain.begun.wait()
        while pending := list(self.live):
            await asyncio.gather(*(entry.session.released() for entry in pending if entry.session is not None))
            if self.live <= set(pending):  # none opened meanwhile
                return

    async def close(self) -> None:
        for entry in list(self.live):
            entry.finished.set()
            if entry.session is not None:
                await entry.session.close()
        self.live.clear()
        self.contexts.clear()
        await asyncio.gather(*self._ending, return_exceptions=True)


class Ended(enum.Enum):
    """What ended a socket's ``serve``."""

    CLIENT = "client"  # the reader returned: the client went away (or closed)
    FINISHED = "finished"  # the vendor's own end (its ``finished`` event)
    IDLE = "idle"  # silent past its idle timeout: closed here with a policy violation
    STALLED = "stalled"  # not reading: closed here with STALLED_CLOSE_CODE
    DRAINING = "draining"  # a drain let it go: the vendor says so and closes


async def serve(socket: ContextSocket, reading: Awaitable[None], finished: asyncio.Event | None = None) -> Ended:
    """Race ``reading`` (the vendor's loop over the client's frames) against the idle clock, a stalled client, a
    drain and ``finished``; then every context is closed. An exception from ``reading`` is raised (after the
    contexts are closed). An idle or stalled socket is closed here; the rest the vendor closes as its dialect says."""
    ws, settings = socket.ws, socket.state.settings
    receiving = asyncio.ensure_future(reading)
    tasks = {Ended.IDLE: asyncio.create_task(until_idle(socket.idle)),  # in the order they are told, when several
             Ended.STALLED: asyncio.create_task(until_stalled(socket)),
             Ended.FINISHED: asyncio.create_task(finished.wait() if finished is not None else asyncio.Event().wait()),
             Ended.DRAINING: asyncio.create_task(socket.released())}
    try:
        await asyncio.wait({receiving, *tasks.values()}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (receiving, *tasks.values()):
            task.cancel()
        await socket.close()
    if receiving.done() and not receiving.cancelled() and (exc := receiving.exception()) is not None:
        raise exc
    ended = next((why for why, task in tasks.items() if task.done() and not task.cancelled()), Ended.CLIENT)
    if ended is Ended.IDLE:
        log.info("%s socket closed: %s", socket.transport, socket.idle.reason)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ws.close(POLICY_VIOLATION, socket.idle.reason), 1.0)
    elif ended is Ended.STALLED:
        reason = f"not reading: no audio taken for {settings.stall_timeout_s:g} s"
        log.info("%s socket closed: %s", socket.transport, reason)
        with contextlib.suppress(Exception):  # the close frame may never get through to a client that reads nothing
            await asyncio.wait_for(ws.close(STALLED_CLOSE_CODE, reason), 1.0)
    elif ended is Ended.DRAINING:
        log.info("%s socket closed: draining", socket.transport)
    return ended
