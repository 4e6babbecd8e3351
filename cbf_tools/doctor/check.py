"""One ``doctor`` check's result, and the table (or JSON) of them all."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Literal, Sequence

Status = Literal["ok", "fail", "skip", "warn"]  # "warn": a warning met while checking, explained; not a failure


@dataclass(frozen=True)
class Check:
    name: str
    status: Status  # "skip": does not apply here (weights for eSpeak, a GPU on a CPU host); not a failure
    detail: str
    fix: str = ""


def passed(checks: Sequence[Check]) -> bool:
    return all(check.status != "fail" for check in checks)


def render_table(checks: Sequence[Check]) -> str:
    width = max(len(check.name) for check in checks)
    lines = []
    for check in checks:
        lines.append(f"{check.name:{width}}  {check.status.upper() if check.status == 'fail' else check.status:4}  "
                     f"{check.detail}")
        if check.fix:
            lines.append(f"{'':{width}}  fix:  {check.fix}")
    failed = sum(check.status == "fail" for check in checks)
    warned = sum(check.status == "warn" for check in checks)
    lines.append(f"{len(checks) - failed - warned} of {len(checks) - warned} checks pass" + ("" if failed else ": ready")
                 + (f" ({warned} warning{'s' if warned > 1 else ''} explained above)" if warned else ""))
    return "\n".join(lines)


def render_json(checks: Sequence[Check], **extra: object) -> str:
    return json.dumps({"ok": passed(checks), **extra, "checks": [asdict(check) for check in checks]})
