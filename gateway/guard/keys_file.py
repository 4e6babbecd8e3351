"""The keys file (``--keys-file``, TOML): one ``[keys.NAME]`` table per client, its key (or only the key's SHA-256)
and its limits. Pure: text in, ``Client`` records out, or a ``KeysFileError`` naming the line.

```toml
[keys.acme]
key_sha256 = "9f86d08..."        # or: key = "at least 16 characters"
max_sessions = 4                 # open sessions and streams, every transport together
max_utterances_in_flight = 2     # utterances being generated at once
chars_per_minute = 3000          # characters of text taken, on average (a token bucket)
voices = ["default", "acme-*"]   # the voices it may speak with and upload (a trailing * matches a prefix)
routes = ["/v1/tts", "/v1/stream"]  # the paths it may reach (a path matches itself and what lies below it)
admin = false                    # may read GET /v1/usage
```
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from typing import Any

MIN_KEY_CHARS = 16
LIMITS = ("max_sessions", "max_utterances_in_flight", "chars_per_minute")
LISTS = ("voices", "routes")
FIELDS = ("key", "key_sha256", *LIMITS, *LISTS, "admin")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,48}$")  # a metrics label, and its voices' prefix (gateway/guard/tenants.py)
_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")


class KeysFileError(ValueError):
    """A keys file refused: ``line`` (1-based; 0 when unknown) and one sentence."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


@dataclass(frozen=True)
class Client:
    """One client of the keys file: its name (a label in /metrics and /v1/usage), its key's SHA-256, its limits
    (None: no limit) and what it may reach (None: everything)."""

    name: str
    key_sha256: bytes
    max_sessions: int | None = None
    max_utterances_in_flight: int | None = None
    chars_per_minute: int | None = None
    voices: tuple[str, ...] | None = None
    routes: tuple[str, ...] | None = None
    admin: bool = False

    def may_use_voice(self, voice: str) -> bool:
        return self.voices is None or any(voice.startswith(v[:-1]) if v.endswith("*") else voice == v
                                          for v in self.voices)

    def may_reach(self, path: str) -> bool:
        return self.routes is None or any(path == r or path.startswith(r.rstrip("/") + "/") for r in self.routes)


def key_digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def _table_lines(text: str) -> dict[str, int]:
    """Each ``[keys.NAME]`` table's line (what a semantic error points at)."""
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if found := re.match(r"^\s*\[\s*keys\s*\.\s*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)\s*\]", line):
            lines.setdefault(found.group(1).strip("\"'"), number)
    return lines


def _top_line(text: str, name: str) -> int:
    """The first line that names ``name`` as a field or table."""
    pattern = re.compile(rf"^\s*\[*\s*[\"']?{re.escape(name)}\b")
    return next((n for n, line in enumerate(text.splitlines(), 1) if pattern.match(line)), 0)


def _field_line(text: str, start: int, name: str) -> int:
    """The line of field ``name`` in the table starting at line ``start`` (the table's own line when not found)."""
    for number, line in enumerate(text.splitlines()[start:], start + 1):
        if re.match(r"^\s*\[", line):
            break
        if re.match(rf"^\s*\"?{re.escape(name)}\"?\s*=", line):
            return number
    return start


def parse(text: str) -> list[Client]:
    """The clients of a keys file's text; raises ``KeysFileError`` (with the line) on anything it does not take:
    bad TOML, a table that is not ``[keys.NAME]``, an unknown field, a limit that is not a positive whole number, a
    key shorter than 16 characters, both or neither of ``key`` and ``key_sha256``, two clients with one key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        raise KeysFileError(int(found.group(1)) if found else 0, f"not TOML: {exc}") from None
    for top in data:
        if top != "keys":
            raise KeysFileError(_top_line(text, top), f"unknown table or field {top!r} (each client is a [keys.NAME] "
                                "table)")
    keys = data.get("keys", {})
    if not isinstance(keys, dict):
        raise KeysFileError(_field_line(text, 0, "keys"), "keys must be tables: [keys.NAME]")
    lines = _table_lines(text)
    clients: list[Client] = []
    seen: dict[bytes, str] = {}
    for name, table in keys.items():
        line = lines.get(name, 0)
        if not isinstance(table, dict):
            raise KeysFileError(_field_line(text, 0, "keys") or line, f"keys.{name} must be a table: [keys.{name}]")
        client = _client(text, name, table, line)
        if client.key_sha256 in seen:
            raise KeysFileError(line, f"[keys.{name}] has the same key as [keys.{seen[client.key_sha256]}]")
        seen[client.key_sha256] = name
        clients.append(client)
    return clients


def _client(text: str, name: str, table: dict[str, Any], line: int) -> Client:
    def fail(field: str, message: str) -> KeysFileError:
        return KeysFileError(_field_line(text, line, field) if line else 0, f"[keys.{name}] {message}")

    if not _NAME.match(name):
        raise KeysFileError(line, f"[keys.{name}]: a name is 1-48 letters, digits, '_' or '-'")
    for field in table:
        if field not in FIELDS:
            raise fail(field, f"has an unknown field {field!r} (known: {', '.join(FIELDS)})")
    if ("key" in table) == ("key_sha256" in table):
        raise KeysFileError(line, f"[keys.{name}] needs exactly one of key and key_sha256")
    if "key" in table:
        key = table["key"]
        if not isinstance(key, str) or len(key) < MIN_KEY_CHARS:
            raise fail("key", f"key must be a string of at least {MIN_KEY_CHARS} characters")
        digest = key_digest(key)
    else:
        hexed = table["key_sha256"]
        if not isinstance(hexed, str) or not _HEX64.match(hexed):
            raise fail("key_sha256", "key_sha256 must be 64 hexadecimal digits (sha256sum of the key)")
        digest = bytes.fromhex(hexed)
    limits: dict[str, Any] = {}
    for field in LIMITS:
        if field in table:
            value = table[field]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise fail(field, f"{field} must be a whole number of at least 1, not {value!r}")
            limits[field] = value
    for field in LISTS:
        if field in table:
            value = table[field]
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise fail(field, f"{field} must be a list of strings")
            limits[field] = tuple(value)
    if "admin" in table and not isinstance(table["admin"], bool):
        raise fail("admin", "admin must be true or false")
    return Client(name, digest, admin=table.get("admin", False), **limits)
