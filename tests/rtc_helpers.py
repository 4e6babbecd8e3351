"""Test helpers around the listening peer (cbf_tools/rtc_listener.py): loopback-only ICE and a test tone."""

from __future__ import annotations

import aioice.ice
import numpy as np


def loopback_only(monkeypatch) -> None:
    """aioice skips 127.0.0.1 (RFC 8445); two in-process peers need it on a machine without other interfaces."""
    monkeypatch.setattr(aioice.ice, "get_host_addresses", lambda use_ipv4=True, use_ipv6=True: ["127.0.0.1"])


def tone(seconds: float, freq: float = 440.0, amp: int = 8000) -> bytes:
    t = np.arange(int(seconds * 24000)) / 24000
    return (np.sin(2 * np.pi * freq * t) * amp).astype("<i2").tobytes()
