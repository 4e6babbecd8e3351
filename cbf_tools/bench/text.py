"""``chatterbox-fast bench text``: what the engine's text front end (engine/speech_text/) costs, with no model: each
text read whole (what a chunk-sized text costs) and read as an LLM streams it (the cost of each token's arrival, and
of the whole text that way), over LLM-style paragraphs. Prints a table and, last, one JSON line.

The front end runs in the worker as text arrives, before the planner: its cost is added to first audio only for the
text the first chunk needs.

``--cases FILE`` scores the front end on a file of written/spoken pairs instead (text_cases.py: a relaxed comparison,
per class), counts the readings that still hand the model digits or currency symbols, and times it per 300-character
chunk of those texts (wall and CPU time); ``--readings FILE`` (a TSV of ``written`` and ``reading``) scores another system's readings of
the same cases the same way (scripts/nemo-tn-readings writes NeMo's). ``--judged FILE`` (text_cases.load_judged) adds
the judged figures: a miss judged the same words or another convention counts as acceptable, one judged dubious is set
aside, and a miss with no verdict for its exact reading is unjudged (and stays a miss)."""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable

from cbf_tools.bench import text_cases

TEXTS = (
    "Sure! Your order **#4521** shipped on March 5, 2024 and should arrive by 3:30 pm tomorrow.",
    "The total is $1,249.99 (a 15% discount), or about €1.1k; see [your invoice](https://example.com/i/4521).",
    "## Next steps\n\n1. Call us at (555) 123-4567.\n2. Email jane.doe@example.com.\n3. Reply **YES** to confirm. 🎉",
    "It's 73°F outside, the flight is 2.5 hrs, and Dr. Smith (the FBI's expert) says it's VERY safe, e.g. for kids.",
    "Revenue grew from $3 million in 2019 to $12.5M in 2023 -- roughly 4x -- while costs fell 1/3; version v2.0.1 "
    "of the app, released 2024-01-15, added support for 10 GB files and 1080p video at 60 fps.",
)
TOKEN_CHARS = 4  # an LLM token is about four characters of English


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _ms(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(values) * 1000, 3), "p95_ms": round(_percentile(values, 0.95) * 1000, 3),
            "max_ms": round(max(values) * 1000, 3)}


def measure(repeats: int) -> dict[str, dict[str, float]]:
    from engine.speech_text.reader import Reader  # the engine's own (pure), loaded when the bench runs

    whole, per_token, streamed = [], [], []
    for _ in range(repeats):
        for text in TEXTS:
            started = time.perf_counter()
            reader = Reader()
            reader.feed(text)
            reader.flush(final=True)
            whole.append(time.perf_counter() - started)
            reader, total = Reader(), 0.0
            for i in range(0, len(text), TOKEN_CHARS):
                started = time.perf_counter()
                reader.feed(text[i:i + TOKEN_CHARS])
                per_token.append(elapsed := time.perf_counter() - started)
                total += elapsed
            started = time.perf_counter()
            reader.flush(final=True)
            streamed.append(total + time.perf_counter() - started)
    return {"whole_text": _ms(whole), "per_token": _ms(per_token), "streamed_text": _ms(streamed)}


CHUNK_CHARS = 300


def front_end(locale: str | None = None) -> Callable[[str], str]:
    """The engine's own reading of a whole text (its streaming reader, fed it in one piece)."""
    from engine.speech_text.reader import Reader  # the engine's own (pure), loaded when the bench runs

    def read(text: str) -> str:
        reader = Reader(locale=locale)
        reader.feed(text)
        reader.flush(final=True)
        return reader.spoken.strip()

    return read


def score(cases: list[text_cases.Case], read: Callable[[str], str],
          judged: dict[tuple[str, str], str] | None = None) -> dict[str, object]:
    """Each class's share of cases read acceptably, the whole's, the readings left raw, and the misses; with
    ``judged`` (text_cases.load_judged), each miss's verdict and the judged figures too."""
    by_class: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses, raw = [], 0
    for case in cases:
        reading = read(case.written)
        ok = text_cases.matches(reading, case)
        by_class[case.kind][0] += ok
        by_class[case.kind][1] += 1
        raw += text_cases.raw(reading)
        if not ok:
            misses.append({"class": case.kind, "written": case.written, "expected": case.spoken[0], "read": reading})
            if judged is not None:
                misses[-1]["verdict"] = judged.get((case.written, reading), "unjudged")
    passed = sum(n for n, _ in by_class.values())
    figures: dict[str, object] = {
        "cases": len(cases), "acceptable": passed, "share": round(passed / max(1, len(cases)), 4), "raw": raw,
        "classes": {k: {"acceptable": n, "cases": total} for k, (n, total) in sorted(by_class.items())},
        "misses": misses}
    if judged is not None:
        figures["judged"] = _judged(figures["classes"], misses)  # type: ignore[arg-type]
    return figures


