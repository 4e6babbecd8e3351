"""Vonage's Voice API WebSockets (an NCCO ``connect`` to a ``websocket`` endpoint), as the gateway speaks it (pure).

In: first a TEXT frame ``{"event": "websocket:connected", "content-type": "audio/l16;rate=16000", ...}`` carrying the
NCCO endpoint's ``headers`` as its own fields: ``uuid`` (the call's, which the answer webhook puts there: the
session's id), ``key``, ``voice``, ``text``, ``barge_in``; then BINARY frames of the caller's audio (20 ms of 16-bit
little-endian PCM: 640 bytes at 16 kHz); TEXT events: ``websocket:notify`` (``payload``: a ``notify``'s, once the
audio sent before it has played), ``websocket:cleared`` (the answer to a ``clear``), ``websocket:dtmf``
(``digit``). Vonage closes the socket when the call ends.
Out: BINARY 20 ms frames (Vonage plays what it is sent from a buffer, in order), ``{"action": "notify", "payload":
{"name"}}`` (the gateway's marks) and ``{"action": "clear"}`` (barge-in).

The key: the endpoint's ``authorization`` (``{"type": "custom", "value": "Bearer KEY"}``, sent as the upgrade's
``Authorization``), a ``key`` header, or ``?key=`` on the endpoint's URI.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.telephony import events
from gateway.telephony.events import Ignored, Inbound, Start

FRAME_S = 0.02  # each binary message: 20 ms
MESSAGES_PER_MARK = 5  # a notify after every 100 ms
PARAMETERS = ("key", "voice", "text", "barge_in")


def _start(msg: dict[str, Any]) -> Start:
    encoding, codec, rate = events.wire_format(msg.get("content-type"), default_rate=16000)
    if encoding != "pcm":
        raise events.bad("Vonage streams are audio/l16: set the endpoint's content-type to audio/l16;rate=16000")
    params = {name: str(msg[name]) for name in PARAMETERS if isinstance(msg.get(name), (str, int, float))}
    call_id = events.string(msg.get("uuid"), 'websocket:connected\'s uuid (the NCCO\'s "headers": {"uuid": ...})')
    return Start(call_id, call_id, params, encoding, codec, rate, frame_bytes(rate))


def frame_bytes(rate: int) -> int:
    """What the outbox sends between two marks: MESSAGES_PER_MARK whole messages."""
    return round(rate * FRAME_S) * 2 * MESSAGES_PER_MARK


def parse(raw: str | bytes) -> Inbound:
    """One frame from Vonage; raises ProtocolError for a TEXT frame that is not a JSON event."""
    if isinstance(raw, bytes):
        return events.CallerMedia(raw)
    event, msg = events.event_frame(raw)
    if event == "websocket:connected":
        return _start(msg)
    if event == "websocket:notify":
        return events.MarkPlayed(events.string(events.obj(msg.get("payload"), "'payload'").get("name"),
                                               "the notify's payload name"))
    if event == "websocket:dtmf":
        digit = msg.get("digit") if "digit" in msg else events.obj(msg.get("dtmf"), "'dtmf'").get("digit")
        return events.digit(str(digit) if isinstance(digit, int) and not isinstance(digit, bool) else digit)
    return Ignored(event)  # websocket:cleared, and what else Vonage may add


class Outbound:
    """The gateway's frames for one call: binary 20 ms messages, JSON actions."""

    def __init__(self, rate: int = 16000) -> None:
        self.message_bytes = round(rate * FRAME_S) * 2

    @classmethod
    def of(cls, start: Start) -> Outbound:
        return cls(start.rate)

    def media(self, payload: bytes) -> list[bytes]:
        step = self.message_bytes
        return [payload[i:i + step] for i in range(0, len(payload), step)]

    def mark(self, name: str) -> str:
        return json.dumps({"action": "notify", "payload": {"name": name}})

    def clear(self) -> str:
        return json.dumps({"action": "clear"})
