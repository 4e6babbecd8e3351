"""Sticky CUDA errors end the worker with a report; other errors fail only their request. No CUDA here: the errors
are raised as torch raises them (RuntimeError / torch.AcceleratorError with CUDA's message)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine import device_errors

ROOT = Path(__file__).resolve().parent.parent
ILLEGAL = "CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported"


@pytest.mark.parametrize("message, sticky", [
    (ILLEGAL, True),
    ("CUDA error: device-side assert triggered", True),
    ("CUDA error: unspecified launch failure", True),
    ("CUDA out of memory. Tried to allocate 2.00 GiB", False),
    ("shape '[1, 4]' is invalid for input of size 3", False),
    ("illegal memory access in my own code, no GPU involved", False),
])
def test_sticky_errors_are_told_from_the_others(message: str, sticky: bool) -> None:
    said = device_errors.sticky_cuda_error(RuntimeError(message))
    assert (said == message.splitlines()[0]) if sticky else said is None


def test_the_decode_loop_hands_a_sticky_error_to_the_handler_and_fails_the_request() -> None:
    torch = pytest.importorskip("torch")
    from engine.engines.t3_loop import DecodeLoop

    class BrokenDevice:  # stands in for a BatchDecoder on a GPU that hit an illegal address (no GPU here)
        slots, device, live_slots = 1, torch.device("cpu"), []

        @property
        def live(self) -> list[int]:
            return self.live_slots

        def join_many(self, joins) -> None:  # noqa: ANN001
            self.live_slots = [join.slot for join in joins]

        def advance(self) -> list[int]:
            raise RuntimeError(ILLEGAL)

        def free_slot(self, taken=()) -> int:  # noqa: ANN001
            return 0

        def leave(self, slot: int) -> None:
            self.live_slots = []

    reasons: list[str] = []
    device_errors.on_sticky_error(reasons.append)
    loop = DecodeLoop(BrokenDevice(), lambda voice: None)
    try:
        import threading
        import time

        future = loop.submit(None, torch.zeros(1, 3, dtype=torch.long), 5, 0, threading.Event(), time.monotonic())
        with pytest.raises(RuntimeError, match="illegal memory access"):
            future.result(30)
    finally:
        loop.close()
        device_errors.on_sticky_error(None)
    assert reasons == ["the GPU failed for good (CUDA error: an illegal memory access was encountered): every later "
                       "call on it would fail too"]


def test_the_worker_exits_with_the_stalled_code_and_says_why(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    child = ("import sys, pathlib\nfrom engine import device_errors\nfrom engine.watchdog import exit_on_sticky_errors\n"
             "exit_on_sticky_errors(4, pathlib.Path(sys.argv[1]))\n"
             "device_errors.check(RuntimeError('CUDA error: device-side assert triggered'))\nsys.exit(0)\n")
    result = subprocess.run([sys.executable, "-c", child, str(report)], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 4, result.stderr
    assert report.read_text() == ("the GPU failed for good (CUDA error: device-side assert triggered): every later "
                                  "call on it would fail too\n")
