"""The warm-up list (--prompts FILE), read and checked before the server starts (pure).

One prompt a line: plain text in the default voice, or a JSON object with ``text`` and any of ``voice``,
``latency``, ``normalize``, ``speed``, ``lexicons`` (the fields of a ``speak``). Blank lines and lines starting with
``#`` are skipped. A bad line refuses the whole file, naming its line number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from engine.protocol import ProtocolError, Reading

FIELDS = {"text", "voice", "latency", "normalize", "speed", "lexicons"}


class PromptsFileError(ValueError):
    pass


@dataclass(frozen=True)
class Prompt:
    text: str
    voice: str = "default"
    reading: Reading = Reading()


def parse_prompts(content: str, max_text_chars: int) -> list[Prompt]:
    prompts = []
    for number, line in enumerate(content.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            prompts.append(_prompt(line, max_text_chars))
        except (ValueError, ProtocolError) as exc:
            raise PromptsFileError(f"line {number}: {exc}") from None
    return prompts


def _prompt(line: str, max_text_chars: int) -> Prompt:
    if line.startswith("{"):
        try:
            fields = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a JSON object ({exc.msg})") from None
        if not isinstance(fields, dict):
            raise ValueError("not a JSON object")
        if unknown := sorted(set(fields) - FIELDS):
            raise ValueError(f"unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(FIELDS))})")
        text, voice = fields.get("text"), fields.get("voice", "default")
        if not isinstance(text, str) or not isinstance(voice, str) or not voice:
            raise ValueError("'text' and 'voice' must be strings")
        reading = Reading(fields.get("latency"), fields.get("normalize"), fields.get("speed"), fields.get("lexicons"))
    else:
        text, voice, reading = line, "default", Reading()
    if not text.strip():
        raise ValueError("the text is empty")
    if len(text) > max_text_chars:
        raise ValueError(f"the text is over {max_text_chars} characters")
    return Prompt(text, voice, reading)
