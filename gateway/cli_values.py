"""How ``chatterbox-fast`` reads a setting: an ``Option`` (a flag and its environment-variable twin), the types that
turn their text into values, and the parser that says a bad one in one sentence.

A bad value, on the command line or in the environment, is one line naming the setting, the value and what is
accepted, exit status 2: no usage dump, no traceback, and ``--help`` too refuses while a variable it would show as a
default is bad. A variable is read when the parser is built, but its error is said only by the command that has it,
and not when the command line gives its flag.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, NoReturn, Sequence


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` (its subcommands' too) whose errors are one line, and which refuses to parse at all
    while one of its options' environment variables is bad, unless the command line gives that flag (it wins)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env_errors: dict[str, str] = {}  # flag: what is wrong with its variable

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        given = {arg.split("=", 1)[0] for arg in (sys.argv[1:] if args is None else args)}
        for flag, error in self.env_errors.items():
            if flag not in given:
                self.error(error)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}\n")


@dataclass(frozen=True)
class Option:
    flag: str
    env: str
    help: str
    type: Callable[[str], Any] = str
    default: Any = None
    choices: Sequence[str] | None = None
    secret: bool = False  # --help says whether it is set, never what it is

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def add_to(self, parser: Parser) -> None:
        raw = os.environ.get(self.env)
        default = self.default
        if raw not in (None, ""):
            try:
                default = self.from_env(raw)
            except (argparse.ArgumentTypeError, ValueError) as exc:
                parser.env_errors[self.flag] = f"environment variable {self.env} ({self.flag}): {exc}"
        shown = ("set" if default else "not set") if self.secret else repr(default)
        action = parser.add_argument(self.flag, type=self.type, default=default, choices=self.choices,
                                     help=f"{self.help} [env {self.env}; default {shown}]")
        action.secret = self.secret  # type: ignore[attr-defined]  # for gateway/config_reference.py

    def from_env(self, raw: str) -> Any:
        """The variable's value, checked as argparse checks the flag's (its choices too, which argparse leaves
        unchecked on a default)."""
        value = self.type(raw)
        if self.choices is not None and value not in self.choices:
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(self.choices)}, got {raw!r}")
        return value


def boolean(value: str) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {value!r}")


def whole(value: str) -> int:
    try:
        parsed = int(value)
    except ValueError:
        parsed = -1
    if parsed < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number (0 or more), got {value!r}")
    return parsed


def port(value: str) -> int:
    number = whole(value)
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535, got {value!r}")
    return number


def whole_numbers(value: str) -> tuple[int, ...]:
    try:
        return tuple(int(item) for item in comma_list(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole numbers, comma-separated, got {value!r}") from None


def number(value: str) -> float:
    try:
        parsed = float(value)
    except ValueError:
        parsed = math.nan
    if not math.isfinite(parsed):
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}")
    return parsed


def lead_seconds(value: str) -> float:
    """serve --client-lead: seconds within the engine protocol's range for ``Start.lead``."""
    from engine.protocol import MAX_LEAD, MIN_LEAD

    parsed = number(value)
    if not MIN_LEAD <= parsed <= MAX_LEAD:
        raise argparse.ArgumentTypeError(f"expected seconds from {MIN_LEAD:g} to {MAX_LEAD:g}, got {value!r}")
    return parsed


def _positive(value: str, unit: str, unset: str) -> float:
    """A number > 0 of ``unit`` for a setting that is ``unset`` unless given (0 is not a way to say it)."""
    parsed = number(value)
    if not parsed > 0:
        raise argparse.ArgumentTypeError(f"expected {unit} > 0 (leave it unset for {unset}), got {value!r}")
    return parsed


def positive_seconds(value: str) -> float:
    return _positive(value, "seconds", "off")


def positive_gib(value: str) -> float:
    return _positive(value, "GiB", "no cap")


def seconds_or_auto(value: str) -> float | None:
    """Seconds >= 0, or None for "auto" (the engine decides)."""
    if value.strip().lower() == "auto":
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds or auto, got {value!r}") from None
    if not 0 <= seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds >= 0 or auto, got {value!r}")
    return seconds


def comma_list(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def devices(value: str) -> str:
    """``--device``: cpu, auto, cuda, or an ordered list of cuda:N and GPU-<uuid> (engine/placement.py, no torch)."""
    from engine.placement import device_list

    try:
        return ",".join(device_list(value))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def engine_devices(value: str) -> tuple[str, ...]:
    """``serve --engine-devices``: auto, or a list of cuda:N, GPU-<uuid> and cpu (gateway/engine_link/devices.py)."""
    from gateway.engine_link.devices import parse

    try:
        return parse(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def engine_urls(value: str) -> tuple[str, ...]:
    """Comma-separated engine worker URLs: ws:// or wss:// with a host, unix:/path, dns+ws:// or dns+wss://."""
    from urllib.parse import urlsplit

    urls = comma_list(value)
    for url in urls:
        parts = urlsplit(url.removeprefix("dns+"))
        if not (url.startswith("unix:/") or parts.scheme in ("ws", "wss") and parts.hostname):
            raise argparse.ArgumentTypeError(f"expected ws://HOST:PORT, wss://..., unix:/path or dns+ws://NAME:PORT, "
                                             f"got {url!r}")
    return urls


def listen_address(value: str) -> str:
    """HOST:PORT (the host may be empty: 127.0.0.1) or unix:/path."""
    if value.startswith("unix:") and len(value) > len("unix:"):
        return value
    _, colon, number = value.rpartition(":")
    try:
        if colon and 0 <= int(number) <= 65535:
            return value
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"expected HOST:PORT or unix:/path, got {value!r}")

