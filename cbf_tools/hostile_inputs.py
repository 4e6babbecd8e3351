"""Hostile client inputs, generated from a seed (pure): what an attacker or a broken client might send to the
WebSocket and to the HTTP JSON routes. Used by ``bench faults``; every one must be refused cleanly or spoken."""

from __future__ import annotations

import json
import random
from typing import Any, Callable

_NASTY_TEXT = ("\ud800", "\udfff", "\x00", "\x000\x00", "\x00\x31\x00 [laugh]", "\x1b[31m", "\x7f", "\x85",
               "\u202e", "\ufeff", "\U0001F600", "[", "]", "[" * 50, "[laugh]", "[" + "x" * 60 + "]", "…" * 20,
               "\n" * 30, " ", "", "e\u0301" * 20, "Ω≈ç√", "Dr. J. Smith", "\t\r\n")


def _text(rng: random.Random) -> str:
    pieces = [rng.choice(_NASTY_TEXT) if rng.random() < 0.5 else rng.choice(("hi", "there", "ok.", "a,", "b!"))
              for _ in range(rng.randint(0, 6))]
    return " ".join(pieces)


def _value(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON value, sometimes deep, sometimes of a type no field expects."""
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice((True, False))
    if kind == 2:
        return rng.choice((0, -1, 2**63, 8000, 24000, 1e308, -0.0, 3.5))
    if kind in (3, 4, 5):
        return _text(rng)
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == 7:
        return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return _nested(rng.choice((10, 31, 33, 100, 5000)))


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(min(depth, 500)):  # json.dumps itself recurses; deeper nesting is sent as raw text in _frame
        value = [value]
    return value


def _frame(rng: random.Random, fields: dict[str, Callable[[random.Random], Any]]) -> str:
    """One JSON object of ``fields`` (each kept, dropped or mistyped), or something that is not quite one."""
    mangle = rng.random()
    if mangle < 0.05:
        return "[" * rng.choice((40, 2000, 20000)) + "]" * rng.randrange(3)
    if mangle < 0.1:
        return rng.choice(('{"type": "speak", "text": "hi', "{", "null", "[]", '"x"', "1e999", "NaN",
                           '{"type": "speak", "text": "\\ud800"}', '{"text": "\\udc00\\ud800"}', "\x00", ""))
    body = {name: (make(rng) if rng.random() < 0.8 else _value(rng)) for name, make in fields.items()
            if rng.random() < 0.9}
    for _ in range(rng.randrange(3)):
        body[_text(rng)] = _value(rng)
    return json.dumps(body)  # ASCII: a lone surrogate travels as its JSON escape, as an attacker sends it


def _pick(*choices: Any) -> Callable[[random.Random], Any]:
    return lambda rng: rng.choice(choices)


WEBSOCKET_FIELDS = {"type": _pick("speak", "text", "flush", "end", "cancel", "config", "playout", "sing", ""),
                    "text": _text, "voice": _pick("default", "Default", "nobody", "\ud800", "../x"),
                    "format": _pick("pcm_s16le", "mulaw", "mp3"), "sample_rate": _pick(8000, 16000, 44100, True),
                    "played": _pick(0.5, -1, "1", 1e9, True)}
# ElevenLabs' multi-stream-input messages (close_socket left out: it would end the client's socket legitimately)
ELEVENLABS_FIELDS = {"text": _text, "context_id": _pick("a", "b", "", 3), "flush": _pick(True, False, "yes"),
                     "close_context": _pick(True, False, 1), "voice_settings": _pick({"speed": 2}, "fast"),
                     "xi_api_key": _pick("key", 5)}
TTS_FIELDS = {"text": _text, "voice": _pick("default", "nobody", "\ud800"), "format": _pick("pcm", "wav", "opus", "x"),
              "sample_rate": _pick(8000, 24000, 7, "24000")}
OPENAI_FIELDS = {"model": _pick("tts-1", 1), "input": _text, "voice": _pick("alloy", "default", "\ud800"),
                 "response_format": _pick("pcm", "wav", "mp3", "flac", "x"), "speed": _pick(1.0, 2.0, "1"),
                 "stream_format": _pick("audio", "sse")}


def websocket_messages(rng: random.Random, count: int,
                       fields: dict[str, Callable[[random.Random], Any]] = WEBSOCKET_FIELDS) -> list[str]:
    return [_frame(rng, fields) for _ in range(count)]


def http_bodies(rng: random.Random, count: int, fields: dict[str, Callable[[random.Random], Any]]) -> list[str]:
    return [_frame(rng, fields) for _ in range(count)]
