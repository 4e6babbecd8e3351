"""Plivo's bidirectional audio streams (``<Stream bidirectional="true">``), as the gateway speaks it (pure).

In: ``start`` (``start.callId``: the session's id, ``start.streamId``, ``start.mediaFormat`` ``{"encoding":
"audio/x-l16" | "audio/x-mulaw", "sampleRate": 8000 | 16000}``; ``extra_headers``, the ``<Stream extraHeaders>``:
``key``, ``voice``, ``text``, ``barge_in``), ``media`` (``media.payload`` base64 in the stream's format,
``media.timestamp`` Unix ms as a string), ``playedStream`` (``name``: a checkpoint's audio has played),
``clearedAudio`` (the answer to a ``clearAudio``), ``dtmf`` (``dtmf.digit``), ``stop``; or the socket closes.
Out: ``{"event": "playAudio", "streamId", "media": {"contentType", "sampleRate", "payload"}}`` in the stream's own
format, ``{"event": "checkpoint", "streamId", "name"}`` (the gateway's marks) and ``{"event": "clearAudio",
"streamId"}`` (barge-in).

Plivo sends no headers of ours: the key travels in ``extraHeaders`` or as ``?key=`` on the stream's URL.
"""

from __future__ import annotations

import base64
from typing import Any

from gateway.telephony import events, twilio
from gateway.telephony.events import Inbound, Start

DEFAULT_FORMAT = "audio/x-l16;rate=8000"  # Plivo's, when the <Stream> names no contentType


def _start(msg: dict[str, Any]) -> Start:
    start = events.obj(msg.get("start"), "'start'")
    fmt = events.obj(start.get("mediaFormat") or {}, "'mediaFormat'")
    encoding, codec, rate = events.wire_format(fmt.get("encoding") or DEFAULT_FORMAT, fmt.get("sampleRate"))
    return Start(events.string(start.get("callId"), "'start' callId"),
                 events.string(start.get("streamId") or msg.get("streamId"), "'start' streamId"),
                 events.header_parameters(msg.get("extra_headers") or start.get("extra_headers")),
                 encoding, codec, rate)


def parse(raw: str | bytes) -> Inbound:
    """One frame from Plivo; raises ProtocolError for one that is not an audio-stream message."""
    event, msg = events.event_frame(raw)
    if event == "start":
        return _start(msg)
    if event == "playedStream":
        return events.MarkPlayed(events.string(msg.get("name"), "'playedStream' name"))
    # media (its Unix-ms timestamp is dropped: the call counts its samples), dtmf, stop; clearedAudio is ignored
    return events.stream_event(event, msg)


class Outbound(twilio.Outbound):
    """The gateway's frames for one stream, each naming it by ``streamId``."""

    route_key = "streamId"

    def __init__(self, stream_id: str, encoding: str = "pcm", rate: int = 8000) -> None:
        super().__init__(stream_id)
        self._format = {"contentType": "audio/x-mulaw" if encoding == "mulaw" else "audio/x-l16", "sampleRate": rate}

    @classmethod
    def of(cls, start: Start) -> Outbound:
        return cls(start.stream_id, start.encoding, start.rate)

    def media(self, payload: bytes) -> str:
        return self._frame("playAudio", media={**self._format, "payload": base64.b64encode(payload).decode()})

    def mark(self, name: str) -> str:
        return self._frame("checkpoint", name=name)

    def clear(self) -> str:
        return self._frame("clearAudio")
