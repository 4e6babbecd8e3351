"""jambonz's streaming custom-TTS vendor API, as the gateway speaks it (pure).

jambonz dials ``WS /v1/jambonz/tts?voice=&language=&sampleRate=`` with ``Authorization: Bearer <key>`` and sends the
text itself: ``{"type": "stream", "text"}`` as its LLM produces it, ``{"type": "flush"}`` (speak what was streamed:
here the end of one utterance, the next ``stream`` starts another), ``{"type": "stop"}`` (barge-in: the engine's work
ends at once; the socket stays for the call's next utterance) and ``{"type": "keepalive"}``. The gateway answers
``{"type": "connect", "data": {"sample_rate", "base64_encoding": false}}``, then binary 16-bit PCM at that rate as it
is made, and ``{"type": "error", "error", "code"}`` for anything refused.
"""

from __future__ import annotations

from typing import Any

from engine.protocol import SAMPLE_RATE, ProtocolError
from gateway import messages
from gateway.guard.client_input import speech_text
from gateway.formats import PCM_RATES

_COMMANDS = {"flush": messages.End(), "stop": messages.Cancel()}


def sample_rate(query: str | None) -> int:
    """The rate jambonz asked for (``sampleRate``), when the gateway can send it; else the engine's own."""
    try:
        rate = int(query or "")
    except ValueError:
        return SAMPLE_RATE
    return rate if rate in PCM_RATES else SAMPLE_RATE


def connect(rate: int) -> dict[str, Any]:
    return {"type": "connect", "data": {"sample_rate": rate, "base64_encoding": False}}


def error(message: str, code: str) -> dict[str, Any]:
    """jambonz reads ``error``; ``code`` is ours (docs/protocol.md's error codes), for logs and tools."""
    return {"type": "error", "error": message, "code": code}


def parse(raw: str | bytes) -> messages.Message | None:
    """One frame from jambonz as a session message; None for a keepalive. Raises ProtocolError."""
    msg = messages.json_frame(raw, binary="jambonz sends JSON text frames, not binary")
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise ProtocolError("a message is a JSON object with a string 'type'")
    kind = msg["type"]
    if kind == "stream":
        if not isinstance(msg.get("text"), str):
            raise ProtocolError("'stream' needs a string 'text'")
        return messages.Text(speech_text(msg["text"]))
    if kind == "keepalive":
        return None
    if kind in _COMMANDS:
        return _COMMANDS[kind]
    raise ProtocolError(f"unknown message type {kind!r}", "unknown_type")
