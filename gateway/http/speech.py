"""Streaming speech over HTTP: POST /v1/tts and OpenAI's POST /v1/audio/speech."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, AsyncIterator

from starlette.requests import Request
from starlette.responses import Response

from engine.protocol import SAMPLE_RATE, Chunk, Reading
from gateway.audio import Encoder, make_encoder
from gateway.guard.client_input import speech_text
from gateway.engine_link.client import EngineRequestError, EngineUnavailable
from gateway.formats import OPENAI_FORMATS, OPENAI_PCM_RATE, TTS_FORMATS
from gateway.http import ndjson, sse
from gateway.http.body import body_field, body_reading, json_body
from gateway.guard.auth import presented_key, tenant_of
from gateway.guard.tenants import TenantRefused
from gateway.http.errors import ApiError, engine_error, refused
from gateway.guard.tenancy import REVOKED_REASON
from gateway.http.stream import (AudioBytes, Framing, Revocation, Revoked, SpeechStream, StreamAborted, encoded,
                                 in_pieces, until_revoked)
from gateway.http.voices import known_voices
from gateway.playout import Outbound, WrittenAudio, report_playout
from gateway.sessions.registry import SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.traces import utterance_span
from gateway.utterance_stream import MetricsLabel, UtteranceStats, chunks

log = logging.getLogger("chatterbox_fast.gateway")
OPENAI_VOICES = {"alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse",
                 "marin", "cedar"}
STREAM_FORMATS = ("audio", "sse")
_defaulted: set[str] = set()  # OpenAI voice names already logged as spoken by the default voice


def checked_text(state: GatewayState, text: str) -> str:
    text = speech_text(text)
    if not text.strip():
        raise ApiError(400, "bad_request", "text is empty")
    if len(text) > state.settings.max_text_chars:
        raise ApiError(413, "text_too_long", f"text over {state.settings.max_text_chars} characters")
    return text


async def speech_stream(state: GatewayState, request: Request, body: dict[str, Any], text: str, voice: str, fmt: str,
                        sample_rate: int | None, framing: Framing = AudioBytes(), whole: bool = False,
                        transport: str = "http") -> SpeechStream:
    """``stream_speech`` as the body asks (its reading, its ``cache``), in ``fmt``. ``whole``: a format that differs
    as a whole file (wav: its true sizes) is sent whole, at the end."""
    try:
        encoder = make_encoder(fmt, sample_rate, whole=whole)
    except ValueError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None
    return await stream_speech(state, request, text, voice, encoder, body_reading(body),
                               body_field(body, "cache", bool, True), framing, transport)


async def stream_speech(state: GatewayState, request: Request, text: str, voice: str, encoder: Encoder,
                        reading: Reading, use_cache: bool = True, framing: Framing = AudioBytes(),
                        transport: str = "http") -> SpeechStream:
    """Start one utterance (from the prompt cache where it may be: ``use_cache``), within its tenant's limits, and
    stream it encoded, in ``framing``; errors before the first chunk become proper HTTP errors. ``transport``: its
    label in the metrics (a vendor's dialect, or plain http)."""
    tenant = tenant_of(request)
    token = Revocation(tenant)  # its entry in the registry: gateway/app.py ends it when its key is removed
    try:
        state.tenancy.charge(tenant, len(text))
        state.sessions.add(token, transport, tenant)
    except (SessionLimitReached, TenantRefused) as exc:
        raise refused(exc) from None
    stats = UtteranceStats(time.monotonic())
    # the engine pauses this utterance while the client takes none of it: what it has taken of the body's bytes (not
    # those waiting in the connection's buffers), mapped to seconds of audio piece by piece; told from the start
    # (nothing yet), so that the engine makes no more than the lead while the first chunk is on its way
    outbound = Outbound(request.scope)
    sent = WrittenAudio(outbound)
    feedback: asyncio.Task[None] | None = None
    try:
        utterance = await state.tenancy.start(tenant, voice, lambda: state.prompts.start(
            voice, reading, text, api_key=presented_key(request), tenant=tenant, use=use_cache,
            span=utterance_span(state.traces, transport, voice)))
        feedback = asyncio.create_task(report_playout(utterance, sent.taken))
        await utterance.text(text)
        await utterance.end()
        stream = chunks(utterance, stats, to=MetricsLabel(state.metrics, transport))
        first = await anext(stream, None)
    except BaseException as exc:
        if feedback is not None:
            feedback.cancel()
        if isinstance(exc, (EngineUnavailable, EngineRequestError)):
            state.sessions.remove(token)
            raise engine_error(exc) from None
        if isinstance(exc, TenantRefused):
            state.sessions.remove(token)
            raise refused(exc) from None
        raise
    reporting = feedback

    async def body() -> AsyncIterator[bytes]:
        yielded = 0  # the body's bytes so far, as SpeechStream counts them written (outbound.written)
        try:
            async for chunk in until_revoked(_chained(first, stream), token):
                piece = framing.chunk(await encoded(encoder, chunk.pcm), chunk.header)
                yielded += len(piece)
                sent.wrote(len(chunk.pcm) / 2 / SAMPLE_RATE, yielded)
                if piece:
                    yield piece
            if data := await encoded(encoder, None):
                for piece in in_pieces(framing.tail(data)):
                    yield piece
            if piece := framing.done(stats):
                yield piece
        except (EngineRequestError, Revoked) as exc:
            code, message = ("unauthorized", REVOKED_REASON) if isinstance(exc, Revoked) else (exc.code, str(exc))
            if isinstance(exc, EngineRequestError):
                state.metrics.errors.labels(code).inc()
            why = f"utterance {utterance.id} ended mid-way ({code}: {message})"
            if (last := framing.failed(code, message)) is None:
                raise StreamAborted(why) from None
            log.warning("http stream ended with an error event: %s", why)
            yield last

    async def finish() -> None:
        reporting.cancel()
        state.sessions.remove(token)
        await utterance.cancel()  # a no-op once finished; stops the engine when the client went away

    headers = {"X-Accel-Buffering": "no", "Cache-Control": "no-store", "X-Utterance-Id": utterance.id,
               "X-Prompt-Cache": "hit" if stats.cached else "miss"}
    if framing.media_type is not None:
        headers["X-Audio-Type"] = encoder.content_type
    return SpeechStream(body(), finish, state.settings.stall_timeout_s, token, outbound=outbound, headers=headers,
                        media_type=framing.media_type or encoder.content_type)


async def _chained(first: Chunk | None, rest: AsyncIterator[Chunk]) -> AsyncIterator[Chunk]:
    if first is not None:
        yield first
        async for chunk in rest:
            yield chunk


async def tts(request: Request) -> Response:
    state: GatewayState = request.app.state.gateway
    body = await json_body(request)
    text = checked_text(state, body_field(body, "text", str, required=True))
    fmt = body_field(body, "format", str, "pcm")
    timed = fmt == "ndjson" or ndjson.CONTENT_TYPE in request.headers.get("accept", "")
    fmt = "pcm" if fmt == "ndjson" else fmt
    if fmt not in TTS_FORMATS:
        raise ApiError(400, "bad_request", f"format must be one of {sorted(TTS_FORMATS + ('ndjson',))}")
    rate = body_field(body, "sample_rate", int)
    framing = ndjson.TimedLines(text) if timed else AudioBytes()
    whole = not timed and not body_field(body, "stream", bool, False)
    return await speech_stream(state, request, body, text, body_field(body, "voice", str, "default"), fmt, rate,
                               framing, whole)


async def openai_speech(request: Request) -> Response:
    """OpenAI's ``POST /v1/audio/speech``; works with the official ``openai`` client."""
    state: GatewayState = request.app.state.gateway
    body = await json_body(request)
    body_field(body, "model", str)  # optional (OpenAI requires it): every model name speaks with this server's engine
    text = checked_text(state, body_field(body, "input", str, required=True))
    fmt = body_field(body, "response_format", str, "mp3")
    if fmt not in OPENAI_FORMATS:
        raise ApiError(400, "bad_request", f"response_format must be one of {sorted(OPENAI_FORMATS)}")
    body_field(body, "instructions", str)  # accepted, not followed: the voice is the library voice's
    stream_format = body_field(body, "stream_format", str, "audio")
    if stream_format not in STREAM_FORMATS:
        raise ApiError(400, "bad_request", f"stream_format must be one of {list(STREAM_FORMATS)}")
    voice = await _openai_voice(state, body_field(body, "voice", str, "default"))
    framing = sse.SpeechEvents(text) if stream_format == "sse" else AudioBytes()
    whole = stream_format == "audio" and not body_field(body, "stream", bool, False)
    return await speech_stream(state, request, body, text, voice, fmt, OPENAI_PCM_RATE if fmt == "pcm" else None,
                               framing, whole)


async def _openai_voice(state: GatewayState, voice: str) -> str:
    """One of OpenAI's voice names is the library voice of that name, else the default voice (logged once)."""
    if voice not in OPENAI_VOICES or voice in {v["name"] for v in await known_voices(state)}:
        return voice
    if voice not in _defaulted:
        _defaulted.add(voice)
        log.info("OpenAI voice %r is not in the voice library: the default voice speaks it", voice)
    return "default"
