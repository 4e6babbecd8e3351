"""One RTP loop for every paced track of the process, in place of aiortc's task per track.

aiortc's RTCRtpSender sends its track from a task of its own: it awaits the track's ``recv()`` (our pacing sleep),
packs the payload, builds and serializes an RTP packet, and awaits the DTLS transport's SRTP and the ICE connection's
send: a dozen coroutine frames a packet, and a wake-up of the event loop per track. ``adopt`` (before the answer is
set) makes the sender's RTP task ours: its stream joins the event loop's one ``Pacer``, whose task wakes on each tick of
the tracks' shared 20 ms grid and sends every stream's due packets with plain calls: the track's next payload, the
packet aiortc would send (its sequence numbers, timestamps, SSRC, marker and header extensions), aiortc's own SRTP
session, and the selected ICE pair's socket. aiortc's sender does the rest as before: negotiation, RTCP (its sender
reports read the counts kept here), stats and stop. Left out: the history aiortc keeps for retransmissions (audio
is never NACKed: aiortc offers NACK for video only). A pair relayed by TURN, whose send may wait (a channel being
bound), keeps aiortc's own loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable

from aioice.ice import StunProtocol
from aiortc import RTCRtpSender, clock
from aiortc.rtcrtpparameters import RTCRtpCodecParameters
from aiortc.rtcrtpsender import random_sequence_number
from aiortc.rtp import RtpPacket
from aiortc.utils import random32, uint16_add, uint32_add

from gateway.webrtc.track import PacedAudioTrack

log = logging.getLogger("chatterbox_fast.gateway")

ON_TIME_S = 0.001  # a frame due this soon is sent on this tick (the grid's ticks fall due together, give or take)


class Stream:
    """One adopted sender: its track's due frames out as SRTP packets on ``send`` (the ICE pair's socket)."""

    def __init__(self, sender: RTCRtpSender, track: PacedAudioTrack, codec: RTCRtpCodecParameters,
                 send: Callable[[bytes], None]) -> None:
        self.sender, self.track, self._send = sender, track, send
        self._payload_type = codec.payloadType
        self._sequence = random_sequence_number()
        self._timestamp_origin = random32()
        self._extensions = sender._RTCRtpSender__rtp_header_extensions_map
        self._mid = sender._RTCRtpSender__mid
        self._dtls = sender.transport
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def send_due(self, now: float) -> None:
        """Every frame due by ``now`` (more than one only when the loop was late: the track's catch-up)."""
        if self.track.readyState != "live" or self._dtls.state != "connected":
            self.end()
            return
        while self.track.due_in(now) <= ON_TIME_S:
            frame = self.track.take(now)
            self._packet(bytes(frame), frame.pts)

    def _packet(self, payload: bytes, pts: int) -> None:
        packet = RtpPacket(payload_type=self._payload_type, marker=1, sequence_number=self._sequence,
                           timestamp=uint32_add(self._timestamp_origin, pts), ssrc=self.sender._ssrc, payload=payload)
        ntp = clock.current_ntp_time()  # one reading for the packet's send time and the sender reports' clock
        packet.extensions.abs_send_time = (ntp >> 14) & 0x00FFFFFF
        packet.extensions.mid = self._mid
        self._send(self._dtls._tx_srtp.protect(packet.serialize(self._extensions)))
        self._sequence = uint16_add(self._sequence, 1)
        sender = self.sender  # what aiortc's RTCP sender reports read
        sender._RTCRtpSender__ntp_timestamp = ntp
        sender._RTCRtpSender__rtp_timestamp = packet.timestamp
        sender._RTCRtpSender__octet_count += len(payload)
        sender._RTCRtpSender__packet_count += 1

    def end(self) -> None:
        if not self.ended.done():
            self.ended.set_result(None)


class Pacer:
    """An event loop's streams, and the one task that sends them on the grid's ticks while there are any."""

    def __init__(self) -> None:
        self.streams: list[Stream] = []
        self._task: asyncio.Task[None] | None = None

    def add(self, stream: Stream) -> None:
        self.streams.append(stream)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())

    def remove(self, stream: Stream) -> None:
        if stream in self.streams:
            self.streams.remove(stream)

    async def _run(self) -> None:
        while self.streams:
            now = time.monotonic()
            for stream in list(self.streams):
                try:
                    stream.send_due(now)
                except Exception:  # one stream's failure (a closed socket, a bad payload) ends it, not the others
                    log.exception("RTP send failed; the stream ends")
                    stream.end()
            now = time.monotonic()
            wait = min((s.track.due_in(now) for s in self.streams if not s.ended.done()), default=0.0)
            await asyncio.sleep(max(wait, 0.0))


_pacers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pacer] = weakref.WeakKeyDictionary()


def adopt(sender: RTCRtpSender, track: PacedAudioTrack) -> None:
    """Send ``track`` from the loop's pacer once aiortc starts ``sender``, where the ICE pair is direct and the track
    prepares its payloads (a codec set); else, and should aiortc's insides not be as this module knows them, aiortc's
    own loop sends it."""
    aiortcs_own = sender._run_rtp

    async def run_rtp(codec: RTCRtpCodecParameters) -> None:
        try:
            stream = _direct(sender, track, codec)
        except Exception:  # aiortc or aioice changed under us: never a stream that cannot start or stop
            log.exception("the RTP pacer cannot send this stream; aiortc's own loop does")
            stream = None
        if stream is None:
            await aiortcs_own(codec)
            return
        sender._RTCRtpSender__rtp_started.set()
        pacer = _pacers.setdefault(asyncio.get_running_loop(), Pacer())
        pacer.add(stream)
        try:
            await stream.ended
        except asyncio.CancelledError:  # aiortc's stop()
            pass
        finally:
            pacer.remove(stream)
            if sender.track is not None:  # as aiortc's loop ends
                sender.track.stop()
                sender._RTCRtpSender__track = None
            sender._RTCRtpSender__rtp_exited.set()

    sender._run_rtp = run_rtp  # type: ignore[method-assign]


def _direct(sender: RTCRtpSender, track: PacedAudioTrack, codec: RTCRtpCodecParameters) -> Stream | None:
    """The stream that sends ``track`` straight to the selected ICE pair's socket, or None where it cannot."""
    pair = sender.transport.transport._connection._nominated.get(1)
    if pair is None or type(pair.protocol) is not StunProtocol or track.codec is None:
        return None
    socket, address = pair.protocol.transport, pair.remote_addr
    return Stream(sender, track, codec, lambda data: socket.sendto(data, address))
