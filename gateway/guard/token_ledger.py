"""What is counted of tokens with ``uses`` or ``sessions`` (gateway/guard/tokens.py): the uses taken and the sessions
open, where every gateway process sees them.

One process: a dict (``MemoryLedger``). ``serve --processes N``: small files a token in the processes' shared
directory (the one their metrics, /health snapshots and prompt-cache drops already share, gateway/host/siblings.py)
(``FileLedger``): a use is a byte appended (its place is its number: a single-use token is admitted once across
them all), the open sessions a JSON file read and written under an exclusive ``flock``.
Open sessions are counted per process id, so a process that dies leaves none behind. A token's entry goes once it has
expired (its file's name starts with its expiry: a sweep reads no file). Tokens with neither are never looked up.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Callable

from gateway.guard.tokens import Grant

SWEEP_INTERVAL_S = 60.0


class MemoryLedger:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._uses: dict[str, int] = {}
        self._sessions: dict[str, int] = {}
        self._expiry: dict[str, int] = {}
        self._swept = clock()

    def use(self, grant: Grant) -> bool:
        """One use taken of ``grant``; False when none is left."""
        self._sweep()
        return self._count(self._uses, grant, grant.uses)

    def open_session(self, grant: Grant) -> bool:
        """One session of ``grant`` opened; False when it has its ``sessions`` open already."""
        return self._count(self._sessions, grant, grant.sessions)

    def _count(self, counts: dict[str, int], grant: Grant, limit: int | None) -> bool:
        """One more of ``grant`` in ``counts``; False when it has ``limit`` already."""
        now = counts.get(grant.id, 0)
        if limit is not None and now >= limit:
            return False
        counts[grant.id] = now + 1
        self._expiry[grant.id] = grant.expires_at
        return True

    def close_session(self, grant: Grant) -> None:
        if self._sessions.get(grant.id, 0) > 0:
            self._sessions[grant.id] -= 1

    def _sweep(self) -> None:
        now = self._clock()
        if now - self._swept < SWEEP_INTERVAL_S:
            return
        self._swept = now
        for ident in [i for i, expires in self._expiry.items() if expires <= now and not self._sessions.get(i)]:
            self._uses.pop(ident, None)
            self._sessions.pop(ident, None)
            del self._expiry[ident]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class FileLedger:
    """The same counts in ``directory``/tokens/, shared by every process: ``EXPIRES-ID.uses`` a byte a use,
    ``EXPIRES-ID.json`` the sessions open per process."""

    def __init__(self, directory: str | Path, clock: Callable[[], float] = time.time) -> None:
        self.root = Path(directory) / "tokens"
        self.root.mkdir(exist_ok=True)
        self._clock = clock
        self._swept = clock()
        self._pid = str(os.getpid())

    def _update(self, grant: Grant, change: Callable[[dict], bool]) -> bool:
        """``change`` applied to the token's entry under the lock; written back when it returns True."""
        path = self.root / f"{grant.expires_at}-{grant.id}.json"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.read(fd, 65536)
            try:
                entry = json.loads(raw) if raw else {}
            except ValueError:
                entry = {}
            entry["sessions"] = {pid: n for pid, n in entry.get("sessions", {}).items()
                                 if pid == self._pid or _alive(int(pid))}
            if not change(entry):
                return False
            data = json.dumps(entry).encode()
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, data)
            return True
        finally:
            os.close(fd)  # the lock goes with it

    def use(self, grant: Grant) -> bool:
        """A byte appended to the token's ``.uses`` file: where this process's byte landed is its use's number
        (O_APPEND places each write at the end atomically, and the descriptor's offset is this process's own)."""
        self._sweep()
        fd = os.open(self.root / f"{grant.expires_at}-{grant.id}.uses", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, b".")
            number = os.lseek(fd, 0, os.SEEK_CUR)
        finally:
            os.close(fd)
        return grant.uses is None or number <= grant.uses

    def open_session(self, grant: Grant) -> bool:
        def open_one(entry: dict) -> bool:
            if grant.sessions is not None and sum(entry["sessions"].values()) >= grant.sessions:
                return False
            entry["sessions"][self._pid] = entry["sessions"].get(self._pid, 0) + 1
            return True

        return self._update(grant, open_one)

    def close_session(self, grant: Grant) -> None:
        def close_one(entry: dict) -> bool:
            left = entry["sessions"].get(self._pid, 0) - 1
            if left > 0:
                entry["sessions"][self._pid] = left
            else:
                entry["sessions"].pop(self._pid, None)
            return True

        self._update(grant, close_one)

    def _sweep(self) -> None:
        """The entries of tokens expired a minute ago or more removed (sessions open past expiry are rare and end)."""
        now = self._clock()
        if now - self._swept < SWEEP_INTERVAL_S:
            return
        self._swept = now
        for entry in os.scandir(self.root):
            expires, dash, _ = entry.name.partition("-")
            if dash and expires.isdigit() and int(expires) + SWEEP_INTERVAL_S < now:
                try:
                    os.unlink(entry.path)
                except FileNotFoundError:
                    pass


def ledger_for(shared_dir: str | None) -> MemoryLedger | FileLedger:
    return FileLedger(shared_dir) if shared_dir else MemoryLedger()
