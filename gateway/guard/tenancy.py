"""The keys in force for one gateway process: the keys file loaded, watched and reloaded, each tenant's usage
counted, and the connections of a removed key closed.

The file is read again when it changes (its size, inode or modification time, looked at once a second) and on
SIGHUP (gateway/host/draining.py). A file that does not parse is logged once, shown in /health, and changes nothing:
the keys before it stay in force. A key removed stops working for new requests at once; its WebSockets are closed
with 4401, its WebRTC peers hung up and its HTTP speech streams ended (gateway/app.py's ``on_revoked`` hook), within
the second; each is counted as a ``revoked`` refusal.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

from engine.protocol import SAMPLE_RATE, Chunk, Done
from gateway.guard import keys_file
from gateway.guard.keys_file import key_digest
from gateway.guard.token_ledger import FileLedger, MemoryLedger, ledger_for
from gateway.guard.tenants import Identity, TenantRefused, Tenants
from gateway.guard.tokens import Grant, TokenRefused, TokenSigner, current_grant, family_of
from gateway.metrics import Metrics

log = logging.getLogger("chatterbox_fast.gateway")
WATCH_INTERVAL_S = 0.5
SETTLE_S = 0.2  # a change is read once the file has stayed the same this long (not while it is being written)
REVOKED_CLOSE_CODE = 4401
REVOKED_REASON = "the API key was revoked"


def load(path: str) -> list[keys_file.Client]:
    """The clients of the keys file at ``path``; raises ``KeysFileError`` (unreadable files included)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise keys_file.KeysFileError(0, f"cannot read the keys file {path}: {exc.__class__.__name__}") from None
    return keys_file.parse(text)


