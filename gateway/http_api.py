"""HTTP endpoints: streaming speech (/v1/tts, OpenAI-compatible /v1/audio/speech), voices, health and metrics."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from gateway.audio import make_encoder
from gateway.engine_client import Chunk, EngineRequestError, EngineUnavailable, Utterance
from gateway.session import UtteranceStats
from gateway.state import GatewayState, SessionLimitReached

OPENAI_VOICES = {"alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse"}
OPENAI_FORMATS = {"mp3", "opus", "aac", "flac", "wav", "pcm"}
TTS_FORMATS = {"pcm", "wav", "opus", "mulaw", "mp3"}
MAX_JSON_BYTES = 1024 * 1024
_STATUS = {"unknown_voice": 404, "exists": 409, "too_large": 413, "session_limit": 503, "engine_unavailable": 503,
           "engine_error": 500}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def api_error_response(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    state: GatewayState = request.app.state.gateway
    state.metrics.errors.labels(exc.code).inc()
    headers = {"Retry-After": "2"} if exc.status == 503 else None
    return error_response(exc.status, exc.code, str(exc), headers)


def _engine_error(exc: EngineUnavailable | EngineRequestError) -> ApiError:
    """An engine failure as an HTTP error with the engine's own code (503 while the worker is away)."""
    return ApiError(_STATUS.get(exc.code, 400), exc.code, str(exc))


def _state(request: Request) -> GatewayState:
    return request.app.state.gateway


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, read no further than MAX_JSON_BYTES whatever the client claims or sends."""
    too_large = ApiError(413, "too_large", f"request body over {MAX_JSON_BYTES} bytes")
    if int(request.headers.get("content-length") or 0) > MAX_JSON_BYTES:
        raise too_large
    raw = bytearray()
    async for piece in request.stream():
        raw += piece
        if len(raw) > MAX_JSON_BYTES:
            raise too_large
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ApiError(400, "bad_request", "the body must be JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "bad_request", "the body must be a JSON object")
    return body


def body_field(body: dict[str, Any], name: str, kind: type, default: Any = None, *, required: bool = False) -> Any:
    value = body.get(name, default)
    if value is None and not required:
        return default
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ApiError(400, "bad_request", f"field {name!r} must be a {kind.__name__}")
    return value


def _text(state: GatewayState, text: str) -> str:
    if not text.strip():
        raise ApiError(400, "bad_request", "text is empty")
    if len(text) > state.settings.max_text_chars:
        raise ApiError(413, "text_too_long", f"text over {state.settings.max_text_chars} characters")
    return text


async def _speech(state: GatewayState, text: str, voice: str, fmt: str, sample_rate: int | None,
                  transport: str) -> StreamingResponse:
    """Start one utterance and stream it encoded; errors before the first chunk become proper HTTP errors."""
    try:
        encoder = make_encoder(fmt, sample_rate)
    except ValueError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None
    token = object()
    try:
        state.sessions.add(token, transport)
    except SessionLimitReached as exc:
        raise ApiError(503, exc.code, str(exc)) from None
    stats = UtteranceStats(transport)
    try:
        utterance = await state.engine.start(voice)
        await utterance.text(text)
        await utterance.end()
        events = utterance.events()
        first = await anext(events)
    except (EngineUnavailable, EngineRequestError) as exc:
        state.sessions.remove(token)
        raise _engine_error(exc) from None

    async def body() -> AsyncIterator[bytes]:
        try:
            event = first
            while isinstance(event, Chunk):
                stats.on_chunk(event, state.metrics)
                if data := encoder.encode(event.pcm):
                    yield data
                event = await anext(events)
            stats.summary(event, state.metrics)
            if data := encoder.flush():
                yield data
        except EngineRequestError as exc:
            state.metrics.errors.labels(exc.code).inc()
        finally:
            await _finish(utterance, token, state)

    headers = {"X-Accel-Buffering": "no", "Cache-Control": "no-store", "X-Utterance-Id": utterance.id}
    return StreamingResponse(body(), media_type=encoder.content_type, headers=headers)


async def _finish(utterance: Utterance, token: object, state: GatewayState) -> None:
    await utterance.cancel()  # a no-op once finished; stops the engine when the client went away mid-stream
    state.sessions.remove(token)


async def tts(request: Request) -> Response:
    state, body = _state(request), await json_body(request)
    text = _text(state, body_field(body, "text", str, required=True))
    fmt = body_field(body, "format", str, "pcm")
    if fmt not in TTS_FORMATS:
        raise ApiError(400, "bad_request", f"format must be one of {sorted(TTS_FORMATS)}")
    rate = body_field(body, "sample_rate", int)
    return await _speech(state, text, body_field(body, "voice", str, "default"), fmt, rate, "http")


async def openai_speech(request: Request) -> Response:
    """OpenAI's ``POST /v1/audio/speech``; works with the official ``openai`` client."""
    state, body = _state(request), await json_body(request)
    body_field(body, "model", str, required=True)
    text = _text(state, body_field(body, "input", str, required=True))
    fmt = body_field(body, "response_format", str, "mp3")
    if fmt not in OPENAI_FORMATS:
        raise ApiError(400, "bad_request", f"response_format must be one of {sorted(OPENAI_FORMATS)}")
    speed = body.get("speed", 1.0)
    if not isinstance(speed, (int, float)) or float(speed) != 1.0:
        raise ApiError(400, "bad_request", "only speed 1.0 is supported")
    if body.get("stream_format", "audio") != "audio":
        raise ApiError(400, "bad_request", "only stream_format 'audio' is supported")
    voice = body_field(body, "voice", str, "default")
    if voice in OPENAI_VOICES:
        known = {v["name"] for v in await _voices(state)}
        voice = voice if voice in known else "default"
    return await _speech(state, text, voice, fmt, 24000 if fmt == "pcm" else None, "http")


