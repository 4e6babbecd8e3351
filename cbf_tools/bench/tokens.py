"""``chatterbox-fast bench tokens``: what a token costs a request, and whether a forged one gets in (issue 49), in
this process (no server: the gateway's own code, gateway/guard/tokens.py and auth.py).

- mint: ``TokenSigner.mint`` of a scoped token (routes, voices), microseconds each (this process's CPU time, which
  other work on the machine does not inflate, and the wall clock's beside it);
- verify: ``TokenSigner.verify`` of it;
- request check: ``gateway.guard.auth.check`` of a ``/v1/stream`` WebSocket scope presenting it to a server with a
  key: the shape, the signature, the expiry, the minting key still in force, the route family; what every request
  and connection with a token pays (target: <= 50 us);
- forgeries: for each of ``--seeds`` seeds, ``--forgeries`` tokens made from real ones: a character changed,
  inserted or dropped anywhere, truncated, its claims changed (a later expiry, more routes, another tenant) under the
  old signature, signed with another secret, another token's signature; each goes through the same request check,
  and none may be let through (target: 0 of 10,000 over 10 seeds).

Prints a line for the costs, one for the forgeries and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import base64
import contextvars
import json
import random
import sys
import time
from typing import Any, Callable

from gateway.guard.auth import Refusal, check
from gateway.guard.tenancy import Tenancy
from gateway.guard.tokens import PREFIX, TokenRequest, TokenSigner
from gateway.metrics import Metrics

KEY = "bench-tokens-key-0123456789"
TARGET_US = 50.0
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
REQUEST = TokenRequest(ttl_s=600, routes=("stream", "webrtc", "tts"), voices=("default", "team-*"))


def _scope() -> dict[str, Any]:
    return {"type": "websocket", "path": "/v1/stream", "headers": []}


def _per_call_us(work: Callable[[], object], iterations: int) -> tuple[float, float]:
    """This process's CPU microseconds per call (what the call costs, whatever else the machine runs), and the wall
    clock's."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(iterations):
        work()
    return (round(1e6 * (time.process_time() - cpu) / iterations, 2),
            round(1e6 * (time.perf_counter() - wall) / iterations, 2))


def check_apart(scope: dict, tenancy: Tenancy, key: str) -> Refusal | None:
    """``check`` in a context of its own, as each request's task has: it puts a token's grant in the context, which
    here, called from the caller's own, would then scope every later utterance of the caller (a test process's)."""
    return contextvars.Context().run(check, scope, tenancy, key)


def costs(tenancy: Tenancy, iterations: int) -> dict[str, tuple[float, float]]:
    """CPU and wall microseconds per mint, per verify, and per request check of a token."""
    signer, mark = tenancy.signer, tenancy.key_mark(KEY)
    token, _ = signer.mint(REQUEST, None, mark, time.time())

    def checked() -> None:
        if (refusal := check_apart(_scope(), tenancy, token)) is not None:
            raise AssertionError(f"a sound token was refused: {refusal}")

    return {"mint_us": _per_call_us(lambda: signer.mint(REQUEST, None, mark, time.time()), iterations),
            "verify_us": _per_call_us(lambda: signer.verify(token, time.time()), iterations),
            "request_check_us": _per_call_us(checked, iterations)}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _claims(token: str) -> dict[str, Any]:
    body = token[len(PREFIX):].rpartition(".")[0]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def _reclaimed(token: str, rng: random.Random) -> str:
    """The token's claims changed (a later expiry, every route, another tenant), under its own signature."""
    claims = _claims(token)
    change = rng.choice(("e", "r", "t", "v"))
    claims[change] = {"e": claims["e"] + 86400, "r": ["stream", "voices", "tts", "webrtc"], "t": "someone-else",
                      "v": ["*"]}[change]
    body = PREFIX + _b64(json.dumps(claims, separators=(",", ":")).encode())
    return body + "." + token.rpartition(".")[2]


def forge(token: str, other: str, stranger: TokenSigner, mark: str, rng: random.Random) -> str:
    """One forgery of ``token`` (``other``: another sound token; ``stranger``: a signer with another secret)."""
    kind = rng.randrange(7)
    at = rng.randrange(len(token))
    if kind == 0:  # a character changed
        return token[:at] + rng.choice(ALPHABET.replace(token[at], "")) + token[at + 1:]
    if kind == 1:  # one inserted
        return token[:at] + rng.choice(ALPHABET) + token[at:]
    if kind == 2:  # one dropped
        return token[:at] + token[at + 1:]
    if kind == 3:  # truncated
        return token[:at]
    if kind == 4:
        return _reclaimed(token, rng)
    if kind == 5:  # sound claims, another secret
        return stranger.mint(REQUEST, None, mark, time.time())[0]
    return token.rpartition(".")[0] + "." + other.rpartition(".")[2]  # another token's signature


def forgeries(tenancy: Tenancy, seeds: int, count: int) -> dict[str, Any]:
    """Forged tokens let through by the request check (must be 0), over ``seeds`` seeds of ``count`` each."""
    mark = tenancy.key_mark(KEY)
    let_through, tried = 0, 0
    for seed in range(seeds):
        rng = random.Random(seed)
        stranger = TokenSigner(rng.randbytes(32))
        sound = [tenancy.signer.mint(REQUEST, None, mark, time.time())[0] for _ in range(8)]
        for _ in range(count):
            token, other = rng.sample(sound, 2)
            forged = forge(token, other, stranger, mark, rng)
            tried += 1
            if forged != token and check_apart(_scope(), tenancy, forged) is None:
                let_through += 1
                print(f"bench tokens: a forged token was let through (seed {seed}): {forged}", file=sys.stderr)
    return {"seeds": seeds, "tried": tried, "let_through": let_through}


def run(args: argparse.Namespace) -> int:
    """Measure and print; exit status 1 when a forged token was let through."""
    tenancy = Tenancy(None, (KEY,), Metrics())
    figures = costs(tenancy, args.iterations)
    forged = forgeries(tenancy, args.seeds, args.forgeries)
    check_us = figures["request_check_us"][0]
    print("tokens, CPU us a call (wall clock's in brackets; " f"{args.iterations} calls each): "
          + ", ".join(f"{name.removesuffix('_us').replace('_', ' ')} {cpu} ({wall})"
                      for name, (cpu, wall) in figures.items())
          + f"; a request's check vs <= {TARGET_US:g} us: {'met' if check_us <= TARGET_US else 'not met'}")
    print(f"forged or tampered tokens let through: {forged['let_through']} of {forged['tried']} over "
          f"{forged['seeds']} seeds (target 0)")
    print(json.dumps({"bench": "tokens", **figures, "forgeries": forged}))
    return 1 if forged["let_through"] else 0
