"""What a warning met while ``doctor`` ran means, and what to do about it: each WARNING or ERROR line (the smoke
test's worker's, doctor's own) becomes a ``warn`` row of the table with its meaning and fix. Pure."""

from __future__ import annotations

import re

from cbf_tools.doctor.check import Check

MAX_SHOWN = 5  # the table shows this many warnings; the rest are counted
# (what the line says, what it means, the fix); {name} fields come from the pattern's groups
KNOWN: list[tuple[re.Pattern[str], str, str]] = [(re.compile(pattern), meaning, fix) for pattern, meaning, fix in [
    (r"voice file (?P<path>\S+) ignored: (?P<why>.+)", "the worker skipped a stored voice it cannot use: {why}",
     "replace or delete {path} (uploads through POST /v1/voices are checked before they are kept)"),
    (r"cached conditionals (?P<path>\S+) unreadable", "a voice's cached conditionals were unreadable and are computed "
     "again (its first utterance is slower)", "nothing, unless it repeats: then delete {path}"),
    (r"could not cache conditionals at (?P<path>\S+)", "a voice's conditionals cannot be cached, so every worker start "
     "computes them again", "make the voices directory writable (--voices-dir, CBF_VOICES_DIR)"),
    (r"starting with a generic cost model", "the worker could not time this engine at start-up; its first utterances "
     "are planned with a generic cost model", "nothing: it learns from the first utterances"),
    (r"no --engine-secret", "the worker's socket takes anyone who reaches it", "set --engine-secret (CBF_ENGINE_SECRET) "
     "on the worker and its gateways, or keep the worker on a private network"),
    (r"CUDA graphs failed their start-up self-check", "the engine decodes without CUDA graphs (slower per step)",
     "pass --decode eager / --vocode eager to choose it, or report the self-check's reason"),
    (r"retrying with back-off", "the link to the worker failed and is being tried again",
     "if the smoke test passed, the worker was only still starting; otherwise see the worker's log"),
]]


def explained(lines: list[str]) -> list[Check]:
    """One ``warn`` row for each distinct warning in ``lines`` (at most MAX_SHOWN, then a count of the rest)."""
    distinct = list(dict.fromkeys(_said(line) for line in lines if re.search(r"\b(WARNING|ERROR)\b", line)))
    rows = [_row(said) for said in distinct[:MAX_SHOWN]]
    if len(distinct) > MAX_SHOWN:
        rows.append(Check("warning", "warn", f"{len(distinct) - MAX_SHOWN} more", "run with --log-level debug"))
    return rows


def _said(line: str) -> str:
    """The message of a log line, without its time, level and logger."""
    return re.sub(r"^.*?\b(?:WARNING|ERROR)\b\s+(?:[\w.]+:\s+)?", "", line.strip())


def _row(said: str) -> Check:
    for pattern, meaning, fix in KNOWN:
        if (found := pattern.search(said)) is not None:
            fields = found.groupdict()
            return Check("warning", "warn", meaning.format(**fields), fix.format(**fields))
    return Check("warning", "warn", said, "not one doctor knows: run with --log-level debug and see docs/reliability.md")
