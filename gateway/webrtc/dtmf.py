"""Keys a WebRTC peer presses (RFC 4733 telephone-event/8000) as ``{"type": "dtmf", "digit"}`` for the controller:
the event a phone call's controller gets (gateway/telephony/call.py).

``DtmfDecoder`` is pure: RTP packets of the telephone-event payload type in, each key press out once. The adapter
below hooks aiortc (1.16) for one peer connection, as aiortc knows no telephone-event:

- The answer: aiortc keeps only the codecs of its own table (``aiortc.codecs.CODECS``: Opus, G.722, PCMU, PCMA) and
  ``setCodecPreferences`` refuses others, so ``accept_telephone_event`` appends the offer's telephone-event/8000 to
  the one transceiver's negotiated codecs (``_codecs``, what the answer and the receiver are made from) between
  ``setRemoteDescription`` and ``createAnswer``, last so that the first codec, the one the track sends, is unchanged.
  Only when the peer sends (a sendrecv or sendonly offer) and on a free dynamic payload type; the process-wide table
  is left alone.
- The packets: with telephone-event among its codecs the transport routes them to the receiver, which would queue
  them for its decoder thread, and that thread dies on a codec it has no decoder for (the peer's audio with it).
  ``hear_dtmf`` wraps that one receiver's ``_handle_rtp_packet`` (an instance attribute: other peers untouched):
  telephone-event packets go to a ``DtmfDecoder`` and no further, every other packet on to aiortc as before. Nothing
  raises out of it: an exception there would end the peer's receive loop.

Both touch one peer's objects only, after the point where aiortc filters and before the point where it drops:
adding to ``CODECS`` would change every peer connection in the process (and what aiortc offers), and hooking the
transport's demultiplexing instead would mean re-implementing its routing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

from aiortc import RTCPeerConnection, RTCRtpCodecParameters, RTCRtpReceiver, RTCRtpTransceiver
from aiortc.rtp import DYNAMIC_PAYLOAD_TYPES, RtpPacket
from aiortc.sdp import SessionDescription

log = logging.getLogger("chatterbox_fast.gateway")
TELEPHONE_EVENT = "audio/telephone-event"
DIGITS = "0123456789*#ABCD"  # RFC 4733 events 0-15
MAX_MISORDER = 100  # packets: one this far behind the newest, with an older timestamp, is late (RFC 3550 A.1)
MAX_LATE_TICKS = 60 * 8000  # a minute of the 8 kHz clock: older than that is another stream's, not a late packet


@dataclass(frozen=True)
class Event:
    """One RFC 4733 event report: the event code, E (the event has ended), volume (the tone's level, 0 to -63 dBm0
    with the sign dropped), duration (timestamp units since the event's start). The R bit is reserved: ignored, as
    the RFC says."""

    code: int
    end: bool
    volume: int
    duration: int


def parse_event(payload: bytes) -> Event | None:
    """The first event report of a payload, or None when it is shorter than one (4 bytes). Further reports in the
    same packet (RFC 4733 2.5.1.5 packing) are not read."""
    if len(payload) < 4:
        return None
    return Event(payload[0], bool(payload[1] & 0x80), payload[1] & 0x3F, int.from_bytes(payload[2:4], "big"))


class DtmfDecoder:
    """Telephone-event packets in (payload type already matched), each key press out once, on first sight.

    A press is its RTP timestamp: every packet of one event (the first with the marker bit, the updates, the three
    end packets) shares it, and the next press has a new one. A key is reported on the first packet of its event
    rather than at its end: as soon as it is known (an agent barges in as the key goes down), and a press whose start
    or end packets were lost still counts. A new timestamp without the marker bit for the same key while its event has
    not ended is the next segment of a long press (RFC 4733 2.5.1.3), not a new one. A packet behind the newest (its
    sequence number and timestamp both older) is late: its event has been counted or is over.

    Nothing here raises: a payload shorter than a report, an event that is no key (16 and up: flash, tones) or a late
    packet is dropped and counted in ``dropped``. The state is a few numbers, whatever arrives.
    """

    __slots__ = ("keys", "dropped", "_sequence", "_timestamp", "_code", "_ended")

    def __init__(self) -> None:
        self.keys = 0  # presses reported
        self.dropped = {"short": 0, "not_a_key": 0, "late": 0}  # packets
        self._sequence: int | None = None  # the newest sequence number
        self._timestamp = 0  # the current event's timestamp and code, and whether its end has arrived
        self._code = 0
        self._ended = False

    def packet(self, sequence: int, timestamp: int, marker: bool, payload: bytes) -> str | None:
        """The key a new press is of, or None (a packet of an event already reported, or one dropped)."""
        event = parse_event(payload)
        if event is None:
            self.dropped["short"] += 1
            return None
        if event.code >= len(DIGITS):
            self.dropped["not_a_key"] += 1
            return None
        first = self._sequence is None
        behind = not first and (self._sequence - sequence) % 0x10000 <= MAX_MISORDER
        if not behind:
            self._sequence = sequence
        if not first and timestamp == self._timestamp:
            self._ended = self._ended or event.end
            return None
        if behind and 0 < (self._timestamp - timestamp) % 0x100000000 <= MAX_LATE_TICKS:
            self.dropped["late"] += 1
            return None
        segment = not first and not marker and event.code == self._code and not self._ended
        self._timestamp, self._code, self._ended = timestamp, event.code, event.end
        if segment:
            return None
        self.keys += 1
        return DIGITS[event.code]


def accept_telephone_event(transceiver: RTCRtpTransceiver, offer_sdp: str) -> None:
    """After ``setRemoteDescription(offer)``, before ``createAnswer``: the offer's telephone-event/8000 joins the
    answer's codecs, last, if the peer sends audio and its payload type is dynamic and not taken by another codec.
    A peer that offers none (or only receives) gets the answer it got before."""
    audio = next((m for m in SessionDescription.parse(offer_sdp).media if m.kind == "audio"), None)
    if audio is None or audio.direction in ("recvonly", "inactive"):  # none: sendrecv (RFC 3264)
        return
    taken = {codec.payloadType for codec in transceiver._codecs}
    offered = next((c for c in audio.rtp.codecs if c.mimeType.lower() == TELEPHONE_EVENT and c.clockRate == 8000
                    and c.payloadType in DYNAMIC_PAYLOAD_TYPES and c.payloadType not in taken), None)
    if offered is not None:
        transceiver._codecs.append(RTCRtpCodecParameters(mimeType=TELEPHONE_EVENT, clockRate=8000, channels=1,
                                                         payloadType=offered.payloadType,
                                                         parameters={"0-15": None}))


def hear_dtmf(pc: RTCPeerConnection, to_controller: Callable[[dict[str, Any]], None]) -> None:
    """Once ``pc`` is answered: the keys its peer presses go to ``to_controller`` as ``{"type": "dtmf", "digit"}``
    (nothing happens when telephone-event was not negotiated)."""
    for transceiver in pc.getTransceivers():
        codec = next((c for c in transceiver._codecs if c.mimeType.lower() == TELEPHONE_EVENT), None)
        if codec is not None and codec.payloadType is not None:
            _intercept(transceiver.receiver, codec.payloadType, to_controller)


def _intercept(receiver: RTCRtpReceiver, payload_type: int, to_controller: Callable[[dict[str, Any]], None]) -> None:
    decoder = DtmfDecoder()
    handle = receiver._handle_rtp_packet

    async def handle_rtp_packet(packet: RtpPacket, arrival_time_ms: int) -> None:
        if packet.payload_type != payload_type:
            await handle(packet, arrival_time_ms)
            return
        try:  # the controller's send runs inside aiortc's receive loop: nothing may escape into it
            digit = decoder.packet(packet.sequence_number, packet.timestamp, bool(packet.marker), packet.payload)
            if digit is not None:
                to_controller({"type": "dtmf", "digit": digit})
        except Exception:
            log.exception("a telephone-event packet could not be handled; dropped")

    receiver._handle_rtp_packet = handle_rtp_packet  # type: ignore[method-assign]
