"""The gateway's peer connections: aiortc's, with DTLS cipher suites that RSA-certificate peers can share.

aiortc (1.16) sets its DTLS cipher list to ECDHE-ECDSA suites only (``RTCCertificate._create_ssl_context``). Its own
certificate is ECDSA, so as the DTLS *server* that is all it could pick anyway; but as the DTLS *client* (what it is
when it answers an ``actpass`` offer, i.e. every answer the gateway gives) that list is what it offers, and a peer
whose certificate is RSA (GStreamer's webrtcbin by default, and other bridges) can pick none of them: the handshake
fails with "no shared cipher" after ICE has connected. Offering the ECDHE-RSA twins as well fixes that; the gateway's
certificate stays ECDSA, so as the server nothing changes.
"""

from __future__ import annotations

from aiortc import RTCConfiguration, RTCPeerConnection
from aiortc.rtcdtlstransport import RTCCertificate, SRTPProtectionProfile
from OpenSSL import SSL

CIPHERS = b":".join([
    b"ECDHE-ECDSA-AES128-GCM-SHA256", b"ECDHE-RSA-AES128-GCM-SHA256",
    b"ECDHE-ECDSA-CHACHA20-POLY1305", b"ECDHE-RSA-CHACHA20-POLY1305",
    b"ECDHE-ECDSA-AES128-SHA", b"ECDHE-RSA-AES128-SHA",
    b"ECDHE-ECDSA-AES256-SHA", b"ECDHE-RSA-AES256-SHA",
])


class GatewayCertificate(RTCCertificate):
    """aiortc's ECDSA certificate whose DTLS contexts offer ECDHE-RSA suites beside the ECDHE-ECDSA ones."""

    def _create_ssl_context(self, srtp_profiles: list[SRTPProtectionProfile]) -> SSL.Context:
        ctx = super()._create_ssl_context(srtp_profiles)
        ctx.set_cipher_list(CIPHERS)
        return ctx


def peer_connection(configuration: RTCConfiguration) -> RTCPeerConnection:
    """A peer connection whose DTLS transports use ``GatewayCertificate``.

    aiortc makes its certificate in ``RTCPeerConnection.__init__`` and takes no certificate option, so it is replaced
    right after, before any transport exists (transports are made by addTransceiver / setRemoteDescription).
    """
    pc = RTCPeerConnection(configuration)
    pc._RTCPeerConnection__certificates = [GatewayCertificate.generateCertificate()]  # type: ignore[attr-defined]
    return pc
