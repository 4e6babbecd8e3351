"""Reading JSON request bodies: bounded in size, and each field checked for its type."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from engine.protocol import ProtocolError, Reading
from gateway.guard.client_input import BadInput, load_json
from gateway.messages import reading
from gateway.http.errors import ApiError

MAX_JSON_BYTES = 1024 * 1024


async def bounded_body(request: Request, limit: int, too_large: ApiError) -> bytes:
    """The request's body, read no further than ``limit`` bytes whatever the client claims or sends (a
    Content-Length, chunked, neither): over it, ``too_large`` is raised before the rest is read."""
    if int(request.headers.get("content-length") or 0) > limit:
        raise too_large
    raw = bytearray()
    async for piece in request.stream():
        raw += piece
        if len(raw) > limit:
            raise too_large
    return bytes(raw)


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, read no further than MAX_JSON_BYTES."""
    raw = await bounded_body(request, MAX_JSON_BYTES,
                             ApiError(413, "too_large", f"request body over {MAX_JSON_BYTES} bytes"))
    try:
        body = load_json(raw)
    except BadInput as exc:
        raise ApiError(400, "bad_request", f"the body: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "bad_request", "the body must be a JSON object")
    return body


def body_reading(body: dict[str, Any]) -> Reading:
    """The body's ``latency`` preference and ``normalize`` mode (engine/protocol.py ``Reading``); unset: defaults."""
    try:
        return reading(body)
    except ProtocolError as exc:
        raise ApiError(400, exc.code, str(exc)) from None


def body_field(body: dict[str, Any], name: str, kind: type, default: Any = None, *, required: bool = False) -> Any:
    value = body.get(name, default)
    if value is None and not required:
        return default
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ApiError(400, "bad_request", f"field {name!r} must be a {kind.__name__}")
    return value
