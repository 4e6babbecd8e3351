"""Wyoming's framing (pure): each event a JSON header line, then optional JSON data and a binary payload whose
lengths the header gives (``data_length``, ``payload_length``).

Written here rather than taken from the ``wyoming`` package, whose reader trusts the lengths a client claims: this
one refuses a header line, data or payload over its limits before holding them, so a hostile client costs a bounded
amount of memory. The ``wyoming`` package's own client is what the tests talk to it with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from engine.protocol import ProtocolError
from gateway.guard.client_input import BadInput, load_json

PROTOCOL_VERSION = "1.10.2"  # the ``wyoming`` release whose events this server speaks
MAX_LINE_BYTES = 64 * 1024
MAX_DATA_BYTES = 64 * 1024  # a TTS server's events are text; none carries much
MAX_PAYLOAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class Event:
    type: str
    data: dict[str, Any] = field(default_factory=dict)
    payload: bytes | None = None


def encode(event: Event) -> bytes:
    """``event`` on the wire, as the ``wyoming`` package writes it (data after the header line)."""
    header: dict[str, Any] = {"type": event.type, "version": PROTOCOL_VERSION}
    data = json.dumps(event.data, ensure_ascii=False).encode() if event.data else b""
    if data:
        header["data_length"] = len(data)
    if event.payload:
        header["payload_length"] = len(event.payload)
    return json.dumps(header, ensure_ascii=False).encode() + b"\n" + data + (event.payload or b"")


def _length(header: dict[str, Any], name: str, limit: int) -> int:
    value = header.get(name) or 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ProtocolError(f"{name!r} must be a whole number of bytes")
    if value > limit:
        raise ProtocolError(f"{name!r} over {limit} bytes")
    return value


class EventReader:
    """Bytes in (``feed``), whole events out. Raises ``ProtocolError`` for anything malformed or over a limit;
    after that the stream cannot be trusted (close the connection)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._header: dict[str, Any] | None = None  # a header line read, its data and payload still to come

    def feed(self, data: bytes) -> list[Event]:
        self._buffer += data
        events = []
        while (event := self._next()) is not None:
            events.append(event)
        return events

    def _next(self) -> Event | None:
        if self._header is None:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > MAX_LINE_BYTES:
                    raise ProtocolError(f"an event's header line is over {MAX_LINE_BYTES} bytes")
                return None
            line = bytes(self._buffer[:end])
            del self._buffer[:end + 1]
            self._header = _header(line)
        header = self._header
        data_length = _length(header, "data_length", MAX_DATA_BYTES)
        payload_length = _length(header, "payload_length", MAX_PAYLOAD_BYTES)
        if len(self._buffer) < data_length + payload_length:
            return None
        data = dict(header.get("data") or {})
        if data_length:
            extra = _object(bytes(self._buffer[:data_length]), "an event's data")
            data.update(extra)
        payload = bytes(self._buffer[data_length:data_length + payload_length]) or None
        del self._buffer[:data_length + payload_length]
        self._header = None
        return Event(header["type"], data, payload)


def _object(raw: bytes, what: str) -> dict[str, Any]:
    try:
        value = load_json(raw)
    except BadInput as exc:
        raise ProtocolError(f"{what}: {exc}") from None
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} must be a JSON object")
    return value


def _header(line: bytes) -> dict[str, Any]:
    header = _object(line, "an event's header")
    if not isinstance(header.get("type"), str) or not header["type"]:
        raise ProtocolError("an event's header needs a 'type'")
    if not isinstance(header.get("data") or {}, dict):
        raise ProtocolError("an event's 'data' must be a JSON object")
    _length(header, "data_length", MAX_DATA_BYTES)
    _length(header, "payload_length", MAX_PAYLOAD_BYTES)
    return header
