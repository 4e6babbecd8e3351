"""Pronunciation lexicons: words the caller wants said another way ("SQL" -> "sequel"), applied as a pass of the text
front end (its pieces compose like the others', see spans.py). Pure, but for ``LexiconStore``, which keeps lexicons in
a directory.

Two formats are read, told apart by content: a W3C PLS file (XML, ``<lexeme><grapheme>..</grapheme><alias>..</alias>``)
and ElevenLabs' rules JSON (``{"rules": [{"type": "alias", "string_to_replace": .., "alias": ..}]}``). Chatterbox-Turbo
reads no phonemes, so an entry that has only phonemes is skipped (and counted). PLS is read with expat, refusing any
DOCTYPE or entity declaration, so no entity is ever expanded.

All of a lexicon's rules are one regular expression, tried left to right, so ``apply`` is one pass over the text. Each
alternative starts with its grapheme's first character (the word-boundary lookbehind comes after it, two characters
wide), so the regex engine rejects most alternatives on that character alone: 2000 rules would be a hundred times
slower with the lookbehind first. An empty group ends each alternative, so ``lastindex`` says which rule matched.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence
from xml.parsers import expat

from engine.protocol import MAX_LEXICON_BYTES  # one limit, the gateway's and the worker's
from engine.speech_text.spans import Piece, substitute, verbatim

log = logging.getLogger(__name__)

MAX_RULES = 2000
MAX_GRAPHEME_CHARS = 100
MAX_ALIAS_CHARS = 200
MAX_STORED = 256  # lexicons in one LexiconStore

_NAME = re.compile(r"[a-z0-9_-]{1,64}")
_SUFFIXES = (".pls", ".json")
_TEMP_PREFIX = ".tmp-"


class LexiconError(ValueError):
    """A lexicon that cannot be read; the message names the problem (and the line for PLS/JSON where it can)."""


class LexiconNotFound(LexiconError, KeyError):
    """No stored lexicon of that name (a ``KeyError`` too, so a caller can answer 404 rather than 400)."""

    def __str__(self) -> str:  # KeyError's own would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Rule:
    grapheme: str  # what to find in the text
    alias: str  # what to say instead
    case_sensitive: bool = True
    word_boundaries: bool = True  # only where it stands as a whole word (not inside "tomatoes" for "tomato")

    def __post_init__(self) -> None:
        if not self.grapheme.strip():
            raise LexiconError("a rule with an empty grapheme")
        if len(self.grapheme) > MAX_GRAPHEME_CHARS:
            raise LexiconError(f"the grapheme {self.grapheme[:20]!r}... is {len(self.grapheme)} characters long; "
                               f"at most {MAX_GRAPHEME_CHARS}")
        if not self.alias.strip():
            raise LexiconError(f"the alias for {self.grapheme!r} is empty")
        if len(self.alias) > MAX_ALIAS_CHARS:
            raise LexiconError(f"the alias for {self.grapheme!r} is {len(self.alias)} characters long; "
                               f"at most {MAX_ALIAS_CHARS}")


class Lexicon:
    """Rules applied together; where two could match at one place the longer grapheme wins, then the earlier rule."""

    def __init__(self, rules: Sequence[Rule], skipped: int = 0) -> None:
        if len(rules) > MAX_RULES:
            raise LexiconError(f"{len(rules)} rules; a lexicon holds at most {MAX_RULES}")
        self.rules: tuple[Rule, ...] = tuple(rules)
        self._skipped = skipped
        ordered = sorted(self.rules, key=lambda rule: -len(rule.grapheme))  # stable: ties keep the rules' order
        self._aliases = [rule.alias for rule in ordered]
        self._pattern = re.compile("|".join(map(_alternative, ordered))) if ordered else None

    @classmethod
    def parse(cls, data: bytes, filename: str = "") -> "Lexicon":
        """A W3C PLS file or ElevenLabs' rules JSON, decided by content (a leading ``<`` is PLS). A lexeme's several
        graphemes all map to its (first) alias; PLS is case-sensitive, with word boundaries. LexiconError (its message
        starting with ``filename`` where given) for anything malformed or past the limits."""
        try:
            if len(data) > MAX_LEXICON_BYTES:
                raise LexiconError(f"the lexicon is {len(data)} bytes; at most {MAX_LEXICON_BYTES}")
            rules, skipped = (_read_pls if is_pls(data) else _read_json)(data)
            return cls(rules, skipped)
        except LexiconError as exc:
            raise LexiconError(f"{filename}: {exc}" if filename else str(exc)) from None

    @property
    def skipped(self) -> int:
        """Phoneme-only entries the file held, not read."""
        return self._skipped

    def apply(self, text: str) -> list[Piece]:
        """``text`` with every rule applied (longest grapheme first where two could match at one place; matches do
        not overlap; left to right), as pieces of ``text`` (the replaced spans non-verbatim, the rest verbatim)."""
        if self._pattern is None:
            return verbatim(text)
        return substitute(self._pattern, text, lambda match: self._aliases[match.lastindex - 1])

    def then(self, other: "Lexicon") -> "Lexicon":
        """This lexicon's rules, then ``other``'s where they add a grapheme this one lacks (several lexicons applied
        in order, as ElevenLabs applies up to 3 locators in order: the first that defines a grapheme wins)."""
        have = {rule.grapheme for rule in self.rules}
        added = [rule for rule in other.rules if rule.grapheme not in have]
        return Lexicon([*self.rules, *added], self.skipped + other.skipped)


def is_pls(data: bytes) -> bool:
    """Whether ``data`` is read as PLS: XML's ``<`` first (after a byte order mark and white space)."""
    return data.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"<")


