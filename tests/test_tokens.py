"""Tokens (gateway/guard/tokens.py), the ledger of their uses and sessions (token_ledger.py) and the origin list
(origins.py), directly: pure logic, and the ledger's files shared by processes."""

from __future__ import annotations

import argparse
import base64
import json
import multiprocessing
import random

import pytest

from gateway.guard.keys_file import Client, key_digest
from gateway.guard.origins import allowed, normalize, parse_origins
from gateway.guard.tenants import ANYONE, Tenants
from gateway.guard.token_ledger import FileLedger, MemoryLedger
from gateway.guard.tokens import (MAX_TOKEN_CHARS, SPEAKING, BadTokenRequest, TokenRefused, TokenRequest,
                                  TokenSigner, family_of)

NOW = 1_800_000_000.0
KEY = "acme-key-0123456789"


def minted(signer: TokenSigner, **wanted) -> str:
    return signer.mint(TokenRequest.parse(wanted), "acme", signer.key_mark(key_digest(KEY)), NOW)[0]


def test_a_minted_token_verifies_within_its_lifetime_and_says_its_scope() -> None:
    signer = TokenSigner("s" * 32)
    token, expires = signer.mint(TokenRequest.parse({"ttl_s": 60, "voices": ["default"], "routes": ["tts"],
                                                     "sessions": 2, "uses": 1}), "acme", "mark", NOW)
    assert expires == int(NOW) + 60
    grant = signer.verify(token, NOW + 59)
    assert (grant.tenant, grant.key_mark, grant.routes, grant.voices, grant.sessions, grant.uses) == (
        "acme", "mark", ("tts",), ("default",), 2, 1)
    with pytest.raises(TokenRefused) as refused:
        signer.verify(token, NOW + 60)
    assert (refused.value.code, refused.value.status, refused.value.close_code) == ("token_expired", 401, 4401)


def test_the_token_never_contains_the_key_in_any_encoding() -> None:
    signer = TokenSigner("s" * 32)
    token = minted(signer)
    payload = base64.urlsafe_b64decode(token.split(".")[1] + "==")
    digest = key_digest(KEY)
    for form in (KEY.encode(), digest, digest.hex().encode(), base64.b64encode(KEY.encode()),
                 base64.urlsafe_b64encode(digest).rstrip(b"=")):
        assert form not in payload and form.decode("latin-1") not in token
    assert set(json.loads(payload)) <= {"i", "e", "k", "t", "r", "v", "s", "u"}


def test_two_signers_with_one_secret_accept_each_others_tokens_and_no_other() -> None:
    token = minted(TokenSigner("shared-secret-0123"))
    assert TokenSigner("shared-secret-0123").verify(token, NOW).tenant == "acme"
    with pytest.raises(TokenRefused) as refused:
        TokenSigner("another-secret-0123").verify(token, NOW)
    assert refused.value.code == "unauthorized"


@pytest.mark.parametrize("seed", range(10))
def test_no_forged_or_tampered_token_is_accepted(seed: int) -> None:
    """1,000 a seed, 10,000 in all: a character changed, added or cut, parts swapped, claims re-encoded unsigned."""
    rng = random.Random(seed)
    signer = TokenSigner("s" * 32)
    good = [minted(signer, uses=rng.randint(1, 9)) for _ in range(8)]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.="
    accepted = 0
    for _ in range(1000):
        token = rng.choice(good)
        kind = rng.randrange(5)
        if kind == 0:
            i = rng.randrange(len(token))
            forged = token[:i] + rng.choice(alphabet.replace(token[i], "")) + token[i + 1:]
        elif kind == 1:
            forged = token[:rng.randrange(len(token))]
        elif kind == 2:
            i = rng.randrange(len(token))
            forged = token[:i] + rng.choice(alphabet) + token[i:]
        elif kind == 3:
            other = rng.choice(good)
            forged = token.rsplit(".", 1)[0] + "." + other.rsplit(".", 1)[1]
            if forged == token:
                continue
        else:
            claims = {"i": "A" * 16, "e": int(NOW) + 600, "k": "x", "t": "acme", "u": None}
            body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
            forged = f"cbft.{body}.{rng.randbytes(32).hex()[:43]}"
        try:
            signer.verify(forged, NOW)
            accepted += 1
        except TokenRefused as exc:
            assert exc.code == "unauthorized"
    assert accepted == 0


def test_huge_and_nested_credentials_are_refused_unread() -> None:
    signer = TokenSigner("s" * 32)
    nested = base64.urlsafe_b64encode(("[" * 100_000).encode()).decode()
    for forged in ("cbft." + "A" * (MAX_TOKEN_CHARS + 1) + ".x", f"cbft.{nested}.AAAA", "cbft..", "cbft.a.b.c",
                   "cbft.\udcff.x", "cbft.é.é"):
        with pytest.raises(TokenRefused):
            signer.verify(forged, NOW)


