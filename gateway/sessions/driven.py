"""A session an agent drives from another connection (a WebRTC call, a phone call over a media-stream WebSocket):
inputs in one at a time from wherever they come, events out to the attached controller, and the directory where a
controller finds the call by its id, waiting for one that has not arrived yet. The rules: gateway/sessions/control.py;
the controller's socket and HTTP routes: gateway/webrtc/control.py.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Iterator

from engine.protocol import ProtocolError
from gateway.guard.client_input import BadInput, load_json
from gateway.listen import messages as caller_messages
from gateway.listen.barge_in import MODES, Act
from gateway.listen.caller import CallerSide
from gateway.listen.tick import ticker as vad_ticker
from gateway.sessions.control import CANCEL, REPLACED_CLOSE_CODE, ControlSeat, Controller, is_answer

if TYPE_CHECKING:
    from gateway.sessions.session import Session

NO_CALLER = "no audio reaches this session from its caller (a WebRTC peer that sends none, or WHEP)"


class DrivenSession:
    """``session`` and its controller seat. Subclasses set ``session`` and ``codec``, and route every session event
    through ``to_controller``; one whose caller's audio reaches the gateway sets ``caller`` (``open_caller``) and
    hands each frame to ``hear``."""

    session: Session
    codec: str = ""
    caller: CallerSide | None = None

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

    async def send_event(self, event: dict[str, Any]) -> None:
        """A session event out (the controller; a WebRTC peer's data channel too)."""
        self.to_controller(event)

    def open_caller(self, encoding: str, rate: int, mode: str | None = None, cancel_echo: bool = True,
                    echo_delay_moves: bool = False) -> CallerSide:
        """The caller's audio, ``encoding`` at ``rate``, reaches this session; ``mode``: its barge-in, where the call
        set one (a <Parameter>), else the server's; ``cancel_echo``: where the server's echo canceller is on, it
        runs on this call; ``echo_delay_moves``: the peer plays what it gets after a jitter buffer of its own that
        moves the echo's delay during the call (a WebRTC peer: gateway/listen/aec.py's ``guard_leaks``)."""
        settings, metrics = self.session.state.settings, self.session.state.metrics
        self.caller = CallerSide(encoding, rate, settings.vad, mode if mode in MODES else settings.barge_in,
                                 lambda: bool(self.session.core.queued), metrics.caller_audio,
                                 cancel_echo=settings.echo_canceller and cancel_echo, echo_guard=settings.echo_guard,
                                 echo_delay_moves=echo_delay_moves)
        return self.caller

    async def hear(self, audio: bytes, timestamp_ms: float | None) -> None:
        """One frame of the caller's audio, as received: to a listening controller, through the VAD (with
        ``--vad-batch``, its windows heard with every other call's due in the same pass: gateway/listen/tick.py);
        barge-in."""
        if self.caller is None:
            return
        if self.session.state.settings.vad_batch:
            heard = await vad_ticker().hear(self.caller, audio, timestamp_ms)
        else:
            heard = self.caller.hear(audio, timestamp_ms)
        for out in heard:
            if isinstance(out, Act):
                await self._barge_in(out)
            else:
                await self.send_event(out)
        if self.caller.feed is not None and (controller := self.seat.current) is not None:
            controller.caller_audio(self.caller.feed)

    async def _barge_in(self, act: Act) -> None:
        """Carry out what the caller's speech does to the gateway's."""
        self.session.state.metrics.barge_ins.labels(self.session.transport, act.value).inc()
        self.session.trace_event("barge_in", act=act.value)
        if act is Act.INTERRUPT:
            answers = await self.feed(CANCEL)
            cutoffs = [{k: v for k, v in event.items() if k != "type"} for event in answers
                       if event["type"] == "cancelled" and event["utterance"]]
            assert self.caller is not None  # only the caller's audio barges in
            onset = self.caller.onset_ms or 0.0
            reaction = self.caller.since(onset, time.monotonic())
            await self.send_event({"type": "interrupted", "timestamp": round(onset, 1),
                                   "reaction_ms": round(reaction), "utterances": cutoffs})
        else:
            await self.session.sink.hold(act is Act.PAUSE)
            await self.send_event({"type": "paused" if act is Act.PAUSE else "resumed"})

    async def feed(self, raw: str | bytes) -> list[dict[str, Any]]:
        """One client message into the session, after any other input's; returns the events that answered it
        (refusals, ``cancelled``), which also went to the controller."""
        if (message := _caller_message(raw)) is not None:
            answer, act = self._caller_input(message)
            await self.send_event(answer)
            if act is not None:
                await self._barge_in(act)  # a mode change that ends a pause under way resumes it
            return [answer]
        async with self._feeding:
            self._answers = answers = []
            try:
                await self.session.handle_text(raw)
            finally:
                self._answers = None
        return answers

    def _caller_input(self, message: dict[str, Any]) -> tuple[dict[str, Any], Act | None]:
        """``listen`` or ``barge_in``: what answers it, and what it does to speech under way."""
        try:
            parsed = caller_messages.parse(message)
            if self.caller is None:
                raise ProtocolError(NO_CALLER, "no_caller_audio")
            if isinstance(parsed, caller_messages.Listen):
                controller = self.seat.current
                if controller is None and parsed.format != "off":
                    raise ProtocolError("'listen' comes from a controller socket (WS /v1/stream?session=)",
                                        "no_controller")
                start = self.caller.listen(parsed.format, parsed.aec)
                if controller is not None:
                    controller.caller_audio(self.caller.feed)
                return start or {"type": "caller_audio_stopped"}, None
            self.caller.configure(caller_messages.configured(self.caller.vad_config, parsed.vad))
            act = self.caller.barge.set_mode(parsed.mode) if parsed.mode is not None else None
            return {"type": "barge_in", "mode": self.caller.barge.mode, **asdict(self.caller.vad_config)}, act
        except ProtocolError as exc:
            return {"type": "error", "code": exc.code, "message": str(exc)}, None

    async def attach(self, controller: Controller) -> None:
        """``controller`` drives the session from now on; one attached before is told and let go (it takes over)."""
        previous = self.seat.attach(controller)
        if self.caller is not None:
            self.caller.listen("off")  # the caller's audio goes to a controller that asks for it
        if previous is not None:
            previous.end("another controller attached to this session", code=REPLACED_CLOSE_CODE)
        ready = self.session.core.greeting(self.session.state.engine.ready)[0].event
        controller.send({**ready, "codec": self.codec})

    async def detach(self, controller: Controller) -> None:
        """The controller went away: if it was the one driving, its speech stops (the call keeps its silence)."""
        if not self.seat.detach(controller):
            return
        if self.caller is not None:
            self.caller.listen("off")
        if not self.session.core.closed and self.session.core.queued:
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


def _caller_message(raw: str | bytes) -> dict[str, Any] | None:
    """``raw`` when it is a ``listen`` or ``barge_in`` message (else the session's own parser answers it)."""
    if not isinstance(raw, str) or not any(f'"{kind}"' in raw for kind in caller_messages.TYPES):
        return None
    try:
        message = load_json(raw)
    except BadInput:
        return None
    return message if isinstance(message, dict) and message.get("type") in caller_messages.TYPES else None


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
