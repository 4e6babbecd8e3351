"""Driving a WebRTC session or a phone call from another connection: ``WS /v1/stream?session={id}`` and
``POST /v1/sessions/{id}/speak`` / ``/cancel`` (the rules: gateway/sessions/control.py, gateway/sessions/driven.py).

A controller socket takes the same client messages as ``/v1/stream`` and gets the session's events; its audio goes
out on the session's WebRTC track or media stream. With ``&wait=S`` a controller may attach before its phone call's
stream has arrived: it waits up to S seconds (at most ``MAX_WAIT_S``) for a call with that id. Events are queued for it and written by a task of its own, so a controller that
stops reading never holds up the call's audio: past ``MAX_QUEUED_EVENTS`` unread it is closed (code 4408); the caller's
audio it listens to is dropped instead, oldest first, and counted (gateway/listen/feed.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket

from gateway.guard.auth import accept_websocket
from gateway.http.body import body_field, json_body
from gateway.http.errors import ApiError
from gateway.listen.feed import CallerAudioFeed
from gateway.sessions.control import CANCEL, refusal_status
from gateway.shared_state import GatewayState
from gateway.sessions.driven import DrivenSession
from gateway.webrtc.signalling import find_peer
from gateway.websocket import STALLED_CLOSE_CODE, client_frames

log = logging.getLogger("chatterbox_fast.gateway")
MAX_QUEUED_EVENTS = 512
UNKNOWN_SESSION_CLOSE_CODE = 4404
MAX_WAIT_S = 30.0
UNKNOWN = "no live WebRTC session or phone call has this id"


def find_driven(state: GatewayState, session_id: str) -> DrivenSession | None:
    """The live WebRTC session or phone call with this id, if any."""
    return find_peer(state, session_id) or state.calls.get(session_id)


def _wait_seconds(raw: str | None) -> float:
    try:
        return min(max(float(raw or 0), 0.0), MAX_WAIT_S)
    except ValueError:
        return 0.0


class SocketController:
    """A controller's WebSocket as the session sees it (gateway.sessions.control.Controller): one writer task sends
    the queued events first, then the caller's audio it listens to (bounded in its feed, gateway/listen/feed.py)."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self._queue: deque[dict[str, Any] | tuple[int, str]] = deque()
        self._feed: CallerAudioFeed | None = None
        self._wake = asyncio.Event()
        self._writer = asyncio.create_task(self._write())
        self._ended = False

    def send(self, event: dict[str, Any]) -> None:
        if self._ended:
            return
        if len(self._queue) >= MAX_QUEUED_EVENTS:
            log.info("controller closed: not reading (%d events unread)", MAX_QUEUED_EVENTS)
            self.end(f"not reading: {MAX_QUEUED_EVENTS} events unread", STALLED_CLOSE_CODE)
            return
        self._put(event)

    def caller_audio(self, feed: CallerAudioFeed | None) -> None:
        self._feed = feed
        self._wake.set()

    def end(self, reason: str, code: int = 1000) -> None:
        """Send ``ended`` with ``reason`` after what is queued, then close the socket with ``code``."""
        if self._ended:
            return
        self._put({"type": "ended", "reason": reason})
        self._put((code, reason))
        self._ended = True

    def _put(self, item: dict[str, Any] | tuple[int, str]) -> None:
        self._queue.append(item)
        self._wake.set()

    def _next(self) -> dict[str, Any] | tuple[int, str] | None:
        if self._queue:
            return self._queue.popleft()
        return None if self._feed is None or self._ended else self._feed.take()

    async def _write(self) -> None:
        with contextlib.suppress(Exception):  # the socket went away: nothing more to say
            while True:
                self._wake.clear()  # before looking: what is put while this sends wakes the next round
                while (item := self._next()) is not None:
                    if isinstance(item, tuple):
                        await self.ws.close(*item)
                        return
                    await self.ws.send_json(item)
                await self._wake.wait()

    async def stop(self) -> None:
        """The socket is gone or done: stop writing (after a queued close has gone out, within a second)."""
        if self._ended:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._writer), 1.0)
        self._writer.cancel()


async def control_socket(ws: WebSocket) -> None:
    """``WS /v1/stream?session={id}[&wait=S]``: attach to a live WebRTC session or phone call (waiting up to S
    seconds for a call to arrive) and drive it until this socket closes."""
    state: GatewayState = ws.app.state.gateway
    if not await accept_websocket(ws, state.tenancy):
        return
    session_id = ws.query_params.get("session", "")
    peer = find_driven(state, session_id)
    if peer is None and (wait := _wait_seconds(ws.query_params.get("wait"))):
        peer = await state.calls.wait_for(session_id, wait)
    if peer is None:
        await ws.send_json({"type": "error", "code": "unknown_session", "message": UNKNOWN})
        await ws.close(UNKNOWN_SESSION_CLOSE_CODE)
        return
    controller = SocketController(ws)
    log.info("session %s: a controller attached%s", peer.id, " (took over)" if peer.seat.current else "")
    await peer.attach(controller)
    try:
        async for data in client_frames(ws):
            await peer.feed(data)
    finally:
        await peer.detach(controller)
        await controller.stop()


def _peer(request: Request) -> DrivenSession:
    peer = find_driven(request.app.state.gateway, request.path_params["session"])
    if peer is None:
        raise ApiError(404, "unknown_session", UNKNOWN)
    return peer


def _refused(answers: list[dict[str, Any]]) -> None:
    refusal = next((event for event in answers if event["type"] == "error"), None)
    if refusal is not None:
        raise ApiError(refusal_status(refusal["code"]), refusal["code"], refusal["message"])


async def speak(request: Request) -> JSONResponse:
    """``POST /v1/sessions/{id}/speak`` ``{"text", "voice"?}``: one utterance into the session's call → 202; its
    events go to the session's controller and data channel, if any."""
    peer = _peer(request)
    body = await json_body(request)
    message = {"type": "speak", "text": body_field(body, "text", str, required=True)}
    if (voice := body_field(body, "voice", str)) is not None:
        message["voice"] = voice
    _refused(await peer.feed(json.dumps(message)))
    return JSONResponse({"session": peer.id, "queued": len(peer.session.core.queued)}, status_code=202)


async def cancel(request: Request) -> JSONResponse:
    """``POST /v1/sessions/{id}/cancel``: barge-in → 200 ``{"session", "cancelled": [utterance ids]}``."""
    peer = _peer(request)
    answers = await peer.feed(CANCEL)
    cancelled = [event["utterance"] for event in answers if event["type"] == "cancelled" and event["utterance"]]
    return JSONResponse({"session": peer.id, "cancelled": cancelled})
