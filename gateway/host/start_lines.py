"""What a starting gateway says at INFO (pure): where it listens (and, on loopback only, how to open it to the
network), then, once an engine worker is connected, one line with where to open the page, which engine and device
speak, and whether keys are on."""

from __future__ import annotations

import ipaddress

from gateway.guard.operator_safety import loopback

WILDCARDS = ("0.0.0.0", "::", "")


def page_url(host: str, port: int, tls: bool = False) -> str:
    """The address to open the page at from this machine: a wildcard host is reached as localhost."""
    if host in WILDCARDS:
        host = "localhost"
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass
    return f"{'https' if tls else 'http'}://{host}:{port}/"


def listening_line(host: str, port: int, engine: str, tls: bool = False) -> str:
    """Said as the gateway starts, before any worker is ready."""
    line = f"gateway listening on {page_url(host, port, tls)} (engine: {engine})"
    if loopback(host):
        line += ("; only this machine can reach it: to open it to the network, set --host 0.0.0.0 (CBF_HOST) "
                 "with an API key (--api-key, CBF_API_KEYS, or --keys-file)")
    return line


def ready_line(host: str, port: int, engine: str, device: str, keys: str, tls: bool = False) -> str:
    """Said once, when the first engine worker is connected. ``keys``: "on", "on (keys file)" or "off"."""
    return f"ready: open {page_url(host, port, tls)} to hear it; {engine} on {device} speaks; API keys {keys}"
