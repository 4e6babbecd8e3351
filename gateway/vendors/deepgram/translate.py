"""Deepgram Aura's speak API as pure rules: its socket's messages (``Speak``, ``Flush``, ``Clear``, ``Close``) onto a
session's (gateway/messages.py), its ``Flushed`` and ``Cleared`` replies, and its query parameters (``model``,
``encoding``, ``sample_rate``, ``container``) onto the gateway's voices and formats (gateway/formats.py). No sockets,
no event loop: gateway/vendors/deepgram/endpoint.py carries the commands out.

A ``Flush`` ends the utterance the ``Speak`` texts before it built; its ``Flushed`` goes out once that utterance and
every one before it has been sent (``SpeakSocket.settled``). A ``Clear`` cancels them all: no ``Flushed`` of a
cleared utterance follows its ``Cleared`` (pipecat ends its audio context on ``Flushed``).
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.protocol import ProtocolError
from gateway import messages
from gateway.audio import UNKNOWN_SIZE
from gateway.formats import output_format
from gateway.guard.client_input import speech_text

MAX_SPEAK_CHARS = 2000  # theirs: one Speak message's text
MODEL_VERSION = "chatterbox-fast"
# Their encodings as the gateway's formats, with their default sample rates (theirs).
SOCKET_ENCODINGS = {"linear16": ("pcm", 24000), "mulaw": ("mulaw", 8000), "alaw": ("alaw", 8000)}
REST_ENCODINGS = {**SOCKET_ENCODINGS, "mp3": ("mp3", 22050), "opus": ("opus", 48000), "flac": ("flac", 48000),
                  "aac": ("aac", 22050)}
# The containers each encoding takes over REST (the first: its default). A G.711 WAV is its bytes behind a WAV header
# of their own (``g711_wav_header``); an Ogg is the gateway's opus.
CONTAINERS = {"linear16": ("wav", "none"), "mulaw": ("wav", "none"), "alaw": ("wav", "none"), "opus": ("ogg",),
              "mp3": ("none",), "flac": ("none",), "aac": ("none",)}
_AURA = re.compile(r"^aura(?:-2)?-(?P<name>.+)-[a-z]{2}$")  # aura-2-thalia-en, aura-asteria-en


@dataclass(frozen=True)
class Options:
    """What a connection's or request's query asks for: the gateway voice, format and sample rate, and the model
    name to report back (``Metadata``)."""

    model: str
    voice: str
    format: str
    sample_rate: int
    wav_header: bytes = b""  # a G.711 WAV's header, sent before its bytes (gateway/formats.py has no such format)


def voice_for(model: str, voices: Collection[str]) -> str:
    """The gateway voice a model name speaks with: ``aura-2-<name>-en`` (or ``aura-<name>-en``) is the voice
    ``<name>`` where the gateway has one, a model that is itself a voice's name that voice, anything else the
    default voice."""
    if model in voices:
        return model
    found = _AURA.match(model)
    return found["name"] if found and found["name"] in voices else "default"


def options(query: Mapping[str, str], voices: Collection[str], *, rest: bool) -> Options:
    """A socket's (``rest`` False) or a REST request's query; ``ProtocolError`` (code ``INVALID_QUERY_PARAMETER``)
    for an encoding, rate or container the gateway does not make."""
    model = query.get("model") or "aura-2-thalia-en"  # theirs, when none is named
    encodings = REST_ENCODINGS if rest else SOCKET_ENCODINGS
    encoding = query.get("encoding") or "linear16"
    if encoding not in encodings:
        raise _bad(f"encoding must be one of {', '.join(encodings)}")
    fmt, rate = encodings[encoding]
    container = (query.get("container") or CONTAINERS[encoding][0]) if rest else "none"  # a socket's: none
    if container not in CONTAINERS[encoding]:
        raise _bad(f"container for {encoding} must be one of {', '.join(CONTAINERS[encoding])}")
    if container == "wav" and fmt == "pcm":
        fmt = "wav"
    raw_rate = query.get("sample_rate")
    if raw_rate is not None:
        rates = output_format(fmt).rates
        if not raw_rate.isdigit() or int(raw_rate) not in rates:
            raise _bad(f"sample_rate for {encoding} must be one of {', '.join(map(str, rates))}")
        rate = int(raw_rate)
    if rate not in output_format(fmt).rates:  # (theirs is not ours: the format's own)
        rate = output_format(fmt).default_rate
    header = g711_wav_header(fmt, rate) if container == "wav" and fmt in ("mulaw", "alaw") else b""
    return Options(model, voice_for(model, voices), fmt, rate, header)


def g711_wav_header(fmt: str, rate: int) -> bytes:
    """A streaming WAV header (sizes unknown: 0xFFFFFFFF) for mono G.711 (``fmt`` mulaw or alaw) at ``rate``."""
    tag = 7 if fmt == "mulaw" else 6
    chunk = struct.pack("<HHIIHHH", tag, 1, rate, rate, 1, 8, 0)  # one byte a sample; cbSize 0
    return (b"RIFF" + struct.pack("<I", UNKNOWN_SIZE) + b"WAVE" + b"fmt " + struct.pack("<I", len(chunk)) + chunk
            + b"data" + struct.pack("<I", UNKNOWN_SIZE))


def _bad(message: str) -> ProtocolError:
    return ProtocolError(message, "INVALID_QUERY_PARAMETER")


# The socket's messages, in and out.

@dataclass(frozen=True)
class Say:
    """Hand the socket's session this message."""

    message: messages.Message


