"""One regular expression made of many, compiled without parsing each part again wherever it appears. Pure.

semiotic.py's search for where the next construct may start is one pattern of ~150 KB in which every rule's pattern
stands up to ten times (once for each kind of character it may start at, before and after a word character);
``re.compile`` parses all of it in Python, ~0.25-0.35 s of CPU in every process that imports the text front end (each
engine worker at its start). Here the pattern's frame is parsed with a one-character placeholder where each rule
stands, and the rule's own parse is put in its place: the same parse ``re`` makes of the whole (a non-capturing
group's items spliced into its parent, as the parser does), so the same program (tests/test_first_chars.py compares
the two). Anything unexpected (another Python's ``re`` internals) compiles the whole source as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_HOLE = 0xF0000  # placeholders: characters of Unicode's private use plane 15, one for each part


def hole(index: int) -> str:
    """What stands in the frame for part ``index``: a look-ahead for a character no rule names (a look-ahead, so
    the parser neither merges it into a character set nor factors it out of an alternation)."""
    return f"(?={chr(_HOLE + index)})"


def joined(source: str, frame: str, parts: Sequence[re.Pattern[str]]) -> re.Pattern[str]:
    """``re.compile(source)``, where ``source`` is ``frame`` with each ``hole(i)`` written ``(?:parts[i].pattern)``
    (the parts compiled without flags or groups of their own)."""
    try:
        from re import _compiler as compiler  # type: ignore[attr-defined]
        from re import _constants as c  # type: ignore[attr-defined]
        from re import _parser as parser  # type: ignore[attr-defined]

        import _sre

        from engine.speech_text.first_chars import parsed

        trees = [parsed(part) for part in parts]
        tree = parser.parse(frame)

        def fill(items: object) -> None:  # each placeholder replaced by its part's items, in place
            data = items.data  # type: ignore[attr-defined]
            at = 0
            while at < len(data):
                op, av = data[at]
                if op is c.ASSERT and av[0] == 1 and len(av[1].data) == 1 and av[1].data[0][0] is c.LITERAL \
                        and av[1].data[0][1] >= _HOLE:
                    part = trees[av[1].data[0][1] - _HOLE].data
                    data[at:at + 1] = part
                    at += len(part)
                    continue
                if op is c.BRANCH:
                    for branch in av[1]:
                        fill(branch)
                elif op is c.SUBPATTERN:
                    fill(av[3])
                elif op in (c.ASSERT, c.ASSERT_NOT):
                    fill(av[1])
                elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and holds_hole(av[2]):
                    raise ValueError("a part repeated in the frame")  # its width was worked out with the placeholder
                at += 1

        def holds_hole(items: object) -> bool:
            for op, av in items:  # type: ignore[attr-defined]
                if (op is c.LITERAL and av >= _HOLE) or (op is c.BRANCH and any(map(holds_hole, av[1]))) or (
                        op is c.SUBPATTERN and holds_hole(av[3])) or (
                        op in (c.ASSERT, c.ASSERT_NOT) and holds_hole(av[1])) or (
                        op in (c.MAX_REPEAT, c.MIN_REPEAT) and holds_hole(av[2])):
                    return True
            return False

        fill(tree)
        code = compiler._code(tree, 0)
        state = tree.state
        indexgroup = [None] * state.groups
        for name, index in state.groupdict.items():
            indexgroup[index] = name
        return _sre.compile(source, state.flags, code, state.groups - 1, state.groupdict, tuple(indexgroup))
    except Exception:  # noqa: BLE001 - another re: as re.compile makes it
        return re.compile(source)
