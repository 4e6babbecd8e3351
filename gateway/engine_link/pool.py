"""Several engine workers behind one gateway: the interface of ``EngineClient``, spread over one client per worker.

New utterances go to the available worker with the fewest utterances in flight; among equally busy ones, to the one
that has started the fewest so far (so idle workers take turns rather than the first one taking everything), then
the first given. Voice uploads and deletions go to every connected worker; workers may keep their own voices
directories or share one (then all but one answer ``exists`` / ``unknown_voice``, which is success). With one URL the
pool behaves exactly like that worker's ``EngineClient``.

A worker that connects (a new one, one that comes back) first joins (``_join``): it is given every cloned voice and
lexicon another connected worker holds and it lacks, and loses those this gateway deleted since it started and did
not add again; until then it takes no new utterances. Copies only ever go to the one joining, so a voice deleted while
a worker was away does not come back from it.

A ``dns+ws://NAME:PORT`` URL is one worker per address of NAME, resolved again every ``resolve_interval`` seconds
(gateway/engine_link/discovery.py): new addresses become workers; a worker whose address vanished is drained (its
utterances in flight go on, new ones go elsewhere) and closed once it has none left.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence

from engine.protocol import EngineReady, Reading, voice_key
from engine.traces import NO_SPAN, Span
from gateway.engine_link.client import EngineClient, EngineRequestError, EngineUnavailable, RemoteUtterance
from gateway.engine_link.discovery import PREFIX, Changes, Membership, Resolver, parse_dns_url, resolve
from gateway.engine_link.failover import FailoverPolicy, FailoverUtterance

log = logging.getLogger("chatterbox_fast.gateway")


@dataclass(frozen=True)
class _Kept:
    """One kind of stored thing the pool keeps alike on its workers, through the client's methods for it."""

    what: str  # "voices", "lexicons"
    list: Callable[[EngineClient], Awaitable[list[dict[str, Any]]]]
    get: Callable[[EngineClient, str], Awaitable[bytes]]
    add: Callable[[EngineClient, str, bytes], Awaitable[dict[str, Any]]]
    delete: Callable[[EngineClient, str], Awaitable[None]]
    exists: str  # the code of an add that found it there (workers sharing a directory): success
    unknown: str  # the code of a delete that found nothing: success
    key: Callable[[str], str]  # a name as the workers store it
    copied: Callable[[dict[str, Any]], bool]  # which listed ones travel


VOICES = _Kept("voices", lambda c: c.list_voices(), lambda c, name: c.get_voice(name),
               lambda c, name, data: c.add_voice(name, data), lambda c, name: c.delete_voice(name), "exists",
               "unknown_voice", voice_key, lambda voice: voice.get("kind") == "file")  # not a built-in or server's own
LEXICONS = _Kept("lexicons", lambda c: c.list_lexicons(), lambda c, name: c.get_lexicon(name),
                 lambda c, name, data: c.add_lexicon(name, data), lambda c, name: c.delete_lexicon(name),
                 "", "unknown_lexicon", str, lambda lexicon: True)  # an add replaces one: never "exists"


