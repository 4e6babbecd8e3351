"""``chatterbox-fast bench text``: what the engine's text front end (engine/speech_text/) costs, with no model: each
text read whole (what a chunk-sized text costs) and read as an LLM streams it (the cost of each token's arrival, and
of the whole text that way), over LLM-style paragraphs. Prints a table and, last, one JSON line.

The front end runs in the worker as text arrives, before the planner: its cost is added to first audio only for the
text the first chunk needs."""

from __future__ import annotations

import argparse
import json
import statistics
import time

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


def run(args: argparse.Namespace) -> int:
    measure(1)  # warm: regular expressions compiled, num2words loaded
    figures = measure(args.repeats)
    chars = [len(t) for t in TEXTS]
    if not args.json:
        print(f"{len(TEXTS)} texts of {min(chars)}-{max(chars)} characters, {args.repeats} times each")
        for name, row in figures.items():
            print(f"{name:<14} p50 {row['p50_ms']:>7.3f} ms  p95 {row['p95_ms']:>7.3f} ms  max {row['max_ms']:>7.3f} ms")
    print(json.dumps({"texts": len(TEXTS), "repeats": args.repeats, **figures}))
    return 0
