"""The phone stacks' WebSockets (docs/protocol.md).

``WS /v1/jambonz/tts``: jambonz's streaming TTS vendor API; jambonz sends the text, each socket is one session.

``WS /v1/twilio``: a Twilio Media Streams call as a session an agent drives by its callSid. Close codes: 4400 a frame that is not Media Streams (or no ``start`` within ``START_TIMEOUT_S``), 4401 no valid
key in ``customParameters``, 4408 Twilio stopped reading, 4409 a live call has this callSid, 1013 the server is full.
With ``--twilio-auth-token`` an upgrade without a valid ``X-Twilio-Signature`` is refused (HTTP 403).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from starlette.websockets import WebSocket

from engine.protocol import ProtocolError
from gateway.auth import authorized, key_matches, presented_key
from gateway.session import Session
from gateway.session_registry import SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.telephony import jambonz, twilio
from gateway.telephony.call import PhoneCall, PhoneSink
from gateway.websocket import STALLED_CLOSE_CODE, WebSocketSink, client_frames, serve_session, until_stalled

log = logging.getLogger("chatterbox_fast.gateway")
START_TIMEOUT_S = 10.0  # a stream whose ``start`` has not come by then is closed
BAD_FRAME_CLOSE_CODE = 4400
UNAUTHORIZED_CLOSE_CODE = 4401
DUPLICATE_CLOSE_CODE = 4409
FULL_CLOSE_CODE = 1013


async def first_start(ws: WebSocket, timeout: float) -> twilio.Start:
    """Twilio's ``start`` (after ``connected``) within ``timeout`` seconds; raises ProtocolError for a stream that
    sends something else first, TimeoutError for one that sends nothing, EOFError for one that goes."""
    async def read() -> twilio.Start:
        async for frame in client_frames(ws):
            match twilio.parse(frame):
                case twilio.Start() as start:
                    return start
                case twilio.Ignored(event="connected"):
                    continue
                case other:
                    raise ProtocolError(f"expected 'start', got {type(other).__name__.lower()}", "bad_message")
        raise EOFError

    return await asyncio.wait_for(read(), timeout)


async def twilio_stream(ws: WebSocket) -> None:
    state: GatewayState = ws.app.state.gateway
    token = state.settings.twilio_auth_token
    if token and not twilio.signature_valid(token, str(ws.url), ws.headers.get("x-twilio-signature")):
        log.info("twilio stream refused: no valid X-Twilio-Signature")
        await ws.close(1008)  # before accepting: the upgrade is answered 403
        return
    await ws.accept()
    try:
        start = await first_start(ws, START_TIMEOUT_S)
    except (ProtocolError, TimeoutError, EOFError) as exc:
        reason = str(exc) if isinstance(exc, ProtocolError) else f"no 'start' within {START_TIMEOUT_S:g} s"
        log.info("twilio stream closed before its start: %s", reason)
        with contextlib.suppress(Exception):
            await ws.close(BAD_FRAME_CLOSE_CODE, reason[:120])
        return
    if not key_matches(start.parameters.get("key") or presented_key(ws), state.settings.api_keys):
        log.info("twilio call %s refused: no valid key parameter", start.call_sid)
        await ws.close(UNAUTHORIZED_CLOSE_CODE, "a valid API key is required (<Parameter name=\"key\">)")
        return
    outbound = twilio.Outbound(start.stream_sid)
    sink = PhoneSink(outbound, ws.send_text, "mulaw", twilio.SAMPLE_RATE, state.settings.stall_timeout_s)
    call = PhoneCall(state, start.call_sid, "twilio", sink, start.parameters.get("voice") or "default", "pcmu")
    if (refusal := await call.open()) is not None:
        log.info("twilio call %s refused: %s", start.call_sid, refusal)
        code = DUPLICATE_CLOSE_CODE if "live already" in refusal else FULL_CLOSE_CODE
        await ws.close(code, refusal[:120])
        return
    log.info("twilio call %s: stream %s started", call.id, start.stream_sid)
    if text := start.parameters.get("text"):
        await call.feed(json.dumps({"type": "speak", "text": text}))
    receiving = asyncio.create_task(_receive(ws, call))
    watching = asyncio.create_task(until_stalled(sink))
    try:
        await asyncio.wait({receiving, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        receiving.cancel()
        watching.cancel()
        reason = receiving.result() if receiving.done() and not receiving.cancelled() else "twilio stopped reading"
        log.info("twilio call %s ended: %s", call.id, reason)
        await call.close(reason)
    code, why = (STALLED_CLOSE_CODE, reason) if watching.done() else (
        BAD_FRAME_CLOSE_CODE, reason) if reason.startswith("bad frame") else (1000, reason)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(ws.close(code, why[:120]), 1.0)


async def _receive(ws: WebSocket, call: PhoneCall) -> str:
    """Twilio's frames into the call until it stops; returns why the call ended."""
    async for frame in client_frames(ws):
        try:
            event = twilio.parse(frame)
        except ProtocolError as exc:
            return f"bad frame: {exc}"
        match event:
            case twilio.MarkPlayed(name=name):
                call.sink.echoed(name)
            case twilio.Dtmf(digit=digit):
                call.dtmf(digit)
            case twilio.Stop():
                return "the call ended (stop)"
    return "the stream was dropped"


async def jambonz_tts(ws: WebSocket) -> None:
    """``WS /v1/jambonz/tts?voice=&language=&sampleRate=``: jambonz's text in, binary PCM out."""
    state: GatewayState = ws.app.state.gateway
    if not authorized(ws, state.settings.api_keys):
        log.info("jambonz tts socket refused: no valid key")
        await ws.close(1008)  # before accepting: the upgrade is answered 403
        return
    await ws.accept()
    rate = jambonz.sample_rate(ws.query_params.get("sampleRate"))

    async def send_event(event: dict[str, Any]) -> None:
        if event["type"] == "error":  # jambonz reads nothing else
            await ws.send_json(jambonz.error(event["message"]))

    sink = WebSocketSink(ws, state.settings.stall_timeout_s)
    sink.configure("pcm", rate)
    session = Session(state, sink, send_event, transport="jambonz", voice=ws.query_params.get("voice") or "default")
    try:
        await session.open()
    except SessionLimitReached as exc:
        await ws.send_json(jambonz.error(str(exc)))
        await ws.close(FULL_CLOSE_CODE)
        return
    await ws.send_json(jambonz.connect(rate))
    await serve_session(ws, session, sink, _jambonz_frames(ws, session))


async def _jambonz_frames(ws: WebSocket, session: Session) -> None:
    async for frame in client_frames(ws):
        try:
            message = jambonz.parse(frame)
        except ProtocolError as exc:
            await ws.send_json(jambonz.error(str(exc)))
            continue
        if message is not None:
            await session.handle(message)
