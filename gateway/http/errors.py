"""HTTP errors: ``ApiError`` raised by any endpoint, and the JSON error responses every endpoint answers with."""

from __future__ import annotations

import math
from typing import Awaitable, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.engine_link.client import EngineRequestError, EngineUnavailable
from gateway.shared_state import GatewayState

_STATUS = {"unknown_voice": 404, "unknown_lexicon": 404, "exists": 409, "too_large": 413, "session_limit": 503,
           "engine_unavailable": 503, "engine_error": 500, "bad_backend_reply": 502}
T = TypeVar("T")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None) -> None:
        """``retry_after``: seconds, sent as Retry-After (a 503 without it says 2)."""
        super().__init__(message)
        self.status, self.code, self.retry_after = status, code, retry_after


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def api_error_response(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    state: GatewayState = request.app.state.gateway
    state.metrics.errors.labels(exc.code).inc()
    retry = exc.retry_after if exc.retry_after is not None else (2 if exc.status == 503 else None)
    headers = {"Retry-After": str(max(1, math.ceil(retry)))} if retry is not None else None
    return error_response(exc.status, exc.code, str(exc), headers)


def engine_error(exc: EngineUnavailable | EngineRequestError) -> ApiError:
    """An engine failure as an HTTP error with the engine's own code (503 while the worker is away)."""
    return ApiError(_STATUS.get(exc.code, 400), exc.code, str(exc))


async def engine_call(call: Awaitable[T]) -> T:
    """``call``'s answer, or the engine's failure as its HTTP error (a voice or lexicon request)."""
    try:
        return await call
    except (EngineUnavailable, EngineRequestError) as exc:
        raise engine_error(exc) from None


def refused(exc: Exception) -> ApiError:
    """A refused session (``SessionLimitReached`` and its kin) or a tenant's refusal (``TenantRefused``) as its HTTP
    error: 503, 429 with Retry-After, 403, 401."""
    return ApiError(getattr(exc, "status", 503), getattr(exc, "code", "session_limit"), str(exc),
                    getattr(exc, "retry_after", None))