def _alternative(rule: Rule) -> str:
    r"""One rule's branch of the lexicon's regex: ``t(?<!\w[\s\S])omato(?!\w)()`` for a whole word "tomato"."""
    first, rest = re.escape(rule.grapheme[0]), re.escape(rule.grapheme[1:])
    body = first + r"(?<!\w[\s\S])" + rest + r"(?!\w)" if rule.word_boundaries else first + rest
    return (body if rule.case_sensitive else f"(?i:{body})") + "()"


# PLS


class _PlsReader:
    """Expat callbacks that collect a PLS document's lexemes; elements it does not know (``<meta>``, ``<example>``)
    are passed over, text and all. Names are matched without their namespace."""

    def __init__(self) -> None:
        self.parser = expat.ParserCreate(namespace_separator=" ")
        self.parser.StartElementHandler = self._start
        self.parser.EndElementHandler = self._end
        self.parser.CharacterDataHandler = self._characters
        self.parser.StartDoctypeDeclHandler = self._declaration
        self.parser.EntityDeclHandler = self._declaration
        self.rules: list[Rule] = []
        self.skipped = 0
        self._path: list[str] = []  # the open elements' local names
        self._graphemes: list[str] = []  # of the open lexeme
        self._aliases: list[str] = []
        self._phonemes = 0
        self._lexeme_line = 0
        self._text: list[str] | None = None  # the open grapheme's or alias's text

    def error(self, problem: str, line: int | None = None) -> LexiconError:
        return LexiconError(f"line {line or self.parser.CurrentLineNumber}: {problem}")

    def _declaration(self, *_: Any) -> None:
        raise self.error("a DOCTYPE or ENTITY declaration is refused: a lexicon declares nothing")

    def _start(self, name: str, _attributes: dict[str, str]) -> None:
        local = name.rpartition(" ")[2]
        depth = len(self._path)
        if depth == 0 and local != "lexicon":
            raise self.error(f"the document is a <{local}>, not a PLS <lexicon>")
        if depth == 1 and local == "lexeme":
            self._graphemes, self._aliases, self._phonemes = [], [], 0
            self._lexeme_line = self.parser.CurrentLineNumber
        elif depth == 2 and self._path[1] == "lexeme":
            if local in ("grapheme", "alias"):
                self._text = []
            elif local == "phoneme":
                self._phonemes += 1
        elif self._text is not None:
            raise self.error(f"<{local}> inside <{self._path[-1]}>, which holds only text")
        self._path.append(local)

    def _end(self, _name: str) -> None:
        local = self._path.pop()
        if self._text is not None and len(self._path) == 2:
            (self._graphemes if local == "grapheme" else self._aliases).append("".join(self._text).strip())
            self._text = None
        elif local == "lexeme" and len(self._path) == 1:
            self._lexeme()

    def _characters(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def _lexeme(self) -> None:
        line = self._lexeme_line
        if not self._graphemes:
            raise self.error("a <lexeme> with no <grapheme>", line)
        if not self._aliases:
            if not self._phonemes:
                raise self.error("a <lexeme> with neither an <alias> nor a <phoneme>", line)
            self.skipped += 1
            return
        try:
            self.rules += [Rule(grapheme, self._aliases[0]) for grapheme in self._graphemes]
        except LexiconError as exc:
            raise self.error(str(exc), line) from None


def _read_pls(data: bytes) -> tuple[list[Rule], int]:
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:  # expat's handlers refuse them too (in any encoding)
        raise LexiconError("a DOCTYPE or ENTITY declaration is refused: a lexicon declares nothing")
    reader = _PlsReader()
    try:
        reader.parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise LexiconError(f"line {exc.lineno}: not well-formed XML ({expat.ErrorString(exc.code)})") from None
    return reader.rules, reader.skipped


# ElevenLabs' rules JSON


def _read_json(data: bytes) -> tuple[list[Rule], int]:
    try:
        document = json.loads(data)
    except json.JSONDecodeError as exc:
        raise LexiconError(f"line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise LexiconError("not valid JSON (not UTF-8 text)") from None
    except RecursionError:  # "[[[[..." deeper than the interpreter's stack
        raise LexiconError("not a lexicon: JSON nested far too deeply") from None
    if not isinstance(document, dict) or not isinstance(document.get("rules"), list):
        raise LexiconError('a JSON lexicon must be an object with a "rules" list')
    rules: list[Rule] = []
    skipped = 0
    for number, entry in enumerate(document["rules"], 1):
        try:
            rule = _json_rule(entry)
        except LexiconError as exc:
            raise LexiconError(f"rule {number}: {exc}") from None
        if rule is None:
            skipped += 1
        else:
            rules.append(rule)
    return rules, skipped


def _json_rule(entry: object) -> Rule | None:
    """One entry of ``"rules"`` (None: a phoneme rule, skipped)."""
    if not isinstance(entry, dict):
        raise LexiconError("not an object")
    kind = entry.get("type")
    if kind not in ("alias", "phoneme"):
        raise LexiconError(f'"type" must be "alias" or "phoneme", not {kind!r}')
    grapheme = entry.get("string_to_replace")
    if not isinstance(grapheme, str):
        raise LexiconError('"string_to_replace" is missing or not a string')
    if kind == "phoneme":
        return None
    alias = entry.get("alias")
    if not isinstance(alias, str):
        raise LexiconError(f'"alias" for {grapheme!r} is missing or not a string')
    flags = {key: entry.get(key, True) for key in ("case_sensitive", "word_boundaries")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise LexiconError(f'"{key}" must be true or false')
    return Rule(grapheme, alias, **flags)


# The store


class LexiconStore:
    """Lexicons kept in ``directory`` as ``NAME.pls`` or ``NAME.json`` (names: 1-64 of ``a-z 0-9 - _``), each parsed
    once and cached until its file changes."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)  # made by the first add
        self._cache: dict[str, tuple[os.stat_result, Lexicon]] = {}  # name -> (its file's stat when read, lexicon)

    def add(self, name: str, data: bytes) -> dict[str, Any]:
        """Store ``data`` as lexicon ``name`` (replacing one of that name), once it parses."""
        _check_name(name)
        lexicon = Lexicon.parse(data, name)
        names = self._names()
        if name not in names and len(names) >= MAX_STORED:
            raise LexiconError(f"{MAX_STORED} lexicons are stored already; delete one first")
        suffix = ".pls" if is_pls(data) else ".json"
        path = self.directory / f"{name}{suffix}"
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(temp, 0o644)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        self._cache.pop(name, None)  # a stat may look the same: mtimes go by the kernel's tick, inodes are reused
        for other in _SUFFIXES:  # the same name in the other format, now stale
            if other != suffix:
                (self.directory / f"{name}{other}").unlink(missing_ok=True)
        return _summary(name, lexicon)

    def get(self, name: str) -> Lexicon:
        _check_name(name)
        try:
            path, stat = self._file(name)
            cached = self._cache.get(name)
            if cached is not None and _same_file(cached[0], stat):
                return cached[1]
            lexicon = Lexicon.parse(path.read_bytes(), path.name)
        except FileNotFoundError:  # (deleted meanwhile, too)
            raise LexiconNotFound(f"no lexicon {name!r}") from None
        self._cache[name] = (stat, lexicon)
        return lexicon

    def source(self, name: str) -> bytes:
        """The lexicon's file as stored (PLS or JSON), which ``add`` takes again; one past MAX_LEXICON_BYTES (put
        there by hand) is a ``LexiconError``."""
        _check_name(name)
        try:
            path, stat = self._file(name)
            if stat.st_size > MAX_LEXICON_BYTES:
                raise LexiconError(f"the lexicon file is {stat.st_size} bytes; at most {MAX_LEXICON_BYTES}")
            return path.read_bytes()
        except FileNotFoundError:  # (deleted meanwhile, too)
            raise LexiconNotFound(f"no lexicon {name!r}") from None

    def delete(self, name: str) -> None:
        _check_name(name)
        self._cache.pop(name, None)
        found = False
        for suffix in _SUFFIXES:
            path = self.directory / f"{name}{suffix}"
            if path.exists():
                path.unlink(missing_ok=True)
                found = True
        if not found:
            raise LexiconNotFound(f"no lexicon {name!r}")

    def list(self) -> list[dict[str, Any]]:
        """``{"name", "rules", "skipped"}`` for each stored lexicon, by name; one that no longer parses (edited by
        hand) is logged and left out."""
        out = []
        for name in sorted(self._names()):
            try:
                out.append(_summary(name, self.get(name)))
            except LexiconError as exc:
                log.warning("stored lexicon %r is unreadable: %s", name, exc)
        return out

    def _names(self) -> set[str]:
        if not self.directory.is_dir():
            return set()
        return {path.stem for path in self.directory.iterdir()
                if path.suffix in _SUFFIXES and _NAME.fullmatch(path.stem)}

    def _file(self, name: str) -> tuple[Path, os.stat_result]:
        """The file holding ``name`` and its stat: the newer if both formats are there (an ``add`` cut short)."""
        found = []
        for suffix in _SUFFIXES:
            path = self.directory / f"{name}{suffix}"
            try:
                found.append((path, path.stat()))
            except FileNotFoundError:
                continue
        if not found:
            raise FileNotFoundError(name)
        return max(found, key=lambda entry: entry[1].st_mtime_ns)


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise LexiconError(f"lexicon name {name[:80]!r} is not 1-64 of a-z, 0-9, '-' and '_'")


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_ino, a.st_mtime_ns, a.st_size) == (b.st_ino, b.st_mtime_ns, b.st_size)


def _summary(name: str, lexicon: Lexicon) -> dict[str, Any]:
    return {"name": name, "rules": len(lexicon.rules), "skipped": lexicon.skipped}
