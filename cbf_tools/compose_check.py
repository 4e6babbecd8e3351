"""What ``scripts/compose-check`` proves through compose.scale.yaml's running stack (run by it, in the venv).

Every call goes through the stack's balancer, as a user's would. Speech over the HTTP stream (``/v1/tts`` as ndjson,
PerTh's watermark read back) and the WebSocket; then an engine container killed mid-utterance (its worker process
SIGKILLed from the host, so the container dies and its restart policy brings it back, as after a crash): the
utterance goes on on the other engine, every word said once; then a gateway container restarted mid-utterance
(``docker restart``: SIGTERM, the drain): its call ends with ``done``, the container comes back, and speech goes on
through the balancer.

Which container holds an utterance is read from the gateways' own ``/health`` (``docker exec``): the engine with an
utterance in flight, the gateway with a session. Prints a line per step and, last, one JSON line of figures; exit 1
on the first step that fails.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable

import httpx
import numpy as np

from cbf_tools.bench.failover import TEXT, SpeechFailed, Spoken, said_once, speak

HEALTH = ("import urllib.request, sys\n"
          "try: print(urllib.request.urlopen('http://127.0.0.1:8197/health', timeout=3).read().decode())\n"
          "except Exception as e: print(getattr(e, 'read', lambda: b'{}')().decode() or '{}')")
LOOKS = 12  # /health answers read per gateway container (each a new connection: any of its processes may answer)


class CheckFailed(Exception):
    pass


def say(text: str) -> None:
    print(time.strftime("%H:%M:%S"), text, flush=True)


class Stack:
    """The compose project's containers, through the docker CLI."""

    def __init__(self, docker: list[str], project: str) -> None:
        self.docker, self.project = docker, project

    def run(self, *args: str, timeout: float = 60) -> str:
        return subprocess.run([*self.docker, *args], check=True, capture_output=True, text=True,
                              timeout=timeout).stdout.strip()

    def containers(self, service: str) -> list[str]:
        return sorted(self.run("ps", "-q", "--filter", f"label=com.docker.compose.project={self.project}",
                                "--filter", f"label=com.docker.compose.service={service}").split())

    def name(self, container: str) -> str:
        return self.run("inspect", "-f", "{{.Name}}", container).lstrip("/")

    def address(self, container: str) -> str:
        return self.run("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
                         container).split()[0]

    def healths(self, gateway: str) -> list[dict[str, Any]]:
        """What the gateway container's processes say on /health (LOOKS answers)."""
        out = []
        for _ in range(LOOKS):
            try:
                out.append(json.loads(self.run("exec", gateway, "python", "-c", HEALTH, timeout=20) or "{}"))
            except (subprocess.SubprocessError, json.JSONDecodeError):
                pass
        return out

    def kill_worker(self, engine: str) -> None:
        """SIGKILL the engine container's worker process from the host: the container dies as after a crash."""
        top = self.run("top", engine, "-eo", "pid,args").splitlines()[1:]
        pids = [int(line.split()[0]) for line in top if "chatterbox-fast" in line and "engine" in line]
        if not pids:
            raise CheckFailed(f"no engine process in {self.name(engine)}: {top}")
        os.kill(pids[0], signal.SIGKILL)


def wait(what: str, ok: Callable[[], bool], within: float) -> float:
    started = time.monotonic()
    while not ok():
        if time.monotonic() - started > within:
            raise CheckFailed(f"{what}: not within {within:g} s")
        time.sleep(0.5)
    return time.monotonic() - started


def both_engines_up(stack: Stack) -> bool:
    for gateway in stack.containers("gateway"):
        answers = stack.healths(gateway)[:3]
        if not answers or not all(sum(e["available"] for e in h.get("engines", [])) == 2 for h in answers):
            return False
    return True


