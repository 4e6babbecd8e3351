"""Telnyx media streaming over WebSocket, bidirectional in RTP mode, as the gateway speaks it (pure).

Fields relied on (Telnyx's "Stream call media over WebSocket" AsyncAPI page and Call Control ``streaming_start``):
``connected``; ``start`` with ``stream_id`` and ``start.call_control_id`` (the session's id), ``start.media_format``
``{"encoding": "PCMU" | "PCMA", "sample_rate": 8000}`` and ``start.custom_parameters``; ``mark`` ``{"mark":
{"name"}}`` echoed once played; ``dtmf`` ``{"dtmf": {"digit"}}`` (``payload.digit`` accepted too); ``stop``. Out:
``{"event": "media", "media": {"payload"}}`` (base64 of raw G.711 in the start's encoding: set
``stream_bidirectional_codec`` to the same codec as ``stream_codec``), ``{"event": "mark", "mark": {"name"}}``,
``{"event": "clear"}``.
"""

from __future__ import annotations

from gateway.telephony import events, twilio
from gateway.telephony.events import Inbound, Start

ENCODINGS = {"PCMU": "mulaw", "PCMA": "alaw"}
CODECS = {"mulaw": "pcmu", "alaw": "pcma"}
SAMPLE_RATE = 8000


def parse(raw: str | bytes) -> Inbound:
    """One frame from Telnyx; raises ProtocolError for one that is not a media-streaming message."""
    event, msg = events.event_frame(raw)
    if event == "start":
        start = events.obj(msg.get("start"), "'start'")
        fmt = events.obj(start.get("media_format") or {"encoding": "PCMU", "sample_rate": SAMPLE_RATE},
                         "'media_format'")
        encoding = ENCODINGS.get(str(fmt.get("encoding", "")).upper())
        if encoding is None or fmt.get("sample_rate", SAMPLE_RATE) not in (SAMPLE_RATE, str(SAMPLE_RATE)):
            raise events.bad(f"the stream's media_format must be PCMU or PCMA at {SAMPLE_RATE} Hz")
        return Start(events.string(start.get("call_control_id"), "'start' call_control_id"),
                     events.string(msg.get("stream_id") or start.get("stream_id"), "'start' stream_id"),
                     events.parameters(start.get("custom_parameters")), encoding, CODECS[encoding])
    return events.stream_event(event, msg)


class Outbound(twilio.Outbound):
    """The gateway's frames for one stream: Twilio's, without the stream's id (Telnyx routes them by the socket)."""

    route_key = None
