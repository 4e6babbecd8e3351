"""Several engine workers behind one gateway: the interface of ``EngineClient``, spread over one client per worker.

New utterances go to the available worker with the fewest utterances in flight (ties: the order the URLs were
given). Voice uploads and deletions go to every available worker; workers may keep their own voices directories or
share one (then all but one answer ``exists`` / ``unknown_voice``, which is success). With one URL the pool behaves
exactly like that worker's ``EngineClient``.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Sequence

from engine.protocol import EngineReady
from gateway.engine_link.client import EngineClient, EngineRequestError, EngineUnavailable, RemoteUtterance


class EnginePool:
    def __init__(self, urls: Sequence[str], secret: str | None = None) -> None:
        if not urls:
            raise ValueError("an engine pool needs at least one URL")
        self.clients = [EngineClient(url, secret) for url in urls]

    @property
    def ready(self) -> EngineReady | None:
        """The first available engine's greeting, or None when none is available."""
        return next((client.ready for client in self.clients if client.available), None)

    @property
    def available(self) -> bool:
        return any(client.available for client in self.clients)

    @property
    def engines(self) -> list[dict[str, Any]]:
        """Per worker, for /health: its URL, whether it is up, its engine and device, its utterances in flight, how
        many of its connections were lost, why the last one failed, and the back-off before the next try."""
        out = []
        for client in self.clients:
            ready = client.ready if client.available else None
            out.append({"url": client.url, "available": client.available, "engine": ready and ready.engine,
                        "device": ready and ready.device, "in_flight": client.in_flight, "lost": client.lost,
                        "last_error": client.last_error,
                        "retry_in": None if client.retry_in is None else round(client.retry_in, 2)})
        return out

    def _available(self) -> list[EngineClient]:
        clients = [client for client in self.clients if client.available]
        if not clients:
            raise EngineUnavailable("no engine worker is connected")
        return clients

    def start_background(self) -> None:
        for client in self.clients:
            client.start_background()

    async def wait_ready(self, timeout: float) -> bool:
        """True as soon as one worker is ready, False when none is within ``timeout`` seconds."""
        tasks = [asyncio.create_task(client.wait_ready(timeout)) for client in self.clients]
        try:
            for next_done in asyncio.as_completed(tasks):
                if await next_done:
                    return True
            return False
        finally:
            for task in tasks:
                task.cancel()

    async def close(self) -> None:
        await asyncio.gather(*(client.close() for client in self.clients))

    async def start(self, voice: str) -> RemoteUtterance:
        client = min(self._available(), key=lambda c: c.in_flight)  # min keeps the first of equals
        return await client.start(voice)

    async def list_voices(self) -> list[dict[str, Any]]:
        """The union by name of every available worker's voices (first occurrence wins), sorted by name."""
        clients = self._available()
        results = await asyncio.gather(*(client.list_voices() for client in clients), return_exceptions=True)
        voices: dict[str, dict[str, Any]] = {}
        errors: list[BaseException] = []
        for result in results:
            if isinstance(result, BaseException):
                errors.append(result)
                continue
            for voice in result:
                voices.setdefault(voice["name"], voice)
        if errors and len(errors) == len(results):
            raise errors[0]
        return sorted(voices.values(), key=lambda voice: voice["name"])

    async def add_voice(self, name: str, data: bytes) -> dict[str, Any]:
        return await self._everywhere(lambda client: client.add_voice(name, data), tolerated="exists")

    async def delete_voice(self, name: str) -> None:
        await self._everywhere(lambda client: client.delete_voice(name), tolerated="unknown_voice")

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
