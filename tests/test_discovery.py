"""Engine discovery (``--engine-url dns+ws://NAME:PORT``): the pure membership rules, then two real eSpeak workers
on 127.0.0.2 and 127.0.0.3 behind one name (an injected resolver), drained and revived, and one real resolution of
``localhost`` through ``serve``."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from cbf_tools.peers.local_server import free_port, local_workers
from cbf_tools.peers.polling import until
from engine.protocol import Done
from gateway.engine_link.discovery import Changes, DnsTarget, Membership, parse_dns_url, resolve
from gateway.engine_link.pool import EnginePool
from tests.server import running_server

ROOT = Path(__file__).resolve().parent.parent
FLEET = DnsTarget("ws", "fleet", 8198)


def test_parse_dns_url() -> None:
    assert parse_dns_url("dns+ws://engine.ns.svc:8198") == DnsTarget("ws", "engine.ns.svc", 8198)
    assert parse_dns_url("dns+wss://engine:9/") == DnsTarget("wss", "engine", 9)
    for bad in ("dns+ws://engine", "dns+http://engine:1", "dns+ws://:8198", "dns+ws://e:8198/path", "dns+ws://e:x"):
        with pytest.raises(ValueError):
            parse_dns_url(bad)
    assert FLEET.url("10.0.0.7") == "ws://10.0.0.7:8198" and FLEET.url("fd00::7") == "ws://[fd00::7]:8198"


def test_membership_adds_drains_and_revives() -> None:
    m = Membership(FLEET)
    assert m.resolved(["10.0.0.1", "10.0.0.2", "10.0.0.1"]) == Changes(add=("ws://10.0.0.1:8198",
                                                                          "ws://10.0.0.2:8198"))
    assert m.resolved(["10.0.0.2", "10.0.0.1"]) == Changes()
    assert m.resolved(["10.0.0.2", "10.0.0.3"]) == Changes(add=("ws://10.0.0.3:8198",), drain=("ws://10.0.0.1:8198",))
    assert m.draining == {"ws://10.0.0.1:8198"} and m.active == {"ws://10.0.0.2:8198", "ws://10.0.0.3:8198"}
    assert m.resolved(["10.0.0.2", "10.0.0.3"]) == Changes()  # still draining: not drained twice
    assert m.resolved(["10.0.0.1", "10.0.0.3"]) == Changes(drain=("ws://10.0.0.2:8198",),
                                                          revive=("ws://10.0.0.1:8198",))
    assert m.draining == {"ws://10.0.0.2:8198"}
    m.drained("ws://10.0.0.2:8198")
    assert m.resolved(["10.0.0.2"]) == Changes(add=("ws://10.0.0.2:8198",), drain=("ws://10.0.0.1:8198",
                                                                                 "ws://10.0.0.3:8198"))
    assert m.resolved([]) == Changes(drain=("ws://10.0.0.2:8198",))


def workers_on(hosts: list[str], port: int):
    """Real eSpeak engine workers listening on ``host:port`` each."""
    return local_workers([f"{host}:{port}" for host in hosts])


async def _speak(utterance, text: str) -> int:
    """Send ``text``, end, and read to ``done``: the number of chunks."""
    await utterance.text(text)
    await utterance.end()
    events = [event async for event in utterance.events()]
    assert isinstance(events[-1], Done)
    return len(events) - 1


def test_a_name_with_two_loopback_addresses_drains_and_revives_real_workers() -> None:
    port = free_port()
    addresses = ["127.0.0.2", "127.0.0.3"]

    failing, failed = False, 0

    async def resolver(name: str, port_: int) -> list[str]:
        nonlocal failed
        assert (name, port_) == ("fleet", port)
        if failing:
            failed += 1
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return list(addresses)

    async def scenario() -> None:
        pool = EnginePool([f"dns+ws://fleet:{port}"], resolve_interval=0.05, resolver=resolver)
        pool.start_background()
        try:
            await until(lambda: sum(e["available"] for e in pool.engines) == 2, 30, "both workers connected")
            first, second = await pool.start("default"), await pool.start("default")
            assert {first.worker, second.worker} == {f"ws://127.0.0.2:{port}", f"ws://127.0.0.3:{port}"}
            leaving = first if first.worker.endswith(f"127.0.0.3:{port}") else second
            staying = second if leaving is first else first

            addresses.remove("127.0.0.3")  # scaled down while an utterance is in flight there
            await until(lambda: f"ws://127.0.0.3:{port}" in pool.draining, 30, "the vanished worker is draining")
            for _ in range(3):  # new utterances go elsewhere
                other = await pool.start("default")
                assert other.worker == f"ws://127.0.0.2:{port}"
                assert await _speak(other, "Somewhere else.") >= 1
            assert any(e["url"].endswith(f"127.0.0.3:{port}") and e["draining"] for e in pool.engines)
            assert await _speak(leaving, "The utterance in flight finishes on its worker.") >= 1
            await until(lambda: len(pool.clients) == 1, 30, "the drained worker is closed once idle")
            assert await _speak(staying, "And this one too.") >= 1

            addresses.append("127.0.0.3")  # scaled up again
            await until(lambda: sum(e["available"] for e in pool.engines) == 2, 30, "the worker is found again")
            assert not pool.draining

            nonlocal failing
            failing = True  # a DNS outage drains nothing
            await until(lambda: failed >= 5, 30, "the pool asked the failing resolver")
            assert not pool.draining and sum(e["available"] for e in pool.engines) == 2
        finally:
            await pool.close()

    with workers_on(["127.0.0.2", "127.0.0.3"], port):
        asyncio.run(scenario())


def test_a_real_resolution_of_localhost_through_serve() -> None:
    port = free_port()
    assert "127.0.0.1" in asyncio.run(resolve("localhost", port))
    with workers_on(["127.0.0.1"], port):
        with running_server("--engine-url", f"dns+ws://localhost:{port}", "--engine-resolve-interval", "0.2") as url:
            engines = httpx.get(url + "/health").json()["engines"]
            assert any(e["url"] == f"ws://127.0.0.1:{port}" and e["available"] for e in engines)
            assert httpx.post(url + "/v1/tts", json={"text": "Found by name."}, timeout=60).status_code == 200


def test_a_malformed_dns_url_is_refused_in_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "serve", "--port", str(free_port()), "--engine-url",
                           "dns+ws://engine"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "expected dns+ws://NAME:PORT" in done.stderr
