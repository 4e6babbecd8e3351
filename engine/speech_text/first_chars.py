"""What character a regular expression's match can start with, and which characters every match holds. Pure.

``classify`` asks every rule what it reads at each place a construct may start; most rules cannot start at most
characters (a date needs a digit or a month's letter, an e-mail a word character), so knowing each rule's possible
first characters lets it ask only the rules that can match there. The sets come from the pattern's own parse (the
``re`` module's parser, as ``re.compile`` sees it) and are conservative: a construct the walk does not know makes the
rule a candidate everywhere, so leaving a rule out never changes a reading, it only saves the asking. Likewise
``required_chars``: a line of text with none of the characters every match of markdown's inline pattern holds (``*``,
``[``, ``<``...) is not searched for one.
"""

from __future__ import annotations

import functools
import re

try:  # the parser the re module compiles with (Python 3.11 and later; sre_parse before)
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser as parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as c  # type: ignore[no-redef]
    import sre_parse as parser  # type: ignore[no-redef]

_CATEGORIES = {c.CATEGORY_DIGIT: r"\d", c.CATEGORY_NOT_DIGIT: r"\D", c.CATEGORY_SPACE: r"\s",
               c.CATEGORY_NOT_SPACE: r"\S", c.CATEGORY_WORD: r"\w", c.CATEGORY_NOT_WORD: r"\W"}
_REPEATS = {c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT)}
_ZERO_WIDTH = {c.AT, c.ASSERT, c.ASSERT_NOT}


@functools.cache
def parsed(pattern: re.Pattern[str]) -> object:
    """``pattern``'s parse as ``re.compile`` makes it, once per process (the walks here and joined.py read it, none
    changes it): semiotic.py's ~140 rules were parsed three times each besides their own compiling."""
    return parser.parse(pattern.pattern, pattern.flags)


class _Unknown(Exception):
    """A construct whose first character the walk does not work out: any character may start the match."""


