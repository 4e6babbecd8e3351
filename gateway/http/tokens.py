"""``POST /v1/tokens``: a short-lived scoped token for a browser or another client that must not hold the key
(gateway/guard/tokens.py). Needs a real key (a token never reaches this route); the token counts against that key's
tenant."""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.guard.auth import presented_key, tenant_of
from gateway.guard.tokens import BadTokenRequest, TokenRequest
from gateway.http.body import json_body
from gateway.http.errors import ApiError
from gateway.shared_state import GatewayState


async def mint(request: Request) -> JSONResponse:
    state: GatewayState = request.app.state.gateway
    if request.scope.get("state", {}).get("grant") is not None:  # (the middleware refuses it first)
        raise ApiError(403, "token_scope", "a token cannot mint tokens")
    body = await json_body(request) if int(request.headers.get("content-length") or 1) else {}
    try:
        wanted = TokenRequest.parse(body)
    except BadTokenRequest as exc:
        raise ApiError(400, "bad_request", str(exc)) from None
    tenancy = state.tenancy
    token, expires_at = tenancy.signer.mint(wanted, tenant_of(request), tenancy.key_mark(presented_key(request)),
                                            time.time())
    return JSONResponse({"token": token, "expires_at": expires_at}, headers={"Cache-Control": "no-store"})