def balancer_ok(url: str) -> bool:
    try:
        return httpx.get(url + "/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def at_first_chunk(action: Callable[[], None]) -> Callable[[int], None]:
    def on_chunk(n: int) -> None:
        if n == 1:
            action()
    return on_chunk


def checked(spoken: Spoken, text: str, what: str) -> Spoken:
    if (wrong := said_once(spoken.chunks, text)) is not None:
        raise CheckFailed(f"{what}: {wrong}")
    return spoken


def speech(url: str, key: str) -> dict[str, Any]:
    from engine.watermark import Watermarker  # the reader only (perth), loaded for this step

    http = checked(speak("http", url, TEXT, lambda n: None, key), TEXT, "/v1/tts")
    pcm = b"".join(base64.b64decode(c["audio"]) for c in http.chunks)
    score = Watermarker().detect(np.frombuffer(pcm, np.int16).astype(np.float32) / 32768, 24000)
    if score < 0.9:
        raise CheckFailed(f"/v1/tts: PerTh watermark {score:.3f}")
    ws = checked(speak("ws", url, TEXT, lambda n: None, key), TEXT, "/v1/stream")
    say(f"speech through the balancer: /v1/tts {len(http.chunks)} chunks, {http.done['audio_seconds']:.1f} s, PerTh "
        f"{score:.3f}; /v1/stream {len(ws.chunks)} chunks, first audio {ws.done['ttfa']} s")
    return {"tts_chunks": len(http.chunks), "watermark": round(score, 3), "ws_chunks": len(ws.chunks)}


def busy_engine(stack: Stack) -> str:
    """The engine container saying the one utterance in flight."""
    by_address = {stack.address(e): e for e in stack.containers("engine-0") + stack.containers("engine-1")}
    for gateway in stack.containers("gateway"):
        for health in stack.healths(gateway):
            for engine in health.get("engines", []):
                if engine["in_flight"]:
                    return by_address[engine["url"].split("//")[1].rsplit(":", 1)[0]]
    raise CheckFailed("no gateway process says an engine has an utterance in flight")


def engine_killed(stack: Stack, url: str, key: str) -> dict[str, Any]:
    wait("both engines up in every gateway", lambda: both_engines_up(stack), 180)
    killed: list[str] = []

    def kill() -> None:
        engine = busy_engine(stack)
        stack.kill_worker(engine)
        killed.append(stack.name(engine))

    spoken = checked(speak("ws", url, TEXT * 2, at_first_chunk(kill), key), TEXT * 2, "the utterance whose engine died")
    if not killed or spoken.done.get("failovers") != 1:
        raise CheckFailed(f"killed {killed}, done {spoken.done}")
    back = wait(f"{killed[0]} restarted and both engines up again", lambda: both_engines_up(stack), 240)
    say(f"engine container {killed[0]} killed mid-utterance: the utterance went on (failovers 1, gap "
        f"{spoken.done['failover_gap']} s, longest wait at the client {spoken.longest_wait_s:.2f} s, every word said "
        f"once); the container was back in use {back:.0f} s later")
    return {"engine_killed": killed[0], "failover_gap_s": spoken.done["failover_gap"],
            "client_longest_wait_s": round(spoken.longest_wait_s, 3), "engine_back_s": round(back, 1)}


def serving_gateway(stack: Stack) -> str:
    """The gateway container holding the one session open."""
    for gateway in stack.containers("gateway"):
        if any(h.get("sessions") for h in stack.healths(gateway)):
            return gateway
    raise CheckFailed("no gateway process says it has a session")


def gateway_restarted(stack: Stack, url: str, key: str) -> dict[str, Any]:
    restarts: list[tuple[str, threading.Thread]] = []
    began: list[float] = []
    took: list[float] = []

    def restart() -> None:
        gateway = serving_gateway(stack)

        def run() -> None:
            began.append(time.monotonic())
            stack.run("restart", "-t", "400", gateway, timeout=420)
            took.append(time.monotonic() - began[0])

        thread = threading.Thread(target=run)
        thread.start()
        restarts.append((stack.name(gateway), thread))

    spoken = checked(speak("ws", url, TEXT * 3, at_first_chunk(restart), key), TEXT * 3, "the draining gateway's call")
    done_at = time.monotonic()
    if not restarts:
        raise CheckFailed("no gateway was restarted")
    name, thread = restarts[0]
    thread.join(430)
    if not began or began[0] > done_at:
        raise CheckFailed("the call was done before its gateway was told to stop: nothing was drained")
    logs = subprocess.run([*stack.docker, "logs", "--tail", "300", name], capture_output=True, text=True)
    drained = re.search(r"draining \(new sessions refused\): [1-9]", logs.stdout + logs.stderr) is not None
    back = wait("the balancer's /health ok again", lambda: balancer_ok(url), 120)
    after = None
    for _ in range(10):  # a new call that reaches a gateway still starting is refused: the client comes back
        try:
            after = checked(speak("ws", url, TEXT, lambda n: None, key), TEXT, "a call after the restart")
            break
        except (SpeechFailed, OSError) as exc:
            say(f"  a call after the restart was refused ({str(exc)[:80]}); again")
            time.sleep(1)
    if after is None:
        raise CheckFailed("no call got through after the gateway restart")
    if not drained:
        raise CheckFailed(f"{name}'s log does not say a process of it drained with a session")
    say(f"gateway container {name} restarted (docker restart: SIGTERM, drain) mid-utterance: the call ended with done "
        f"{done_at - began[0]:.1f} s after the SIGTERM ({len(spoken.chunks)} chunks, "
        f"{spoken.done['audio_seconds']:.1f} s of audio); the restart took {took[0]:.1f} s; a new call through the "
        f"balancer spoke after it")
    return {"gateway_restarted": name, "done_after_sigterm_s": round(done_at - began[0], 1),
            "restart_s": round(took[0], 1), "balancer_ok_after_s": round(back, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cbf_tools.compose_check")
    parser.add_argument("--url", required=True, help="the balancer's URL")
    parser.add_argument("--key", required=True, help="an API key the gateways take")
    parser.add_argument("--project", required=True, help="the compose project's name")
    parser.add_argument("--docker", default="docker", help="the docker client command")
    args = parser.parse_args(argv)
    stack = Stack(args.docker.split(), args.project)
    figures: dict[str, Any] = {}
    try:
        for step in (speech, engine_killed, gateway_restarted):
            figures.update(step(args.url, args.key) if step is speech else step(stack, args.url, args.key))
    except (CheckFailed, SpeechFailed, subprocess.SubprocessError, httpx.HTTPError, OSError) as exc:
        say(f"FAIL: {type(exc).__name__}: {exc}")
        print(json.dumps({**figures, "failed": str(exc)}))
        return 1
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
