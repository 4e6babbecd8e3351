"""The engine protocol (version 1): how a gateway talks to an engine worker.

Pure: no sockets, no event loop, no torch. The gateway imports this module; the worker imports it too.
The transport is one WebSocket per gateway connection at ``/v1/engine``. Control messages are JSON text frames;
audio chunks and voice uploads are binary frames laid out as::

    4-byte big-endian header length | UTF-8 JSON header | payload bytes

See docs/engine-protocol.md for the message reference.
"""

from __future__ import annotations

import json
import struct
from dataclasses import asdict, dataclass, field
from typing import Any

PROTOCOL_VERSION = 1
ENGINE_PATH = "/v1/engine"
SAMPLE_RATE = 24000  # every chunk on the wire is mono s16le at this rate
_HEADER_LEN = struct.Struct("!I")

# Requests a gateway may send, with the fields each requires (besides "type").
_REQUIRED: dict[str, tuple[str, ...]] = {
    "start": ("id",),
    "text": ("id", "text"),
    "flush": ("id",),
    "end": ("id",),
    "cancel": ("id",),
    "playout": ("id", "played"),
    "list_voices": ("req",),
    "delete_voice": ("req", "name"),
    "add_voice": ("req", "name"),  # binary frame: the payload is the reference audio file
}


class ProtocolError(ValueError):
    """A message that does not follow the protocol. ``code`` is stable for clients."""

    def __init__(self, message: str, code: str = "bad_message") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class EngineReady:
    """What a worker announces as its first message on every connection."""

    engine: str
    device: str
    dtype: str
    weights: str  # where the weights came from: a directory, "hf-cache", "random (compute cost only)", "embedded"
    watermark: bool
    sample_rate: int = SAMPLE_RATE
    protocol: int = PROTOCOL_VERSION
    notes: str = ""
    decode: str = ""  # a batching engine's decode mode ("eager", "graph"); "" for the others

    def to_message(self) -> dict[str, Any]:
        return {"type": "ready", **asdict(self)}


@dataclass(frozen=True)
class ChunkHeader:
    """Metadata of one audio chunk of an utterance; the PCM travels as the frame's payload."""

    id: str
    seq: int
    text: str
    offset: float  # seconds of utterance audio before this chunk
    duration: float  # seconds of audio in this chunk
    gen_time: float  # seconds the engine spent generating it
    sample_rate: int = SAMPLE_RATE

    def to_message(self) -> dict[str, Any]:
        return {"type": "chunk", **asdict(self)}


@dataclass
class UtteranceOptions:
    """Per-utterance options a client may set in ``start``."""

    voice: str = "default"
    first_chunk_words: int | None = None  # override of the planner's minimum first-chunk size
    options: dict[str, Any] = field(default_factory=dict)


def encode_json(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def encode_binary(header: dict[str, Any], payload: bytes) -> bytes:
    head = encode_json(header).encode()
    return _HEADER_LEN.pack(len(head)) + head + payload


def decode_binary(frame: bytes) -> tuple[dict[str, Any], bytes]:
    """Split a binary frame into its JSON header and payload."""
    if len(frame) < _HEADER_LEN.size:
        raise ProtocolError("binary frame shorter than its length prefix")
    (n,) = _HEADER_LEN.unpack_from(frame)
    end = _HEADER_LEN.size + n
    if n == 0 or end > len(frame):
        raise ProtocolError("binary frame header length out of range")
    header = _parse_object(frame[_HEADER_LEN.size:end])
    return header, bytes(frame[end:])


def decode_json(text: str | bytes) -> dict[str, Any]:
    return _parse_object(text)


def _parse_object(raw: str | bytes) -> dict[str, Any]:
    try:
        message = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError("a message is a JSON object with a string 'type'")
    return message


def validate_request(message: dict[str, Any], *, binary: bool = False) -> dict[str, Any]:
    """Check a gateway-to-worker request's type and required fields; returns it unchanged."""
    kind = message["type"]
    if kind not in _REQUIRED:
        raise ProtocolError(f"unknown message type {kind!r}", "unknown_type")
    if (kind == "add_voice") != binary:
        raise ProtocolError(f"{kind!r} must be sent as a {'binary' if kind == 'add_voice' else 'text'} frame")
    for name in _REQUIRED[kind]:
        if name not in message:
            raise ProtocolError(f"{kind!r} needs field {name!r}")
    for name in ("id", "req", "name", "text"):
        if name in message and not isinstance(message[name], str):
            raise ProtocolError(f"field {name!r} must be a string")
    if kind == "playout" and not isinstance(message["played"], (int, float)):
        raise ProtocolError("field 'played' must be a number of seconds")
    return message
