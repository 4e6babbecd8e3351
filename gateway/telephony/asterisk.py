"""Asterisk's WebSocket channel driver (``chan_websocket``), JSON control format, as the gateway speaks it (pure).

Asterisk dials out to ``WS /v1/asterisk`` (``Dial(WebSocket/<client>/c(ulaw)f(json))``, a ``websocket_client.conf``
entry whose ``uri`` carries ``?api_key=``). In (TEXT frames): ``MEDIA_START`` (channel_id, the session's id; format;
optimal_frame_size; ptime; channel_variables: ``CBF_VOICE``, ``CBF_TEXT`` are the voice and a greeting),
``DTMF_END`` (digit), ``MEDIA_XOFF``/``MEDIA_XON`` (stop and resume sending), ``MEDIA_MARK_PROCESSED``
(correlation_id: a mark's audio has reached the front of its queue); BINARY frames are the caller's audio (in the
channel's format, no timestamps).
Out: BINARY media in the channel's format in multiples of optimal_frame_size, and the commands ``MARK_MEDIA``
(correlation_id) and ``FLUSH_MEDIA`` (barge-in). Asterisk closes the socket when the channel hangs up.
"""

from __future__ import annotations

import json

from gateway.telephony import events
from gateway.telephony.events import Ignored, Inbound, Pause, Start

# Asterisk's format names → (the gateway's wire format, its rate). slin* is 16-bit linear in the host's byte order
# (little-endian on x86 and ARM Linux).
FORMATS = {"ulaw": ("mulaw", 8000), "alaw": ("alaw", 8000), "slin": ("pcm", 8000), "slin16": ("pcm", 16000),
           "slin24": ("pcm", 24000), "slin32": ("pcm", 32000), "slin44": ("pcm", 44100), "slin48": ("pcm", 48000)}
FRAME_MS = 100  # audio per binary message: a multiple of the channel's frame
MAX_MESSAGE_BYTES = 65500  # Asterisk's WebSocket code closes the socket (and hangs up) on a longer message
VARIABLES = {"CBF_VOICE": "voice", "CBF_TEXT": "text", "CBF_KEY": "key", "CBF_BARGE_IN": "barge_in"}


def _start(msg: dict) -> Start:
    fmt = msg.get("format")
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise events.bad(f"the channel's format must be one of {', '.join(FORMATS)} (c(ulaw) in the dial string)")
    encoding, rate = FORMATS[fmt]
    frame, ptime = msg.get("optimal_frame_size"), msg.get("ptime") or 20
    if not isinstance(frame, int) or isinstance(frame, bool) or not 0 < frame <= MAX_MESSAGE_BYTES:
        raise events.bad("MEDIA_START needs a positive integer optimal_frame_size")
    if not isinstance(ptime, int) or isinstance(ptime, bool) or not 0 < ptime <= FRAME_MS:
        raise events.bad("MEDIA_START's ptime must be 1-100 ms")
    variables = events.obj(msg.get("channel_variables") or {}, "'channel_variables'")
    params = {name: str(variables[var]) for var, name in VARIABLES.items() if variables.get(var)}
    return Start(events.string(msg.get("channel_id"), "MEDIA_START channel_id"),
                 str(msg.get("connection_id") or ""), params, encoding, fmt, rate,
                 frame * max(1, FRAME_MS // ptime))


def parse(raw: str | bytes) -> Inbound:
    """One frame from Asterisk; raises ProtocolError for a TEXT frame that is not a JSON event."""
    if isinstance(raw, bytes):
        return events.CallerMedia(raw)
    if not raw.lstrip().startswith("{"):
        raise events.bad("the control messages must be JSON: add f(json) to the dial string (Asterisk 22.8+)")
    event, msg = events.event_frame(raw)
    if event == "MEDIA_START":
        return _start(msg)
    if event == "MEDIA_MARK_PROCESSED":
        return events.MarkPlayed(events.string(msg.get("correlation_id"), "MEDIA_MARK_PROCESSED correlation_id"))
    if event == "DTMF_END":
        return events.digit(msg.get("digit"))
    if event in ("MEDIA_XOFF", "MEDIA_XON"):
        return Pause(event == "MEDIA_XOFF")
    return Ignored(event)


class Outbound:
    """The gateway's frames for one channel: binary media, JSON commands."""

    def __init__(self, connection_id: str) -> None:
        self.connection_id = connection_id

    def media(self, payload: bytes) -> bytes:
        return payload

    def mark(self, name: str) -> str:
        return json.dumps({"command": "MARK_MEDIA", "correlation_id": name})

    def clear(self) -> str:
        return json.dumps({"command": "FLUSH_MEDIA"})
