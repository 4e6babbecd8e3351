"""WebRTC media across replicas: the answering gateway must be reachable at the candidates it advertises.

Two ways, both against a real gateway and a real aiortc peer: media on a fixed UDP port range (``--rtc-ports``, for
host networking), and a relay-only session through a real TURN relay (Debian's coturn, started here unprivileged on
free ports) that the gateway is given with ``--ice-server turn:...``."""

from __future__ import annotations

import contextlib
import random
import re
import subprocess
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from aiortc import RTCConfiguration, RTCIceServer, RTCIceTransportPolicy

from cbf_tools.peers.local_server import free_port
from cbf_tools.peers.rtc_listener import Listener
from gateway.webrtc.udp_ports import PortRange, parse_port_range, split_range
from tests.cli_run import run_cli
from tests.server import running_server

TURNSERVER = "/usr/bin/turnserver"  # Debian's coturn, installed by `make test` (scripts/install-fleet-tools)
USER, PASSWORD = "cbf", "relay-test-password"
SENTENCE = '{"type": "speak", "text": "Relayed all the way to you."}'


def candidates(sdp: str) -> list[tuple[str, int, str]]:
    """(address, port, type) of every candidate line."""
    return [(m[1], int(m[2]), m[3]) for m in re.finditer(r"a=candidate:\S+ \d+ udp \d+ (\S+) (\d+) typ (\w+)", sdp)]


def test_port_ranges() -> None:
    assert parse_port_range("40000-40099") == (40000, 40099)
    for bad in ("40000", "40099-40000", "80-90", "a-b", "40000-70000"):
        with pytest.raises(ValueError):
            parse_port_range(bad)
    assert split_range(40000, 40099, 2) == [(40000, 40049), (40050, 40099)]
    assert split_range(40000, 40006, 3) == [(40000, 40001), (40002, 40003), (40004, 40006)]
    with pytest.raises(ValueError):
        split_range(40000, 40001, 3)
    ports = PortRange(50000, 50002)
    assert list(ports.lap()) == [50000, 50001, 50002]
    lap = ports.lap()
    assert next(lap) == 50000  # a bind succeeded at 50000: the next lap starts after it
    assert list(ports.lap()) == [50001, 50002, 50000]


async def speak_over(listener: Listener, url: str) -> tuple[str, str]:
    """Offer, accept, speak one sentence, wait for its audio; the offer's and the answer's SDP."""
    offer = await listener.offer()
    async with httpx.AsyncClient() as http:
        reply = await http.post(url + "/v1/webrtc/offer", json={"sdp": offer, "type": "offer"})
    assert reply.status_code == 200, reply.text
    answer = reply.json()["sdp"]
    await listener.accept(answer)
    await listener.wait_for(lambda: listener.channel.readyState == "open" and listener.events, timeout=20)
    listener.channel.send(SENTENCE)
    await listener.wait_for(lambda: any(e["type"] == "done" for e in listener.events), timeout=30)
    done = next(e for e in listener.events if e["type"] == "done")
    assert done["underruns"] == 0 and len(listener.loud()) * 0.02 > 0.5 * done["audio_seconds"]
    return offer, answer


async def test_media_stays_on_the_given_udp_ports() -> None:
    low = random.randrange(42000, 60000, 100)
    with running_server("--rtc-ports", f"{low}-{low + 19}") as url:
        listener = Listener.create()
        try:
            _, answer = await speak_over(listener, url)
        finally:
            await listener.close()
    host = [port for _, port, kind in candidates(answer) if kind == "host"]
    assert host and all(low <= port <= low + 19 for port in host), candidates(answer)


@contextlib.contextmanager
def coturn(tmp: Path) -> Iterator[int]:
    """coturn on 127.0.0.1 (listening and relaying), long-term credentials USER:PASSWORD; yields its port."""
    port, relay = free_port(), random.randrange(42000, 60000, 100)
    (tmp / "turnserver.conf").write_text("")  # not /etc/turnserver.conf
    proc = subprocess.Popen([TURNSERVER, "-c", str(tmp / "turnserver.conf"), "-n", "--listening-ip=127.0.0.1",
                             f"--listening-port={port}", "--relay-ip=127.0.0.1", f"--min-port={relay}",
                             f"--max-port={relay + 99}", "--lt-cred-mech", f"--user={USER}:{PASSWORD}",
                             "--realm=chatterbox-fast", "--allow-loopback-peers", "--no-cli", "--no-tls", "--no-dtls",
                             f"--pidfile={tmp / 'turn.pid'}", f"--db={tmp / 'turndb'}", "--log-file=stdout",
                             "--simple-log"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 20
        for line in proc.stdout:  # type: ignore[union-attr]
            if "Total UDP servers" in line or "relay ports initialization done" in line.lower():
                break
            assert time.monotonic() < deadline, "coturn did not start"
        else:
            raise AssertionError(f"coturn exited with {proc.wait()}")
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


async def test_a_relay_only_session_through_coturn(tmp_path: Path) -> None:
    with coturn(tmp_path) as port:
        with running_server("--ice-server", f"turn:{USER}:{PASSWORD}@127.0.0.1:{port}") as url:
            listener = Listener.create(config=RTCConfiguration(
                iceServers=[RTCIceServer(f"turn:127.0.0.1:{port}", USER, PASSWORD)],
                iceTransportPolicy=RTCIceTransportPolicy.RELAY))
            try:
                offer, answer = await speak_over(listener, url)
            finally:
                await listener.close()
    assert {kind for _, _, kind in candidates(offer)} == {"relay"}  # the client can be reached only through the relay
    assert "relay" in {kind for _, _, kind in candidates(answer)}  # and the gateway allocated on it too


def test_bad_port_ranges_are_refused_in_one_line() -> None:
    for flags, said in ((["--rtc-ports", "80-90"], "expected LOW-HIGH with 1024 <= LOW <= HIGH <= 65535"),
                        (["--rtc-ports", "40000-40001", "--processes", "3"], "has 2 ports, fewer than the 3 processes")):
        done = run_cli("serve", "--port", str(free_port()), *flags, timeout=60)
        assert done.returncode == 2 and said in done.stderr, done.stderr
