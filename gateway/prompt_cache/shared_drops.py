"""Drops the gateway processes of one host (``serve --processes N``) tell each other: a voice uploaded or deleted
through one process drops its prompts in every process's cache. One append-only file in their shared directory, a
JSON line a drop; each process reads what was added since it last looked (a stat per lookup). Pure file I/O."""

from __future__ import annotations

import json
import os
from pathlib import Path

NAME = "prompt-cache-drops.jsonl"


class SharedDrops:
    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / NAME
        self._seen = self._size()  # what was dropped before this process started concerns no entry of it

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def tell(self, what: str, name: str) -> None:
        """Every process (this one too, on its next look) drops ``what`` (voices, lexicons) ``name``."""
        line = (json.dumps([what, name]) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)  # one write with O_APPEND: whole, never interleaved with another process's
        finally:
            os.close(fd)

    def news(self) -> list[tuple[str, str]]:
        """The drops told since the last look, in order."""
        if self._size() <= self._seen:
            return []
        with self.path.open("rb") as handle:
            handle.seek(self._seen)
            data = handle.read()
        whole = data[:data.rfind(b"\n") + 1]  # a line being written is read next time
        self._seen += len(whole)
        return [tuple(json.loads(line)) for line in whole.splitlines() if line]  # type: ignore[misc]
