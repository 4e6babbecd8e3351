"""Twilio Media Streams, bidirectional (``<Connect><Stream>``), as the gateway speaks it (pure).

In: ``connected``, ``start`` (callSid, streamSid, mediaFormat, customParameters), ``media`` (the caller's audio:
gateway/listen/), ``mark`` (echoed once the audio before it has played, or at once on a ``clear``),
``dtmf``, ``stop``. Out: ``media`` (base64 mu-law 8 kHz), ``mark``, ``clear``, each with the call's streamSid.

Twilio sends no headers of ours: the API key travels as a ``<Parameter name="key">``; Twilio signs the upgrade
request instead (``X-Twilio-Signature``: base64 HMAC-SHA1 of the URL it dialled, keyed with the account's auth token).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gateway.telephony import events
from gateway.telephony.events import Inbound, Start

ENCODING = "audio/x-mulaw"
SAMPLE_RATE = 8000


def parse(raw: str | bytes) -> Inbound:
    """One frame from Twilio; raises ProtocolError for one that is not a Media Streams message."""
    event, msg = events.event_frame(raw)
    if event == "start":
        start = events.obj(msg.get("start"), "'start'")
        fmt = start.get("mediaFormat")
        if isinstance(fmt, dict) and (fmt.get("encoding"), fmt.get("sampleRate")) != (ENCODING, SAMPLE_RATE):
            raise events.bad(f"the stream's mediaFormat must be {ENCODING} at {SAMPLE_RATE} Hz")
        return Start(events.string(start.get("callSid"), "'start' callSid"),
                     events.string(msg.get("streamSid") or start.get("streamSid"), "'start' streamSid"),
                     events.parameters(start.get("customParameters")))
    return events.stream_event(event, msg)


class Outbound:
    """The gateway's frames for one stream, each naming it (by ``route_key``)."""

    route_key: str | None = "streamSid"  # None: the stack routes frames by the socket (Telnyx)

    def __init__(self, stream_sid: str) -> None:
        self.route = {self.route_key: stream_sid} if self.route_key else {}

    def _frame(self, event: str, **fields: Any) -> str:
        return json.dumps({"event": event, **self.route, **fields})

    def media(self, payload: bytes) -> str:
        return self._frame("media", media={"payload": base64.b64encode(payload).decode()})

    def mark(self, name: str) -> str:
        return self._frame("mark", mark={"name": name})

    def clear(self) -> str:
        return self._frame("clear")


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
