"""What a media-stream dialect's frames say (Twilio, Telnyx, Asterisk, Plivo, Vonage, Exotel), once parsed, and the
checks their parsers share (pure)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from engine.protocol import ProtocolError
from gateway.guard.client_input import BadInput, load_json

DTMF_DIGITS = "0123456789*#ABCD"
MAX_FRAME_CHARS = 64 * 1024  # a caller's 20 ms of media is ~300 characters; a start with its parameters a few kB


@dataclass(frozen=True)
class Start:
    """The stream began: the call's id (the session's), the stream's, <Parameter>s (``key``, ``voice``, ``text``),
    and the wire format: ``encoding`` (mulaw, alaw, pcm) at ``rate``, as the stack names it (``codec``), in frames of
    exactly ``frame_bytes`` where the stack wants that."""

    call_id: str
    stream_id: str
    parameters: dict[str, str] = field(default_factory=dict)
    encoding: str = "mulaw"
    codec: str = "pcmu"
    rate: int = 8000
    frame_bytes: int | None = None


@dataclass(frozen=True)
class MarkPlayed:
    name: str


@dataclass(frozen=True)
class Dtmf:
    digit: str


@dataclass(frozen=True)
class Stop:
    pass


@dataclass(frozen=True)
class CallerMedia:
    """The caller's audio as received, in the start's encoding (empty: a payload that did not decode), and its stream
    time in ms where the stack gives one."""

    audio: bytes
    timestamp_ms: float | None = None


@dataclass(frozen=True)
class Pause:
    """Stop sending (``True``: Asterisk's MEDIA_XOFF) or go on (``False``: MEDIA_XON)."""

    paused: bool


@dataclass(frozen=True)
class Ignored:
    """``connected``, media of a track other than the caller's, and events the gateway does not use."""

    event: str


Inbound = Start | MarkPlayed | Dtmf | Stop | Pause | CallerMedia | Ignored


def bad(message: str) -> ProtocolError:
    return ProtocolError(message, "bad_message")


def event_frame(raw: str | bytes) -> tuple[str, dict[str, Any]]:
    """A JSON text frame with a string ``event``: (the event, the frame)."""
    if isinstance(raw, bytes):
        raise bad("media-stream frames are JSON text, not binary")
    if len(raw) > MAX_FRAME_CHARS:
        raise bad(f"a control frame is over {MAX_FRAME_CHARS} characters")
    try:
        msg = load_json(raw)  # bounded nesting, no lone surrogates (gateway/guard/client_input.py)
    except BadInput as exc:
        raise bad(f"a frame is not usable JSON: {exc}") from None
    if not isinstance(msg, dict) or not isinstance(msg.get("event"), str):
        raise bad("a frame is a JSON object with a string 'event'")
    return msg["event"], msg


def obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad(f"{what} must be an object")
    return value


def string(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise bad(f"{what} must be a non-empty string")
    return value


def parameters(value: Any) -> dict[str, str]:
    """``customParameters`` / ``custom_parameters``: strings by name (absent: none)."""
    return {str(k): str(v) for k, v in obj(value or {}, "the custom parameters").items()}


def dtmf(value: Any) -> Dtmf:
    return digit(obj(value, "'dtmf'").get("digit"))


def digit(value: Any) -> Dtmf:
    digit = string(value, "the dtmf digit")
    if len(digit) != 1 or digit not in DTMF_DIGITS:
        raise bad("a dtmf digit is one of 0-9 * # A-D")
    return Dtmf(digit)


def media(value: Any) -> CallerMedia | Ignored:
    """Twilio's and Telnyx's ``media``: base64 ``payload``, ``timestamp`` (ms, a string), ``track`` (inbound, or
    absent; a fork's outbound track is not the caller)."""
    media = obj(value, "'media'")
    if media.get("track", "inbound") not in ("inbound", "inbound_track"):
        return Ignored("media")
    payload = media.get("payload")
    try:
        audio = base64.b64decode(payload, validate=True) if isinstance(payload, str) else b""
    except binascii.Error:
        audio = b""
    try:
        timestamp = float(media["timestamp"])
    except (KeyError, TypeError, ValueError):
        timestamp = None
    return CallerMedia(audio, timestamp if timestamp is not None and 0 <= timestamp < 1e10 else None)


def mark(value: Any) -> MarkPlayed:
    return MarkPlayed(string(obj(value, "'mark'").get("name"), "the mark's name"))


def stream_event(event: str, msg: dict[str, Any]) -> Inbound:
    """The events the Twilio-shaped dialects (Twilio, Telnyx, Exotel; Plivo but for its marks) share, all but
    ``start``: ``media``, ``mark``, ``dtmf`` (``dtmf.digit``, or Telnyx's ``payload.digit``), ``stop``; any other is
    ignored."""
    if event == "media":
        return media(msg.get("media"))
    if event == "mark":
        return mark(msg.get("mark"))
    if event == "dtmf":
        return dtmf(msg.get("dtmf") or msg.get("payload"))
    if event == "stop":
        return Stop()
    return Ignored(event)


# Content types as the carriers write them ("audio/x-l16;rate=16000", "audio/x-mulaw", Exotel's "raw/slin") → the
# gateway's wire format and the name the controller's ``ready`` gives it (its ``codec``).
_ENCODINGS = {"audio/x-mulaw": "mulaw", "audio/mulaw": "mulaw", "audio/pcmu": "mulaw", "mulaw": "mulaw",
              "ulaw": "mulaw", "audio/x-l16": "pcm", "audio/l16": "pcm", "raw/slin": "pcm", "slin": "pcm",
              "base64": "pcm", "pcm": "pcm"}
PCM_RATES = (8000, 16000, 24000)  # the linear-PCM rates the carriers here offer


def wire_format(content_type: Any, rate: Any = None, *, default_rate: int = 8000) -> tuple[str, str, int]:
    """(encoding, codec, rate) of a content type with an optional ``;rate=N`` (or ``rate``, a number or a numeric
    string, where the carrier gives it apart); mu-law is 8 kHz only."""
    if not isinstance(content_type, str):
        raise bad("the stream's content type must be a string")
    name, _, params = content_type.strip().lower().partition(";")
    encoding = _ENCODINGS.get(name.strip())
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip() == "rate" and rate is None:
            rate = value.strip()
    try:
        hz = int(rate) if rate is not None and not isinstance(rate, bool) else default_rate
    except (TypeError, ValueError):
        hz = 0
    if encoding is None or hz not in ((8000,) if encoding == "mulaw" else PCM_RATES):
        raise bad(f"unsupported audio {content_type!r} at {rate!r} Hz: mu-law 8 kHz or 16-bit linear PCM at "
                  f"{', '.join(map(str, PCM_RATES))} Hz")
    return encoding, "pcmu" if encoding == "mulaw" else f"l16-{hz}", hz


def header_parameters(value: Any) -> dict[str, str]:
    """Parameters the carrier passes through as a string of headers: a JSON object (Plivo's ``extra_headers``), or
    ``k1=v1,k2=v2`` / ``k1=v1;k2=v2`` (the form Plivo's ``extraHeaders`` attribute is written in); or an object. A
    name's ``X-PH-`` prefix (Plivo's for the SIP headers it passes on) is dropped."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                value = load_json(text)
            except BadInput as exc:
                raise bad(f"the extra headers are not usable JSON: {exc}") from None
        else:
            pairs = (item.partition("=") for item in text.replace(";", ",").split(","))
            value = {k.strip(): v.strip() for k, sep, v in pairs if sep and k.strip()}
    return {_unprefixed(name): text for name, text in parameters(value).items()}


def _unprefixed(name: str) -> str:
    return name[5:] if name.lower().startswith("x-ph-") else name
