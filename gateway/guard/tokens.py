"""Short-lived scoped tokens (``POST /v1/tokens``): minted with a real key, presented wherever a key is (pure: no
sockets, no files; time is passed in).

A token is ``cbft.<claims>.<signature>``: the claims are compact JSON in unpadded base64url, the signature an
HMAC-SHA256 over ``cbft.<claims>`` with the server's token secret (``--token-secret``), base64url too. Nothing is stored
when a token is minted: any process, or any server, holding the secret verifies it. The claims name the minting key's
tenant and a mark of the key (an HMAC of its SHA-256 under the secret: the key never appears, in any encoding, and a
token stops working once its key is removed or changed), the expiry, and the scope: route families, voices, how many
sessions at once and how many uses in all (those two are counted where every process sees them:
gateway/guard/token_ledger.py).

Checked in this order, each a refusal of its own: the shape and the signature (``unauthorized``, 401; the claims are
parsed only once the signature matches), the expiry (``token_expired``, 401), the minting key still in force
(``unauthorized``), the route family (``token_scope``, 403), then the uses left (``token_used``, 401).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

PREFIX = "cbft."
MAX_TOKEN_CHARS = 2048  # a longer credential is refused unread (a minted token is ~200-600 characters)
TTL_RANGE_S = (60, 3600)
DEFAULT_TTL_S = 600
MAX_VOICES = 32
MAX_VOICE_CHARS = 128
MAX_COUNT = 10_000  # the most sessions or uses one token may be given
MIN_SECRET_CHARS = 16
_ID = re.compile(r"^[A-Za-z0-9_-]{16}$")
_VOICE = re.compile(r"^[A-Za-z0-9_.\-]+\*?$")

# Route families: what a token's ``routes`` may name, and what each reaches. A path matches a prefix when it is the
# prefix or lies below it. (method None: any method, WebSockets included.)
FAMILIES: dict[str, tuple[tuple[str | None, str], ...]] = {
    "stream": ((None, "/v1/stream"), (None, "/v1/sessions")),
    "webrtc": ((None, "/v1/webrtc/offer"),),
    "whep": ((None, "/v1/whep"),),
    "tts": ((None, "/v1/tts"),),
    "openai": ((None, "/v1/audio/speech"),),
    "elevenlabs": ((None, "/v1/text-to-speech"),),
    "deepgram": ((None, "/deepgram/v1/speak"),),
    "vapi": ((None, "/v1/vapi"),),
    "twilio": ((None, "/v1/twilio"),),
    "telnyx": ((None, "/v1/telnyx"),),
    "asterisk": ((None, "/v1/asterisk"),),
    "jambonz": ((None, "/v1/jambonz"),),
    "cartesia": ((None, "/cartesia/tts"),),
    "voices": (("GET", "/v1/voices"), ("GET", "/v1/lexicons"), ("GET", "/cartesia/voices")),  # the lists only: never an upload or a deletion
}
SPEAKING = tuple(f for f in FAMILIES if f != "voices")  # a token without ``routes`` reaches these
_STATUS = {"unauthorized": 401, "token_expired": 401, "token_used": 401, "token_scope": 403,
           "token_session_limit": 429}


class TokenRefused(Exception):
    """A token that does not open what it was presented for: ``code``, its HTTP ``status`` and WebSocket
    ``close_code`` (4000 + status)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.status = code, _STATUS[code]
        self.close_code = 4000 + self.status
        self.retry_after = 1.0 if self.status == 429 else None


class BadTokenRequest(ValueError):
    """A ``POST /v1/tokens`` body that is refused (400), with the field and why."""


def family_of(method: str | None, path: str) -> str | None:
    """The route family ``path`` (asked with ``method``; None for a WebSocket) belongs to; None: no token reaches
    it (uploads, deletions, admin, /v1/tokens, usage, /metrics)."""
    for family, routes in FAMILIES.items():
        for wanted, prefix in routes:
            if (wanted is None or wanted == method) and (path == prefix or path.startswith(prefix + "/")):
                return family
    return None


