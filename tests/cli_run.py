"""Run ``chatterbox-fast`` as an operator would: a real subprocess, its exit code and output."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def serve_until(argv: list[str], marker: str, bound_s: float = 120,
                own_group: bool = False) -> tuple[subprocess.Popen[str], list[str]]:
    """Start ``serve`` with ``argv``; its log up to the first line holding ``marker`` (the process is left running:
    ``stop`` it). ``own_group``: in a process group of its own, as a terminal's foreground job is (its pid the
    group's)."""
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", *argv], cwd=ROOT, stderr=subprocess.PIPE,
                            text=True, process_group=0 if own_group else None)
    hung = threading.Timer(bound_s, proc.kill)  # a bound on a hang, not a speed: the log then ends
    hung.start()
    logged: list[str] = []
    try:
        while not logged or marker not in logged[-1]:
            assert (line := proc.stderr.readline()), "".join(logged)  # (the server exited)
            logged.append(line)
    except BaseException:
        stop(proc)
        raise
    finally:
        hung.cancel()
    return proc, logged


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop a server ``serve_until`` started, reading its log to the end (the worker shares the pipe)."""
    proc.terminate()
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


def refusal(result: subprocess.CompletedProcess[str]) -> str:
    """The one sentence of a start-up refusal: exit code 3, said once with its fix, no traceback."""
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if "refusing to start" in line]
    assert len(lines) == 1, result.stderr
    assert "Fix:" in lines[0]
    return lines[0]


def shadowing(shadow: Path) -> dict[str, str]:
    """Environment for a process whose imports look in ``shadow`` first (see ``hide_pkg_resources``)."""
    shadow.mkdir(exist_ok=True)
    return {"PYTHONPATH": f"{shadow}{os.pathsep}{ROOT}"}


def hide_pkg_resources(shadow: Path) -> None:
    """From now on ``pkg_resources`` cannot be imported there (as with setuptools >= 81): PerTh's implicit
    watermarker then silently becomes None."""
    (shadow / "pkg_resources.py").write_text("raise ImportError('hidden by the test')\n")
