"""The benchmarks (``chatterbox-fast bench ...``): each prints figures, none asserts a time; and what they feed in."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

Summary = dict[str, Any]


def report(name: str, measure: Callable[[], Summary], failures: tuple[type[BaseException], ...],
           failed: Callable[[Summary], bool], render: Callable[[Summary], str] | None, **identity: Any) -> int:
    """Run a bench's measurement and print its table and JSON line: exit status 0, 1 where ``failed`` says the figures
    miss, or 2 with an error line (the JSON one carries ``identity`` too) where one of ``failures`` stopped it."""
    try:
        summary = measure()
    except failures as exc:
        print(f"bench {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(json.dumps({"bench": name, **identity, "error": str(exc)}))
        return 2
    if render is not None:
        print(render(summary))
    print(json.dumps(summary))
    return 1 if failed(summary) else 0