def first_chars(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """A pattern matching one character exactly when ``pattern`` may match a non-empty text starting with it, or
    None when any character may."""
    try:
        ignore_case = bool(pattern.flags & re.IGNORECASE)
        fragments, _ = _sequence(parsed(pattern), ignore_case)
    except (_Unknown, re.error):
        return None
    return re.compile("|".join(sorted(fragments)) or "(?!)")


def required_chars(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """A pattern matching one character such that every match of ``pattern`` holds one of its characters, or None
    when the walk finds no such set (a pattern that may match nothing, ``.``): a text without any of them holds no
    match, and need not be searched (markdown.py's inline pass on a line with no marks)."""
    try:
        ignore_case = bool(pattern.flags & re.IGNORECASE)
        fragments = _required(parsed(pattern), ignore_case)
    except (_Unknown, re.error):
        return None
    return re.compile("|".join(sorted(fragments)))


def token_chars(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """Characters one of which every match of ``pattern`` holds before any white space (in its first run of non-space
    characters), or None when the walk finds no such set of characters written plainly: a place whose run of
    non-space characters holds none of them starts no match ("url" needs a "." or ":" in its first word, so it is not
    asked at the start of a plain word)."""
    try:
        return _token(parsed(pattern), bool(pattern.flags & re.IGNORECASE))[0]
    except re.error:
        return None


def _token(items: object, ignore_case: bool) -> tuple[frozenset[str] | None, bool]:
    """Characters one of which every match of a sequence holds before its first white space (None: none known), and
    whether the sequence never matches white space."""
    found: list[frozenset[str]] = []
    for op, av in items:  # type: ignore[attr-defined]
        if op in _ZERO_WIDTH:
            continue
        chars, spaceless = _token_item(op, av, ignore_case)
        if chars is not None:
            found.append(chars)
        if not spaceless:
            return _least_wordy(found), False
    return _least_wordy(found), True


def _token_item(op: object, av: object, ignore_case: bool) -> tuple[frozenset[str] | None, bool]:
    if op is c.LITERAL:
        char = chr(av)  # type: ignore[arg-type]
        if char.isspace():
            return None, False
        return (None if ignore_case and char.lower() != char.upper() else frozenset(char)), True
    if op is c.IN:
        if _holds_space(av):
            return None, False
        literals = [chr(value) for kind, value in av if kind is c.LITERAL]  # type: ignore[attr-defined]
        cased = ignore_case and any(char.lower() != char.upper() for char in literals)
        return (frozenset(literals) if len(literals) == len(av) and not cased else None), True  # type: ignore[arg-type]
    if op is c.BRANCH:
        branches = [_token(branch, ignore_case) for branch in av[1]]  # type: ignore[index]
        held = [chars for chars, _ in branches]
        spaceless = all(spaceless for _, spaceless in branches)
        return (None if None in held else frozenset().union(*held)), spaceless  # type: ignore[arg-type]
    if op is c.SUBPATTERN:
        _, add_flags, del_flags, sub = av  # type: ignore[misc]
        return _token(sub, (ignore_case or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE)
    if op is getattr(c, "ATOMIC_GROUP", None):
        return _token(av, ignore_case)
    if op in _REPEATS:
        chars, spaceless = _token(av[2], ignore_case)  # type: ignore[index]
        return (chars if av[0] >= 1 else None), spaceless  # type: ignore[index]
    return None, False  # NOT_LITERAL, ANY, a back reference...: it may match white space


def _least_wordy(found: list[frozenset[str]]) -> frozenset[str] | None:
    """Of sets of characters, the one with the fewest letters and digits (a word holds those), then the smallest."""
    return min(found, key=lambda chars: (sum(char.isalnum() for char in chars), len(chars))) if found else None


def _holds_space(items: object) -> bool:
    """Whether a character class may match white space (a negated one, or one the walk does not know: yes)."""
    for op, av in items:  # type: ignore[attr-defined]
        if op is c.LITERAL:
            holds = chr(av).isspace()  # type: ignore[arg-type]
        elif op is c.RANGE:
            holds = any(chr(code).isspace() for code in range(av[0], min(av[1], 0x3000) + 1))  # type: ignore[index]
        else:  # a category: \w, \d and \S hold none
            holds = not (op is c.CATEGORY and av in (c.CATEGORY_WORD, c.CATEGORY_DIGIT, c.CATEGORY_NOT_SPACE))
        if holds:
            return True
    return False


def _required(items: object, ignore_case: bool) -> set[str]:
    """Fragments one of which every match of a sequence holds: those of one of its items, a literal's first."""
    found: list[set[str]] = []
    for op, av in items:  # type: ignore[attr-defined]
        try:
            found.append(_required_item(op, av, ignore_case))
        except _Unknown:
            continue
    if not found:
        raise _Unknown("a sequence that may match without any character the walk knows")
    return min(found, key=lambda fragments: (_classes(fragments), len(fragments)))


def _classes(fragments: set[str]) -> int:
    """How many fragments are character classes, which hold many characters (the fewer, the rarer the set)."""
    return sum(fragment.startswith(("[", "(?i:[")) for fragment in fragments)


def _required_item(op: object, av: object, ignore_case: bool) -> set[str]:
    if op in (c.LITERAL, c.NOT_LITERAL, c.IN):
        return _item(op, av, ignore_case)[0]
    if op is c.BRANCH:
        return set().union(*(_required(branch, ignore_case) for branch in av[1]))  # type: ignore[index]
    if op is c.SUBPATTERN:
        _, add_flags, del_flags, sub = av  # type: ignore[misc]
        return _required(sub, (ignore_case or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE)
    if op is getattr(c, "ATOMIC_GROUP", None):
        return _required(av, ignore_case)
    if op in _REPEATS and av[0] >= 1:  # type: ignore[index]
        return _required(av[2], ignore_case)  # type: ignore[index]
    raise _Unknown(op)


def _sequence(items: object, ignore_case: bool) -> tuple[set[str], bool]:
    """The first-character fragments of a sequence of items, and whether it can match the empty text."""
    fragments: set[str] = set()
    for op, av in items:  # type: ignore[attr-defined]
        found, empty = _item(op, av, ignore_case)
        fragments |= found
        if not empty:
            return fragments, False
    return fragments, True


def _item(op: object, av: object, ignore_case: bool) -> tuple[set[str], bool]:
    if op is c.LITERAL:
        return {_cased(re.escape(chr(av)), ignore_case)}, False  # type: ignore[arg-type]
    if op is c.NOT_LITERAL:
        return {_cased(f"[^{re.escape(chr(av))}]", ignore_case)}, False  # type: ignore[arg-type]
    if op is c.IN:
        return {_cased(_char_class(av), ignore_case)}, False
    if op in _ZERO_WIDTH:
        return set(), True
    if op is c.BRANCH:
        found, empty = set(), False
        for branch in av[1]:  # type: ignore[index]
            fragments, can_be_empty = _sequence(branch, ignore_case)
            found |= fragments
            empty = empty or can_be_empty
        return found, empty
    if op is c.SUBPATTERN:
        _, add_flags, del_flags, sub = av  # type: ignore[misc]
        cased = (ignore_case or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE
        return _sequence(sub, cased)
    if op is getattr(c, "ATOMIC_GROUP", None):
        return _sequence(av, ignore_case)
    if op in _REPEATS:
        least, _, sub = av  # type: ignore[misc]
        fragments, empty = _sequence(sub, ignore_case)
        return fragments, empty or least == 0
    raise _Unknown(op)


def _char_class(items: object) -> str:
    parts = []
    for op, av in items:  # type: ignore[attr-defined]
        if op is c.NEGATE:
            parts.insert(0, "^")
        elif op is c.LITERAL:
            parts.append(re.escape(chr(av)))
        elif op is c.RANGE:
            parts.append(f"{re.escape(chr(av[0]))}-{re.escape(chr(av[1]))}")
        elif op is c.CATEGORY and av in _CATEGORIES:
            parts.append(_CATEGORIES[av])
        else:
            raise _Unknown(op)
    return f"[{''.join(parts)}]"


def _cased(fragment: str, ignore_case: bool) -> str:
    return f"(?i:{fragment})" if ignore_case else fragment


def after_word(pattern: re.Pattern[str]) -> bool:
    """Whether ``pattern`` may match starting right after a word character (False when every way it can start is
    behind a look-behind that refuses one: ``(?<![\\w.])``)."""
    try:
        return _after_word(parsed(pattern))
    except re.error:
        return True


def _after_word(items: object) -> bool:
    for op, av in items:  # type: ignore[attr-defined]
        if op is c.ASSERT_NOT and av[0] == -1 and _refuses_word(av[1]):  # type: ignore[index]
            return False
        if op is c.ASSERT and av[0] == -1 and _ends_off_word(av[1]):  # type: ignore[index]
            return False  # "(?<=\d[ \t])": what stands just before is a space
        if op is c.BRANCH:
            return any(_after_word(branch) for branch in av[1])  # type: ignore[index]
        if op is c.SUBPATTERN:
            return _after_word(av[3])  # type: ignore[index]
        if op not in _ZERO_WIDTH:
            return True
    return True


def _refuses_word(items: object) -> bool:
    """Whether a one-character look-behind's body matches every word character."""
    items = list(items)  # type: ignore[call-overload]
    return len(items) == 1 and items[0][0] is c.IN and (c.CATEGORY, c.CATEGORY_WORD) in items[0][1] \
        and (c.NEGATE, None) not in items[0][1]


def _ends_off_word(items: object) -> bool:
    """Whether a look-behind's body ends in a character that is never a word character (a space, a tab)."""
    items = list(items)  # type: ignore[call-overload]
    if not items:
        return False
    op, av = items[-1]
    if op is c.LITERAL:
        return not (chr(av).isalnum() or chr(av) == "_")  # type: ignore[arg-type]
    if op is c.IN:
        return bool(av) and all(kind is c.LITERAL and not (chr(value).isalnum() or chr(value) == "_")
                                for kind, value in av)  # type: ignore[attr-defined]
    if op is c.BRANCH:
        return all(_ends_off_word(branch) for branch in av[1])  # type: ignore[index]
    if op is c.SUBPATTERN:
        return _ends_off_word(av[3])  # type: ignore[index]
    return False
