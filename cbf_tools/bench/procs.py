"""The processes a bench measures, read with psutil (Linux, macOS, Windows, the BSDs): a process's descendants and
threads, the command it runs, the CPU time of it and of what it started, its resident memory. Each answers for the
processes as they are now, and for a process that has gone (or cannot be read) as if it had no children, threads,
command, CPU time or memory.

psutil is a dependency of the tools (the ``tools`` extra), not of the gateway or the engine worker: only the bench
commands import this module.
"""

from __future__ import annotations

import contextlib

try:
    import psutil
except ImportError:  # pragma: no cover - the tools extra is not installed
    raise SystemExit("bench: psutil is missing; it comes with the tools' extra: "
                     "pip install -c requirements/lock.txt -e '.[tools]'") from None


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (its children, theirs, and so on)."""
    with contextlib.suppress(psutil.Error):
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    return []


def threads(pid: int) -> list[int]:
    """The thread ids of process ``pid`` (on Linux, what ``os.sched_setaffinity`` takes)."""
    with contextlib.suppress(psutil.Error):
        return [thread.id for thread in psutil.Process(pid).threads()]
    return []


def command(pid: int) -> list[str]:
    """The command line ``pid`` runs."""
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).cmdline()
    return []


def _cpu_seconds(process: psutil.Process) -> float:
    """User + system CPU seconds of ``process`` itself (every thread; not its children's)."""
    with contextlib.suppress(psutil.Error):
        times = process.cpu_times()
        return times.user + times.system
    return 0.0


def tree_cpu(root: int) -> tuple[float, float]:
    """CPU seconds (user + system) of process ``root`` itself, and of all its live descendants together."""
    try:
        process = psutil.Process(root)
        children = process.children(recursive=True)
    except psutil.Error:
        return 0.0, 0.0
    return _cpu_seconds(process), sum(map(_cpu_seconds, children))


def rss_mib(pid: int | None) -> float | None:
    """Resident memory of ``pid`` in MiB; None when unknown or gone."""
    if pid is None:
        return None
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).memory_info().rss / 2**20
    return None