@dataclass(frozen=True)
class TokenRequest:
    """What a ``POST /v1/tokens`` body asks for, checked."""

    ttl_s: int = DEFAULT_TTL_S
    routes: tuple[str, ...] | None = None
    voices: tuple[str, ...] | None = None
    sessions: int | None = None
    uses: int | None = None

    @classmethod
    def parse(cls, body: dict[str, Any]) -> "TokenRequest":
        """Raises ``BadTokenRequest`` naming the field."""
        known = ("ttl_s", "routes", "voices", "sessions", "uses")
        for field in body:
            if field not in known:
                raise BadTokenRequest(f"unknown field {field!r} (known: {', '.join(known)})")
        ttl = body.get("ttl_s", DEFAULT_TTL_S)
        if isinstance(ttl, bool) or not isinstance(ttl, int) or not TTL_RANGE_S[0] <= ttl <= TTL_RANGE_S[1]:
            raise BadTokenRequest(f"ttl_s must be a whole number of seconds from {TTL_RANGE_S[0]} to {TTL_RANGE_S[1]}")
        routes = _names(body, "routes", 64)
        if routes is not None:
            if not routes:
                raise BadTokenRequest("routes must name at least one route family")
            if unknown := [r for r in routes if r not in FAMILIES]:
                raise BadTokenRequest(f"routes: unknown route family {unknown[0][:64]!r} (a token may reach: "
                                      f"{', '.join(FAMILIES)})")
            routes = tuple(dict.fromkeys(routes))
        voices = _names(body, "voices", MAX_VOICES)
        if voices is not None:
            if not voices:
                raise BadTokenRequest("voices must name at least one voice")
            if bad := [v for v in voices if len(v) > MAX_VOICE_CHARS or not _VOICE.match(v)]:
                raise BadTokenRequest(f"voices: {bad[0][:64]!r} is not a voice name (letters, digits, '_', '-', '.'; "
                                      "a trailing * matches a prefix)")
        return cls(ttl, routes, voices, _count(body, "sessions"), _count(body, "uses"))


def _names(body: dict[str, Any], field: str, most: int) -> tuple[str, ...] | None:
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadTokenRequest(f"{field} must be a list of strings")
    if len(value) > most:
        raise BadTokenRequest(f"{field}: at most {most}")
    return tuple(value)


def _count(body: dict[str, Any], field: str) -> int | None:
    value = body.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        raise BadTokenRequest(f"{field} must be a whole number from 1 to {MAX_COUNT}")
    return value


@dataclass(frozen=True)
class Grant:
    """A verified token's claims: whose it is and what it may reach."""

    id: str
    expires_at: int
    tenant: str | None  # the minting key's tenant (None: an --api-key key)
    key_mark: str
    routes: tuple[str, ...] | None = None  # None: the speaking families
    voices: tuple[str, ...] | None = None  # None: whatever the minting key may use
    sessions: int | None = None  # open at once, every process together
    uses: int | None = None  # requests and connections admitted, in all

    def allows(self, family: str | None) -> bool:
        return family is not None and family in (self.routes if self.routes is not None else SPEAKING)

    def may_use_voice(self, voice: str) -> bool:
        return self.voices is None or any(voice.startswith(v[:-1]) if v.endswith("*") else voice == v
                                          for v in self.voices)

    @property
    def counted(self) -> bool:
        """Whether the ledger keeps anything of it."""
        return self.sessions is not None or self.uses is not None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def looks_like_token(credential: str) -> bool:
    return credential.startswith(PREFIX)


