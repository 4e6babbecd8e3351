"""Client messages (docs/protocol.md), parsed and checked without any I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.protocol import ProtocolError, Reading
from gateway.guard.client_input import BadInput, load_json, speech_text
from gateway.formats import WEBSOCKET_DEFAULT_FORMAT, WEBSOCKET_FORMATS, output_format

MAX_MESSAGE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Config:
    voice: str | None = None
    format: str | None = None
    sample_rate: int | None = None
    reading: Reading = field(default_factory=Reading)  # the session's (latency, normalize): None fields keep theirs
    cache: bool | None = None  # whether its speaks may come from the prompt cache; None: keep the session's


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Speak:
    text: str
    voice: str | None = None
    reading: Reading = field(default_factory=Reading)  # this utterance's, over the session's
    cache: bool | None = None  # whether it may come from the prompt cache; None: as the session says


@dataclass(frozen=True)
class Flush:
    pass


@dataclass(frozen=True)
class End:
    pass


@dataclass(frozen=True)
class Cancel:
    pass


@dataclass(frozen=True)
class Playout:
    """Seconds of an utterance that the client has played out (WebSocket clients that play audio): the one named
    (its id, from its ``chunk`` events), else the one now being sent."""

    played: float
    utterance: str | None = None


Message = Config | Text | Speak | Flush | End | Cancel | Playout
_SIMPLE = {"flush": Flush, "end": End, "cancel": Cancel}


def _string(message: dict[str, Any], name: str, *, required: bool) -> str | None:
    value = message.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ProtocolError(f"'{message['type']}' needs a string field {name!r}")
    return value


def json_frame(raw: str | bytes, binary: str = "binary frames are not accepted; send JSON text messages") -> Any:
    """One JSON text frame of a client socket, bounded and made safe (gateway/guard/client_input.py); ``ProtocolError``
    (``binary`` for a binary frame) for anything else. Shared by every socket protocol that speaks JSON."""
    if isinstance(raw, bytes):
        raise ProtocolError(binary)
    if len(raw) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message larger than {MAX_MESSAGE_BYTES} bytes")
    try:
        return load_json(raw)
    except BadInput as exc:
        raise ProtocolError(str(exc)) from None


def parse_message(raw: str | bytes) -> Message:
    """Parse one client frame; raises ``ProtocolError`` with a stable code for anything malformed."""
    message = json_frame(raw)
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError("a message is a JSON object with a string 'type'")
    kind = message["type"]
    if kind in _SIMPLE:
        return _SIMPLE[kind]()
    if kind == "text":
        return Text(speech_text(_string(message, "text", required=True) or ""))
    if kind == "speak":
        text = speech_text(_string(message, "text", required=True) or "")
        if not text.strip():
            raise ProtocolError("'speak' needs non-empty text")
        return Speak(text, _string(message, "voice", required=False), reading(message), _cache(message))
    if kind == "config":
        return _parse_config(message)
    if kind == "playout":
        played = message.get("played")
        if not isinstance(played, (int, float)) or isinstance(played, bool) or not 0 <= played < 1e6:
            raise ProtocolError("'playout' needs a number 'played' (seconds, 0 or more)")
        return Playout(float(played), _string(message, "utterance", required=False))
    raise ProtocolError(f"unknown message type {kind!r}", "unknown_type")


def _parse_config(message: dict[str, Any]) -> Config:
    fmt = _string(message, "format", required=False)
    rate = message.get("sample_rate")
    if fmt is not None and fmt not in WEBSOCKET_FORMATS:
        raise ProtocolError(f"format must be one of {', '.join(WEBSOCKET_FORMATS)}", "bad_config")
    spec = output_format(fmt or WEBSOCKET_DEFAULT_FORMAT)
    if rate is not None:
        if not isinstance(rate, int) or isinstance(rate, bool) or rate not in spec.rates:
            raise ProtocolError(f"sample_rate must be one of {spec.rates} for {fmt or WEBSOCKET_DEFAULT_FORMAT}",
                                "bad_config")
    elif len(spec.rates) == 1:  # a format with a rate of its own: say which
        rate = spec.rates[0]
    return Config(_string(message, "voice", required=False), fmt, rate, reading(message), _cache(message))


def _cache(message: dict[str, Any]) -> bool | None:
    value = message.get("cache")
    if value is not None and not isinstance(value, bool):
        raise ProtocolError(f"'{message['type']}' field 'cache' must be true or false")
    return value


def reading(message: dict[str, Any]) -> Reading:
    """A message's (or a request body's) ``latency``, ``normalize``, ``speed``, ``lexicons`` and ``locale``, checked
    (``ProtocolError`` otherwise)."""
    return Reading(message.get("latency"), message.get("normalize"), message.get("speed"), message.get("lexicons"),
                   message.get("locale"))