@dataclass(frozen=True)
class Reply:
    """Send this JSON message."""

    message: dict[str, Any]


@dataclass(frozen=True)
class Mark:
    """A ``Flush``: its ``Flushed`` once the utterances now queued have been sent (``SpeakSocket.mark``)."""

    sequence_id: int


@dataclass(frozen=True)
class Close:
    """``Close``: close the socket once what was flushed has been sent."""


Command = Say | Reply | Mark | Close


def parse(raw: str | bytes) -> dict[str, Any]:
    """One of their JSON text frames, a JSON object with a string ``type``; ``ProtocolError`` otherwise."""
    message = messages.json_frame(raw)
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError("a message is a JSON object with a string 'type'")
    return message


@dataclass
class SpeakSocket:
    """One socket's rules: what each client message does, and when each ``Flushed`` is due."""

    flushes: int = 0  # Flush messages taken so far (the next one's sequence_id)
    _marks: list[tuple[int, frozenset[int]]] = field(default_factory=list)  # sequence_id, the turns it waits for

    def receive(self, raw: str | bytes) -> list[Command]:
        message = parse(raw)
        match message["type"]:
            case "Speak":
                text = message.get("text")
                if not isinstance(text, str):
                    raise ProtocolError("'Speak' needs a string field 'text'")
                if len(text) > MAX_SPEAK_CHARS:
                    raise ProtocolError(f"'Speak' text over {MAX_SPEAK_CHARS} characters", "TEXT_TOO_LONG")
                return [Say(messages.Text(speech_text(text)))] if text else []
            case "Flush":
                self.flushes += 1
                return [Say(messages.End()), Mark(self.flushes - 1)]
            case "Clear":
                self._marks.clear()  # what they waited for is cancelled: no Flushed of it follows
                return [Say(messages.Cancel()), Reply(cleared(max(self.flushes - 1, 0)))]
            case "Close":
                return [Say(messages.End()), Close()]
        raise ProtocolError(f"unknown message type {message['type']!r}: expected Speak, Flush, Clear or Close",
                            "UNKNOWN_MESSAGE_TYPE")

    def mark(self, sequence_id: int, queued: Collection[int]) -> list[dict[str, Any]]:
        """A ``Flush`` taken, the session's turns ``queued`` after its utterance ended: the ``Flushed`` now due."""
        self._marks.append((sequence_id, frozenset(queued)))
        return self.settled(queued)

    def settled(self, queued: Collection[int]) -> list[dict[str, Any]]:
        """The ``Flushed`` messages due now that only ``queued`` turns are left unsent, in their order."""
        out = []
        while self._marks and not self._marks[0][1] & set(queued):
            out.append(flushed(self._marks.pop(0)[0]))
        return out

    @property
    def waiting(self) -> bool:
        """Whether a ``Flushed`` is still owed."""
        return bool(self._marks)


def metadata(model: str) -> dict[str, Any]:
    """The first message on every socket."""
    return {"type": "Metadata", "request_id": str(uuid.uuid4()), "model_name": model, "model_version": MODEL_VERSION,
            "model_uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"chatterbox-fast:{model}"))}


def flushed(sequence_id: int) -> dict[str, Any]:
    return {"type": "Flushed", "sequence_id": sequence_id}


def cleared(sequence_id: int) -> dict[str, Any]:
    return {"type": "Cleared", "sequence_id": sequence_id}


def warning(code: str, description: str) -> dict[str, Any]:
    """Their ``Warning``: something refused, the socket kept."""
    return {"type": "Warning", "code": code, "description": description}


def error_body(code: str, message: str, request_id: str | None = None) -> dict[str, Any]:
    """Their REST error body."""
    return {"err_code": code, "err_msg": message, "request_id": request_id or str(uuid.uuid4())}
