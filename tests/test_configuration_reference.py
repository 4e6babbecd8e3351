"""docs/configuration.md is what ``chatterbox-fast config-reference`` renders from the parser (it cannot drift from the
code), ``serve --help`` names every flag and variable it lists for serve, and every variable is a ``CBF_`` one that
names one flag."""

from __future__ import annotations

import os
import re

from gateway import cli
from gateway.config_reference import commands, shown
from tests.cli_run import ROOT, run_cli

PAGE = ROOT / cli.CONFIG_REFERENCE
OPTIONS = (*cli.ENGINE_OPTIONS, *cli.GATEWAY_OPTIONS, *cli.ENGINE_SECRET, *cli.GATE_OPTIONS, cli.LOG_OPTION)


def _clean_env(**extra: str) -> dict[str, str]:
    """This shell's CBF_* variables emptied (an empty one counts as not set), then ``extra``."""
    return {**{name: "" for name in os.environ if name.startswith("CBF_")}, **extra}


def _serve_rows() -> list:
    return next(command for command in commands(cli.build_parser()) if command.name == "serve").rows


def test_the_page_is_what_the_parser_renders() -> None:
    made = run_cli("config-reference", timeout=60)
    assert made.returncode == 0, made.stderr
    assert made.stdout == PAGE.read_text(), (
        f"{cli.CONFIG_REFERENCE} is out of date: regenerate it with `{cli.REGENERATE[0]}` "
        f"(or `{cli.REGENERATE[1]}`) and commit it")
    assert made.stdout.startswith("# Configuration\n") and made.stdout.count("\n# ") == 0  # one H1, at the top
    assert "config-reference" in made.stdout.split("\n\n")[1]  # the header says how it is made


def test_the_page_shows_the_codes_defaults_never_this_shells_nor_a_secret() -> None:
    secrets = {"CBF_API_KEYS": "xq-gateway-key", "CBF_ENGINE_HTTP_KEY": "xq-backend-key",
               "CBF_ENGINE_SECRET": "xq-engine-secret", "CBF_TWILIO_AUTH_TOKEN": "xq-token",
               "CBF_API_KEY": "xq-client-key"}
    made = run_cli("config-reference", env={**secrets, "CBF_PORT": "9999", "CBF_ENGINE": "simulated",
                                            "CBF_MODEL_DIR": "/elsewhere"}, timeout=60)
    assert made.returncode == 0, made.stderr
    assert made.stdout == PAGE.read_text()
    assert "xq-" not in made.stdout and "9999" not in made.stdout and "/elsewhere" not in made.stdout
    rows = {row.flags[0]: row for row in _serve_rows()}
    assert rows["--port"].default == "8197" and rows["--engine"].default == "auto"
    for option in OPTIONS:
        if option.secret:
            assert rows[option.flag].default == "not set", option.flag
    assert "| `--port` | `CBF_PORT` | `8197` |" in made.stdout
    assert shown(None) == shown(()) == "not set" and shown(True) == "true" and shown(("a", "b")) == "a,b"


def test_serve_help_names_every_flag_and_variable_the_page_lists_for_serve() -> None:
    page = PAGE.read_text()
    rows = _serve_rows()
    assert len(rows) > 40  # the gateway's flags and the engine's
    serve, engine = (page.split(f"\n## {title}\n")[1].split("\n## ")[0] for title in ("serve", "Engine options"))
    assert "(#engine-options)" in serve
    listed = set(re.findall(r"^\| `(--[a-z0-9-]+)`", serve + engine, re.M))
    assert listed == {row.flags[0] for row in rows}  # the page's serve flags are the parser's
    helped = run_cli("serve", "--help", env=_clean_env(COLUMNS="1000"), timeout=60)
    assert helped.returncode == 0, helped.stderr
    text = " ".join(helped.stdout.split())
    for row in rows:
        for flag in row.flags:
            assert re.search(rf"(^|\s){re.escape(flag)}(\s|$)", helped.stdout, re.M), flag
        assert row.variables, row.flags  # every serve flag has its variable
        for variable in row.variables:
            assert f"[env {variable};" in text, (row.flags, variable)
            assert f"`{variable}`" in serve + engine
        assert " ".join(row.help.split()) in text, row.flags


def test_every_variable_starts_with_cbf_and_names_one_flag() -> None:
    flag_of: dict[str, set[str]] = {}
    for option in OPTIONS:
        assert option.env.startswith("CBF_"), option
        flag_of.setdefault(option.env, set()).add(option.flag)
    assert all(len(flags) == 1 for flags in flag_of.values())  # each Option's variable is its flag's alone
    assert len({option.flag: option.env for option in OPTIONS}) == len(flag_of)  # and each flag has one variable
    for command in commands(cli.build_parser()):
        variables = [variable for row in command.rows for variable in row.variables]
        assert all(variable.startswith("CBF_") for variable in variables), command.name
        for row in command.rows:
            for variable in row.variables:
                if len(row.variables) == 1:  # not "CBF_API_KEY, else the first of CBF_API_KEYS"
                    flag_of.setdefault(variable, set()).add(row.flags[0])
        own = [row.variables[0] for row in command.rows if len(row.variables) == 1]
        assert len(own) == len(set(own)), command.name  # one flag per variable within a command
    # A variable names the same flag wherever it is taken (CBF_MODEL_DIR: the engine's and the gate's --model-dir;
    # weights download --to and weights verify DIR read it as the directory to fill or check).
    shared = {env: flags for env, flags in flag_of.items() if len(flags) > 1}
    assert shared == {"CBF_MODEL_DIR": {"--model-dir", "--to", "DIR"}}, shared