class TokenSigner:
    """Mints and verifies tokens under one secret (``--token-secret``; a server without one generates it at start)."""

    def __init__(self, secret: str | bytes) -> None:
        raw = secret.encode() if isinstance(secret, str) else secret
        self._key = hashlib.sha256(b"cbf token secret\0" + raw).digest()
        self._mark_key = hashlib.sha256(b"cbf key mark\0" + raw).digest()

    def key_mark(self, key_digest: bytes) -> str:
        """A key's mark in a token: an HMAC of its SHA-256 (never the key; useless without the secret)."""
        return _b64(hmac.new(self._mark_key, key_digest, hashlib.sha256).digest()[:12])

    def mint(self, request: TokenRequest, tenant: str | None, key_mark: str, now: float) -> tuple[str, int]:
        """A token for ``request`` under the minting key's ``tenant`` and ``key_mark``: (token, expires_at)."""
        expires_at = int(now) + request.ttl_s
        claims: dict[str, Any] = {"i": _b64(secrets.token_bytes(12)), "e": expires_at, "k": key_mark}
        for short, value in (("t", tenant), ("r", request.routes), ("v", request.voices), ("s", request.sessions),
                             ("u", request.uses)):
            if value is not None:
                claims[short] = list(value) if isinstance(value, tuple) else value
        body = PREFIX + _b64(json.dumps(claims, separators=(",", ":")).encode())
        return body + "." + _b64(self._sign(body)), expires_at

    def seal(self, claims: bytes) -> str:
        """A token of exactly these claims' bytes under this secret, as ``mint`` makes one (``bench faults`` seals
        claims no server mints, to show they are refused even so)."""
        body = PREFIX + _b64(claims)
        return body + "." + _b64(self._sign(body))

    def _sign(self, body: str) -> bytes:
        return hmac.new(self._key, body.encode("ascii"), hashlib.sha256).digest()

    def verify(self, token: str, now: float) -> Grant:
        """The grant of a well-signed, unexpired ``token``; raises ``TokenRefused`` (unauthorized, token_expired)."""
        if len(token) > MAX_TOKEN_CHARS or not token.startswith(PREFIX) or token.count(".") != 2:
            raise TokenRefused("unauthorized", "not a valid token")
        body, _, signature = token.rpartition(".")
        try:
            given = _unb64(signature)
            expected = self._sign(body)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            raise TokenRefused("unauthorized", "not a valid token") from None
        if not hmac.compare_digest(given, expected) or signature != _b64(given):
            raise TokenRefused("unauthorized", "not a valid token")
        grant = _grant(body[len(PREFIX):])
        if grant is None:
            raise TokenRefused("unauthorized", "not a valid token")
        if now >= grant.expires_at:
            raise TokenRefused("token_expired", "this token has expired; ask for a new one")
        return grant


def _grant(encoded: str) -> Grant | None:
    """The claims of a signed body (made by ``mint``, so only a changed format fails), or None."""
    try:
        claims = json.loads(_unb64(encoded))
    except (binascii.Error, ValueError, RecursionError):  # (the last: arrays nested past the decoder's limit)
        return None
    if not isinstance(claims, dict):
        return None
    ident, expires, mark, tenant = claims.get("i"), claims.get("e"), claims.get("k"), claims.get("t")
    if not (isinstance(ident, str) and _ID.match(ident) and isinstance(expires, int) and isinstance(mark, str)
            and (tenant is None or isinstance(tenant, str))):
        return None
    lists = [claims.get(k) for k in ("r", "v")]
    counts = [claims.get(k) for k in ("s", "u")]
    if not all(v is None or (isinstance(v, list) and all(isinstance(s, str) for s in v)) for v in lists):
        return None
    if not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in counts):
        return None
    routes, voices = (tuple(v) if v is not None else None for v in lists)
    return Grant(ident, expires, tenant, mark, routes, voices, counts[0], counts[1])


# The token the connection being served was admitted with (None: a key, or no keys at all), set at its admission
# (gateway/guard/auth.py); the session registry and the tenancy read it where only the tenant's name is passed.
GRANT: ContextVar[Grant | None] = ContextVar("cbf_token_grant", default=None)


def current_grant() -> Grant | None:
    return GRANT.get()