def _signature(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


class LiveSocket:
    """One WebSocket connection while it is open: closed from outside when its tenant's key is removed (its later
    sends are dropped, the client's answer to the close ends the endpoint's receive loop)."""

    def __init__(self, scope: dict[str, Any], send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        self.scope, self._send, self.closed = scope, send, False

    @property
    def tenant(self) -> str | None:
        return self.scope.get("state", {}).get("tenant")

    async def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        if message["type"] == "websocket.close":
            self.closed = True
        await self._send(message)

    async def revoke(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            await self._send({"type": "websocket.close", "code": REVOKED_CLOSE_CODE, "reason": REVOKED_REASON})
        except Exception as exc:  # not accepted yet, or already gone: nothing to close
            log.debug("a revoked key's socket: %s", exc)


class Tenancy:
    """The keys in force (``tenants``), where they come from, and the adapters around them."""

    def __init__(self, path: str | None, plain_keys: tuple[str, ...], metrics: Metrics,
                 clock: Callable[[], float] = time.monotonic, token_secret: str | bytes | None = None,
                 shared_dir: str | None = None) -> None:
        """Raises ``KeysFileError`` when ``path`` does not load (the server refuses to start). ``token_secret``:
        what tokens are signed with (None: one generated now, good for this process only); ``shared_dir``: where
        `serve --processes N` keeps what its processes count together (tokens' uses and sessions)."""
        self.path, self.metrics, self._clock = path, metrics, clock
        self.signer = TokenSigner(token_secret if token_secret else os.urandom(32))
        self.ledger: MemoryLedger | FileLedger = ledger_for(shared_dir)
        self._signature = _signature(path) if path else None
        self.tenants = Tenants(load(path) if path else [], plain_keys, keyed=path is not None)
        self.tenants.on_refusal = self._refused
        self.error: str | None = None  # why the last reload was refused
        self.loaded_at = time.time()
        self.live: set[LiveSocket] = set()
        self.on_revoked: list[Callable[[set[str]], Awaitable[None]]] = []  # closes what else a removed key holds

    @property
    def named(self) -> bool:
        """Whether there is a keys file (tenants to count)."""
        return self.path is not None

    def identify(self, key: str | None) -> Identity | None:
        return self.tenants.identify(key)

    def key_mark(self, key: str | None) -> str:
        """The mark a token minted with ``key`` carries (gateway/guard/tokens.py)."""
        return self.signer.key_mark(key_digest(key or ""))

    def admit_token(self, token: str, method: str | None, path: str, now: float) -> tuple[Identity, Grant]:
        """Whose ``token`` is and what it grants, for ``path`` (``method`` None: a WebSocket), one of its uses taken;
        raises ``TokenRefused`` (unauthorized, token_expired, token_scope, token_used) or ``TenantRefused`` (its
        key may not reach ``path``)."""
        grant = self.signer.verify(token, now)
        identity = self.tenants.identity_of_token(grant.tenant, grant.key_mark, self.signer.key_mark)
        if identity is None:
            raise TokenRefused("unauthorized", "this token's key is no longer in force")
        if not grant.allows(family_of(method, path)):
            raise TokenRefused("token_scope", f"this token may not reach {path}")
        if identity.client is not None and not identity.client.may_reach(path):
            raise self.tenants.refuse_route(identity.client.name, path)
        if grant.uses is not None and not self.ledger.use(grant):
            raise TokenRefused("token_used", "this token has been used up")
        return identity, grant

    async def reload(self, why: str) -> bool:
        """Read the file again; True when its keys are now in force."""
        assert self.path is not None
        self._signature = _signature(self.path)
        try:
            clients = load(self.path)
        except keys_file.KeysFileError as exc:
            if str(exc) != self.error:
                log.error("keys file %s refused (%s); the keys before it stay in force: %s", self.path, why, exc)
            self.error = str(exc)
            return False
        removed = self.tenants.replace(clients, self._clock())
        self.error, self.loaded_at = None, time.time()
        log.info("keys file %s reloaded (%s): %d keys%s", self.path, why, len(clients),
                 f"; removed: {', '.join(sorted(removed))}" if removed else "")
        if removed:
            await self._close(removed)
        return True

    async def _close(self, removed: set[str]) -> None:
        sockets = [live for live in list(self.live) if live.tenant in removed and not live.closed]
        for live in sockets:
            self.count_revoked(live.tenant)
        await asyncio.gather(*(live.revoke() for live in sockets))
        for hook in self.on_revoked:
            await hook(removed)

    async def watch(self) -> None:
        """Reload whenever the file changes (and has settled), until cancelled."""
        assert self.path is not None
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            if (seen := _signature(self.path)) != self._signature:
                await asyncio.sleep(SETTLE_S)
                if _signature(self.path) == seen:
                    await self.reload("it changed")

    def health(self) -> dict[str, Any] | None:
        """What /health says of the keys: never a key."""
        if self.path is None:
            return None
        return {"file": self.path, "tenants": len(self.tenants.names),
                "loaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.loaded_at)),
                **({"reload_error": self.error} if self.error else {})}

    def count_revoked(self, name: str | None) -> None:
        """One open session or stream of ``name`` closed because its key was removed."""
        if name is not None:
            self._refused(name, "revoked")

    def _refused(self, name: str, reason: str) -> None:
        self.metrics.tenant_refusals.labels(name, reason).inc()

    def charge(self, name: str | None, chars: int) -> None:
        """``chars`` characters of text in from ``name``: counted, or refused (``TenantRefused``) over its rate."""
        if name is None:
            return
        self.tenants.take_chars(name, chars, self._clock())
        self.metrics.tenant_chars.labels(name).inc(chars)

    async def start(self, name: str | None, voice: str, start: Callable[[], Awaitable[Any]]) -> Any:
        """``start()``'s utterance, once ``name`` may start one in ``voice`` (``TenantRefused`` otherwise); counted
        in flight until done or cancelled. A connection admitted with a token speaks only its voices."""
        if (grant := current_grant()) is not None and not grant.may_use_voice(voice):
            if name is not None:
                self._refused(name, "token_scope")
            raise TenantRefused("token_scope", f"this token may not use the voice {voice!r}")
        if name is None:
            return await start()
        self.tenants.start_utterance(name, voice)
        try:
            inner = await start()
        except BaseException:
            self.tenants.end_utterance(name)
            raise
        return TenantUtterance(inner, name, self, self._clock())


class TenantUtterance:
    """A tenant's utterance: its audio, its first audio and its end counted under its name; its place in flight
    given back once it is done, failed or cancelled."""

    def __init__(self, inner: Any, name: str, tenancy: Tenancy, started: float) -> None:
        self._inner, self._name, self._tenancy, self._started = inner, name, tenancy, started
        self._released = False
        self.id = inner.id

    def __getattr__(self, attribute: str) -> Any:  # text, flush, end, playout, worker, finished: the inner utterance's
        return getattr(self._inner, attribute)

    async def cancel(self) -> None:
        self._release()
        await self._inner.cancel()

    def _release(self) -> None:
        if not self._released:
            self._released = True
            self._tenancy.tenants.end_utterance(self._name)

    async def events(self) -> AsyncIterator[Chunk | Done]:
        metrics, name, first = self._tenancy.metrics, self._name, True
        audio = metrics.tenant_audio.labels(name)
        try:
            async for event in self._inner.events():
                if isinstance(event, Chunk):
                    if first:
                        first = False
                        metrics.tenant_ttfa.labels(name).observe(self._tenancy._clock() - self._started)
                    audio.inc(len(event.pcm) / 2 / SAMPLE_RATE)
                else:
                    metrics.tenant_utterances.labels(name).inc()
                yield event
        finally:
            self._release()
