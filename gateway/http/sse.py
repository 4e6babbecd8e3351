"""OpenAI's streamed speech as server-sent events (``POST /v1/audio/speech`` with ``stream_format: "sse"``) (pure).

Each piece of encoded audio is ``data: {"type": "speech.audio.delta", "audio": "<base64>"}``; the end is
``data: {"type": "speech.audio.done", "usage": {...}}``; a failure mid-way is ``data: {"type": "error", "error":
{"code", "message"}}`` and the stream ends without ``done``. OpenAI does not define its usage for speech: here
``input_tokens`` counts the input's characters and ``output_tokens`` the audio at ``AUDIO_TOKENS_PER_S``.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from engine.protocol import ChunkHeader
from gateway.utterance_stream import UtteranceStats

CONTENT_TYPE = "text/event-stream"
AUDIO_TOKENS_PER_S = 25  # a nominal rate (Chatterbox's speech tokens): usage figures, not a bill


def event(obj: dict[str, Any]) -> bytes:
    """One event: a ``data: `` line (with its space: LiveKit's parser needs it) and a blank line."""
    return b"data: " + json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


def usage(input_chars: int, audio_seconds: float) -> dict[str, int]:
    output = round(audio_seconds * AUDIO_TOKENS_PER_S)
    return {"input_tokens": input_chars, "output_tokens": output, "total_tokens": input_chars + output}


class SpeechEvents:
    """The body framing of one SSE speech stream (gateway/http/stream.py ``Framing``)."""

    media_type = CONTENT_TYPE

    def __init__(self, text: str) -> None:
        self.input_chars = len(text)

    def chunk(self, audio: bytes, header: ChunkHeader) -> bytes:
        return self.tail(audio) if audio else b""

    def tail(self, audio: bytes) -> bytes:
        return event({"type": "speech.audio.delta", "audio": base64.b64encode(audio).decode()})

    def done(self, stats: UtteranceStats) -> bytes:
        return event({"type": "speech.audio.done", "usage": usage(self.input_chars, stats.audio_s)})

    def failed(self, code: str, message: str) -> bytes:
        return event({"type": "error", "error": {"code": code, "message": message}})
