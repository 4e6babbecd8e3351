"""A real gateway on 127.0.0.1 for tests: ``chatterbox-fast serve`` in a subprocess, with its own engine worker."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(*flags: str, voices_dir: Path | None = None, env: dict[str, str] | None = None,
                   ready_timeout: float = 90.0) -> Iterator[str]:
    """Start the gateway with ``flags`` (the embedded eSpeak engine unless flags say otherwise); yield its base URL.

    The server's log goes to the test's stderr capture. Waits until /health reports the engine ready."""
    port = free_port()
    args = [sys.executable, "-m", "gateway.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    if "--engine" not in flags and "--engine-url" not in flags:
        args += ["--engine", "espeak"]
    if voices_dir is not None:
        args += ["--voices-dir", str(voices_dir)]
    proc = subprocess.Popen([*args, *flags], cwd=ROOT, env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with code {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError("the server did not become ready")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