def _judged(classes: dict[str, dict[str, int]], misses: list[dict[str, str]]) -> dict[str, object]:
    """Relaxed matches plus misses judged the same words or another convention, over the cases left once those
    judged dubious are set aside; the whole's and each class's."""
    verdicts: dict[str, Counter[str]] = defaultdict(Counter)
    for miss in misses:
        verdicts[miss["class"]][miss["verdict"]] += 1

    def row(relaxed: int, cases: int, counts: Counter[str]) -> dict[str, object]:
        acceptable = relaxed + sum(counts[v] for v in text_cases.ACCEPTED)
        left = cases - counts["dubious"]
        return {"acceptable": acceptable, "cases_left": left, "share": round(acceptable / max(1, left), 4),
                "relaxed": relaxed, "same_words": counts["same-words"], "convention": counts["convention"],
                "dubious": counts["dubious"], "misread": counts["misread"], "unjudged": counts["unjudged"]}

    whole = row(sum(c["acceptable"] for c in classes.values()), sum(c["cases"] for c in classes.values()),
                sum(verdicts.values(), Counter()))
    return {**whole, "classes": {k: row(c["acceptable"], c["cases"], verdicts[k]) for k, c in classes.items()}}


def chunk_cost(cases: list[text_cases.Case], read: Callable[[str], str],
               repeats: int) -> tuple[dict[str, float], dict[str, float]]:
    """What reading a 300-character chunk of the cases' texts costs: in wall time, and in the reading thread's CPU
    time (which other work on a shared machine inflates far less)."""
    chunks, chunk = [], ""
    for case in cases:
        chunk += case.written + " "
        if len(chunk) >= CHUNK_CHARS:
            chunks.append(chunk[:CHUNK_CHARS])
            chunk = chunk[CHUNK_CHARS:]
    wall, cpu = [], []
    for _ in range(repeats):
        for text in chunks or [chunk]:
            started, started_cpu = time.perf_counter(), time.thread_time()
            read(text)
            wall.append(time.perf_counter() - started)
            cpu.append(time.thread_time() - started_cpu)
    return _ms(wall), _ms(cpu)


def _readings(path: Path) -> Callable[[str], str]:
    rows = csv.DictReader(path.read_text(encoding="utf-8").splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE)
    said = {row["written"]: row["reading"] or "" for row in rows}
    return lambda written: said.get(written, "")


def _print_judged(path: Path, judged: dict[str, object]) -> None:
    def counts(row: dict[str, object]) -> str:
        return (f"{row['acceptable']:>4}/{row['cases_left']:<4} {row['share']:.1%}: relaxed {row['relaxed']} + "
                f"same words {row['same_words']} + convention {row['convention']}; dubious {row['dubious']} set "
                f"aside, misread {row['misread']}, unjudged {row['unjudged']}")

    print(f"judged by {path}: {counts(judged)}")
    for kind, row in judged["classes"].items():  # type: ignore[attr-defined]
        print(f"  {kind:<26} {counts(row)}")


def _print_misses(misses: list[dict[str, str]], limit: int) -> None:
    """The misses still misses first (misread or unjudged; all of them without --judged), then those judged
    acceptable or dubious."""
    def still(miss: dict[str, str]) -> bool:
        return miss.get("verdict", "misread") in ("misread", "unjudged")

    for miss in [m for m in misses if still(m)][:limit] + [m for m in misses if not still(m)][:limit]:
        verdict = miss.get("verdict")
        label = (f"miss [{miss['class']}]" + (f" ({verdict})" if verdict else "") if still(miss)
                 else f"judged {verdict} [{miss['class']}]")
        print(f"  {label} {miss['written']!r}\n     read {miss['read']!r}\n     want {miss['expected']!r}")


def run_cases(args: argparse.Namespace) -> int:
    cases = text_cases.load(args.cases)
    read = _readings(args.readings) if args.readings else front_end(args.locale)
    figures = score(cases, read, text_cases.load_judged(args.judged) if args.judged else None)
    if not args.readings:
        figures["chunk_300"], figures["chunk_300_cpu"] = chunk_cost(cases, read, max(1, args.repeats // 20))
    if not args.json:
        print(f"{args.cases}: {figures['acceptable']}/{figures['cases']} acceptable ({figures['share']:.1%}), "
              f"{figures['raw']} with raw digits or currency symbols")
        for kind, row in figures["classes"].items():  # type: ignore[attr-defined]
            print(f"  {kind:<26} {row['acceptable']:>4}/{row['cases']:<4} {row['acceptable'] / row['cases']:.0%}")
        if "judged" in figures:
            _print_judged(args.judged, figures["judged"])  # type: ignore[arg-type]
        _print_misses(figures["misses"], args.misses)  # type: ignore[arg-type]
        if "chunk_300" in figures:
            row = figures["chunk_300"]  # type: ignore[assignment]
            cpu = figures["chunk_300_cpu"]  # type: ignore[assignment]
            print(f"cost per {CHUNK_CHARS}-character chunk: p50 {row['p50_ms']:.3f} ms  p95 {row['p95_ms']:.3f} ms  "
                  f"max {row['max_ms']:.3f} ms (target p95 <= 2 ms); in CPU time p50 {cpu['p50_ms']:.3f} ms  "
                  f"p95 {cpu['p95_ms']:.3f} ms")
    figures["misses"] = len(figures["misses"])  # type: ignore[arg-type]
    print(json.dumps(figures))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.cases:
        return run_cases(args)
    measure(1)  # warm: regular expressions compiled, num2words loaded
    figures = measure(args.repeats)
    chars = [len(t) for t in TEXTS]
    if not args.json:
        print(f"{len(TEXTS)} texts of {min(chars)}-{max(chars)} characters, {args.repeats} times each")
        for name, row in figures.items():
            print(f"{name:<14} p50 {row['p50_ms']:>7.3f} ms  p95 {row['p95_ms']:>7.3f} ms  max {row['max_ms']:>7.3f} ms")
    print(json.dumps({"texts": len(TEXTS), "repeats": args.repeats, **figures}))
    return 0
