"""POST /v1/webrtc/offer: one peer connection per session; speech on a paced audio track, control on a data channel.

The server answers with ICE fully gathered (aiortc does not trickle), on the ICE servers from ``--ice-server`` (none
by default: aiortc's own default is a public STUN server, and one that does not answer costs 5 s per answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import re
from typing import Any

import av
from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection, RTCRtpSender, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
from aiortc.rtcdatachannel import RTCDataChannel
from aiortc.sdp import SessionDescription
from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.formats import WEBRTC_CODECS, codec_rate
from gateway.host.drain import CLOSING
from gateway.sessions.driven import DrivenSession
from gateway.http.body import body_field, json_body
from gateway.guard.auth import presented_key, tenant_of
from gateway.http.errors import ApiError, refused
from gateway.listen.caller import PCM16_RATE
from gateway.sessions.session import Session
from gateway.sessions.registry import SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.webrtc.dtls import peer_connection
from gateway.webrtc.dtmf import accept_telephone_event, hear_dtmf
from gateway.webrtc.sender import adopt
from gateway.webrtc.track import PacedAudioTrack, TrackSink

log = logging.getLogger("chatterbox_fast.gateway")
MAX_SDP_BYTES = 32 * 1024  # a browser's offer is a few kB; aiortc's parser is slow on huge ones (the event loop waits)
MAX_M_LINES = 2  # what a session uses: one audio section and one data channel
_ICE_URL = re.compile(r"^(?P<scheme>stuns?|turns?):(?:(?P<user>[^:@/]+):(?P<password>[^@/]+)@)?(?P<rest>[^@]+)$")


def ice_servers(urls: list[str] | tuple[str, ...]) -> list[RTCIceServer]:
    """``stun:host:port`` and ``turn:user:pass@host:port[?transport=tcp]`` into RTCIceServer entries."""
    servers = []
    for url in urls:
        match = _ICE_URL.match(url.strip())
        if match is None:
            raise ValueError(f"bad ICE server {url!r}; expected stun:host:port or turn:user:pass@host:port")
        servers.append(RTCIceServer(urls=f"{match['scheme']}:{match['rest']}", username=match["user"],
                                    credential=match["password"]))
    return servers


def _parse(sdp: str) -> SessionDescription:
    """Parse an offer of sane size only: refused before parsing when too large or with more sections than a session
    uses (thousands of m-lines would block the event loop for seconds)."""
    if len(sdp) > MAX_SDP_BYTES:
        raise ValueError(f"the SDP is over {MAX_SDP_BYTES} bytes")
    if sum(line.startswith("m=") for line in sdp.splitlines()) > MAX_M_LINES:
        raise ValueError(f"the SDP has more than {MAX_M_LINES} media sections (one audio, one data channel)")
    try:
        description = SessionDescription.parse(sdp)
    except Exception as exc:  # aiortc's parser raises whatever the malformed line provokes
        raise ValueError(f"the SDP does not parse: {exc}") from None
    for media in description.media:  # aiortc asserts on these deep inside a background task instead of refusing
        if media.dtls is None or not media.dtls.fingerprints:
            raise ValueError(f"the {media.kind} section has no DTLS fingerprint")
        if not (media.ice.usernameFragment and media.ice.password):
            raise ValueError(f"the {media.kind} section has no ICE credentials (ice-ufrag, ice-pwd)")
    return description


def offered_codecs(sdp: str) -> list[str]:
    """The audio codecs of the first audio section, lower-case, in the SDP's order.

    Raises ValueError when the SDP does not parse or has no audio section.
    """
    audio = next((m for m in _parse(sdp).media if m.kind == "audio"), None)
    if audio is None:
        raise ValueError("the offer has no audio section")
    return [c.mimeType.split("/", 1)[1].lower() for c in audio.rtp.codecs]


def has_datachannel(sdp: str) -> bool:
    return any(m.kind == "application" for m in _parse(sdp).media)


async def negotiate(pc: RTCPeerConnection, track: PacedAudioTrack, offer_sdp: str, codec: str | None) -> str:
    """Answer ``offer_sdp`` on ``pc`` with ``track`` sending; returns the codec in use and sets the track's rate.

    Without ``codec`` the answer keeps the offer's order among the codecs the track can feed (Opus, PCMU, PCMA), so
    a phone bridge that prefers PCMU gets PCMU. Raises ValueError for an unusable offer.
    """
    offered = offered_codecs(offer_sdp)
    wanted = [codec] if codec else [c for c in offered if c in WEBRTC_CODECS]
    capabilities = RTCRtpSender.getCapabilities("audio").codecs
    preferences = [cap for name in wanted for cap in capabilities if cap.mimeType.lower() == f"audio/{name}"]
    if not preferences or (codec and codec not in offered):
        raise ValueError(f"the offer has no audio codec the server can send ({codec or ', '.join(WEBRTC_CODECS)})")
    # The transceiver and its preferences must exist before setRemoteDescription fixes the answer's codecs. sendrecv:
    # a peer that sends (a browser's microphone, a phone bridge's caller) is heard; one that only receives (WHEP,
    # the page without its microphone) gets a sendonly answer, as aiortc intersects the directions.
    transceiver = pc.addTransceiver(track, direction="sendrecv")
    transceiver.setCodecPreferences(preferences)
    adopt(transceiver.sender, track)
    try:
        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer_sdp, type="offer"))
        accept_telephone_event(transceiver, offer_sdp)  # the keys the peer presses, if it offers them
        await pc.setLocalDescription(await pc.createAnswer())
    except Exception as exc:  # aiortc raises ValueError, OperationError, InvalidStateError... for bad offers
        raise ValueError(f"the offer was not accepted: {exc}") from None
    chosen = offered_codecs(pc.localDescription.sdp)[0]
    track.set_sample_rate(codec_rate(chosen), chosen)
    return chosen


class WebRTCPeer(DrivenSession):
    """One peer connection and its session: control messages in (in order, from the data channel, an attached
    controller or HTTP), events out (to the data channel and the controller), cleanup once.

    A phone bridge opens no data channel: its session is driven by a controller attached by session id
    (gateway/webrtc/control.py, gateway/sessions/driven.py).
    """

    def __init__(self, state: GatewayState, pc: RTCPeerConnection, track: PacedAudioTrack, voice: str,
                 expects_channel: bool, api_key: str | None = None, tenant: str | None = None) -> None:
        super().__init__()
        self.state = state
        self.expects_channel = expects_channel
        self.pc = pc
        self.track = track
        self.session = Session(state, TrackSink(track), self.send_event, transport="webrtc", voice=voice,
                               api_key=api_key, tenant=tenant)
        self.channel: RTCDataChannel | None = None
        self._pending: list[str] = []  # events sent before the data channel opened
        self._inbox: asyncio.Queue[str | bytes] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._closing: asyncio.Task[None] | None = None  # holds the close task started by an event
        self._closed = False
        self._ready = asyncio.Event()  # connected, and the data channel open if the offer has one
        pc.on("datachannel", self._on_datachannel)
        pc.on("connectionstatechange", self._on_state)
        pc.on("track", self._on_track)

    async def send_event(self, event: dict[str, Any]) -> None:
        """To the controller, if one is attached, and on the data channel (held until it opens; dropped when there is
        none or it has closed)."""
        self.to_controller(event)
        channel = self.channel
        if channel is not None and channel.readyState == "open":
            channel.send(json.dumps(event))
        elif self.expects_channel and (channel is None or channel.readyState == "connecting"):
            self._pending.append(json.dumps(event))

    def start(self) -> None:
        self._tasks += [asyncio.create_task(self._read()), asyncio.create_task(self._watchdog())]
        if self.expects_channel:  # a client of our protocol, which reconnects when told `closing`; a bridge's call
            self._tasks.append(asyncio.create_task(self._until_released()))  # (no data channel) goes on instead

    async def _until_released(self) -> None:
        """A drain lets this session go (gateway/host/draining.py): ``closing``, then the peer connection closes."""
        await self.session.released()
        await self.session.notify_shutdown(CLOSING)
        self.close_soon(CLOSING)

    def _on_track(self, track: MediaStreamTrack) -> None:
        """The peer sends audio (a browser's microphone, a bridge's caller): it is heard (gateway/listen/)."""
        if track.kind == "audio" and self.caller is None:
            # Where the server's echo canceller is on (--echo-canceller), it runs on this peer too: its far end is
            # the frames the outbound track sends, each at its time on the track's grid (gateway/webrtc/track.py).
            # Its jitter buffer moves the echo's delay as it goes: what the canceller lets through is checked too.
            self.track.echo = self.open_caller("pcm", PCM16_RATE, echo_delay_moves=True)
            self._tasks.append(asyncio.create_task(self._hear(track)))

    async def _hear(self, track: MediaStreamTrack) -> None:
        """The peer's audio, decoded by aiortc, as PCM16 at 16 kHz with its stream time, until the track ends (read
        even when nobody listens: aiortc queues what is not read without bound)."""
        resampler = av.AudioResampler(format="s16", layout="mono", rate=PCM16_RATE)
        first: float | None = None
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            at = float(frame.time or 0.0)
            first = at if first is None else first
            for out in resampler.resample(frame):
                await self.hear(out.to_ndarray().tobytes(), (at - first) * 1000)

    def _on_datachannel(self, channel: RTCDataChannel) -> None:
        if self.channel is not None:
            return  # one control channel per session; others are ignored
        self.channel = channel
        channel.on("message", self._inbox.put_nowait)

        def flush_pending() -> None:
            for text in self._pending:
                channel.send(text)
            self._pending.clear()
            if self.pc.connectionState == "connected":
                self._ready.set()

        if channel.readyState == "open":
            flush_pending()
        else:
            channel.on("open", flush_pending)

    def _on_state(self) -> None:
        state = self.pc.connectionState
        channel_open = self.channel is not None and self.channel.readyState == "open"
        if state == "connected" and (channel_open or not self.expects_channel):
            self._ready.set()
        elif state in ("failed", "closed"):
            self.close_soon(f"the peer connection {state}")

    async def _read(self) -> None:
        while True:
            await self.feed(await self._inbox.get())

    async def _watchdog(self) -> None:
        try:
            await asyncio.wait_for(self._ready.wait(), self.state.settings.webrtc_setup_timeout_s)
        except TimeoutError:
            log.info("webrtc session %s: no connection and data channel within %g s; closing",
                     self.session.id, self.state.settings.webrtc_setup_timeout_s)
            self.close_soon("the peer did not connect")

    def close_soon(self, reason: str) -> None:
        if not self._closed:
            self._closing = asyncio.create_task(self.close(reason))

    async def close(self, reason: str = "the session was closed") -> None:
        """Close the session and the peer connection (once). An attached controller hears ``cancelled`` for each
        utterance still under way, then ``ended`` with ``reason``, and its socket is closed."""
        if self._closed:
            return
        self._closed = True
        self.state.peers.discard(self)
        if self.caller is not None and self.caller.aec is not None:
            aec = self.caller.aec
            log.info("webrtc session %s: echo canceller: line delay %s ms, echo free %s, %s", self.session.id,
                     aec.delay_ms, aec.echo_free, aec.counts)
        for task in self._tasks:
            task.cancel()
        await self.release(reason)
        self.track.stop()
        await self.session.close()
        try:
            await self.pc.close()
        except Exception:  # aiortc cannot close a connection a malformed offer left half set up; nothing is running
            log.debug("webrtc session %s: peer connection half set up; closed what there was", self.session.id,
                      exc_info=True)


async def open_peer(state: GatewayState, sdp: str, voice: str, codec: str | None,
                    api_key: str | None = None, tenant: str | None = None) -> WebRTCPeer:
    """A session for ``sdp``'s offer, answered (``peer.pc.localDescription``) and started. ``api_key`` and
    ``tenant``: the offer's (the session's prompt cache scope and limits).

    Raises ApiError: 400 ``bad_sdp`` for an unusable offer, 503 ``session_limit`` on a full server, 429 (with
    Retry-After) for a tenant at its limit."""
    try:
        offered_codecs(sdp)
        expects_channel = has_datachannel(sdp)
    except ValueError as exc:
        raise ApiError(400, "bad_sdp", str(exc)) from None
    pc = peer_connection(RTCConfiguration(iceServers=ice_servers(state.settings.ice_servers)))
    track = PacedAudioTrack()
    peer = WebRTCPeer(state, pc, track, voice, expects_channel, api_key, tenant)
    try:
        await peer.session.open()
    except SessionLimitReached as exc:
        await pc.close()
        raise refused(exc) from None
    try:
        peer.codec = await negotiate(pc, track, sdp, codec)
    except ValueError as exc:
        await peer.close()
        raise ApiError(400, "bad_sdp", str(exc)) from None
    hear_dtmf(pc, peer.to_controller)
    state.peers.add(peer)
    peer.start()
    return peer


def find_peer(state: GatewayState, session_id: str) -> WebRTCPeer | None:
    """The live WebRTC session with this id, if any."""
    return next((peer for peer in state.peers if hmac.compare_digest(peer.id.encode(), session_id.encode())), None)


def checked_codec(codec: str | None) -> str | None:
    """A client's codec choice, lower-case; ApiError 400 for one the server cannot send."""
    if codec is None:
        return None
    if codec.lower() not in WEBRTC_CODECS:
        raise ApiError(400, "bad_request", f"codec must be one of {', '.join(WEBRTC_CODECS)}")
    return codec.lower()


async def webrtc_offer(request: Request) -> JSONResponse:
    """``{"sdp", "type": "offer", "voice"?, "codec"?}`` → ``{"sdp", "type": "answer", "session", "codec"}``."""
    state: GatewayState = request.app.state.gateway
    body = await json_body(request)
    sdp = body_field(body, "sdp", str, required=True)
    if body_field(body, "type", str, "offer") != "offer":
        raise ApiError(400, "bad_request", "field 'type' must be 'offer'")
    voice = body_field(body, "voice", str, "default")
    codec = checked_codec(body_field(body, "codec", str))
    peer = await open_peer(state, sdp, voice, codec, presented_key(request), tenant_of(request))
    return JSONResponse({"sdp": peer.pc.localDescription.sdp, "type": "answer", "session": peer.id,
                         "codec": peer.codec})


async def close_all_peers(state: GatewayState, reason: str = "the server is shutting down") -> None:
    """Shutdown: close every live peer connection and its session."""
    peers = list(state.peers)
    for peer in peers:
        with contextlib.suppress(Exception):
            await peer.close(reason)
