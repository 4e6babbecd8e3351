"""A CUDA worker's card utilisation (issue 50's per-worker figures): the fraction of the last sample period the
card's SMs were busy, as ``nvidia-smi`` reads it from NVML.

The GPU host has no NVML binding on its package list (``scripts/gpu-host-packages.txt``: no ``nvidia-ml-py``, so
``torch.cuda.utilization()`` cannot work there), and this adds no third-party import: a daemon thread runs
``nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -i <UUID>`` every ``EVERY_S`` and keeps the
latest answer. Any failure (no ``nvidia-smi``, a timeout, an answer it cannot read) reports nothing (None); a missing
``nvidia-smi`` stops the thread. The card is named by its UUID where placement knows it: index order differs between
CUDA and nvidia-smi on mixed hosts.
"""

from __future__ import annotations

import subprocess
import threading

EVERY_S = 5.0  # at most this often
TIMEOUT_S = 3.0  # an nvidia-smi that takes longer is given up on (nothing reported for that look)
STEP = 0.05  # a worker says its utilisation again once it moved this much


def parse(answer: str) -> float | None:
    """nvidia-smi's answer (a percentage, ``nounits``) as a ratio in 0..1; None when it is not one number in 0..100
    (``[N/A]``, ``[Not Supported]``, several lines for several cards, nothing)."""
    lines = answer.strip().splitlines()
    if len(lines) != 1:
        return None
    try:
        percent = float(lines[0].strip())
    except ValueError:
        return None
    return round(percent / 100, 3) if 0 <= percent <= 100 else None


def card_id(device: str, placement: dict | None) -> str:
    """What nvidia-smi's ``-i`` is given: the placed card's UUID, else the index in ``cuda:N`` (0 for ``cuda``)."""
    uuid = (placement or {}).get("uuid")
    if uuid:
        return str(uuid)
    return device.partition(":")[2] or "0"


def moved(old: float | None, new: float | None) -> bool:
    """Whether ``new`` is to be said again: it appeared, vanished, or moved by STEP or more."""
    if old is None or new is None:
        return old != new
    return abs(new - old) >= STEP


class UtilizationReader:
    """Reads ``card``'s utilisation every ``every`` s in a daemon thread; ``latest`` is the last answer (None: none
    yet, or the last look failed)."""

    def __init__(self, card: str, command: str = "nvidia-smi", every: float = EVERY_S) -> None:
        self.card, self.command, self.every = card, command, every
        self.latest: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpu-utilization", daemon=True)

    def start(self) -> UtilizationReader:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def look(self) -> float | None:
        """One reading now (None when it fails); raises FileNotFoundError when there is no such command."""
        try:
            answer = subprocess.run([self.command, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                     "-i", self.card], capture_output=True, text=True, timeout=TIMEOUT_S)
        except (subprocess.TimeoutExpired, PermissionError, OSError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            return None
        return parse(answer.stdout) if answer.returncode == 0 else None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.latest = self.look()
            except FileNotFoundError:
                self.latest = None
                return
            self._stop.wait(self.every)
