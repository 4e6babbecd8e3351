"""``bench faults``' credential surfaces: short-lived tokens (``POST /v1/tokens``) and browser origins
(``--cors-origins``). Each hostile input must be refused in its protocol's shape; one that opens anything is counted
``let_through`` and one the server fails on ``server_errors``: both must be 0. A few sound inputs beside them (a
single-use token's one use, the listed origin, no origin at all) must be taken, or the surface would prove nothing:
one refused is a server error too.

Tokens: forged, tampered, truncated and garbage tokens made from one the server minted; with the server's token secret
(``--token-secret``, known to a server started here) claims it never minted, signed with it: expired, another key's,
mistyped, used up, out of scope, not an object, nested past the JSON decoder's limit, huge. Each is presented as a key
is, by a random carrier: ``Authorization: Bearer`` on ``POST /v1/tts``, or on a ``/v1/stream`` WebSocket as a header,
the ``cbf.key.`` subprotocol or ``?token=``. Then single-use tokens replayed, and a narrow token on what it may not
reach (WebSocket, usage, metrics, uploads, deletions, another voice) and minting another token.

Origins: preflights, simple requests and WebSocket upgrades carrying an ``Origin`` the server does not list (another
site, ``null``, near misses of a listed one, values that are no origin at all, control bytes among them), written on
a raw socket so that no client library cleans them first. A preflight or a response with any
``Access-Control-Allow-Origin`` for one, or an upgrade answered 101, lets it through.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import random
import ssl
import time
from typing import Any, Callable
from urllib.parse import quote, urlsplit

import httpx
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from cbf_tools.bench.hostile_inputs import hostile_origins, hostile_tokens

TOKEN_REFUSALS = {"unauthorized", "token_expired", "token_used", "token_scope", "token_session_limit"}
CONCURRENCY = 4
SINGLE_USE_TOKENS = 5  # at most, each spoken once and then replayed REPLAYS times
REPLAYS = 4
PROBE_ORIGIN = "https://bench-faults-probe.invalid"  # never listed: a server that allows it allows every origin
# What a token minted for /v1/tts in the default voice may not reach: (method, path, JSON body); None: a WebSocket.
OUT_OF_SCOPE = ((None, "/v1/stream", None), ("GET", "/v1/usage", None), ("GET", "/metrics", None),
                ("GET", "/v1/voices", None), ("POST", "/v1/voices", {}), ("PUT", "/v1/lexicons/bench-faults", {}),
                ("DELETE", "/v1/voices/bench-faults-nobody", None), ("DELETE", "/v1/lexicons/bench-faults", None),
                ("POST", "/v1/tts", {"text": "Hi.", "voice": "bench-faults-other"}),
                ("POST", "/v1/tokens", {"ttl_s": 60}), ("POST", "/v1/tokens", {}))


def _tally() -> dict[str, Any]:
    return {"server_errors": 0, "refused": 0, "let_through": 0, "kinds": {}}


EXAMPLES = 5  # of the inputs let through or failed on, kept in the summary (what to look into)


def _record(counts: dict[str, Any], kind: str, outcome: str, what: str = "") -> None:
    counts[outcome] += 1
    counts["kinds"].setdefault(kind, {"inputs": 0, "let_through": 0, "server_errors": 0})
    counts["kinds"][kind]["inputs"] += 1
    if outcome != "refused":
        counts["kinds"][kind][outcome] += 1
        if len(examples := counts.setdefault("examples", [])) < EXAMPLES:
            examples.append(f"{outcome}: {kind}: {what[:160]}")


# -- tokens -----------------------------------------------------------------------------------------------------------

def _bearer(credential: str) -> dict[str, bytes]:
    return {"authorization": (b"Bearer " + credential.encode("utf-8", "surrogatepass")).strip()}  # (h11 sends no
    # trailing space)


async def _over_http(http: httpx.AsyncClient, credential: str, method: str = "POST", path: str = "/v1/tts",
                     body: Any = None) -> str:
    """The outcome of ``credential`` presented as a bearer key: refused (401, 403 or 429 with a token's refusal
    code, or a 4xx the HTTP layer gave before the app), server_errors (5xx, a dropped connection, a token's refusal
    code with another status) or let_through (the app's own answer: it got past the check)."""
    if body is None and method == "POST" and path == "/v1/tts":
        body = {"text": "Hi."}
    try:
        reply = await http.request(method, path, headers=_bearer(credential),
                                   **({"json": body} if body is not None else {}))
    except httpx.HTTPError:
        return "server_errors"
    if reply.status_code >= 500:
        return "server_errors"
    code = None
    with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
        code = reply.json()["error"]["code"]
    if code in TOKEN_REFUSALS:  # in its shape: 401, 403 (token_scope) or 429 (token_session_limit)
        return "refused" if reply.status_code in (401, 403, 429) else "server_errors"
    if code is None and 400 <= reply.status_code < 500:
        return "refused"  # the HTTP layer's own (a head too large to read: 431, 400): it never reached the app
    return "let_through"  # an answer of the app's own: past the check


_TCHARS = frozenset("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _carrier_fits(credential: str, carrier: str) -> bool:
    """Whether the credential can travel by ``carrier`` as it is: a header takes printable ASCII, a subprotocol
    token characters only (a client cannot send anything else there)."""
    if carrier == "subprotocol":
        return bool(credential) and set(credential) <= _TCHARS
    return credential.isascii() and credential.isprintable()


async def _over_websocket(ws_url: str, credential: str, carrier: str) -> str:
    """``credential`` on a ``/v1/stream`` upgrade by ``carrier`` (header, subprotocol, query): refused when the
    upgrade is answered with a 4xx (401, 403; 414 or 431 for one too long to read), or the socket sends an ``error``
    with a token's refusal code and then closes with 4000 + its status; let_through when it says ``ready``; anything
    else (no answer within 10 s included) is the server's error."""
    if carrier != "query" and not _carrier_fits(credential, carrier):
        carrier = "query"
    kwargs: dict[str, Any] = {"open_timeout": 10}
    url = ws_url + "/v1/stream"
    if carrier == "header":
        kwargs["additional_headers"] = {"Authorization": f"Bearer {credential}"}
    elif carrier == "subprotocol":
        kwargs["subprotocols"] = ["cbf.v1", f"cbf.key.{credential}"]
    else:
        url += "?token=" + quote(credential.encode("utf-8", "surrogatepass"), safe="")
    try:
        async with connect(url, **kwargs) as ws:
            event = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if event.get("type") == "ready":
                return "let_through"
            code = event.get("code") if event.get("type") == "error" else None
            with contextlib.suppress(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 10)
            statuses = {"token_scope": 4403, "token_session_limit": 4429}
            if code in TOKEN_REFUSALS and ws.close_code == statuses.get(code, 4401):
                return "refused"
            return "server_errors"
    except InvalidStatus as exc:
        return "refused" if 400 <= exc.response.status_code < 500 else "server_errors"
    except (InvalidHandshake, ConnectionClosed, TimeoutError, OSError, ValueError):
        return "server_errors"


async def _mint(http: httpx.AsyncClient, **wanted: Any) -> str:
    reply = await http.post("/v1/tokens", json=wanted)
    reply.raise_for_status()
    return reply.json()["token"]


def _signer(secret: str | None) -> Callable[[bytes], str] | None:
    if not secret:
        return None
    from gateway.guard.tokens import TokenSigner

    return TokenSigner(secret).seal


async def tokens(url: str, http: httpx.AsyncClient, count: int, rng: random.Random,
                 token_secret: str | None) -> dict[str, Any]:
    """The token surface on the server at ``url``, ``http`` presenting its real key (needed to mint)."""
    counts = _tally()
    ws_url = url.replace("http", "ws", 1)
    valid = await _mint(http, ttl_s=600, routes=["stream", "tts"])
    plan: list[tuple[str, str, str]] = [(kind, token, rng.choice(("http", "http", "header", "subprotocol", "query")))
                                        for kind, token in hostile_tokens(rng, count, valid, _signer(token_secret),
                                                                          time.time())]
    pending = iter(plan)

    async def worker() -> None:
        for kind, token, carrier in pending:
            outcome = (await _over_http(http, token) if carrier == "http"
                       else await _over_websocket(ws_url, token, carrier))
            _record(counts, kind, outcome, f"{carrier} {token!r}")

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    # Single-use tokens: the one use taken (a sound input), then replayed
    for _ in range(min(SINGLE_USE_TOKENS, max(1, count // 50))):
        once = await _mint(http, uses=1, routes=["stream", "tts"])
        if (outcome := await _over_http(http, once)) != "let_through":
            _record(counts, "sound use refused", "server_errors", outcome)
        for _ in range(REPLAYS):
            carrier = rng.choice(("http", "header", "subprotocol", "query"))
            _record(counts, "replayed single-use", await _over_http(http, once) if carrier == "http"
                    else await _over_websocket(ws_url, once, carrier), carrier)
    # A narrow token where it may not go, and minting with a token
    narrow = await _mint(http, routes=["tts"], voices=["default"])
    for _ in range(max(len(OUT_OF_SCOPE), count // 10)):
        method, path, body = rng.choice(OUT_OF_SCOPE)
        kind = "minted by a token" if path == "/v1/tokens" else "out of scope"
        outcome = (await _over_websocket(ws_url, narrow, rng.choice(("header", "subprotocol", "query")))
                   if method is None else await _over_http(http, narrow, method, path, body))
        _record(counts, kind, outcome, f"{method or 'WebSocket'} {path}")
    return counts


# -- origins ----------------------------------------------------------------------------------------------------------

async def _raw(url: str, head: bytes) -> tuple[int | None, dict[bytes, bytes]]:
    """``head`` written on a new connection as it is: the answer's status (None: none came, or not HTTP) and its
    headers (names in lower case); the connection is closed once they are read."""
    parts = urlsplit(url)
    tls = ssl.create_default_context() if parts.scheme == "https" else None
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port or (443 if tls else 80), ssl=tls)
    headers: dict[bytes, bytes] = {}
    try:
        writer.write(head)
        async with asyncio.timeout(10):
            status = (await reader.readline()).split()
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
    except (TimeoutError, ConnectionError):
        return None, headers
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    return (int(status[1]) if len(status) > 1 and status[0].startswith(b"HTTP/") and status[1].isdigit() else None,
            headers)


def _request(kind: str, host: bytes, origin: bytes | None, api_key: str | None) -> bytes:
    """A preflight, a simple request or a WebSocket upgrade, with ``Origin: origin`` (None: no such header)."""
    lines = {"preflight": [b"OPTIONS /v1/tts HTTP/1.1", b"Access-Control-Request-Method: POST",
                           b"Access-Control-Request-Headers: authorization, content-type"],
             "simple": [b"GET /health HTTP/1.1"],
             "upgrade": [b"GET /v1/stream HTTP/1.1", b"Upgrade: websocket", b"Connection: Upgrade",
                         b"Sec-WebSocket-Key: " + base64.b64encode(os.urandom(16)), b"Sec-WebSocket-Version: 13"]}[kind]
    lines.append(b"Host: " + host)
    if kind != "upgrade":
        lines.append(b"Connection: close")
    if api_key and kind != "preflight":  # (a browser's preflight carries no credentials)
        lines.append(b"Authorization: Bearer " + api_key.encode())
    if origin is not None:
        lines.append(b"Origin: " + origin)
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _origin_outcome(kind: str, status: int | None, headers: dict[bytes, bytes]) -> str:
    if status is None or status >= 500:
        return "server_errors"
    if kind == "upgrade":
        return "let_through" if status == 101 else "refused"
    return "let_through" if b"access-control-allow-origin" in headers else "refused"


async def allowed_origins(url: str) -> bool:
    """Whether the server at ``url`` has an origin list (--cors-origins): one that allows an origin no one lists
    allows every one, and there is nothing to refuse."""
    status, headers = await _raw(url, _request("preflight", urlsplit(url).netloc.encode(), PROBE_ORIGIN.encode(),
                                               None))
    return status is not None and headers.get(b"access-control-allow-origin") is None


async def origins(url: str, count: int, rng: random.Random, api_key: str | None, allowed: str | None) -> dict[str, Any]:
    """The origin surface: ``count`` hostile origins, each on a preflight, a simple request or an upgrade; then the
    sound ones (``allowed``, where known, and no Origin at all), each of which must be taken."""
    counts = _tally()
    host = urlsplit(url).netloc.encode()
    plan = [(kind, value, rng.choice(("preflight", "simple", "upgrade"))) for kind, value in
            hostile_origins(rng, count, allowed)]
    pending = iter(plan)

    async def worker() -> None:
        for kind, value, request in pending:
            status, headers = await _raw(url, _request(request, host, value, api_key))
            _record(counts, kind, _origin_outcome(request, status, headers), f"{request} {status} {value!r}")

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    sound: list[tuple[bytes | None, str]] = [(None, "upgrade"), (None, "simple")]
    if allowed is not None:
        sound += [(allowed.encode(), request) for request in ("preflight", "simple", "upgrade")]
    for origin, request in sound:  # each must be taken: a refusal here is the server's error
        status, headers = await _raw(url, _request(request, host, origin, api_key))
        taken = (status == 101 if request == "upgrade" else
                 status is not None and status < 400 and (origin is None or headers.get(
                     b"access-control-allow-origin") == origin))
        if not taken:
            _record(counts, "sound origin refused", "server_errors", f"{request} {status} {origin!r}")
    return counts
