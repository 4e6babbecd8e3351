"""The gateway processes of one host (``serve --processes N``) share a directory: each writes its own /health
snapshot there, so whichever process answers /health can report every process. Pure file I/O, no event loop."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

PREFIX = "health-"
STALE_S = 5.0  # a snapshot this old belongs to a process that stopped writing (hung or gone)


class SiblingHealth:
    def __init__(self, directory: str | Path, pid: int | None = None) -> None:
        self.directory = Path(directory)
        self.pid = os.getpid() if pid is None else pid

    def _path(self, pid: int) -> Path:
        return self.directory / f"{PREFIX}{pid}.json"

    def write(self, snapshot: dict[str, Any]) -> None:
        """This process's snapshot, replaced atomically (a reader never sees half of it)."""
        tmp = self.directory / f".{PREFIX}{self.pid}.tmp"
        tmp.write_text(json.dumps({**snapshot, "pid": self.pid, "written": time.time()}))
        os.replace(tmp, self._path(self.pid))

    def remove(self, pid: int) -> None:
        """Called by the supervisor when process ``pid`` has exited."""
        self._path(pid).unlink(missing_ok=True)

    def read_all(self, now: float | None = None) -> list[dict[str, Any]]:
        """Every process's last snapshot, by pid, each with ``age_s`` and ``stale`` (older than STALE_S)."""
        now = time.time() if now is None else now
        out = []
        for path in sorted(self.directory.glob(f"{PREFIX}*.json")):
            try:
                snapshot = json.loads(path.read_text())
            except (OSError, ValueError):  # removed or being replaced just now
                continue
            age = max(0.0, now - snapshot.pop("written", now))
            out.append({**snapshot, "age_s": round(age, 1), "stale": age > STALE_S})
        return sorted(out, key=lambda s: s["pid"])
