"""Test helpers around the listening peer (cbf_tools/peers/rtc_listener.py): loopback-only ICE, a test tone, and a peer
connected to a gateway."""

from __future__ import annotations

import aioice.ice
import httpx
import numpy as np

from cbf_tools.peers.rtc_listener import Listener


def loopback_only(monkeypatch) -> None:
    """aioice skips 127.0.0.1 (RFC 8445); two in-process peers need it on a machine without other interfaces."""
    monkeypatch.setattr(aioice.ice, "get_host_addresses", lambda use_ipv4=True, use_ipv6=True: ["127.0.0.1"])


def tone(seconds: float, freq: float = 440.0, amp: int = 8000) -> bytes:
    t = np.arange(int(seconds * 24000)) / 24000
    return (np.sin(2 * np.pi * freq * t) * amp).astype("<i2").tobytes()


async def frames_later(listener: Listener, count: int = 25, timeout: float = 30) -> None:
    """Until ``count`` more frames have been decoded (25: half a second of the call). They come in order, so the
    frames that were in flight when this was called have all arrived, however long a busy machine takes."""
    now = len(listener.frames)
    await listener.wait_for(lambda: len(listener.frames) >= now + count, timeout=timeout)


async def connect(url: str, keep_audio: bool = False, key: str | None = None, **body) -> tuple[Listener, dict]:
    """A listening peer connected to the gateway at ``url`` (``offer_codecs``: offer only these), its data channel
    open and the session's ``ready`` received; and the offer's JSON answer."""
    codecs = body.pop("offer_codecs", None)
    listener = Listener.create(codecs=codecs, keep_audio=keep_audio, microphone=body.pop("microphone", None))
    async with httpx.AsyncClient() as http:
        reply = await http.post(url + "/v1/webrtc/offer", json={"sdp": await listener.offer(), "type": "offer",
                                                                **body},
                                headers={"Authorization": f"Bearer {key}"} if key else None)
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    await listener.accept(answer["sdp"])
    await listener.wait_for(lambda: listener.channel.readyState == "open" and listener.events)
    assert listener.events[0]["type"] == "ready" and listener.events[0]["session"] == answer["session"]
    return listener, answer


def bridge_offer(offer_sdp: str) -> str:
    """A phone bridge's offer made from a PCMU- or PCMA-only listener's: telephone-event offered beside the codec
    and a 20 ms ptime, as Asterisk, FreeSWITCH or Janus put them (aiortc offers neither)."""
    lines, out = offer_sdp.split("\r\n"), []
    for line in lines:
        if line.startswith("m=audio"):
            line += " 101"
        out.append(line)
        if line.startswith("a=rtpmap:0 PCMU/8000") or line.startswith("a=rtpmap:8 PCMA/8000"):
            out += ["a=rtpmap:101 telephone-event/8000", "a=fmtp:101 0-16", "a=ptime:20"]
    return "\r\n".join(out)


def rsa_peer_connection(configuration=None):
    """An aiortc peer connection with an RSA DTLS certificate and the ECDHE-RSA suites such a peer offers (as
    GStreamer's webrtcbin and other bridges do by default): a stand-in for an RSA bridge. (aiortc makes its ECDSA
    certificate in __init__ and takes no option: replaced before any transport exists.)"""
    from aiortc import RTCPeerConnection
    from aiortc.rtcdtlstransport import RTCCertificate, generate_certificate
    from cryptography.hazmat.primitives.asymmetric import rsa

    class RsaCertificate(RTCCertificate):
        def _create_ssl_context(self, srtp_profiles):
            ctx = super()._create_ssl_context(srtp_profiles)
            ctx.set_cipher_list(b"ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-SHA")
            return ctx

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pc = RTCPeerConnection(configuration)
    pc._RTCPeerConnection__certificates = [RsaCertificate(key=key, cert=generate_certificate(key))]
    return pc


async def speaking_to_a_loudspeaker(url: str, monkeypatch, model, key: str | None = None):
    """A peer on a loudspeaker (cbf_tools/peers/loudspeaker.py: its microphone sends back what it plays through
    ``model``'s line) connected to ``url``, the gateway 1.5 s into a long text to it."""
    from cbf_tools.peers.loudspeaker import Loudspeaker, SpeakerPeer
    from tests.test_telephony import LONG_TEXT

    loopback_only(monkeypatch)
    peer = SpeakerPeer(Loudspeaker(model))
    await peer.connect(url, key)
    peer.send({"type": "speak", "text": LONG_TEXT})
    assert await peer.wait_for(lambda: peer.speaker.loud_seconds() >= 1.5, 60), "the gateway's speech never played"
    return peer
