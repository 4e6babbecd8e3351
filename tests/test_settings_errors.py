"""A bad setting is one sentence: every flag that takes a typed value, on every command, given a bad value on the
command line and in its environment twin (``--help`` too), exits 2 with one line naming the setting, the value and
what is accepted; no traceback, no usage dump."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from gateway import cli
from gateway.cli_values import comma_list
from tests.cli_run import run_cli

UNTYPED: set[Callable[[str], Any] | None] = {None, str, Path, comma_list}  # any text is a value of these
BAD = {cli._zeroconf_name: "x" * 64}  # a value each type refuses, where "bad value!" is not one
ACCEPTED = re.compile(r"expected |choose from ")


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def _typed_flags() -> list[tuple[tuple[str, ...], str, str | None, str]]:
    """(command, flag, its environment variable or None, a bad value) for every flag with a typed value."""
    found = []
    for path, parser in _commands(cli.build_parser()):
        for action in parser._actions:
            if not action.option_strings or (action.type in UNTYPED and not action.choices):
                continue
            env = re.search(r"\[env (CBF_\w+)[;\]]", action.help or "")
            found.append((path, action.option_strings[0], env and env.group(1), BAD.get(action.type, "bad value!")))
    return found


TYPED = _typed_flags()


def _one_sentence(capsys: pytest.CaptureFixture[str], run: Callable[[], Any], command: tuple[str, ...]) -> str:
    with pytest.raises(SystemExit) as exited:
        run()
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert not out and "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"chatterbox-fast {' '.join(command)}: "), err
    assert ACCEPTED.search(err), err
    return err


def test_every_command_with_typed_flags_is_walked() -> None:
    commands = {path[0] for path, *_ in TYPED}
    assert {"serve", "engine", "say", "doctor", "bench", "gate"} <= commands
    assert len([flag for _, flag, env, _ in TYPED if env]) > 60


@pytest.mark.parametrize(("command", "flag", "env", "bad"), TYPED, ids=[" ".join((*c, f)) for c, f, *_ in TYPED])
def test_a_bad_flag_value(command: tuple[str, ...], flag: str, env: str | None, bad: str,
                          capsys: pytest.CaptureFixture[str]) -> None:
    said = _one_sentence(capsys, lambda: cli.build_parser().parse_args([*command, flag, bad]), command)
    assert flag in said and repr(bad) in said


@pytest.mark.parametrize(("flag", "bad"), [("--max-sessions", "-1"), ("--port", "-8197"), ("--engine-url", "ftp://x"),
                                         ("--engine-url", "ws://"), ("--engine-url", "ws://a:1,http://b:2")])
def test_values_of_the_right_type_that_make_no_sense(flag: str, bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    said = _one_sentence(capsys, lambda: cli.build_parser().parse_args(["serve", flag, bad]), ("serve",))
    assert flag in said and repr(bad.split(",")[-1]) in said


def test_a_bad_environment_twin_on_every_command_help_included(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    walked = 0
    for command, flag, env, bad in TYPED:
        if env is None:
            continue
        monkeypatch.setenv(env, bad)
        parser = cli.build_parser()
        for argv in ([*command], [*command, "--help"]):
            said = _one_sentence(capsys, lambda: parser.parse_args(argv), command)
            assert f"environment variable {env} ({flag})" in said and repr(bad) in said
            walked += 1
        monkeypatch.delenv(env)
    assert walked > 120


def test_the_flag_on_the_command_line_wins_over_a_bad_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker started with --listen by its gateway is not stopped by a stale CBF_LISTEN in the environment."""
    monkeypatch.setenv("CBF_LISTEN", "nowhere")
    monkeypatch.setenv("CBF_BATCH_SLOTS", "many")
    args = cli.build_parser().parse_args(["engine", "--listen", "127.0.0.1:9000", "--batch-slots=8"])
    assert (args.listen, args.batch_slots) == ("127.0.0.1:9000", 8)


@pytest.mark.parametrize("argv", [("serve", "--help"), ("engine",), ("say", "hi"), ("doctor",), ("bench", "engine")])
def test_the_process_says_it_in_one_line(argv: tuple[str, ...]) -> None:
    """As an operator meets it: a real process, exit status 2, one line on stderr."""
    for env in ({"CBF_BATCH_SLOTS": "x"}, {"CBF_TF32": "maybe"}):
        result = run_cli(*argv, env=env, timeout=60)
        name, value = next(iter(env.items()))
        assert result.returncode == 2 and not result.stdout, result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
        assert name in result.stderr and repr(value) in result.stderr and "expected" in result.stderr


@pytest.mark.parametrize(("flags", "said"), [
    (("--processes", "0"), "--processes (CBF_PROCESSES) expected at least 1, got 0"),
    (("--wyoming-zeroconf", "kitchen"), "set --wyoming-port (CBF_WYOMING_PORT) too"),
    (("--cache-mib", "-1"), "--cache-mib and --cache-dir-mib cannot be negative"),
    (("--audiosocket-port", "0", "--audiosocket-host", "0.0.0.0"), "AudioSocket carries no credentials: set "
     "--audiosocket-key (CBF_AUDIOSOCKET_KEY) or --audiosocket-allow (CBF_AUDIOSOCKET_ALLOW)"),
])
def test_a_bad_combination_is_one_sentence_too(flags: tuple[str, ...], said: str) -> None:
    result = run_cli("serve", "--engine", "espeak", *flags, timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("chatterbox-fast serve: ") and said in result.stderr
