"""Asterisk's AudioSocket protocol (``res_audiosocket``: the ``AudioSocket()`` application and the
``Dial(AudioSocket/...)`` channel), as the gateway speaks it (pure: bytes in, events and bytes out).

A TCP stream of frames: kind (1 byte), payload length (2 bytes, big-endian), payload. Asterisk sends ``0x01`` the
call's UUID (16 bytes) first, then audio, ``0x03`` DTMF (one ASCII digit), ``0x00`` hang-up and ``0xff`` error (an
optional 1-byte code). Audio is signed linear 16-bit mono in the host's byte order (little-endian on x86 and ARM
Linux): ``0x10`` at 8 kHz (320 bytes per 20 ms), and, from Asterisk 23 (and 22.6/20.16: "res_audiosocket: add message
types for all slin sample rates"), ``0x11``-``0x18`` at 12, 16, 24, 32, 44.1, 48, 96 and 192 kHz, the kind following
the channel's format (``Dial(AudioSocket/host:port/uuid/c(slin16))``). Asterisk plays what it is sent in the same
kind as soon as it gets it: there is no buffer to clear and no mark, so the gateway paces its audio at real time.

The numbers of the higher-rate kinds are taken from that change's ``res_audiosocket.h`` as remembered, not checked
against a running Asterisk: a kind this module does not know ends the call with a line saying so.

The call's id is its UUID in canonical form. AudioSocket carries no credentials: with ``--audiosocket-key`` the UUID
is checked as a tag the dialplan made with the key (``KeyedUuids``, docs/protocols/phone.md has the dialplan).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import struct
import time
import uuid
from dataclasses import dataclass

from gateway.telephony import events
from gateway.telephony.events import Dtmf, Stop

HANGUP, UUID, DTMF, AUDIO, ERROR = 0x00, 0x01, 0x03, 0x10, 0xFF
# The audio kinds and their rates (0x10: every Asterisk since 18; the rest: the higher-rate change).
RATES = {0x10: 8000, 0x11: 12000, 0x12: 16000, 0x13: 24000, 0x14: 32000, 0x15: 44100, 0x16: 48000, 0x17: 96000,
         0x18: 192000}
SPOKEN_RATES = (8000, 16000, 24000, 32000, 44100, 48000)  # the rates the gateway encodes and hears
HEADER = struct.Struct(">BH")
MAX_PAYLOAD = 0xFFFF
FRAME_S = 0.02  # the audio per frame sent: Asterisk's own frame


def frame(kind: int, payload: bytes = b"") -> bytes:
    """One frame on the wire."""
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"an AudioSocket payload is at most {MAX_PAYLOAD} bytes")
    return HEADER.pack(kind, len(payload)) + payload


@dataclass(frozen=True)
class CallId:
    """The first frame: the call's UUID."""

    uuid: uuid.UUID

    @property
    def call_id(self) -> str:
        return str(self.uuid)


@dataclass(frozen=True)
class Audio:
    """The caller's audio, its rate from its kind."""

    kind: int
    rate: int
    pcm: bytes


@dataclass(frozen=True)
class Failed:
    """Asterisk's error frame: it ends the call."""

    code: int | None


Inbound = CallId | Audio | Dtmf | Stop | Failed


def parse(kind: int, payload: bytes) -> Inbound:
    """One frame's meaning; raises ProtocolError for a frame that is not AudioSocket's (an unknown kind, a length its
    kind does not have)."""
    if kind == UUID:
        if len(payload) != 16:
            raise events.bad(f"a UUID frame carries 16 bytes, not {len(payload)}")
        return CallId(uuid.UUID(bytes=payload))
    if kind in RATES:
        if len(payload) % 2:
            raise events.bad(f"an audio frame carries 16-bit samples: {len(payload)} bytes is an odd length")
        return Audio(kind, RATES[kind], payload)
    if kind == DTMF:
        if len(payload) != 1:
            raise events.bad(f"a DTMF frame carries one digit, not {len(payload)} bytes")
        return events.digit(payload.decode("latin-1"))
    if kind == HANGUP:
        return Stop()
    if kind == ERROR:
        return Failed(payload[0] if payload else None)
    raise events.bad(f"unknown AudioSocket frame kind 0x{kind:02x}")


