"""A session an agent drives from another connection (a WebRTC call, a phone call over a media-stream WebSocket):
inputs in one at a time from wherever they come, events out to the attached controller, and the directory where a
controller finds the call by its id, waiting for one that has not arrived yet. The rules: gateway/session_control.py;
the controller's socket and HTTP routes: gateway/webrtc/control.py.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import TYPE_CHECKING, Any, Iterator

from gateway.session_control import CANCEL, REPLACED_CLOSE_CODE, ControlSeat, Controller, is_answer

if TYPE_CHECKING:
    from gateway.session import Session


class DrivenSession:
    """``session`` and its controller seat. Subclasses set ``session`` and ``codec``, and route every session event
    through ``to_controller``."""

    session: Session
    codec: str = ""

    def __init__(self) -> None:
        self.seat = ControlSeat()
        self._feeding = asyncio.Lock()  # one input at a time, whichever way it came
        self._answers: list[dict[str, Any]] | None = None  # what the input being fed was answered, while collected

    @property
    def id(self) -> str:
        return self.session.id

    def to_controller(self, event: dict[str, Any]) -> None:
        """To the controller, if one is attached (and to the answers of the input being fed)."""
        if self._answers is not None and is_answer(event):
            self._answers.append(event)
        if (controller := self.seat.current) is not None:
            controller.send(event)

    async def feed(self, raw: str | bytes) -> list[dict[str, Any]]:
        """One client message into the session, after any other input's; returns the events that answered it
        (refusals, ``cancelled``), which also went to the controller."""
        async with self._feeding:
            self._answers = answers = []
            try:
                await self.session.handle_text(raw)
            finally:
                self._answers = None
        return answers

    async def attach(self, controller: Controller) -> None:
        """``controller`` drives the session from now on; one attached before is told and let go (it takes over)."""
        previous = self.seat.attach(controller)
        if previous is not None:
            previous.end("another controller attached to this session", code=REPLACED_CLOSE_CODE)
        ready = self.session.core.greeting(self.session.state.engine.ready)[0].event
        controller.send({**ready, "codec": self.codec})

    async def detach(self, controller: Controller) -> None:
        """The controller went away: if it was the one driving, its speech stops (the call keeps its silence)."""
        if self.seat.detach(controller) and not self.session.core.closed and self.session.core.queued:
            await self.feed(CANCEL)

    async def close(self, reason: str) -> None:
        """End the call and its session (once)."""
        raise NotImplementedError

    async def release(self, reason: str) -> None:
        """The call is over: the controller hears ``cancelled`` for each utterance under way, then ``ended`` with
        ``reason``. Before ``session.close()``."""
        controller = self.seat.current
        if controller is not None and self.session.core.queued:
            await self.feed(CANCEL)
        if controller is not None:
            controller.end(reason)


class CallDirectory:
    """The live phone calls by id; a controller may ask for one before its media stream has arrived."""

    def __init__(self) -> None:
        self._calls: dict[str, DrivenSession] = {}
        self._arrived = asyncio.Condition()

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Iterator[DrivenSession]:
        return iter(list(self._calls.values()))

    def get(self, call_id: str) -> DrivenSession | None:
        return next((call for known, call in self._calls.items()
                     if hmac.compare_digest(known.encode(), call_id.encode())), None)

    async def add(self, call: DrivenSession) -> bool:
        """List ``call``; False when a call with its id is live already."""
        if call.id in self._calls:
            return False
        self._calls[call.id] = call
        async with self._arrived:
            self._arrived.notify_all()
        return True

    def remove(self, call: DrivenSession) -> None:
        if self._calls.get(call.id) is call:
            del self._calls[call.id]

    async def wait_for(self, call_id: str, timeout: float) -> DrivenSession | None:
        """The call with this id, waiting up to ``timeout`` seconds for it to arrive."""
        async with self._arrived:
            try:
                await asyncio.wait_for(self._arrived.wait_for(lambda: self.get(call_id) is not None), timeout)
            except TimeoutError:
                return None
        return self.get(call_id)
