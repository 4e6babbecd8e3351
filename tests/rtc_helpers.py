"""Test helpers around the listening peer (cbf_tools/rtc_listener.py): loopback-only ICE, a test tone, and a peer
connected to a gateway."""

from __future__ import annotations

import aioice.ice
import httpx
import numpy as np

from cbf_tools.rtc_listener import Listener


def loopback_only(monkeypatch) -> None:
    """aioice skips 127.0.0.1 (RFC 8445); two in-process peers need it on a machine without other interfaces."""
    monkeypatch.setattr(aioice.ice, "get_host_addresses", lambda use_ipv4=True, use_ipv6=True: ["127.0.0.1"])


def tone(seconds: float, freq: float = 440.0, amp: int = 8000) -> bytes:
    t = np.arange(int(seconds * 24000)) / 24000
    return (np.sin(2 * np.pi * freq * t) * amp).astype("<i2").tobytes()


async def connect(url: str, keep_audio: bool = False, **body) -> tuple[Listener, dict]:
    """A listening peer connected to the gateway at ``url`` (``offer_codecs``: offer only these), its data channel
    open and the session's ``ready`` received; and the offer's JSON answer."""
    codecs = body.pop("offer_codecs", None)
    listener = Listener.create(codecs=codecs, keep_audio=keep_audio)
    async with httpx.AsyncClient() as http:
        reply = await http.post(url + "/v1/webrtc/offer", json={"sdp": await listener.offer(), "type": "offer",
                                                                **body})
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    await listener.accept(answer["sdp"])
    await listener.wait_for(lambda: listener.channel.readyState == "open" and listener.events)
    assert listener.events[0]["type"] == "ready" and listener.events[0]["session"] == answer["session"]
    return listener, answer