class EnginePool:
    def __init__(self, urls: Sequence[str], secret: str | None = None, *, resolve_interval: float = 5.0,
                 resolver: Resolver = resolve, failover: FailoverPolicy = FailoverPolicy(),
                 on_failover: Callable[[bool], None] = lambda moved: None, lead: float | None = None) -> None:
        """``resolver``: how ``dns+ws://`` names are resolved (the system resolver; tests inject their own);
        ``failover``: how an utterance whose worker went away goes on elsewhere; ``on_failover(moved)``: told of each
        move (True) and each utterance lost with its worker while failover is on (False); ``lead``: each utterance's
        lead over what its client has taken (serve --client-lead; None: the workers' default)."""
        if not urls:
            raise ValueError("an engine pool needs at least one URL")
        self.lead = lead
        self.secret, self.resolve_interval, self.resolver = secret, resolve_interval, resolver
        self.memberships = [Membership(parse_dns_url(url)) for url in urls if url.startswith(PREFIX)]
        self.clients = [self._client(url) for url in urls if not url.startswith(PREFIX)]
        self.draining: set[str] = set()  # URLs of clients taking no new utterances
        self._tasks: list[asyncio.Task[None]] = []
        self.failover, self.on_failover = failover, on_failover
        self.failovers = {"moved": 0, "given_up": 0}  # for /health
        self._deleted: dict[str, set[str]] = {VOICES.what: set(), LEXICONS.what: set()}  # since it started, by name

    @property
    def ready(self) -> EngineReady | None:
        """The first available engine's greeting, or None when none is available."""
        return next((client.ready for client in self.clients if client.available), None)

    @property
    def available(self) -> bool:
        return any(client.available for client in self.clients)

    @property
    def engines(self) -> list[dict[str, Any]]:
        """Per worker, for /health: its URL, whether it is up, its engine and device, its utterances in flight and
        started so far, how many of its connections were lost, why the last one failed, the back-off before the next
        try, whether it is draining (discovery no longer lists it) or joining (being given the voices and lexicons it
        lacks), the state of its TTS server where it drives one, and its voice prompts on the device (voices, bytes,
        limit) where it keeps them."""
        out = []
        for client in self.clients:
            ready = client.ready if client.reachable else None
            out.append({"url": client.url, "available": client.available, "joining": client.joining,
                        "engine": ready and ready.engine, "state": ready and ready.state,
                        "device": ready and ready.device, "in_flight": client.in_flight, "started": client.started, "lost": client.lost,
                        "last_error": client.last_error, "draining": client.url in self.draining,
                        "retry_in": None if client.retry_in is None else round(client.retry_in, 2),
                        **({"backend": client.ready.backend} if client.ready and client.ready.backend else {}),
                        **({"prompt_cache": ready.prompt_cache} if ready and ready.prompt_cache else {}),
                        **({"memory": ready.memory} if ready and ready.memory else {}),
                        **({"utilization": ready.utilization} if ready and ready.utilization is not None else {})})
        return out

    @property
    def queued_audio(self) -> dict[str, int]:
        """For /health: audio received from the workers that the sessions and streams have not taken yet, in all and
        for the utterance holding most (a client that stops reading holds about serve --client-lead of it)."""
        queued = [size for client in self.clients for size in client.queued_bytes()]
        return {"bytes": sum(queued), "max_utterance_bytes": max(queued, default=0)}

    def _available(self, joining: bool = False) -> list[EngineClient]:
        """The workers taking new utterances; with ``joining``, those taking voice requests (joining ones too)."""
        clients = [client for client in self.clients if (client.reachable if joining else client.available)]
        if not clients:
            raise EngineUnavailable("no engine worker is connected")
        return clients

    def start_background(self) -> None:
        for client in self.clients:
            client.start_background()
        self._tasks = [asyncio.create_task(self._discover(membership)) for membership in self.memberships]

    async def _discover(self, membership: Membership) -> None:
        target = membership.target
        while True:
            try:
                addresses = await self.resolver(target.name, target.port)
            except Exception as exc:  # socket.gaierror, a timeout...: keep the workers we have
                log.warning("engine discovery: cannot resolve %s (%s); keeping %d workers", target.name, exc,
                            len(membership.active), exc_info=not isinstance(exc, OSError))
            else:
                self._apply(membership, membership.resolved(addresses))
            await self._close_drained(membership)
            await asyncio.sleep(self.resolve_interval)

    def _apply(self, membership: Membership, changes: Changes) -> None:
        for url in changes.add:
            log.info("engine discovery: %s -> new worker %s", membership.target.name, url)
            client = self._client(url)
            self.clients.append(client)
            client.start_background()
        for url in changes.drain:
            log.info("engine discovery: %s no longer lists %s; draining it", membership.target.name, url)
            self.draining.add(url)
        self.draining -= set(changes.revive)

    async def _close_drained(self, membership: Membership) -> None:
        """Drained workers with no utterance left are closed and forgotten."""
        for client in [c for c in self.clients if c.url in membership.draining and c.in_flight == 0]:
            self.clients.remove(client)
            self.draining.discard(client.url)
            membership.drained(client.url)
            await client.close()

    def _client(self, url: str) -> EngineClient:
        client = EngineClient(url, self.secret)
        client.lead = self.lead
        client.on_ready = self._join
        return client

    async def _join(self, client: EngineClient) -> None:
        """Give a worker that just connected what its peers hold (logged; a failure is a warning, and the worker
        takes utterances all the same)."""
        peers = [peer for peer in self.clients if peer is not client and peer.reachable]
        try:
            (voices, stale_voices), (lexicons, stale_lexicons) = [await self._catch_up(client, peers, kept)
                                                                  for kept in (VOICES, LEXICONS)]
        except Exception as exc:  # it went away, or timed out
            log.warning("engine %s: copying voices and lexicons to it failed: %s", client.url, exc,
                        exc_info=not isinstance(exc, (EngineUnavailable, EngineRequestError, TimeoutError)))
            return
        if peers:
            log.info("engine %s: copied %d voices, %d lexicons from %s", client.url, voices, lexicons,
                     ", ".join(peer.url for peer in peers))
        if stale_voices or stale_lexicons:
            log.info("engine %s: deleted %d voices, %d lexicons deleted through this gateway while it was away",
                     client.url, stale_voices, stale_lexicons)

    async def _catch_up(self, client: EngineClient, peers: list[EngineClient], kept: _Kept) -> tuple[int, int]:
        """Delete on ``client`` what this gateway deleted, then copy to it, one at a time, what a peer holds and it
        lacks; returns how many were copied and deleted. A peer that fails is passed over, an item that fails is
        logged and passed over."""
        deleted = self._deleted[kept.what]
        if not peers and not deleted:
            return 0, 0
        held = {item["name"] for item in await kept.list(client)}
        stale = sorted(held & deleted)
        for name in stale:
            await self._tolerating(kept.delete(client, name), kept.unknown)
        copied = 0
        for peer in peers:
            try:
                for item in await kept.list(peer):
                    name = item["name"]
                    if name in held or name in deleted or not kept.copied(item):
                        continue
                    held.add(name)
                    try:
                        copied += await self._tolerating(kept.add(client, name, await kept.get(peer, name)),
                                                         kept.exists)
                    except EngineRequestError as exc:
                        log.warning("engine %s: %s %r from %s not copied: %s (%s)", client.url, kept.what, name,
                                    peer.url, exc, exc.code)
            except (EngineUnavailable, TimeoutError) as exc:
                log.warning("engine %s: cannot copy %s from %s: %s", client.url, kept.what, peer.url, exc)
        return copied, len(stale)

    @staticmethod
    async def _tolerating(call: Awaitable[Any], tolerated: str) -> bool:
        """Whether ``call`` did it (True) or found it done (False: refused with ``tolerated``)."""
        try:
            await call
        except EngineRequestError as exc:
            if exc.code != tolerated:
                raise
            return False
        return True

    async def wait_ready(self, timeout: float) -> bool:
        """True as soon as one worker is ready, False when none is within ``timeout`` seconds."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.available:
            if asyncio.get_running_loop().time() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*(client.close() for client in self.clients))

    async def start(self, voice: str, reading: Reading = Reading(), span: Span = NO_SPAN) -> FailoverUtterance:
        """On the least busy worker that is not draining; should that worker go away mid-way, the rest goes on on
        another of the same engine and weights (gateway/engine_link/failover.py): never in another voice. With none
        to take it now (every worker restarting, say), it waits for one within the failover wait as its events are
        read, and fails then as it would have at once; with failover off (a wait of 0) it fails at once. ``span``:
        the utterance's trace (gateway/traces.py), which every worker saying it continues."""
        kind: tuple[str, str] | None = None

        async def start_one() -> RemoteUtterance:
            nonlocal kind
            utterance = await self._start_one(voice, reading, kind, span.traceparent)
            if kind is None:  # its first worker
                span.set(engine=utterance.engine_kind[0] if utterance.engine_kind else None, worker=utterance.worker)
            kind = utterance.engine_kind  # the first worker's: a move goes to one of the same (the same voice)
            return utterance

        try:
            first: RemoteUtterance | None = await start_one()
        except EngineUnavailable as exc:
            if self.failover.wait_s <= 0:
                span.end(error=exc.code)
                raise
            first = None
        except BaseException as exc:  # a refusal, the caller gone
            span.end(error=getattr(exc, "code", type(exc).__name__))
            raise
        return FailoverUtterance(first, start_one, self.failover, self._moved, span)

    async def _start_one(self, voice: str, reading: Reading, kind: tuple[str, str] | None = None,
                         traceparent: str | None = None) -> RemoteUtterance:
        """On the least busy worker taking utterances (of engine and weights ``kind``, when given)."""
        serving = [client for client in self._available() if client.url not in self.draining
                   and (kind is None or client.engine_kind == kind)]
        if not serving:
            raise EngineUnavailable("no engine worker to go to" if kind else
                                    "every connected engine worker is draining")
        client = min(serving, key=lambda c: (c.in_flight, c.started))  # min keeps the first of equals
        return await client.start(voice, reading, traceparent)

    def _moved(self, moved: bool) -> None:
        self.failovers["moved" if moved else "given_up"] += 1
        self.on_failover(moved)

    async def list_voices(self) -> list[dict[str, Any]]:
        return await self._union(lambda client: client.list_voices())

    async def _union(self, call: Callable[[EngineClient], Awaitable[list[dict[str, Any]]]]) -> list[dict[str, Any]]:
        """The union by name of every connected worker's answers to ``call`` (voices, lexicons; the first occurrence
        wins), sorted by name."""
        clients = self._available(joining=True)
        results = await asyncio.gather(*(call(client) for client in clients), return_exceptions=True)
        named: dict[str, dict[str, Any]] = {}
        errors: list[BaseException] = []
        for result in results:
            if isinstance(result, BaseException):
                errors.append(result)
                continue
            for item in result:
                named.setdefault(item["name"], item)
        if errors and len(errors) == len(results):
            raise errors[0]
        return sorted(named.values(), key=lambda item: item["name"])

    async def add_voice(self, name: str, data: bytes) -> dict[str, Any]:
        return await self._add(VOICES, name, data)

    async def delete_voice(self, name: str) -> None:
        await self._delete(VOICES, name)

    async def list_lexicons(self) -> list[dict[str, Any]]:
        return await self._union(lambda client: client.list_lexicons())

    async def add_lexicon(self, name: str, data: bytes) -> dict[str, Any]:
        return await self._add(LEXICONS, name, data)

    async def delete_lexicon(self, name: str) -> None:
        await self._delete(LEXICONS, name)

    async def set_loaded(self, loaded: bool) -> list[dict[str, Any]]:
        """Load (or free) the model on every connected worker now (POST /v1/admin/load, /v1/admin/unload): each
        worker's URL and state after it, or its error."""
        clients = self._available(joining=True)
        results = await asyncio.gather(*(client.set_loaded(loaded) for client in clients), return_exceptions=True)
        out: list[dict[str, Any]] = []
        for client, result in zip(clients, results):
            if isinstance(result, BaseException):
                code = getattr(result, "code", "engine_unavailable")
                out.append({"url": client.url, "error": {"code": code, "message": str(result)}})
            else:
                out.append({"url": client.url, **result})
        return out

    async def _add(self, kept: _Kept, name: str, data: bytes) -> dict[str, Any]:
        added = await self._everywhere(lambda client: kept.add(client, name, data), kept.exists)
        self._deleted[kept.what].discard(kept.key(name))
        return added

    async def _delete(self, kept: _Kept, name: str) -> None:
        """Deleted on every connected worker, and remembered: one away now is made to delete it when it joins."""
        await self._everywhere(lambda client: kept.delete(client, name), kept.unknown)
        self._deleted[kept.what].add(kept.key(name))

    async def _everywhere(self, call: Callable[[EngineClient], Awaitable[Any]], tolerated: str) -> Any:
        """Run ``call`` on every connected worker. Succeeds when at least one succeeded and every other one succeeded
        too or refused with ``tolerated`` (workers sharing one voices directory); else raises the first real error."""
        results = await asyncio.gather(*(call(client) for client in self._available(joining=True)),
                                       return_exceptions=True)
        successes = [r for r in results if not isinstance(r, BaseException)]
        errors = [r for r in results if isinstance(r, BaseException)]
        real = [e for e in errors if not (isinstance(e, EngineRequestError) and e.code == tolerated)]
        if real:
            raise real[0]
        if not successes:
            raise errors[0]
        return successes[0]
