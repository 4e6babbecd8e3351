"""Drains carried out: the asyncio side of gateway/host/drain.py, and uvicorn's server with the signals that start one.

SIGTERM (and ``POST /v1/admin/drain``) drains in place, SIGUSR2 hands the port over (what ``serve --processes N``
sends the process it replaces), and so does SIGHUP unless there is a keys file: then SIGHUP reads it again
(gateway/guard/tenancy.py) and nothing else; SIGINT still stops at once. Once a
drain begins, each session whose client can reconnect (a WebSocket's, a WebRTC peer's with a data channel) is let go
as soon as it has nothing left to say: a ``closing`` event where its protocol has events, then close code 1012 (or the
peer connection closed). Calls that cannot move (phone media streams, bridges' WebRTC peers), HTTP streams and Wyoming
syntheses go on until they end. When none is left, or at the end of the grace (the rest then closed the same way), the
server exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from types import FrameType
from typing import Any, Awaitable, Callable, Iterator

import uvicorn

from gateway.host.drain import CLOSING, Drain
from gateway.sessions.registry import SessionRegistry

log = logging.getLogger("chatterbox_fast.gateway")
CLOSE_WAIT_S = 1.0  # past the grace: how long the sessions let go then get to send their close frames
# After closing its listening socket a drain waits this long (a handover before it may end, one in place while any
# connection is open): a connection accepted just before has sent its request by then, and its session (or stream) is
# registered and waited for, or it is refused, not cut unanswered by the exit.
HANDOVER_LINGER_S = 1.0


class Draining:
    def __init__(self, rules: Drain) -> None:
        self.rules = rules
        self.begun = asyncio.Event()  # a drain has begun
        self.overdue = asyncio.Event()  # its grace is over: every session is let go
        self.server: Any = None  # the uvicorn server running the app (DrainingServer), when there is one
        self.listeners: list[asyncio.Server] = []  # the app's other listening sockets (Wyoming), closed on a handover
        self.reload_keys: Callable[[str], Awaitable[bool]] | None = None  # with a keys file: what SIGHUP does
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sessions: SessionRegistry | None = None
        self._close_calls: Callable[[str], Awaitable[None]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._reloads: set[asyncio.Future[bool]] = set()

    def attach(self, sessions: SessionRegistry, close_calls: Callable[[str], Awaitable[None]]) -> None:
        """At the app's start-up, in its loop: what a drain waits for, and what closes the calls left at its end."""
        self._loop, self._sessions, self._close_calls = asyncio.get_running_loop(), sessions, close_calls

    def detach(self) -> None:
        """At the app's shutdown: a drain still under way (SIGINT came) stops."""
        if self._task is not None:
            self._task.cancel()
        self._loop = None

    @property
    def listening(self) -> bool:
        """Whether this process takes connections on its port (what a rolling restart waits for in a new process)."""
        return bool(self.server is not None and self.server.started) and not self.rules.handover

    def request(self, handover: bool = False) -> None:
        """Begin a drain (safe in a signal handler). Before the app has started there is nothing to drain: the server
        stops."""
        if self._loop is None:
            if self.server is not None:
                self.server.should_exit = True
            return
        self._loop.call_soon_threadsafe(self._begin, handover)

    def hangup(self) -> None:
        """SIGHUP (safe in a signal handler): the keys file read again when there is one, else a handover."""
        if self.reload_keys is None or self._loop is None:
            self.request(handover=True)
            return
        reload = self.reload_keys
        self._loop.call_soon_threadsafe(lambda: self._keep(asyncio.ensure_future(reload("SIGHUP"))))

    def _keep(self, task: asyncio.Future[bool]) -> None:
        self._reloads.add(task)
        task.add_done_callback(self._reloads.discard)

    def _begin(self, handover: bool) -> None:
        if self.rules.begin(time.monotonic(), handover):
            self._task = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        sessions, rules = self._sessions, self.rules
        assert sessions is not None and self._close_calls is not None
        log.info("draining (%s): %d sessions, for at most %g s", "the port handed over" if rules.handover else
                    "new sessions refused", len(sessions), rules.grace_s)
        if rules.handover:
            self._stop_listening()
        self.begun.set()
        if rules.handover:
            await asyncio.sleep(HANDOVER_LINGER_S)
        if not await _within(sessions.until_empty(), rules.left(time.monotonic())):
            log.warning("drain: the grace is over; closing the %d sessions left (1012)", len(sessions))
            self.overdue.set()
            await self._close_calls(CLOSING)
            await _within(sessions.until_empty(), CLOSE_WAIT_S)
        log.info("drained")
        if not rules.handover:  # the port was kept: a connection accepted in its last moment gets its answer (a
            self._stop_listening()  # refusal) rather than being closed unanswered by the exit
            await _within(self._until_unconnected(), HANDOVER_LINGER_S)
        if self.server is not None:
            self.server.should_exit = True

    def _stop_listening(self) -> None:
        """Close every listening socket: new connections go to the other processes on the port (or are refused)."""
        for listener in [*(self.server.servers if self.server is not None else ()), *self.listeners]:
            listener.close()

    async def _until_unconnected(self) -> None:
        """Until uvicorn holds no connection (none open, or none accepted whose request is still to come)."""
        while self.server is not None and self.server.server_state.connections:
            await asyncio.sleep(0.05)

    async def until_released(self, idle: asyncio.Event) -> None:
        """Returns once a drain lets a session go: when ``idle`` is set (it has nothing left to say), or at the end
        of the grace."""
        await self.begun.wait()
        waits = [asyncio.create_task(idle.wait()), asyncio.create_task(self.overdue.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()


async def _within(awaitable: Awaitable[None], seconds: float | None) -> bool:
    """Whether ``awaitable`` finished within ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            await awaitable
        return True
    except TimeoutError:
        return False


class DrainingServer(uvicorn.Server):
    """uvicorn's server whose SIGTERM drains in place and SIGUSR2 hands the port over (SIGHUP too, but with a keys
    file SIGHUP reloads it); SIGINT stops at once. A second SIGTERM changes nothing: the first drain's deadline
    stands. ``interrupted``: a SIGINT stopped it (uvicorn raises it again once it has stopped, but a process started
    with SIGINT ignored, as a non-interactive shell's background job is, ignores that too: exit 0, not Ctrl-C's 130)."""

    def __init__(self, config: uvicorn.Config, draining: Draining) -> None:
        super().__init__(config)
        self.draining = draining
        self.interrupted = False
        draining.server = self

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM:
            self.draining.request()
        else:
            self.interrupted = self.interrupted or sig == signal.SIGINT
            super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = signal.signal(signal.SIGHUP, lambda *_: self.draining.hangup())
        previous_usr2 = signal.signal(signal.SIGUSR2, lambda *_: self.draining.request(handover=True))
        try:
            with super().capture_signals():
                yield
        finally:
            signal.signal(signal.SIGHUP, previous)
            signal.signal(signal.SIGUSR2, previous_usr2)