def test_route_families_and_what_no_token_reaches() -> None:
    assert family_of(None, "/v1/stream") == "stream"
    assert family_of("POST", "/v1/tts") == "tts"
    assert family_of("POST", "/v1/webrtc/offer") == "webrtc"
    assert family_of("DELETE", "/v1/whep/sessions/x") == "whep"
    assert family_of(None, "/v1/text-to-speech/default/stream-input") == "elevenlabs"
    assert family_of("GET", "/v1/voices") == "voices"
    for method, path in (("POST", "/v1/voices"), ("DELETE", "/v1/voices/default"), ("PUT", "/v1/lexicons/x"),
                         ("POST", "/v1/tokens"), ("GET", "/v1/usage"), ("POST", "/v1/admin/drain"),
                         ("GET", "/metrics"), ("POST", "/v1/ttsx")):
        assert family_of(method, path) is None
    grant = TokenSigner("s" * 32).verify(minted(TokenSigner("s" * 32)), NOW)
    assert all(grant.allows(f) for f in SPEAKING) and not grant.allows("voices") and not grant.allows(None)


@pytest.mark.parametrize("body, field", [({"ttl_s": 59}, "ttl_s"), ({"ttl_s": 3601}, "ttl_s"), ({"ttl_s": True}, "ttl_s"),
                                         ({"routes": ["admin"]}, "admin"), ({"routes": []}, "routes"),
                                         ({"voices": ["../x"]}, "voices"), ({"sessions": 0}, "sessions"),
                                         ({"uses": "1"}, "uses"), ({"scope": 1}, "scope"),
                                         ({"voices": ["v"] * 33}, "voices")])
def test_a_bad_request_names_its_field(body: dict, field: str) -> None:
    with pytest.raises(BadTokenRequest, match=field):
        TokenRequest.parse(body)


def test_voices_in_scope() -> None:
    signer = TokenSigner("s" * 32)
    grant = signer.verify(minted(signer, voices=["default", "acme--*"]), NOW)
    assert grant.may_use_voice("default") and grant.may_use_voice("acme--bob") and not grant.may_use_voice("other")


def test_a_token_stops_with_its_key() -> None:
    signer = TokenSigner("s" * 32)
    tenants = Tenants([Client("acme", key_digest(KEY))], ("plain-key-0123456789",))
    mark = signer.key_mark(key_digest(KEY))
    assert tenants.identity_of_token("acme", mark, signer.key_mark).name == "acme"
    assert tenants.identity_of_token(None, signer.key_mark(key_digest("plain-key-0123456789")),
                                     signer.key_mark) is ANYONE
    assert tenants.identity_of_token(None, mark, signer.key_mark) is None  # acme's mark is no plain key's
    tenants.replace([Client("acme", key_digest("acme-new-key-012345"))], 0.0)
    assert tenants.identity_of_token("acme", mark, signer.key_mark) is None
    tenants.replace([], 0.0)
    assert tenants.identity_of_token("acme", mark, signer.key_mark) is None


def grant_of(**wanted):
    signer = TokenSigner("s" * 32)
    return signer.verify(minted(signer, **wanted), NOW)


@pytest.mark.parametrize("ledger_kind", ["memory", "file"])
def test_the_ledger_counts_uses_and_sessions(ledger_kind: str, tmp_path) -> None:
    ledger = MemoryLedger() if ledger_kind == "memory" else FileLedger(tmp_path)
    once = grant_of(uses=1)
    assert ledger.use(once) and not ledger.use(once)
    two = grant_of(sessions=2)
    assert ledger.open_session(two) and ledger.open_session(two) and not ledger.open_session(two)
    ledger.close_session(two)
    assert ledger.open_session(two)


def _use_in_child(directory: str, grant, results) -> None:
    results.put(FileLedger(directory).use(grant))


def test_a_single_use_token_is_taken_once_across_processes(tmp_path) -> None:
    grant = grant_of(uses=1)
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    children = [context.Process(target=_use_in_child, args=(str(tmp_path), grant, results)) for _ in range(6)]
    for child in children:
        child.start()
    for child in children:
        child.join(10)
    assert sorted(results.get(timeout=5) for _ in children) == [False] * 5 + [True]


def test_a_dead_process_leaves_no_session_behind(tmp_path) -> None:
    grant = grant_of(sessions=1)
    context = multiprocessing.get_context("fork")
    child = context.Process(target=lambda: FileLedger(tmp_path).open_session(grant))
    child.start()
    child.join(10)
    assert FileLedger(tmp_path).open_session(grant)  # the child's session went with it


def test_origins() -> None:
    assert parse_origins("https://App.Example:443/, http://localhost:3000") == (
        "https://app.example", "http://localhost:3000")
    for bad in ("*", "null", "https://a.example/path", "ftp://a.example", "a.example"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_origins(bad)
    origins = parse_origins("https://a.example")
    assert allowed(origins, "https://a.example") and allowed(origins, None) and allowed((), "https://evil.example")
    assert not allowed(origins, "https://evil.example") and not allowed(origins, "null")
    assert normalize("null") is None
