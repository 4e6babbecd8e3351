"""The lines of a speech stream with timings (``POST /v1/tts`` as ``application/x-ndjson``): one JSON object a line,
the audio base64-encoded beside the words it carries, for clients that cannot hold a WebSocket (pure)."""

from __future__ import annotations

import base64
import json
from typing import Any

from engine.protocol import ChunkHeader
from gateway.utterance_stream import UtteranceStats
from gateway.word_match import ClientWords

CONTENT_TYPE = "application/x-ndjson"


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def chunk_line(header: ChunkHeader, audio: bytes, words: list[dict[str, Any]],
               spanned: dict[str, Any] | None = None) -> bytes:
    """One chunk: its spoken text (and ``spanned``: the client's text it speaks for, ``ClientWords.spanned``), where
    it sits in the utterance, its timed words, and its audio (the encoder's output for it; a compressed format may
    hold some back to the next line)."""
    return _line({"type": "chunk", "seq": header.seq, "text": header.text, **(spanned or {}), "offset": header.offset,
                  "duration": header.duration, "words": words, "timing": header.timing or "estimated",
                  "audio": base64.b64encode(audio).decode()})


def tail_line(audio: bytes) -> bytes:
    """What the encoder held back, at the end."""
    return _line({"type": "audio", "audio": base64.b64encode(audio).decode()})


def done_line(summary: dict[str, Any]) -> bytes:
    return _line({"type": "done", **summary})


def error_line(code: str, message: str) -> bytes:
    """The last line of a stream that cannot be finished (never followed by ``done``): the WebSocket's error event."""
    return _line({"type": "error", "code": code, "message": message})


class TimedLines:
    """The body framing of one timed stream (gateway/http/stream.py ``Framing``): each chunk's words spelt as the
    client sent ``text``."""

    media_type = CONTENT_TYPE

    def __init__(self, text: str) -> None:
        self.spelling = ClientWords()
        self.spelling.add(text)

    def chunk(self, audio: bytes, header: ChunkHeader) -> bytes:
        return chunk_line(header, audio, self.spelling.rename(header.words or []), self.spelling.spanned(header.span))

    def tail(self, audio: bytes) -> bytes:
        return tail_line(audio)

    def done(self, stats: UtteranceStats) -> bytes:
        return done_line(stats.summary())

    def failed(self, code: str, message: str) -> bytes | None:
        return error_line(code, message)
