"""/v1/voices: list, upload (multipart) and delete voices on every engine worker.

With a keys file a tenant's upload is stored as ``TENANT--NAME`` (unless its form says ``shared=true``), and a
tenant lists and deletes only its own voices and the shared ones its ``voices`` allow (gateway/guard/tenants.py)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Message

from gateway.engine_link.client import EngineUnavailable
from gateway.http.body import bounded_body
from gateway.guard.auth import tenant_of
from gateway.guard.tenants import TenantRefused
from gateway.http.errors import ApiError, engine_call, engine_error, refused
from gateway.shared_state import GatewayState

FORM_OVERHEAD = 64 * 1024  # multipart boundaries, headers and the name field around the file


async def known_voices(state: GatewayState) -> list[dict[str, Any]]:
    try:
        return await state.engine.list_voices()
    except EngineUnavailable as exc:
        raise engine_error(exc) from None


async def usable_voices(request: Request) -> list[dict[str, Any]]:
    """The voices the request may use: its tenant's, and of those, its token's where a token admitted it."""
    state: GatewayState = request.app.state.gateway
    tenant, tenants = tenant_of(request), state.tenancy.tenants
    grant = request.scope.get("state", {}).get("grant")
    return [v for v in await known_voices(state) if tenants.may_use_voice(tenant, v["name"])
            and (grant is None or grant.may_use_voice(v["name"]))]


async def list_voices(request: Request) -> Response:
    return JSONResponse({"voices": await usable_voices(request)})


async def _bounded(request: Request, limit: int) -> Request:
    """The request with its body read into memory, no further than ``limit`` bytes: an upload over it is refused
    before any of it reaches a temporary file."""
    body = await bounded_body(request, limit,
                              ApiError(413, "too_large", f"uploads are limited to {limit - FORM_OVERHEAD} bytes"))
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(request.scope, replay)


async def add_voice(request: Request) -> Response:
    state: GatewayState = request.app.state.gateway
    limit = state.settings.max_upload_bytes
    request = await _bounded(request, limit + FORM_OVERHEAD)
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
        name = state.tenancy.tenants.upload_name(tenant_of(request), name, form.get("shared") == "true")
    except TenantRefused as exc:
        raise refused(exc) from None
    voice = await engine_call(state.engine.add_voice(name, data))
    state.prompts.drop("voices", name)  # a voice uploaded again: its cached prompts are the old one's
    return JSONResponse({"voice": voice}, status_code=201)


async def delete_voice(request: Request) -> Response:
    state: GatewayState = request.app.state.gateway
    name = request.path_params["name"]
    if not state.tenancy.tenants.may_use_voice(tenant_of(request), name):
        raise ApiError(403, "voice_forbidden", f"this key may not delete the voice {name!r}")
    await engine_call(state.engine.delete_voice(name))
    state.prompts.drop("voices", name)
    return Response(status_code=204)
