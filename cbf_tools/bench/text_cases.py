"""Written/spoken case files for ``bench text --cases``, and the relaxed comparison they are scored with. Pure.

A case file is a TSV with a header naming at least ``written`` and ``spoken`` (and ``class``, to score per class),
or JSON lines with those keys. ``spoken`` may hold several acceptable readings separated by `` || `` (or `` | ``).
The comparison forgives what a listener does not hear: case, punctuation, hyphens, "and" inside numbers, "oh" for
"zero", "a m" for "AM".

A judgement file (``--judged``) is a TSV with the header ``written reading verdict why``: our verdict on a miss,
keyed by the exact reading it was given for, so a reading that changes must be judged again. See VERDICTS.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path

_ALTERNATIVES = re.compile(r"\s\|\|?\s")
_NOT_HEARD = re.compile(r"[^\w\s']|_")
_SPELLED_TIME = re.compile(r"\b([ap]) m\b")
_RAW = re.compile(r"\d|[⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉$£€¥₹₩₽₺₦₱฿₫₪¢]")  # subscript and superscript digits too (Python's \d takes neither)


VERDICTS = {
    "same-words": "a listener hears the same words as one of the expected readings",
    "convention": "what a careful native speaker says and hears as right, in other words than the expected",
    "dubious": "the expectation itself is wrong, or not what a person would say: set aside",
    "misread": "a listener hears a wrong or odd reading",
}
ACCEPTED = ("same-words", "convention")


@dataclass(frozen=True)
class Case:
    kind: str
    written: str
    spoken: tuple[str, ...]  # the acceptable readings


def load(path: Path) -> list[Case]:
    """The cases of a TSV (with a header) or a JSON-lines file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".jsonl", ".json"):
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        rows = list(csv.DictReader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))
    missing = [i + 2 for i, row in enumerate(rows) if not row.get("written") or row.get("spoken") is None]
    if missing:
        raise ValueError(f"{path}: rows without 'written' and 'spoken': {missing[:5]}")
    return [Case(row.get("class") or "all", row["written"], tuple(_ALTERNATIVES.split(row["spoken"])))
            for row in rows]


def load_judged(path: Path) -> dict[tuple[str, str], str]:
    """The verdicts of a judgement file, by (written, reading)."""
    rows = list(csv.DictReader(path.read_text(encoding="utf-8").splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))
    bad = [i + 2 for i, row in enumerate(rows) if row.get("verdict") not in VERDICTS or row.get("reading") is None]
    if bad:
        raise ValueError(f"{path}: rows without a reading or a verdict among {sorted(VERDICTS)}: {bad[:5]}")
    verdicts: dict[tuple[str, str], str] = {}
    for row in rows:
        if verdicts.setdefault((row["written"], row["reading"]), row["verdict"]) != row["verdict"]:
            raise ValueError(f"{path}: two verdicts for {row['written']!r} read {row['reading']!r}")
    return verdicts


def relaxed(text: str) -> str:
    """``text`` as it is heard: lower case, no punctuation or hyphens, no "and", "oh" as "zero", "a m" as "am"."""
    words = _NOT_HEARD.sub(" ", text.lower().replace("’", "'")).split()
    words = ["zero" if word == "oh" else word for word in words if word != "and"]
    return _SPELLED_TIME.sub(r"\1m", " ".join(words))


def matches(reading: str, case: Case) -> bool:
    heard = relaxed(reading)
    return any(heard == relaxed(spoken) for spoken in case.spoken)


def raw(reading: str) -> bool:
    """Whether ``reading`` hands the model a digit (a subscript or superscript one too) or a currency symbol (which it can only guess at)."""
    return _RAW.search(reading) is not None
