"""What a media-stream dialect's frames say (Twilio, Telnyx, Asterisk), once parsed, and the checks their parsers
share (pure)."""

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
