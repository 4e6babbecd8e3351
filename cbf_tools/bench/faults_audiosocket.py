"""``bench faults``' AudioSocket surface: hostile Asterisk connections on a server's ``--audiosocket-port`` (TCP), from a
seed. Each input is one connection: mangled frames after a sound opening (random kinds and lengths), a header whose
payload never comes (then a half-close), floods (5 s of audio and 100 digits at once), a UUID reused while its call is
live, a UUID the key did not tag, bytes that are not frames before any UUID, and half-open connections (a FIN after
nothing, or after the UUID alone).

Every connection must end: the server closes it within ``CLOSE_WITHIN_S`` of the client's last move, having sent
nothing but AudioSocket frames of the call's own kind and hang-ups. Anything else is a server error. A connection the
server hung up on before the client did is a refusal.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from typing import Any

from gateway.telephony.audiosocket import AUDIO, DTMF, HANGUP, UUID, FrameReader, frame, keyed_uuid

CLOSE_WITHIN_S = 10.0
CLIENTS = 4
KIND = 0x12  # 16 kHz: the sound calls' audio
SCENARIOS = (("mangled", 0.35), ("wrong length", 0.15), ("flood", 0.1), ("reused", 0.1), ("no key", 0.1),
             ("garbage first", 0.1), ("half-open", 0.1))


def _scenario(rng: random.Random) -> str:
    pick, total = rng.random(), 0.0
    for name, share in SCENARIOS:
        total += share
        if pick < total:
            return name
    return SCENARIOS[-1][0]


def _mangled(rng: random.Random) -> bytes:
    """A frame of a random kind (a known one a third of the time) and a length its kind may not have."""
    kind = rng.choice((rng.randrange(256), UUID, DTMF, AUDIO, KIND, 0xFF))
    size = rng.choice((0, 1, 2, 15, 16, 17, 319, 320, 640, 641, rng.randrange(4096)))
    return frame(kind, bytes(rng.getrandbits(8) for _ in range(size)))


class _Peer:
    """One connection and what came back on it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.frames = FrameReader()
        self.kinds: list[int] = []
        self.leftover = 0
        self.reading = asyncio.create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await self.reader.read(65536):
                self.kinds += [kind for kind, _ in self.frames.feed(data)]
        self.leftover = self.frames.partial  # bytes of no whole frame

    async def send(self, *frames: bytes) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):  # the server may have closed it already
            self.writer.write(b"".join(frames))
            await self.writer.drain()

    def half_close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            self.writer.write_eof()

    @property
    def hung_up(self) -> bool:
        return HANGUP in self.kinds

    async def judged(self, counts: dict[str, Any], ours: bool = False) -> None:
        """Closed by the server in time, with nothing but frames of the call's kind and hang-ups; ``ours``: the client
        hung up (a hang-up from the server then is no refusal)."""
        refused = self.hung_up and not ours
        try:
            await asyncio.wait_for(asyncio.shield(self.reading), CLOSE_WITHIN_S)
        except TimeoutError:
            _error(counts, "not closed")
        else:
            if self.leftover or set(self.kinds) - {KIND, HANGUP}:
                _error(counts, f"sent kinds {sorted(set(self.kinds))} and {self.leftover} bytes of no frame")
            elif refused:
                counts["refused"] += 1
        self.reading.cancel()
        self.writer.close()


def _error(counts: dict[str, Any], what: str) -> None:
    counts["server_errors"] += 1
    counts.setdefault("errors", []).append(what)


async def _connect(host: str, port: int) -> _Peer:
    return _Peer(*await asyncio.open_connection(host, port))


def _opening(call_id: str) -> bytes:
    return frame(UUID, uuid.UUID(call_id).bytes) + frame(KIND, bytes(640))


async def _one(host: str, port: int, key: str | None, scenario: str, rng: random.Random,
               counts: dict[str, Any]) -> None:
    call_id = keyed_uuid(key) if key else str(uuid.uuid4())
    peer = await _connect(host, port)
    if scenario == "mangled":
        await peer.send(_opening(call_id), *(_mangled(rng) for _ in range(rng.randint(1, 5))))
        await asyncio.sleep(0.02)
        await peer.send(frame(HANGUP))
        await peer.judged(counts, ours=not peer.hung_up)
    elif scenario == "wrong length":
        declared = rng.choice((1, 320, 4096, 0xFFFF))
        await peer.send(_opening(call_id), bytes([rng.choice((KIND, DTMF, UUID))]) + declared.to_bytes(2, "big")
                        + bytes(rng.randrange(declared)))
        peer.half_close()
        await peer.judged(counts, ours=True)
    elif scenario == "flood":
        await peer.send(_opening(call_id), *(frame(KIND, bytes(640)) for _ in range(250)),
                        *(frame(DTMF, b"5") for _ in range(100)))
        await peer.send(frame(HANGUP))
        await peer.judged(counts, ours=True)
    elif scenario == "reused":
        await peer.send(_opening(call_id))
        await asyncio.sleep(0.05)  # its call is open
        twin = await _connect(host, port)
        await twin.send(_opening(call_id))
        await twin.judged(counts)
        await peer.send(frame(HANGUP))
        await peer.judged(counts, ours=True)
    elif scenario == "no key":
        await peer.send(_opening(str(uuid.uuid4()) if key else call_id))
        if not key:  # (a server without a key takes it: hang it up)
            await peer.send(frame(HANGUP))
        await peer.judged(counts, ours=not key)
    elif scenario == "garbage first":
        await peer.send(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64))))
        peer.half_close()
        await peer.judged(counts, ours=True)
    else:  # half-open: a FIN after nothing, or after the UUID alone
        if rng.random() < 0.5:
            await peer.send(frame(UUID, uuid.UUID(call_id).bytes))
        peer.half_close()
        await peer.judged(counts, ours=True)


async def audiosocket(host: str, port: int, key: str | None, rng: random.Random, count: int) -> dict[str, Any]:
    """``count`` hostile connections, CLIENTS at once; the counts of server errors and refusals."""
    counts: dict[str, Any] = {"server_errors": 0, "refused": 0}
    plans = [(_scenario(rng), random.Random(rng.random())) for _ in range(count)]
    pending = iter(plans)

    async def client() -> None:
        for scenario, own in pending:
            try:
                await _one(host, port, key, scenario, own, counts)
            except (ConnectionError, OSError) as exc:
                _error(counts, f"{scenario}: {type(exc).__name__}")

    await asyncio.gather(*(client() for _ in range(CLIENTS)))
    counts["scenarios"] = {name: sum(1 for s, _ in plans if s == name) for name, _ in SCENARIOS}
    if "errors" in counts:
        counts["errors"] = counts["errors"][:10]
    return counts
