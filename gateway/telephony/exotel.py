"""Exotel's Voicebot applet (AgentStream, bidirectional), as the gateway speaks it (pure).

In: ``connected``, ``start`` (``start.call_sid``: the session's id, ``stream_sid``, ``start.media_format``
``{"encoding": "raw/slin" | "base64", "sample_rate": "8000"}``, numbers as strings; ``start.custom_parameters``: the
query parameters of the applet's URL, ``key``, ``voice``, ``text``, ``barge_in``), ``media`` (``media.payload``:
base64 16-bit little-endian PCM, ~100 ms a message; ``media.timestamp``), ``dtmf`` (``dtmf.digit``), ``mark``
(echoed once the audio before it has played), ``stop``. Out: ``{"event": "media", "stream_sid", "media": {"payload"}}``,
``{"event": "mark", "stream_sid", "mark": {"name"}}``, ``{"event": "clear", "stream_sid"}``.

Exotel asks for outbound media in multiples of 320 bytes, 3.2 KB to 100 KB a message (smaller ones distort, larger
ones time out, other sizes leave gaps). The gateway sends exactly ``frame_bytes`` a message: the 3.2 KB floor where
that is at least 100 ms (200 ms at 8 kHz, 100 ms at 16 kHz), else 100 ms (4.8 KB at 24 kHz); the last message of an
utterance padded with silence. That is the smallest size Exotel takes: a mark after each says what was heard to within
it, and a barge-in's ``clear`` finds the least in Exotel's buffer.
"""

from __future__ import annotations

from typing import Any

from gateway.telephony import events, twilio
from gateway.telephony.events import Inbound, Start

CHUNK_UNIT = 320  # bytes: every outbound message a multiple of it
MIN_CHUNK = 3200  # bytes: Exotel's smallest outbound message
CHUNK_S = 0.1  # at least this much audio a message


def frame_bytes(encoding: str, rate: int) -> int:
    """Each outbound message's size for a stream of ``encoding`` at ``rate``."""
    per_second = rate * (2 if encoding == "pcm" else 1)
    wanted = max(MIN_CHUNK if encoding == "pcm" else 0, round(per_second * CHUNK_S))
    return -(-wanted // CHUNK_UNIT) * CHUNK_UNIT


def _start(msg: dict[str, Any]) -> Start:
    start = events.obj(msg.get("start"), "'start'")
    fmt = events.obj(start.get("media_format") or {}, "'media_format'")
    encoding, codec, rate = events.wire_format(fmt.get("encoding") or "raw/slin", fmt.get("sample_rate"))
    return Start(events.string(start.get("call_sid"), "'start' call_sid"),
                 events.string(msg.get("stream_sid") or start.get("stream_sid"), "'start' stream_sid"),
                 events.parameters(start.get("custom_parameters")), encoding, codec, rate,
                 frame_bytes(encoding, rate))


def parse(raw: str | bytes) -> Inbound:
    """One frame from Exotel; raises ProtocolError for one that is not a Voicebot stream message."""
    event, msg = events.event_frame(raw)
    if event == "start":
        return _start(msg)
    return events.stream_event(event, msg)


class Outbound(twilio.Outbound):
    """The gateway's frames for one stream: Twilio's, naming it by ``stream_sid``."""

    route_key = "stream_sid"
