"""Tenants: who a key belongs to and what it may still do now (pure: no sockets, no event loop; time is passed in).

``Tenants`` looks a presented key up (its SHA-256 compared in constant time with every known one), counts each
tenant's open sessions and utterances in flight, and keeps its ``chars_per_minute`` token bucket. A key given with
``--api-key`` belongs to no tenant (name None): no limits, like every request without any key configured.

Voices: a voice named ``OWNER--NAME`` is the tenant OWNER's (a tenant's upload is stored under its own prefix unless
uploaded ``shared``); only OWNER sees and uses it. Every other voice is shared, within each tenant's ``voices``.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from typing import Callable

from gateway.guard.keys_file import Client, key_digest

OWNER_SEPARATOR = "--"
SESSION_RETRY_S = 1.0  # what a refused session is told to wait (its tenant's sessions end when they end)
REASONS = ("sessions", "utterances", "chars", "voice", "route", "revoked", "token_scope")
_CODES = {"sessions": "tenant_session_limit", "utterances": "tenant_utterance_limit", "chars": "rate_limited",
          "voice": "voice_forbidden", "route": "route_forbidden", "revoked": "unauthorized",
          "token_scope": "token_scope"}
_STATUS = {"voice": 403, "route": 403, "revoked": 401, "token_scope": 403}


class TenantRefused(Exception):
    """A tenant at one of its limits (429, close code 4429), reaching what it may not (403, 4403), or whose key was
    removed from the file (401, 4401)."""

    def __init__(self, reason: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.reason, self.retry_after = reason, retry_after
        self.code = _CODES[reason]
        self.status = _STATUS.get(reason, 429)
        self.close_code = 4000 + self.status


BURST_S = 10.0  # a token bucket holds this many seconds' worth: a tenant idle a while may send that much at once


class TokenBucket:
    """``per_minute`` units a minute on average: full (``BURST_S`` seconds' worth) at the start, refilled
    continuously. A take that finds anything left is granted whole (the level may go below zero), so one long text is
    never refused for its length alone; a take that finds nothing left is refused with the seconds until there is."""

    def __init__(self, per_minute: int, now: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = self.rate * BURST_S
        self.level, self._at = self.capacity, now

    def take(self, units: int, now: float) -> float:
        """0.0 when granted (and taken), else the seconds to wait."""
        self.level = min(self.capacity, self.level + (now - self._at) * self.rate)
        self._at = now
        if self.level <= 0:
            return max(-self.level, 1.0) / self.rate
        self.level -= units
        return 0.0


@dataclass
class TenantState:
    """One tenant's live figures, kept across reloads while its name stays in the file."""

    client: Client
    sessions: int = 0
    in_flight: int = 0
    bucket: TokenBucket | None = None


@dataclass(frozen=True)
class Identity:
    """Who a key is: a keys-file client (``name``, ``client``), or nobody in particular (name None: --api-key, or no
    keys at all)."""

    name: str | None = None
    client: Client | None = None


ANYONE = Identity()


@dataclass
class Tenants:
    """The keys in force and each tenant's counters."""

    clients: list[Client] = field(default_factory=list)
    plain_keys: tuple[str, ...] = ()  # --api-key: keys without limits
    keyed: bool = False  # a keys file is in use: a key is needed even when it names no client (all revoked)
    on_refusal: Callable[[str, str], None] = lambda name, reason: None  # told each refusal: name, reason

    def __post_init__(self) -> None:
        self._plain = [key_digest(k) for k in self.plain_keys]
        self._states: dict[str, TenantState] = {}
        self.replace(self.clients, now=0.0)

    @property
    def guarded(self) -> bool:
        """Whether a key is needed at all."""
        return self.keyed or bool(self._plain or self._states)

    @property
    def names(self) -> list[str]:
        return list(self._states)

    def replace(self, clients: list[Client], now: float) -> set[str]:
        """The keys of a reloaded file put in force; the names no longer in it (their sessions are to be closed).
        A tenant whose name stays keeps its counters, under its new limits (and a new key, if it changed)."""
        removed = set(self._states) - {c.name for c in clients}
        old = self._states
        self._states = {}
        for client in clients:
            state = old.get(client.name) or TenantState(client)
            if state.bucket is None or state.client.chars_per_minute != client.chars_per_minute:
                state.bucket = TokenBucket(client.chars_per_minute, now) if client.chars_per_minute else None
            state.client = client
            self._states[client.name] = state
        self._by_digest = [(c.key_sha256, c) for c in clients]
        self.clients = clients
        return removed

    def identify(self, key: str | None) -> Identity | None:
        """Whose key ``key`` is; None when it is nobody's (refuse). Every known digest is compared, match or not."""
        if not self.guarded:
            return ANYONE
        if key is None:
            return None
        digest = key_digest(key)
        found: Identity | None = None
        for known, client in self._by_digest:
            if hmac.compare_digest(known, digest):
                found = Identity(client.name, client)
        for known in self._plain:
            if hmac.compare_digest(known, digest):
                found = found or ANYONE
        return found

    def identity_of_token(self, tenant: str | None, mark: str, mark_of: Callable[[bytes], str]) -> Identity | None:
        """Who minted a token (gateway/guard/tokens.py): its tenant, or an --api-key key, while the key whose
        ``mark`` it carries is still in force; None otherwise (removed, changed, or another server's)."""
        if not self.guarded:
            return ANYONE
        if tenant is not None:
            state = self._states.get(tenant)
            if state is None or not hmac.compare_digest(mark_of(state.client.key_sha256), mark):
                return None
            return Identity(state.client.name, state.client)
        found = False
        for digest in self._plain:
            found = hmac.compare_digest(mark_of(digest), mark) or found
        return ANYONE if found else None

    def client(self, name: str) -> Client | None:
        """``name``'s client in the file now (None: removed)."""
        state = self._states.get(name)
        return state.client if state is not None else None

    def state(self, name: str) -> TenantState:
        """``name``'s state; raises ``TenantRefused`` when its key was removed meanwhile."""
        state = self._states.get(name)
        if state is None:
            raise self._refuse(name, "revoked", "this API key was revoked")
        return state

    def open_session(self, name: str | None) -> None:
        if name is None:
            return
        state = self.state(name)
        limit = state.client.max_sessions
        if limit is not None and state.sessions >= limit:
            raise self._refuse(name, "sessions", f"this key is at its limit of {limit} sessions; retry when one ends",
                                SESSION_RETRY_S)
        state.sessions += 1

    def close_session(self, name: str | None) -> None:
        if name is not None and (state := self._states.get(name)) is not None and state.sessions > 0:
            state.sessions -= 1

    def start_utterance(self, name: str | None, voice: str) -> None:
        """An utterance of ``name`` in ``voice`` may start (counted in flight until ``end_utterance``)."""
        if name is None:
            return
        state = self.state(name)
        if not self.may_use_voice(name, voice):
            raise self._refuse(name, "voice", f"this key may not use the voice {voice!r}")
        limit = state.client.max_utterances_in_flight
        if limit is not None and state.in_flight >= limit:
            raise self._refuse(name, "utterances", f"this key is at its limit of {limit} utterances in flight; retry "
                                "when one is done", SESSION_RETRY_S)
        state.in_flight += 1

    def end_utterance(self, name: str | None) -> None:
        if name is not None and (state := self._states.get(name)) is not None and state.in_flight > 0:
            state.in_flight -= 1

    def take_chars(self, name: str | None, chars: int, now: float) -> None:
        """``chars`` characters of text taken from ``name``'s bucket; raises ``TenantRefused`` when it is empty."""
        if name is None:
            return
        bucket = self.state(name).bucket
        if bucket is not None and (wait := bucket.take(chars, now)):
            limit = self._states[name].client.chars_per_minute
            raise self._refuse(name, "chars", f"this key is over its {limit} characters a minute; retry in "
                               f"{wait:.1f} s", wait)

    def may_use_voice(self, name: str | None, voice: str) -> bool:
        """Whether ``name`` may see and speak with ``voice`` (anyone: every voice)."""
        if name is None:
            return True
        client = self.client(name)
        return client is not None and client.may_use_voice(voice) and owner_of(voice) in (None, name.lower())

    def upload_name(self, name: str | None, voice: str, shared: bool) -> str:
        """What ``name``'s upload called ``voice`` is stored as: under its own prefix unless ``shared``; raises
        ``TenantRefused`` for a voice it may not upload."""
        if name is None:
            return voice
        prefix = name.lower() + OWNER_SEPARATOR
        stored = voice if shared or voice.lower().startswith(prefix) else prefix + voice
        if (shared and owner_of(voice) is not None) or not self.may_use_voice(name, stored):
            raise self._refuse(name, "voice", f"this key may not upload the voice {stored!r}")
        return stored

    def refuse_route(self, name: str, path: str) -> TenantRefused:
        return self._refuse(name, "route", f"this key may not reach {path}")

    def _refuse(self, name: str, reason: str, message: str, retry_after: float | None = None) -> TenantRefused:
        self.on_refusal(name, reason)
        return TenantRefused(reason, message, retry_after)


def owner_of(voice: str) -> str | None:
    """The tenant whose voice ``voice`` is (lowercased), None for a shared one."""
    owner, separator, _ = voice.lower().partition(OWNER_SEPARATOR)
    return owner if separator and owner else None
