"""Draining restarts (gateway/host/drain.py, gateway/host/draining.py): the rules alone, then real servers on
127.0.0.1 with real clients. SIGTERM lets an utterance in flight finish with ``done`` while new sessions are refused
and /health answers 503 ``draining``; past the grace the rest is closed with 1012; ``POST /v1/admin/drain`` needs a
key (or, with none, a client on this host); ``serve --processes 2`` restarted on SIGHUP loses no call."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from typing import Any, Iterator

import httpx
import pytest
import websockets

from cbf_tools.bench import drain as bench_drain
from cbf_tools.peers.local_server import free_port, local_server, wait_healthy
from gateway.host.processes import STOP_MARGIN_S
from gateway.host.drain import CLOSING, DRAINING, REFUSAL, RESTART_CLOSE_CODE, SERVING, Drain
from gateway.metrics import Metrics
from gateway.sessions.registry import ServerDraining, SessionLimitReached, SessionRegistry
from gateway.settings import GatewaySettings
from tests.cli_run import ROOT
from tests.server import health_when
from tests.test_deploy_files import compose, services
from tests.test_scale_files import ONE_SERVER, find

KEY = "drain-test-key"


def test_a_drain_begins_once_with_its_deadline() -> None:
    drain = Drain(grace_s=30)
    assert drain.state == SERVING and drain.left(100.0) is None and drain.refusal() is None
    assert drain.begin(100.0)
    assert drain.state == DRAINING and drain.left(110.0) == 20.0 and drain.left(200.0) == 0.0
    assert not drain.begin(150.0, handover=True)  # the first drain's deadline and way stand
    assert drain.deadline == 130.0 and not drain.handover


def test_draining_in_place_refuses_new_sessions_and_handing_over_does_not() -> None:
    in_place, handover = Drain(30), Drain(30)
    in_place.begin(0.0)
    handover.begin(0.0, handover=True)
    assert in_place.refusal() == REFUSAL
    assert handover.refusal() is None  # no new connection reaches it; those accepted before are served


async def test_the_registry_refuses_while_draining_and_says_when_it_is_empty() -> None:
    drain = Drain(30)
    registry = SessionRegistry(2, Metrics(), drain)
    owner = object()
    registry.add(owner, "ws")
    drain.begin(0.0)
    with pytest.raises(ServerDraining) as refused:
        registry.add(object(), "ws")
    assert isinstance(refused.value, SessionLimitReached)  # every transport's refusal path takes it
    assert (refused.value.code, refused.value.close_code) == ("draining", RESTART_CLOSE_CODE)
    emptied = asyncio.create_task(registry.until_empty())
    await asyncio.sleep(0)
    assert not emptied.done()
    registry.remove(owner)
    await asyncio.wait_for(emptied, 5)


@contextlib.contextmanager
def _server(*flags: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """``serve`` on eSpeak, its process handed to the test (which signals it and reads its exit code)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
                             "--engine", "espeak", "--log-level", "warning", *flags], cwd=ROOT)
    try:
        wait_healthy(proc, url, 90, "the server")
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def _event(ws: Any, kind: str) -> dict:
    """The next JSON event of ``kind`` (audio frames and other events skipped)."""
    while True:
        message = await asyncio.wait_for(ws.recv(), 30)
        if isinstance(message, str) and (event := json.loads(message))["type"] == kind:
            return event


async def _close_after_events(ws: Any) -> tuple[list[str], int, str]:
    """Every event type until the server closes the socket, its close code and reason."""
    kinds = []
    with pytest.raises(websockets.ConnectionClosed) as closed:
        while True:
            message = await asyncio.wait_for(ws.recv(), 30)
            if isinstance(message, str):
                kinds.append(json.loads(message)["type"])
    return kinds, closed.value.rcvd.code, closed.value.rcvd.reason


async def _in_flight(ws_url: str, **kwargs: Any) -> Any:
    """A session whose utterance is under way: its text sent without ``end``, its first chunk received."""
    ws = await websockets.connect(ws_url + "/v1/stream", **kwargs)
    await _event(ws, "ready")
    await ws.send(json.dumps({"type": "text", "text": "All right, your table for two is ready now. "}))
    await _event(ws, "chunk")
    return ws


async def test_sigterm_lets_the_utterance_in_flight_finish_and_refuses_new_sessions() -> None:
    with _server("--drain-grace", "60") as (url, proc):
        ws_url = url.replace("http", "ws", 1)
        proxied = httpx.post(url + "/v1/admin/drain", headers={"X-Forwarded-For": "203.0.113.9"})
        assert proxied.status_code == 403 and proxied.json()["error"]["code"] == "forbidden"  # no keys: this host only

        speaking = await _in_flight(ws_url)
        idle = await websockets.connect(ws_url + "/v1/stream")
        await _event(idle, "ready")
        elevenlabs = ws_url + "/v1/text-to-speech/default/stream-input"
        idle_elevenlabs = await websockets.connect(elevenlabs)
        proc.send_signal(signal.SIGTERM)

        kinds, code, reason = await _close_after_events(idle)  # nothing left to say: let go at once
        assert kinds == ["closing"] and code == RESTART_CLOSE_CODE and reason == CLOSING
        for socket in (idle_elevenlabs, await websockets.connect(elevenlabs)):  # let go; refused while draining
            assert json.loads(await asyncio.wait_for(socket.recv(), 30))["error"] == "draining"
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await socket.recv()
            assert closed.value.rcvd.code == RESTART_CLOSE_CODE
        health = httpx.get(url + "/health")
        assert health.status_code == 503 and health.json()["status"] == "draining"
        assert 0 < health.json()["drain_left_s"] <= 60

        async with websockets.connect(ws_url + "/v1/stream") as refused:
            error = await _event(refused, "error")
            assert error["code"] == "draining"
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await refused.recv()
            assert closed.value.rcvd.code == RESTART_CLOSE_CODE
        speech = httpx.post(url + "/v1/tts", json={"text": "Anyone there?"})
        assert speech.status_code == 503 and speech.json()["error"]["code"] == "draining"
        assert speech.headers["retry-after"]

        await speaking.send(json.dumps({"type": "end"}))
        kinds, code, _ = await _close_after_events(speaking)
        assert kinds[-2:] == ["done", "closing"] and "error" not in kinds and code == RESTART_CLOSE_CODE
        assert await asyncio.to_thread(proc.wait, 30) == 0


