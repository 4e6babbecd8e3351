"""What a client sends, made safe at the edge (pure): JSON of bounded depth whose strings are Unicode scalar values,
and speech text without control characters.

Every transport parses through here (WebSocket and data-channel messages in gateway/messages.py, HTTP JSON bodies in
gateway/http/body.py), so no client input reaches the engine link as something it cannot encode (a lone surrogate
cannot be written as UTF-8: it used to close the gateway's one engine connection, failing every client), and no
control character reaches the engine, where eSpeak stops reading at a NUL.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_JSON_DEPTH = 32  # arrays and objects within one another; client messages need 2
_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins valid pairs, so any left is a lone one
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # C0, DEL and C1; tab, LF and CR are whitespace


class BadInput(ValueError):
    """Client input refused; the message says what and where, for the client."""


def load_json(raw: str | bytes) -> Any:
    """Parse ``raw``; refuses anything not JSON, nested deeper than MAX_JSON_DEPTH, or holding a lone surrogate."""
    try:
        value = json.loads(raw)
    except RecursionError:  # the parser's own limit (about 1000): far beyond ours
        raise BadInput(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"not JSON: {exc}") from None
    _check(value)
    return value


def _check(value: Any) -> None:
    """Depth and strings of a parsed value, walked without recursion."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _scalar_values(item)
        elif isinstance(item, (list, dict)):
            if depth >= MAX_JSON_DEPTH:
                raise BadInput(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def _scalar_values(text: str) -> None:
    if (found := _SURROGATE.search(text)) is not None:
        raise BadInput(f"text must be valid Unicode: a lone surrogate U+{ord(found.group()):04X} at character "
                       f"{found.start()}")


def speech_text(text: str) -> str:
    """``text`` without control characters (tab, line feed and carriage return stay: they are whitespace)."""
    return _CONTROL.sub("", text)