async def _voices(state: GatewayState) -> list[dict[str, Any]]:
    try:
        return await state.engine.list_voices()
    except EngineUnavailable as exc:
        raise _engine_error(exc) from None


async def list_voices(request: Request) -> Response:
    return JSONResponse({"voices": await _voices(_state(request))})


async def add_voice(request: Request) -> Response:
    state = _state(request)
    limit = state.settings.max_upload_bytes
    if int(request.headers.get("content-length") or 0) > limit + 64 * 1024:
        raise ApiError(413, "too_large", f"uploads are limited to {limit} bytes")
    try:
        form = await request.form(max_files=1, max_fields=4, max_part_size=limit + 1)
    except Exception as exc:  # malformed multipart, a part over the limit
        raise ApiError(400, "bad_request", f"expected multipart/form-data with 'name' and 'file': {exc}") from None
    name, upload = form.get("name"), form.get("file")
    if not isinstance(name, str) or upload is None or isinstance(upload, str):
        raise ApiError(400, "bad_request", "expected multipart/form-data with a 'name' field and a 'file' part")
    data = await upload.read(limit + 1)
    if len(data) > limit:
        raise ApiError(413, "too_large", f"uploads are limited to {limit} bytes")
    try:
        voice = await state.engine.add_voice(name, data)
    except (EngineUnavailable, EngineRequestError) as exc:
        raise _engine_error(exc) from None
    return JSONResponse({"voice": voice}, status_code=201)


async def delete_voice(request: Request) -> Response:
    try:
        await _state(request).engine.delete_voice(request.path_params["name"])
    except (EngineUnavailable, EngineRequestError) as exc:
        raise _engine_error(exc) from None
    return Response(status_code=204)


async def health(request: Request) -> Response:
    state = _state(request)
    ready = state.engine.ready
    if ready is not None:
        status = "ok"
    elif state.process is not None and state.process.restarts == 0:
        status = "starting"
    else:
        status = "down"
    body: dict[str, Any] = {
        "status": status,
        "engine": ready and {k: ready.get(k) for k in ("engine", "device", "dtype", "weights", "notes")},
        "watermark": bool(ready and ready.get("watermark")),
        "sessions": len(state.sessions),
        "engines": state.engine.engines,
    }
    if state.process is not None:
        body["worker"] = {"alive": state.process.alive, "pid": state.process.proc and state.process.proc.pid,
                          "restarts": state.process.restarts,
                          "last_exit": state.process.last_exit}
    return JSONResponse(body, status_code=200 if status == "ok" else 503)


async def metrics(request: Request) -> Response:
    state = _state(request)
    state.metrics.engine_up.set(1 if state.engine.available else 0)
    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
