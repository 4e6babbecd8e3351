"""The phone stacks' WebSockets (docs/protocol.md).

``WS /v1/twilio``, ``WS /v1/telnyx``, ``WS /v1/asterisk``, ``WS /v1/plivo``, ``WS /v1/vonage``, ``WS /v1/exotel``,
``WS /v1/freeswitch``: a media stream (Twilio Media Streams, Telnyx media streaming, Asterisk's chan_websocket, Plivo
audio streams, Vonage Voice WebSockets, Exotel's Voicebot applet, FreeSWITCH's mod_audio_stream) is a phone call, a
session an agent drives by the call's id (callSid, call_control_id, channel_id, callId, the NCCO's uuid header,
call_sid; FreeSWITCH's ``call`` URL parameter, its start taken from the URL). Close codes: 4400 a frame that is not
the dialect's (or no ``start`` within ``START_TIMEOUT_S``), 4401 no valid key (the stream's ``key`` parameter, the
usual ways, or ``?key=`` on the URL the stack dials), 4408 the stack stopped reading, 4409 a live call has this id,
1013 the server is full (of calls, or of connections not yet authenticated: gateway/guard/silent_sockets.py). With
``--twilio-auth-token`` a Twilio upgrade without a valid ``X-Twilio-Signature`` is refused (HTTP 403).

``WS /v1/jambonz/tts``: jambonz's streaming TTS vendor API; jambonz sends the text, each socket is one session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from starlette.websockets import WebSocket

from engine.protocol import ProtocolError
from gateway.guard.auth import admit, authorized, offered_subprotocols, presented_key, refusal_of, tenant_of
from gateway.sessions.session import Session
from gateway.sessions.registry import SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.telephony import asterisk, events, exotel, freeswitch, jambonz, plivo, telnyx, twilio, vonage
from gateway.telephony.call import Dialect, PhoneCall, PhoneSink
from gateway.websocket import (STALLED_CLOSE_CODE, WebSocketSink, client_frames, close_reason, serve_session,
                               until_stalled)

log = logging.getLogger("chatterbox_fast.gateway")
START_TIMEOUT_S = 10.0  # a stream whose ``start`` has not come by then is closed
BAD_FRAME_CLOSE_CODE = 4400
UNAUTHORIZED_CLOSE_CODE = 4401
FULL_CLOSE_CODE = 1013
MEDIA_SUBPROTOCOL = "media"


@dataclass(frozen=True)
class StreamDialect:
    name: str
    parse: Callable[[str | bytes], events.Inbound]
    outbound: Callable[[str], Dialect]  # from the stream's id
    outbound_of: Callable[[events.Start], Dialect] | None = None  # from the whole start, where the format matters
    opening: Callable[[Mapping[str, str]], events.Start] | None = None  # the start from the URL's query: no start frame


TWILIO = StreamDialect("twilio", twilio.parse, twilio.Outbound)
TELNYX = StreamDialect("telnyx", telnyx.parse, telnyx.Outbound)
ASTERISK = StreamDialect("asterisk", asterisk.parse, asterisk.Outbound)
PLIVO = StreamDialect("plivo", plivo.parse, plivo.Outbound, plivo.Outbound.of)
VONAGE = StreamDialect("vonage", vonage.parse, lambda _: vonage.Outbound(), vonage.Outbound.of)
EXOTEL = StreamDialect("exotel", exotel.parse, exotel.Outbound)
FREESWITCH = StreamDialect("freeswitch", freeswitch.parse, freeswitch.Outbound, opening=freeswitch.opening)


async def first_start(ws: WebSocket, parse: Callable[[str | bytes], events.Inbound],
                      timeout: float) -> events.Start:
    """The stream's ``start`` (after ``connected``) within ``timeout`` seconds; raises ProtocolError for a stream that
    sends something else first, TimeoutError for one that sends nothing, EOFError for one that goes."""
    async def read() -> events.Start:
        async for frame in client_frames(ws):
            match parse(frame):
                case events.Start() as start:
                    return start
                case events.Ignored(event="connected"):
                    continue
                case other:
                    raise events.bad(f"expected 'start', got {type(other).__name__.lower()}")
        raise EOFError

    return await asyncio.wait_for(read(), timeout)


async def twilio_stream(ws: WebSocket) -> None:
    token = ws.app.state.gateway.settings.twilio_auth_token
    if token and not twilio.signature_valid(token, str(ws.url), ws.headers.get("x-twilio-signature")):
        log.info("twilio stream refused: no valid X-Twilio-Signature")
        await ws.close(1008)  # before accepting: the upgrade is answered 403
        return
    await media_stream(ws, TWILIO)


async def telnyx_stream(ws: WebSocket) -> None:
    await media_stream(ws, TELNYX)


async def asterisk_stream(ws: WebSocket) -> None:
    await media_stream(ws, ASTERISK)


async def plivo_stream(ws: WebSocket) -> None:
    await media_stream(ws, PLIVO)


async def vonage_stream(ws: WebSocket) -> None:
    await media_stream(ws, VONAGE)


async def exotel_stream(ws: WebSocket) -> None:
    await media_stream(ws, EXOTEL)


async def freeswitch_stream(ws: WebSocket) -> None:
    await media_stream(ws, FREESWITCH)


async def media_stream(ws: WebSocket, dialect: StreamDialect) -> None:
    """One call: its ``start`` checked, then the stack's frames into the call until it stops or goes."""
    # Asterisk's websocket_client.conf asks for the "media" subprotocol (protocols = media): it must be answered.
    await ws.accept(subprotocol=MEDIA_SUBPROTOCOL if MEDIA_SUBPROTOCOL in offered_subprotocols(ws) else None)
    call = await _open_call(ws, dialect)
    if call is None:
        return
    if text := call.greeting:
        await call.feed(json.dumps({"type": "speak", "text": text}))
    receiving = asyncio.create_task(_receive(ws, call, dialect.parse))
    watching = asyncio.create_task(until_stalled(call.sink))
    try:
        await asyncio.wait({receiving, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        receiving.cancel()
        watching.cancel()
        reason = _outcome(receiving, f"{dialect.name} stopped reading")
        log.info("%s call %s ended: %s", dialect.name, call.id, reason)
        await call.close(reason)
    stalled = watching.done() and not watching.cancelled()
    code = STALLED_CLOSE_CODE if stalled else BAD_FRAME_CLOSE_CODE if reason.startswith("bad frame") else 1000
    with contextlib.suppress(Exception):
        await asyncio.wait_for(ws.close(code, close_reason(reason)), 1.0)


async def _open_call(ws: WebSocket, dialect: StreamDialect) -> PhoneCall | None:
    """The call of the stream's ``start``, open; None when the stream was closed instead (no start in time, a bad
    frame, no key, a live call with its id, a full server)."""
    state: GatewayState = ws.app.state.gateway
    waiting = None
    if not (admitted := authorized(ws, state.tenancy)):  # its key may come in its start (Twilio cannot send headers)
        if (waiting := state.unauthenticated.enter()) is None:
            await ws.close(FULL_CLOSE_CODE, close_reason(state.unauthenticated.full_message))
            return None
    try:
        start = (dialect.opening(ws.query_params) if dialect.opening is not None
                 else await first_start(ws, dialect.parse, START_TIMEOUT_S))
    except (ProtocolError, TimeoutError, EOFError) as exc:
        reason = str(exc) if isinstance(exc, ProtocolError) else f"no 'start' within {START_TIMEOUT_S:g} s"
        log.info("%s stream closed before its start: %s", dialect.name, reason)
        with contextlib.suppress(Exception):
            await ws.close(BAD_FRAME_CLOSE_CODE, close_reason(reason))
        return None
    finally:
        if waiting is not None:
            waiting.leave()  # its start has come (its key is judged next) or the stream is gone
    key = start.parameters.get("key") or presented_key(ws) or ws.query_params.get("key")  # ?key=: no headers
    if not admitted and not admit(ws, state.tenancy, key):
        log.info("%s call %s refused: no valid key", dialect.name, start.call_id)
        if (refusal := refusal_of(ws)).token:  # a token's own refusal: 4401 or 4403, its code as the reason
            await ws.close(refusal.close_code, close_reason(f"{refusal.code}: {refusal.message}"))
        else:
            await ws.close(UNAUTHORIZED_CLOSE_CODE, "a valid API key is required (<Parameter name=\"key\">)")
        return None

    async def send(frame: str | bytes) -> None:
        await (ws.send_bytes(frame) if isinstance(frame, bytes) else ws.send_text(frame))

    outbound = dialect.outbound_of(start) if dialect.outbound_of else dialect.outbound(start.stream_id)
    sink = PhoneSink(outbound, send, start.encoding, start.rate,
                     state.settings.stall_timeout_s, start.frame_bytes)
    call = PhoneCall(state, start.call_id, dialect.name, sink, start.parameters.get("voice") or "default",
                     start.codec, start.parameters.get("text", ""), tenant_of(ws))
    sink.echo = call.open_caller(start.encoding, start.rate, start.parameters.get("barge_in"))
    if (refusal := await call.open()) is not None:
        code, reason = refusal
        log.info("%s call %s refused: %s", dialect.name, start.call_id, reason)
        await ws.close(code, close_reason(reason))
        return None
    log.info("%s call %s: stream %s started", dialect.name, call.id, start.stream_id)
    return call


def _outcome(receiving: asyncio.Task[str], otherwise: str) -> str:
    """Why the call ended: what the receiving task returned, or ``otherwise`` when it did not finish."""
    if not receiving.done() or receiving.cancelled():
        return otherwise
    if (exc := receiving.exception()) is not None:
        log.warning("a media stream's frames broke off: %r", exc)
        return f"the stream broke off: {type(exc).__name__}"
    return receiving.result()


async def _receive(ws: WebSocket, call: PhoneCall, parse: Callable[[str | bytes], events.Inbound]) -> str:
    """The stack's frames into the call until it stops; returns why the call ended."""
    async for frame in client_frames(ws):
        try:
            event = parse(frame)
        except ProtocolError as exc:
            return f"bad frame: {exc}"
        match event:
            case events.CallerMedia(audio=audio, timestamp_ms=timestamp):
                await call.hear(audio, timestamp)
            case events.MarkPlayed(name=name):
                call.sink.echoed(name)
            case events.Dtmf(digit=digit):
                call.dtmf(digit)
            case events.Pause(paused=paused):
                call.sink.pause(paused)
            case events.Stop():
                return "the call ended (stop)"
    return "the stream was dropped"


async def jambonz_tts(ws: WebSocket) -> None:
    """``WS /v1/jambonz/tts?voice=&language=&sampleRate=``: jambonz's text in, binary PCM out."""
    state: GatewayState = ws.app.state.gateway
    if not authorized(ws, state.tenancy):
        log.info("jambonz tts socket refused: no valid key")
        await ws.close(1008)  # before accepting: the upgrade is answered 403
        return
    await ws.accept()
    rate = jambonz.sample_rate(ws.query_params.get("sampleRate"))

    async def send_event(event: dict[str, Any]) -> None:
        if event["type"] == "error":  # jambonz reads nothing else
            await ws.send_json(jambonz.error(event["message"], event["code"]))

    sink = WebSocketSink(ws, state.settings.stall_timeout_s)
    sink.configure("pcm", rate)
    session = Session(state, sink, send_event, transport="jambonz", voice=ws.query_params.get("voice") or "default",
                      tenant=tenant_of(ws))
    try:
        await session.open()
    except SessionLimitReached as exc:
        await ws.send_json(jambonz.error(str(exc), exc.code))
        await ws.close(exc.close_code)
        return
    await ws.send_json(jambonz.connect(rate))
    await serve_session(ws, session, sink, _jambonz_frames(ws, session))


async def _jambonz_frames(ws: WebSocket, session: Session) -> None:
    async for frame in client_frames(ws):
        try:
            message = jambonz.parse(frame)
        except ProtocolError as exc:
            await ws.send_json(jambonz.error(str(exc), exc.code))
            continue
        if message is not None:
            await session.handle(message)
