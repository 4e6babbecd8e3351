"""Several engine workers behind one gateway: the interface of ``EngineClient``, spread over one client per worker.

New utterances go to the available worker with the fewest utterances in flight; among equally busy ones, to the one
that has started the fewest so far (so idle workers take turns rather than the first one taking everything), then
the first given. Voice uploads and deletions go to every available worker; workers may keep their own voices
directories or share one (then all but one answer ``exists`` / ``unknown_voice``, which is success). With one URL the
pool behaves exactly like that worker's ``EngineClient``.

A ``dns+ws://NAME:PORT`` URL is one worker per address of NAME, resolved again every ``resolve_interval`` seconds
(gateway/engine_link/discovery.py): new addresses become workers; a worker whose address vanished is drained (its
utterances in flight go on, new ones go elsewhere) and closed once it has none left.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Sequence

from engine.protocol import EngineReady, Reading
from gateway.engine_link.client import EngineClient, EngineRequestError, EngineUnavailable, RemoteUtterance
from gateway.engine_link.discovery import PREFIX, Changes, Membership, Resolver, parse_dns_url, resolve
from gateway.engine_link.failover import FailoverPolicy, FailoverUtterance

log = logging.getLogger("chatterbox_fast.gateway")


class EnginePool:
    def __init__(self, urls: Sequence[str], secret: str | None = None, *, resolve_interval: float = 5.0,
                 resolver: Resolver = resolve, failover: FailoverPolicy = FailoverPolicy(),
                 on_failover: Callable[[bool], None] = lambda moved: None) -> None:
        """``resolver``: how ``dns+ws://`` names are resolved (the system resolver; tests inject their own);
        ``failover``: how an utterance whose worker went away goes on elsewhere; ``on_failover(moved)``: told of each
        move (True) and each utterance lost with its worker while failover is on (False)."""
        if not urls:
            raise ValueError("an engine pool needs at least one URL")
        self.secret, self.resolve_interval, self.resolver = secret, resolve_interval, resolver
        self.memberships = [Membership(parse_dns_url(url)) for url in urls if url.startswith(PREFIX)]
        self.clients = [EngineClient(url, secret) for url in urls if not url.startswith(PREFIX)]
        self.draining: set[str] = set()  # URLs of clients taking no new utterances
        self._tasks: list[asyncio.Task[None]] = []
        self.failover, self.on_failover = failover, on_failover
        self.failovers = {"moved": 0, "given_up": 0}  # for /health

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
        try, whether it is draining (discovery no longer lists it), the state of its TTS server where it drives one, and its
        voice prompts on the device (voices, bytes, limit) where it keeps them."""
        out = []
        for client in self.clients:
            ready = client.ready if client.available else None
            out.append({"url": client.url, "available": client.available, "engine": ready and ready.engine,
                        "device": ready and ready.device, "in_flight": client.in_flight, "started": client.started, "lost": client.lost,
                        "last_error": client.last_error, "draining": client.url in self.draining,
                        "retry_in": None if client.retry_in is None else round(client.retry_in, 2),
                        **({"backend": client.ready.backend} if client.ready and client.ready.backend else {}),
                        **({"prompt_cache": ready.prompt_cache} if ready and ready.prompt_cache else {})})
        return out

    def _available(self) -> list[EngineClient]:
        clients = [client for client in self.clients if client.available]
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
            client = EngineClient(url, self.secret)
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

    async def start(self, voice: str, reading: Reading = Reading()) -> FailoverUtterance:
        """On the least busy worker that is not draining; should that worker go away mid-way, the rest goes on on
        another (gateway/engine_link/failover.py)."""
        def start_one() -> Awaitable[RemoteUtterance]:
            return self._start_one(voice, reading)

        return FailoverUtterance(await start_one(), start_one, self.failover, self._moved)

    async def _start_one(self, voice: str, reading: Reading) -> RemoteUtterance:
        serving = [client for client in self._available() if client.url not in self.draining]
        if not serving:
            raise EngineUnavailable("every connected engine worker is draining")
        client = min(serving, key=lambda c: (c.in_flight, c.started))  # min keeps the first of equals
        return await client.start(voice, reading)

    def _moved(self, moved: bool) -> None:
        self.failovers["moved" if moved else "given_up"] += 1
        self.on_failover(moved)

    async def list_voices(self) -> list[dict[str, Any]]:
        return await self._union(lambda client: client.list_voices())

    async def _union(self, call: Callable[[EngineClient], Awaitable[list[dict[str, Any]]]]) -> list[dict[str, Any]]:
        """The union by name of every available worker's answers to ``call`` (voices, lexicons; the first occurrence
        wins), sorted by name."""
        clients = self._available()
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
        return await self._everywhere(lambda client: client.add_voice(name, data), tolerated="exists")

    async def delete_voice(self, name: str) -> None:
        await self._everywhere(lambda client: client.delete_voice(name), tolerated="unknown_voice")

    async def list_lexicons(self) -> list[dict[str, Any]]:
        return await self._union(lambda client: client.list_lexicons())

    async def add_lexicon(self, name: str, data: bytes) -> dict[str, Any]:
        return await self._everywhere(lambda client: client.add_lexicon(name, data), tolerated="")  # replaces one

    async def delete_lexicon(self, name: str) -> None:
        await self._everywhere(lambda client: client.delete_lexicon(name), tolerated="unknown_lexicon")

    async def _everywhere(self, call: Callable[[EngineClient], Awaitable[Any]], tolerated: str) -> Any:
        """Run ``call`` on every available worker. Succeeds when at least one succeeded and every other one succeeded
        too or refused with ``tolerated`` (workers sharing one voices directory); else raises the first real error."""
        results = await asyncio.gather(*(call(client) for client in self._available()), return_exceptions=True)
        successes = [r for r in results if not isinstance(r, BaseException)]
        errors = [r for r in results if isinstance(r, BaseException)]
        real = [e for e in errors if not (isinstance(e, EngineRequestError) and e.code == tolerated)]
        if real:
            raise real[0]
        if not successes:
            raise errors[0]
        return successes[0]
