"""A real gateway on 127.0.0.1 for tests: ``chatterbox-fast serve`` in a subprocess, with its own engine worker."""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from cbf_tools.peers.local_server import local_server


@contextlib.contextmanager
def running_server(*flags: str, voices_dir: Path | None = None, env: dict[str, str] | None = None,
                   ready_timeout: float = 90.0) -> Iterator[str]:
    """Start the gateway with ``flags`` (the embedded eSpeak engine unless flags say otherwise); yield its base URL.

    The server's log goes to the test's stderr capture. Waits until /health reports the engine ready."""
    args = list(flags)
    if "--engine" not in flags and "--engine-url" not in flags:
        args += ["--engine", "espeak"]
    if voices_dir is not None:
        args += ["--voices-dir", str(voices_dir)]
    with local_server(args, env={**os.environ, **(env or {})}, ready_timeout=ready_timeout) as (url, _):
        yield url


@contextlib.contextmanager
def running_servers(*flags: str, voices_dirs: list[Path]) -> Iterator[list[str]]:
    """One server per folder of ``voices_dirs``, all with ``flags``, started side by side rather than one after the
    other; yields their base URLs in order."""
    from concurrent.futures import ThreadPoolExecutor

    with contextlib.ExitStack() as stack:
        managers = [running_server(*flags, voices_dir=folder) for folder in voices_dirs]
        with ThreadPoolExecutor(len(managers)) as pool:
            starts = [pool.submit(manager.__enter__) for manager in managers]
        for manager, start in zip(managers, starts):  # every started one is stopped, even when another failed
            if start.exception() is None:
                stack.push(manager.__exit__)
        yield [start.result() for start in starts]


@functools.cache
def _client() -> "httpx.Client":
    import httpx

    return httpx.Client(timeout=10)


def health(url: str) -> "httpx.Response":
    """``url``/health through one client kept for every poll: a bare ``httpx.get`` builds an SSL context each call,
    ~35 ms of CPU, and a poll every 50 ms took a third of a core from the server it was waiting for."""
    return _client().get(url + "/health")


def assert_goes_down(url: str, within: float, what: str, speech: int = 503) -> None:
    """Within ``within`` seconds /health stops saying ok and reports "down", and speech asked for then is answered
    ``speech``: a clear 503 where no worker comes back within the server's --failover-wait (it is held that long),
    200 where one does (held until it is back)."""
    import time

    import httpx

    deadline = time.monotonic() + within
    while (answer := health(url)).status_code == 200:
        assert time.monotonic() < deadline, f"{what} was not noticed"
        time.sleep(0.05)
    assert answer.json()["status"] == "down"
    answer = httpx.post(url + "/v1/tts", json={"text": "Anyone there?"}, timeout=60)
    assert answer.status_code == speech, answer.text[:200]
    if speech == 503:
        assert answer.json()["error"]["code"] == "engine_unavailable"


def health_when(url: str, condition: Callable[[dict[str, Any]], bool], what: str, within: float = 120) -> dict:
    """The first /health body that meets ``condition``, asked every 0.1 s; fails with ``what`` after ``within`` s."""
    import time

    import httpx

    deadline = time.monotonic() + within
    while True:
        try:
            body = health(url).json()
            if condition(body):
                return body
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run an ASGI ``app`` (a stand-in server) with uvicorn in a thread on a free 127.0.0.1 port; yield its base URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the stand-in server did not start")
            thread.join(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


KEYED_KEY = "clients-test-key"  # the API key of ``keyed_gateway`` (tests/conftest.py)
KEYED_IDLE_S = 3  # its --idle-timeout
KEYED_MAX_UNAUTHENTICATED = 3
PHONE_KEY = "phone-key"  # the API key of ``phone_server`` (tests/conftest.py)
PHONE_AUDIOSOCKET_KEY = "phone-audiosocket-key"  # its --audiosocket-key


async def next_event(ws: Any, kind: str, timeout: float = 30) -> tuple[dict, list[dict]]:
    """A controller socket's JSON events until one of ``kind``: (that one, all of them)."""
    import asyncio
    import json
    import time

    seen: list[dict] = []
    deadline = time.monotonic() + timeout
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), deadline - time.monotonic()))
        seen.append(event)
        if event["type"] == kind:
            return event, seen

