"""The configuration reference (docs/configuration.md), rendered from the command line's own parser (pure: no I/O).

``chatterbox-fast config-reference`` builds the parser with no ``CBF_*`` variable set (each flag's default is then
the code's, never this shell's) and hands it here. Every row comes from one argparse action: its flags, the
environment variable its help names (``[env X; ...]``, as ``Option.add_to`` and the hand-written flags say it), its
default, choices and help. A secret (an ``Option`` with ``secret``, or a variable naming a key, secret or token)
shows whether it is set, never a value.

Commands that share a group of flags (the engine's, on every command that starts a worker) list the group once in
its own section; a command whose flag differs from the group's (``bench gateway``'s ``--engine`` default) keeps that
row in its own table.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Sequence

_ENV = re.compile(r"\s*\[env ([^;\]]+)(?:;[^\]]*)?\]\s*$")
_SECRET_WORDS = re.compile(r"KEY|SECRET|TOKEN")


@dataclass(frozen=True)
class Row:
    flags: tuple[str, ...]  # ("--api-key", "--key"); a positional argument's name, upper case
    env: str  # "CBF_PORT", what the help says ("CBF_API_KEY, else the first of CBF_API_KEYS"), or ""
    default: str  # as an operator would write it; "required", "not set"
    choices: tuple[str, ...]
    help: str

    @property
    def variables(self) -> list[str]:
        return re.findall(r"\bCBF_[A-Z0-9_]+\b", self.env)


@dataclass(frozen=True)
class Command:
    name: str  # "serve", "bench engine"
    summary: str
    rows: tuple[Row, ...]


def commands(parser: argparse.ArgumentParser) -> list[Command]:
    """Every command that takes arguments, in the parser's order, each with all of its rows."""
    found: list[Command] = []
    _walk(parser, (), "", found)
    return found


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...], summary: str, found: list[Command]) -> None:
    rows = tuple(row for action in parser._actions if (row := _row(action)) is not None)
    if rows:
        found.append(Command(" ".join(path), summary, rows))
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                _walk(sub, (*path, name), summaries.get(name, ""), found)


def _row(action: argparse.Action) -> Row | None:
    if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
        return None
    help_text = action.help or ""
    env = ""
    if found := _ENV.search(help_text):
        env, help_text = found.group(1).strip(), help_text[: found.start()]
    secret = bool(getattr(action, "secret", False) or _SECRET_WORDS.search(env))
    flags = tuple(action.option_strings) or ((action.metavar or action.dest).upper(),)
    if action.required or (not action.option_strings and action.nargs not in ("?", "*")):
        default = "required"
    elif secret:
        default = "set" if action.default else "not set"
    else:
        default = shown(action.default)
    return Row(flags, env, default, tuple(str(c) for c in action.choices or ()), help_text.strip())


def shown(value: Any) -> str:
    """A default as one would write it in its variable: ``true``, ``voices``, ``a,b``; nothing is ``not set``."""
    if value is None or value == () or value == []:
        return "not set"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, PurePath):
        return value.as_posix()
    if isinstance(value, (tuple, list)):
        return ",".join(shown(item) for item in value)
    return str(value)


def render(parser: argparse.ArgumentParser, groups: Sequence[tuple[str, Sequence[str]]] = (),
           regenerate: Sequence[str] = (), check: str = "") -> str:
    """The Markdown page: one table per command; each of ``groups`` (a title and its flags) once, in its own section,
    for the commands that take all of it. Its header names the ``regenerate`` commands and the ``check`` that fails
    when the page is stale."""
    listed = commands(parser)
    canonical: dict[str, dict[str, Row]] = {}
    for title, flags in groups:
        for command in listed:
            by_flag = {row.flags[0]: row for row in command.rows}
            if all(flag in by_flag for flag in flags):
                canonical[title] = {flag: by_flag[flag] for flag in flags}
                break
    lines = ["# Configuration", "",
             "Generated from the command line's own definitions" + (" by " + " or ".join(
                 f"`{command}`" for command in regenerate) if regenerate else "") + ": do not edit it by hand"
             + (f" ({check} fails when it differs)." if check else "."), "",
             "Every flag of `chatterbox-fast` that has an environment variable takes its default from it; a flag "
             "given on the command line wins. The defaults shown are the code's. A secret shows only whether it is "
             "set.", ""]
    for command in listed:
        own = {row.flags[0] for row in command.rows}
        shared = [title for title, rows in canonical.items() if set(rows) <= own]
        omitted = {row for title in shared for row in canonical[title].values()}
        kept = [row for row in command.rows if row not in omitted]
        lines += [f"## {command.name}", "", f"`chatterbox-fast {command.name}`"
                  + (f": {command.summary}." if command.summary else "."), ""]
        lines += _table(kept)
        for title in shared:
            differ = [row.flags[0] for row in kept if row.flags[0] in canonical[title]]
            lines += ["", f"It takes the [{title.lower()}](#{_slug(title)}) too"
                      + (f" ({', '.join(_code(flag) for flag in differ)} as above)." if differ else ".")]
        lines.append("")
    for title, rows in canonical.items():
        users = [command.name for command in listed if set(rows) <= {row.flags[0] for row in command.rows}]
        lines += [f"## {title}", "", "Taken by " + ", ".join(f"`{name}`" for name in users) + ".", ""]
        lines += _table(list(rows.values()))
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _table(rows: Sequence[Row]) -> list[str]:
    lines = ["| flag | environment variable | default | choices | help |", "|---|---|---|---|---|"]
    for row in rows:
        env = _code(row.env) if re.fullmatch(r"[A-Z0-9_]+", row.env) else _cell(
            re.sub(r"\b(CBF_[A-Z0-9_]+)\b", r"`\1`", row.env))
        default = row.default if row.default in ("required", "not set", "set") else _code(row.default)
        lines.append("| " + " | ".join((", ".join(_code(flag) for flag in row.flags), env, default,
                                        ", ".join(_code(choice) for choice in row.choices), _cell(row.help))) + " |")
    return lines


def _code(text: str) -> str:
    return "`" + text.replace("|", "\\|") + "`" if text else ""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