async def test_the_drain_endpoint_needs_a_key_and_past_the_grace_closes_the_rest_with_1012() -> None:
    with _server("--drain-grace", "1", "--api-key", KEY) as (url, proc):
        speaking = await _in_flight(url.replace("http", "ws", 1), subprotocols=["cbf.v1", f"cbf.key.{KEY}"])
        unkeyed = httpx.post(url + "/v1/admin/drain")
        assert unkeyed.status_code == 401 and unkeyed.json()["error"]["code"] == "unauthorized"
        assert health_when(url, lambda h: h["status"] == "ok", "drained without a key")["status"] == "ok"

        accepted = httpx.post(url + "/v1/admin/drain", headers={"Authorization": f"Bearer {KEY}"})
        assert accepted.status_code == 202 and accepted.json()["status"] == "draining"
        kinds, code, reason = await _close_after_events(speaking)  # its text never ends: the grace runs out
        assert "done" not in kinds and kinds[-1] == "closing"
        assert code == RESTART_CLOSE_CODE and reason == CLOSING
        assert await asyncio.to_thread(proc.wait, 30) == 0


async def test_a_connection_accepted_as_a_drain_in_place_ends_gets_its_refusal_not_a_closed_socket() -> None:
    """The race a soak met: a client connected just before the process exits. The port closes first, then the
    connections it accepted are answered before the exit."""
    with _server("--drain-grace", "30") as (url, proc):
        port = int(url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)  # accepted; its request not yet sent
        await asyncio.sleep(0.2)
        proc.send_signal(signal.SIGTERM)  # no session: the drain ends at once
        while True:  # until the port is closed
            try:
                _, probe = await asyncio.open_connection("127.0.0.1", port)
            except ConnectionRefusedError:
                break
            probe.close()
            await asyncio.sleep(0.02)
        writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        reply = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        assert reply.startswith(b"HTTP/1.1 503") and b'"draining"' in reply, reply[:200]
        assert await asyncio.to_thread(proc.wait, 30) == 0


async def test_a_rolling_restart_of_two_processes_loses_no_call() -> None:
    with local_server(["--processes", "2", "--engine", "espeak", "--drain-grace", "30", "--log-level", "warning"],
                      env=dict(os.environ)) as (url, supervisor):
        summary = await bench_drain.measure(url, supervisor, calls=12, interval=0.15)
    assert summary["replaced"], summary
    assert summary["dropped"] == 0 and summary["done"] == 12, summary["why_dropped"]
    assert summary["calls_placed_during_restart"] > 0


def _seconds(duration: str) -> float:
    """A compose duration (``6m30s``, ``10s``) in seconds."""
    parts = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", duration)
    assert parts is not None and duration, duration
    return int(parts[1] or 0) * 60 + int(parts[2] or 0)


def test_the_deployment_files_give_a_drain_its_grace() -> None:
    """Every service that runs ``serve`` is stopped no sooner than a drain of the default grace can end: the grace,
    then (``--processes``) the supervisor's margin; Kubernetes's readiness probe asks /health (503 while draining)."""
    needed = GatewaySettings.drain_grace_s + STOP_MARGIN_S
    scale = [("compose.scale.yaml", name, svc) for name, svc in compose("compose.scale.yaml")["services"].items()]
    gateways = [(file, name, svc) for file, name, svc in [*services(), *scale]  # the image's command is serve
                if svc["image"].startswith("chatterbox-fast:") and svc.get("command", ["serve"])[0] == "serve"]
    # compose.yaml, compose.cpu.yaml, compose.gpus.yaml, compose.split.yaml's and compose.scale.yaml's
    assert len(gateways) == 5, gateways
    for file, name, svc in gateways:
        assert _seconds(svc["stop_grace_period"]) > needed, (file, name)
    # the gateways' Deployment, and the one-server layout's (one pod, a worker per GPU)
    for pod in (find("Deployment", "cbf-gateway")["spec"]["template"]["spec"],
                find("Deployment", "cbf-server", ONE_SERVER)["spec"]["template"]["spec"]):
        (c,) = pod["containers"]
        assert c["readinessProbe"]["httpGet"]["path"] == "/health"
        pause = c["lifecycle"]["preStop"]["sleep"]["seconds"]
        assert pod["terminationGracePeriodSeconds"] > needed + pause
