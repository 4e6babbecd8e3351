"""Twilio Media Streams, bidirectional (``<Connect><Stream>``), as the gateway speaks it (pure).

In: ``connected``, ``start`` (callSid, streamSid, mediaFormat, customParameters), ``media`` (the caller's audio,
ignored: this is a speech server), ``mark`` (echoed once the audio before it has played, or at once on a ``clear``),
``dtmf``, ``stop``. Out: ``media`` (base64 mu-law 8 kHz), ``mark``, ``clear``, each with the call's streamSid.

Twilio sends no headers of ours: the API key travels as a ``<Parameter name="key">``; Twilio signs the upgrade
request instead (``X-Twilio-Signature``: base64 HMAC-SHA1 of the URL it dialled, keyed with the account's auth token).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from engine.protocol import ProtocolError

ENCODING = "audio/x-mulaw"
SAMPLE_RATE = 8000


@dataclass(frozen=True)
class Start:
    call_sid: str
    stream_sid: str
    parameters: dict[str, str] = field(default_factory=dict)


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
class Ignored:
    """``connected``, the caller's ``media``, and events this gateway does not use."""

    event: str


Inbound = Start | MarkPlayed | Dtmf | Stop | Ignored


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} must be an object", "bad_message")
    return value


def _string(obj: dict[str, Any], key: str, what: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise ProtocolError(f"{what} needs a string {key!r}", "bad_message")
    return value


def parse(raw: str | bytes) -> Inbound:
    """One frame from Twilio; raises ProtocolError for one that is not a Media Streams message."""
    if isinstance(raw, bytes):
        raise ProtocolError("Media Streams frames are JSON text, not binary", "bad_message")
    try:
        msg = _object(json.loads(raw), "a frame")
    except ValueError:
        raise ProtocolError("a frame is not JSON", "bad_message") from None
    event = msg.get("event")
    if not isinstance(event, str):
        raise ProtocolError("a frame needs a string 'event'", "bad_message")
    if event == "start":
        start = _object(msg.get("start"), "'start'")
        fmt = start.get("mediaFormat")
        if isinstance(fmt, dict) and (fmt.get("encoding"), fmt.get("sampleRate")) != (ENCODING, SAMPLE_RATE):
            raise ProtocolError(f"the stream's mediaFormat must be {ENCODING} at {SAMPLE_RATE} Hz", "bad_message")
        params = start.get("customParameters") or {}
        params = {str(k): str(v) for k, v in _object(params, "'customParameters'").items()}
        stream_sid = msg.get("streamSid") or start.get("streamSid")
        return Start(_string(start, "callSid", "'start'"), _string({"streamSid": stream_sid}, "streamSid", "'start'"),
                     params)
    if event == "mark":
        return MarkPlayed(_string(_object(msg.get("mark"), "'mark'"), "name", "'mark'"))
    if event == "dtmf":
        digit = _string(_object(msg.get("dtmf"), "'dtmf'"), "digit", "'dtmf'")
        if len(digit) != 1 or digit not in "0123456789*#ABCD":
            raise ProtocolError("a dtmf digit is one of 0-9 * # A-D", "bad_message")
        return Dtmf(digit)
    if event == "stop":
        return Stop()
    return Ignored(event)


class Outbound:
    """The gateway's frames for one stream."""

    def __init__(self, stream_sid: str) -> None:
        self.stream_sid = stream_sid

    def media(self, payload: bytes) -> str:
        return json.dumps({"event": "media", "streamSid": self.stream_sid,
                           "media": {"payload": base64.b64encode(payload).decode()}})

    def mark(self, name: str) -> str:
        return json.dumps({"event": "mark", "streamSid": self.stream_sid, "mark": {"name": name}})

    def clear(self) -> str:
        return json.dumps({"event": "clear", "streamSid": self.stream_sid})


def signature(auth_token: str, url: str) -> str:
    """What Twilio puts in ``X-Twilio-Signature`` for a request to ``url`` without a form body (a WebSocket)."""
    digest = hmac.new(auth_token.encode(), url.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def _candidates(url: str) -> list[str]:
    """The URL Twilio may have signed for the one this server saw: behind a TLS proxy the scheme seen is ws(s)
    where Twilio dialled wss, and a default port may be written or not."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netlocs = {parts.netloc, host, f"{host}:443"}
    return [urlunsplit((scheme, netloc, parts.path, parts.query, "")) for scheme in ("wss", "ws", "https")
            for netloc in sorted(netlocs)]


def signature_valid(auth_token: str, url: str, presented: str | None) -> bool:
    """Whether ``presented`` is Twilio's signature of ``url`` (or of the URL Twilio dialled to reach it)."""
    if not presented:
        return False
    return any(hmac.compare_digest(signature(auth_token, candidate).encode(), presented.encode())
               for candidate in _candidates(url))
