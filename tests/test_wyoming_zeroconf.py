"""Zeroconf discovery of the Wyoming port (``--wyoming-zeroconf``), as Home Assistant finds it: a real python-zeroconf
browser on loopback finds the gateway's ``_wyoming._tcp.local.`` service, the ``wyoming`` package's client asks the
advertised address and port what it serves, and the service is withdrawn when the gateway stops (SIGTERM). Then the
pure announcement, a name another responder holds (one warning; nothing stops) and the refusal without a port."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from zeroconf import IPVersion, ServiceBrowser, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from gateway.wyoming.announce import SERVICE_TYPE, Announcement, Announcer, announcement, instance_name
from cbf_tools.peers.local_server import free_port
from tests.cli_run import run_cli
from tests.server import health_when, running_server

LOOPBACK = {"interfaces": ["127.0.0.1"], "ip_version": IPVersion.V4Only}  # multicast on lo: no other host hears
WAIT_S = 20  # a bound on a hang, not a speed


def unique_name() -> str:
    return f"cbf-test-{uuid.uuid4().hex[:8]}"  # other test runs on this host browse the same loopback


async def describe(host: str, port: int) -> Info:
    async with AsyncTcpClient(host, port) as client:
        await client.write_event(Describe().event())
        event = await asyncio.wait_for(client.read_event(), WAIT_S)
    assert event is not None and Info.is_type(event.type), event
    return Info.from_event(event)


@contextlib.contextmanager
def browsing(full: str) -> Iterator[tuple[Zeroconf, queue.Queue[ServiceStateChange]]]:
    """A python-zeroconf browser for ``_wyoming._tcp.local.`` on loopback, as Home Assistant's: (its Zeroconf, what
    happens to the service ``full``)."""
    changes: queue.Queue[ServiceStateChange] = queue.Queue()

    def seen(zeroconf: Zeroconf, service_type: str, name: str, state_change: ServiceStateChange) -> None:
        if name == full:
            changes.put(state_change)

    zeroconf = Zeroconf(**LOOPBACK)
    browser = ServiceBrowser(zeroconf, SERVICE_TYPE, handlers=[seen])
    try:
        yield zeroconf, changes
    finally:
        browser.cancel()
        zeroconf.close()


def test_a_browser_finds_the_port_describes_it_and_sees_it_withdrawn_on_stop(tmp_path: Path) -> None:
    name = unique_name()
    full = f"{name}.{SERVICE_TYPE}"
    with browsing(full) as (zeroconf, changes):
        with running_server("--wyoming-port", "0", "--wyoming-zeroconf", name, voices_dir=tmp_path):
            assert changes.get(timeout=WAIT_S) == ServiceStateChange.Added
            info = zeroconf.get_service_info(SERVICE_TYPE, full, timeout=WAIT_S * 1000)
            assert info is not None and info.port and info.properties == {}
            assert info.parsed_addresses() == ["127.0.0.1"]  # where --host 127.0.0.1 has the port listen
            (program,) = asyncio.run(describe(info.parsed_addresses()[0], info.port)).tts
            assert "default" in [voice.name for voice in program.voices]
        assert changes.get(timeout=WAIT_S) == ServiceStateChange.Removed  # the goodbye, not a TTL run out


def test_processes_sharing_the_port_announce_it_once(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    name, port = unique_name(), free_port()
    full = f"{name}.{SERVICE_TYPE}"
    with browsing(full) as (zeroconf, changes):
        with running_server("--processes", "2", "--wyoming-port", str(port), "--wyoming-zeroconf", name,
                            voices_dir=tmp_path) as url:
            assert changes.get(timeout=WAIT_S) == ServiceStateChange.Added
            health_when(url, lambda h: len(h["processes"]) == 2 and all(p["status"] == "ok" for p in h["processes"]),
                        "the second process did not start", within=WAIT_S)
            info = zeroconf.get_service_info(SERVICE_TYPE, full, timeout=WAIT_S * 1000)
            assert info is not None and info.port == port
        assert changes.get(timeout=WAIT_S) == ServiceStateChange.Removed
    logs = capfd.readouterr().err
    assert logs.count(f"announced {full}") == 1 and "cannot announce" not in logs  # no clash with itself


def test_the_announcement_names_the_address_the_port_listens_on() -> None:
    mine = ["127.0.0.1", "192.168.1.20", "::1", "fe80::1", "10.0.0.7"]
    assert announcement("kitchen", "0.0.0.0", 10200, mine) == Announcement(
        "kitchen._wyoming._tcp.local.", 10200, ("192.168.1.20", "10.0.0.7"), None)
    assert announcement("kitchen", "::", 10200, mine).addresses == ("192.168.1.20", "fe80::1", "10.0.0.7")
    only = announcement("kitchen", "192.168.1.20", 10300, mine)
    assert (only.addresses, only.interfaces, only.port) == (("192.168.1.20",), ("192.168.1.20",), 10300)
    assert announcement("kitchen", "0.0.0.0", 10200, ["127.0.0.1"]).addresses == ()
    assert instance_name("  Chatterbox Kitchen ") == "Chatterbox Kitchen"
    for bad in ("   ", "x" * 64, "é" * 32):
        with pytest.raises(ValueError, match="--wyoming-zeroconf"):
            instance_name(bad)


async def test_a_name_held_elsewhere_is_one_warning_and_the_announcer_stops_cleanly(
        caplog: pytest.LogCaptureFixture) -> None:
    name = unique_name()
    holder = AsyncZeroconf(**LOOPBACK)
    try:
        held = AsyncServiceInfo(SERVICE_TYPE, f"{name}.{SERVICE_TYPE}", port=1, parsed_addresses=["127.0.0.1"])
        await (await holder.async_register_service(held))
        announcer = Announcer(announcement(name, "127.0.0.1", 2, []))
        with caplog.at_level(logging.WARNING, "chatterbox_fast.gateway"):
            announcer.start()
            async with asyncio.timeout(WAIT_S):
                while not caplog.records:
                    await asyncio.sleep(0.05)
            await announcer.stop()
        (warning,) = caplog.records
        assert "cannot announce" in warning.message and "NonUniqueNameException" in warning.message
    finally:
        await holder.async_close()


def test_zeroconf_without_a_wyoming_port_is_refused_with_the_fix() -> None:
    result = run_cli("serve", "--wyoming-zeroconf", "kitchen", timeout=60)
    assert result.returncode == 2 and "--wyoming-port" in result.stderr and "Traceback" not in result.stderr
    blank = run_cli("serve", "--wyoming-port", "0", "--wyoming-zeroconf", " ", timeout=60)
    assert blank.returncode == 2 and "expected a name" in blank.stderr
