"""The prompt cache's optional directory (--cache-dir): entries that outlive a restart.

One file per entry, named by its key's digest, written whole to a temporary name and renamed (a crash leaves no half
entry); at most ``limit`` bytes of them, the least recently used (file times: a hit touches its file) deleted first.
A directory that cannot be made, read or written, or that fills up, is a warning: the cache goes on in memory only.
Blocking calls: the cache runs them in a thread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import struct
import threading
from pathlib import Path
from typing import Callable

from engine.protocol import Chunk, Done, decode_event, encode
from gateway.prompt_cache.store import CachedPrompt, PromptKey

log = logging.getLogger("chatterbox_fast.gateway")
MAGIC = b"CBFPROMPT1\n"
SUFFIX = ".prompt"
_LENGTH = struct.Struct(">I")


def dumps(entry: CachedPrompt) -> bytes:
    meta = json.dumps({"key": [entry.key.scope, entry.key.engine, entry.key.voice, entry.key.text,
                               list(entry.key.reading)], "text": entry.text}).encode()
    frames = [meta, *(_frame(b"c", chunk) for chunk in entry.chunks), _frame(b"d", entry.done)]
    return MAGIC + b"".join(_LENGTH.pack(len(frame)) + frame for frame in frames)


def _frame(kind: bytes, message: Chunk | Done) -> bytes:
    """One engine-protocol message as the link carries it (a chunk binary, ``done`` JSON), behind its kind."""
    data = encode(message)
    return kind + (data.encode() if isinstance(data, str) else data)


def _frames(data: bytes) -> list[bytes]:
    if not data.startswith(MAGIC):
        raise ValueError("not a prompt cache entry")
    at, out = len(MAGIC), []
    while at < len(data):
        (length,) = _LENGTH.unpack_from(data, at)
        at += _LENGTH.size
        out.append(data[at:at + length])
        at += length
    return out


def _key(meta: bytes) -> tuple[PromptKey, str]:
    fields = json.loads(meta)
    scope, engine, voice, text, reading = fields["key"]
    return PromptKey(scope, engine, voice, text, tuple(reading)), fields["text"]


def loads(data: bytes) -> CachedPrompt:
    meta, *frames = _frames(data)
    key, text = _key(meta)
    chunks = tuple(decode_event(frame[1:]) for frame in frames if frame[:1] == b"c")
    done = decode_event(frames[-1][1:].decode())
    if not isinstance(done, Done) or not all(isinstance(chunk, Chunk) for chunk in chunks):
        raise ValueError("malformed prompt cache entry")
    return CachedPrompt(key, text, chunks, done)  # type: ignore[arg-type]


class DirectoryStore:
    """Entries in ``path``, at most ``limit`` bytes. ``usable`` is False once the directory failed (``problem``
    says why); every call is then a no-op."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.limit = path, limit
        self.problem: str | None = None
        self._index: dict[str, tuple[int, PromptKey]] = {}  # digest -> (bytes, key), least recently used first
        self._lock = threading.RLock()  # calls come from the cache's threads
        try:
            path.mkdir(parents=True, exist_ok=True)
            probe = path / f".probe.{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
            self._scan()
        except OSError as exc:
            self._failed(f"cannot use it ({exc})")

    @property
    def usable(self) -> bool:
        return self.problem is None

    @property
    def bytes(self) -> int:
        return sum(size for size, _ in self._index.values())

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, digest: str) -> bool:
        return digest in self._index

    def _failed(self, why: str) -> None:
        self.problem = why
        self._index.clear()
        log.warning("prompt cache directory %s: %s; the prompt cache goes on in memory only", self.path, why)

    def _scan(self) -> None:
        found = []
        for file in self.path.glob("*" + SUFFIX):
            try:
                with file.open("rb") as handle:
                    head = handle.read(len(MAGIC) + _LENGTH.size)
                    (length,) = _LENGTH.unpack_from(head, len(MAGIC))
                    key, _ = _key(handle.read(length))
                found.append((file.stat().st_mtime_ns, file.stem, file.stat().st_size, key))
            except (ValueError, KeyError, struct.error, UnicodeDecodeError):
                log.warning("prompt cache directory %s: %s is not an entry; deleted", self.path, file.name)
                file.unlink(missing_ok=True)
        for _, digest, size, key in sorted(found, key=lambda item: item[0]):
            self._index[digest] = (size, key)

    def _file(self, digest: str) -> Path:
        return self.path / (digest + SUFFIX)

    def get(self, key: PromptKey) -> CachedPrompt | None:
        with self._lock:
            digest = key.digest
            if not self.usable or digest not in self._index:
                return None
            try:
                entry = loads(self._file(digest).read_bytes())
                os.utime(self._file(digest))
            except FileNotFoundError:  # another process sharing the directory deleted it
                self._index.pop(digest, None)
                return None
            except (OSError, ValueError, KeyError, struct.error) as exc:
                log.warning("prompt cache directory %s: entry %s unreadable (%s); dropped", self.path, digest, exc)
                self.remove(digest)
                return None
            self._index[digest] = self._index.pop(digest)
            return entry if entry.key == key else None

    def put(self, entry: CachedPrompt) -> None:
        with self._lock:
            if not self.usable:
                return
            data, digest = dumps(entry), entry.key.digest
            if len(data) > self.limit:
                return
            self.remove(digest)
            while self._index and self.bytes + len(data) > self.limit:
                self.remove(next(iter(self._index)))
            temporary = self.path / f".{digest}.{os.getpid()}.tmp"
            try:
                temporary.write_bytes(data)
                os.replace(temporary, self._file(digest))
            except OSError as exc:
                with contextlib.suppress(OSError):
                    temporary.unlink(missing_ok=True)
                self._failed(f"cannot write to it ({exc})")
                return
            self._index[digest] = (len(data), entry.key)

    def remove(self, digest: str) -> None:
        with self._lock:
            if self._index.pop(digest, None) is not None:
                try:
                    self._file(digest).unlink(missing_ok=True)
                except OSError as exc:
                    self._failed(f"cannot delete from it ({exc})")

    def drop(self, which: Callable[[PromptKey], bool]) -> None:
        with self._lock:
            for digest in [digest for digest, (_, key) in self._index.items() if which(key)]:
                self.remove(digest)