class FrameReader:
    """Bytes from the socket in, ``(kind, payload)`` frames out; never holds more than one frame's bytes."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._buffer += data
        out: list[tuple[int, bytes]] = []
        while len(self._buffer) >= HEADER.size:
            kind, length = HEADER.unpack_from(self._buffer)
            if len(self._buffer) < HEADER.size + length:
                break
            out.append((kind, bytes(self._buffer[HEADER.size:HEADER.size + length])))
            del self._buffer[:HEADER.size + length]
        return out

    @property
    def partial(self) -> int:
        """Bytes held of a frame not yet whole."""
        return len(self._buffer)


class Opening:
    """A connection's first frames: its UUID, then its first audio, whose kind fixes the call's rate both ways.

    ``feed`` returns None until both have come, then ``(the UUID, the audio kind, what came after)``; DTMF before any
    audio is dropped (the call is not open yet). Raises ProtocolError for a stream that starts otherwise, EOFError for
    one that hangs up first."""

    def __init__(self) -> None:
        self.call: CallId | None = None

    def feed(self, event: Inbound) -> Audio | None:
        if self.call is None:
            if not isinstance(event, CallId):
                raise events.bad(f"the first frame must be the call's UUID (0x01), not {type(event).__name__}")
            self.call = event
            return None
        match event:
            case CallId():
                raise events.bad("a second UUID frame")
            case Audio(rate=rate) if rate not in SPOKEN_RATES:
                raise events.bad(f"the channel's audio is at {rate} Hz; the gateway takes slin at "
                                 f"{', '.join(str(r) for r in SPOKEN_RATES)} Hz (c(slin16) in the dial string)")
            case Audio():
                return event
            case Stop() | Failed():
                raise EOFError
        return None


class Outbound:
    """The gateway's frames for one call: audio of the call's own kind; no marks, no clear (a PhoneSink then counts
    what was heard by the clock, and barge-in stops sending: what was sent plays)."""

    heard_from = "clock"
    lead_s = 0.1  # audio sent ahead of real time: Asterisk plays it at once, so a barge-in cannot stop this much

    def __init__(self, kind: int) -> None:
        self.kind = kind

    def media(self, payload: bytes) -> bytes:
        return frame(self.kind, payload)

    def mark(self, name: str) -> None:
        return None

    def clear(self) -> None:
        return None

    def hang_up(self) -> bytes:
        return frame(HANGUP)


# The key: the dialplan writes the UUID as NNNNNNNN-NNRR-RRRR-TTTT-TTTTTTTTTTTT: N its ${EPOCH} (ten decimal digits,
# hex digits too), R six hex digits of its own choosing, T the first sixteen hex digits of SHA1(key + the first
# sixteen digits). Asterisk's dialplan has SHA1() and MD5() but no HMAC; with a fixed-length message the key prefix
# is not open to length extension, and 64 bits of tag cannot be guessed.
KEY_WINDOW_S = 300.0  # how far a UUID's minute of minting may be from this server's clock


def keyed_uuid(key: str, epoch: int | None = None, nonce: str | None = None) -> str:
    """A UUID that ``key`` admits, minted as the documented dialplan does (for tests and tools)."""
    head = f"{int(time.time()) if epoch is None else epoch:010d}{nonce or uuid.uuid4().hex[:6]}"
    tag = hashlib.sha1((key + head).encode()).hexdigest()[:16]
    digits = head + tag
    return str(uuid.UUID(digits))


def key_refusal(key: str, call_id: str, now: float) -> str | None:
    """Why ``call_id`` (a canonical UUID) was not minted with ``key`` within ``KEY_WINDOW_S`` of ``now``; None: it
    was."""
    digits = call_id.replace("-", "")
    head, tag = digits[:16], digits[16:]
    expected = hashlib.sha1((key + head).encode()).hexdigest()[:16]
    if not hmac.compare_digest(expected.encode(), tag.encode()):
        return "its UUID is not tagged with --audiosocket-key (see the dialplan in docs/protocols/phone.md)"
    if not head[:10].isdigit() or abs(int(head[:10]) - now) > KEY_WINDOW_S:
        return f"its UUID was minted more than {KEY_WINDOW_S:g} s from this server's clock"
    return None


def parse_networks(value: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """``--audiosocket-allow``: addresses or networks, comma-separated (``10.0.0.5,192.168.1.0/24``); raises
    ValueError naming the first that is neither."""
    networks = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"expected addresses or networks, comma-separated (10.0.0.5,192.168.1.0/24), got "
                             f"{item!r}") from None
    return tuple(networks)


def peer_allowed(networks: tuple, peer: str) -> bool:
    """Whether ``peer`` (an address) is in one of ``networks``."""
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in networks)
