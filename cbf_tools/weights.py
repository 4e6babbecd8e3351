"""``chatterbox-fast weights download --to DIR`` and ``weights verify DIR``: fetch Chatterbox-Turbo's weights on a
machine with network access, carry the directory to the GPU host, check it there (``--model-dir DIR``)."""

from __future__ import annotations

import sys
from pathlib import Path


def verify(model_dir: Path) -> int:
    """Every file of the ``from_local`` layout with its size and state; 0 when complete."""
    from engine.weights import inspect

    if not model_dir.is_dir():
        print(f"{model_dir} is not a directory", file=sys.stderr)
        return 1
    report = inspect(model_dir)
    for f in report.files:
        size = "" if f.size is None else f"{f.size:>15,d} B"
        print(f"{'ok' if f.problem is None else 'FAIL':5} {f.name:55} {size:17} {f.problem or ''}".rstrip())
    verdict = "complete" if report.complete else "incomplete"
    print(f"{model_dir}: {verdict}" + ("" if report.complete else f": {report.summary()}"))
    return 0 if report.complete else 1


def download(to: Path) -> int:
    """Fetch into ``to`` (files already there are kept or resumed), then verify."""
    from engine.weights import DownloadFailed, download

    try:
        download(to)
    except DownloadFailed as exc:
        print(f"chatterbox-fast weights download: {exc}. Fix: run it where huggingface.co is reachable (HF_TOKEN "
              f"if the repository asks for one; HF_ENDPOINT for a mirror), then copy {to} here; run it again to "
              f"resume a partial download.", file=sys.stderr)
        return 1
    return verify(to)
