"""gateway/webrtc/dtls.py: peers whose DTLS certificate is RSA (GStreamer's webrtcbin by default, other bridges) and
peers whose certificate is ECDSA (browsers, aiortc) both complete the handshake with the gateway; aiortc's own peer
connection, answering an RSA peer, fails with "no shared cipher" (the bug this module fixes)."""

from __future__ import annotations

import httpx
import pytest
from aiortc import RTCPeerConnection
from aiortc.rtcdtlstransport import SRTP_PROFILES
from OpenSSL import SSL

from cbf_tools.peers import rtc_listener
from cbf_tools.peers.rtc_listener import Listener
from gateway.app import create_app
from gateway.settings import GatewaySettings
from gateway.webrtc import dtls, signalling
from tests.rtc_helpers import loopback_only, rsa_peer_connection


@pytest.fixture
def app():
    return create_app(GatewaySettings(engine_urls=("ws://127.0.0.1:9/unused",)))


@pytest.mark.parametrize("peer,gateway,outcome", [
    ("rsa", "product", "connected"),
    ("ecdsa", "product", "connected"),
    ("rsa", "aiortc as shipped", "failed"),
])
async def test_dtls_with_rsa_and_ecdsa_peers(app, monkeypatch, peer, gateway, outcome):
    loopback_only(monkeypatch)
    if peer == "rsa":
        monkeypatch.setattr(rtc_listener, "RTCPeerConnection", rsa_peer_connection)
    if gateway != "product":
        monkeypatch.setattr(signalling, "peer_connection", RTCPeerConnection)
    listener = Listener.create(codecs=["pcmu"], datachannel=False)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw") as http:
            reply = await http.post("/v1/webrtc/offer", json={"sdp": await listener.offer(), "type": "offer"})
        assert reply.status_code == 200
        assert "a=setup:active" in reply.json()["sdp"]  # the gateway is the DTLS client: it offers the suites
        await listener.accept(reply.json()["sdp"])
        await listener.wait_for(lambda: listener.pc.connectionState in ("connected", "failed"), timeout=15)
        assert listener.pc.connectionState == outcome
        if outcome == "connected":
            await listener.wait_for(lambda: len(listener.frames) >= 5)
    finally:
        await listener.close()
        await signalling.close_all_peers(app.state.gateway)


def test_the_gateway_offers_ecdhe_rsa_and_ecdhe_ecdsa_suites():
    ctx = dtls.GatewayCertificate.generateCertificate()._create_ssl_context(SRTP_PROFILES)
    offered = SSL.Connection(ctx).get_cipher_list()
    assert "ECDHE-RSA-AES128-GCM-SHA256" in offered and "ECDHE-ECDSA-AES128-GCM-SHA256" in offered
    tls12 = [name for name in offered if not name.startswith("TLS_")]  # (TLS 1.3 suites are set apart; DTLS 1.2)
    assert all(name.startswith("ECDHE-") for name in tls12)  # forward secrecy only, as aiortc's own list
