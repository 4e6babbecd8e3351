"""A quiet, honest start on a safe address: ``serve`` with no --host and no key listens on 127.0.0.1 only, logs no
WARNING and no traceback while its worker starts, says how to open it to the network, and says in one INFO line
where to open the page, what speaks and whether keys are on (gateway/host/start_lines.py); a worker still starting
is a debug line, not a warning (gateway/engine_link/link_failures.py)."""

from __future__ import annotations

import logging
import os
import re
import signal
import socket

import httpx
import pytest

from cbf_tools.peers.local_server import free_port
from gateway.engine_link.link_failures import LinkFailures
from gateway.guard.operator_safety import exposure_warning
from gateway.host.start_lines import listening_line, page_url, ready_line
from tests.cli_run import ROOT, serve_until, stop


def test_no_host_and_no_key_is_this_machine_only_and_a_quiet_start(tmp_path) -> None:
    port = free_port()
    proc, logged = serve_until(["--port", str(port), "--engine", "espeak", "--voices-dir", str(tmp_path)],
                                " ready: open ")
    try:
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=30)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        with pytest.raises(ConnectionRefusedError):  # 127.0.0.1 itself, not every address (which 127.0.0.2 is in)
            socket.create_connection(("127.0.0.2", port), timeout=30).close()
    finally:
        stop(proc)
    log = "".join(logged)
    assert "WARNING" not in log and "Traceback" not in log, log
    assert f"gateway listening on http://127.0.0.1:{port}/" in log and "set --host 0.0.0.0 (CBF_HOST)" in log, log
    assert logged[-1].split(" INFO chatterbox_fast.gateway: ")[1].strip() == (
        f"ready: open http://127.0.0.1:{port}/ to hear it; espeak on cpu speaks; API keys off")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_whole_group_is_a_quiet_stop(sig: signal.Signals, tmp_path) -> None:
    """Ctrl-C in a terminal (SIGINT to the foreground group) or a service manager's SIGTERM to the group: the gateway
    stops its worker itself (the worker is in its own session), so no worker traceback, no "engine worker stopped"
    error and no restart."""
    proc, logged = serve_until(["--port", str(free_port()), "--engine", "espeak", "--voices-dir", str(tmp_path)],
                                " ready: open ", own_group=True)
    os.killpg(proc.pid, sig)
    try:
        _, rest = proc.communicate(timeout=60)
    finally:
        stop(proc)
    log = "".join(logged) + rest
    assert proc.returncode == {signal.SIGINT: 130, signal.SIGTERM: 0}[sig], log  # 130: a shell's Ctrl-C status
    assert not re.search(r"WARNING|ERROR|Traceback|restarting", log), log


def test_the_lines_said() -> None:
    assert page_url("0.0.0.0", 8197) == page_url("::", 8197) == "http://localhost:8197/"
    assert page_url("::1", 9000) == "http://[::1]:9000/" and page_url("tts.lan", 80) == "http://tts.lan:80/"
    assert "to open it to the network" in listening_line("127.0.0.1", 8197, "embedded worker")
    assert "to open it to the network" not in listening_line("0.0.0.0", 8197, "embedded worker")
    assert ready_line("0.0.0.0", 8197, "chatterbox-turbo", "cuda:0", "on (keys file)") == (
        "ready: open http://localhost:8197/ to hear it; chatterbox-turbo on cuda:0 speaks; API keys on (keys file)")


def test_a_worker_still_starting_is_a_debug_line_until_it_took_longer_than_a_start() -> None:
    failures, missing = LinkFailures(start_s=180), "FileNotFoundError: no socket"
    assert failures.level(missing, now=0.0) == logging.DEBUG
    assert failures.level(missing, now=5.0) is None  # the same failure: said once
    assert failures.level("ConnectionRefusedError: refused", now=6.0) == logging.DEBUG
    assert failures.level("ConnectionRefusedError: refused", now=181.0) == logging.WARNING  # longer than a start
    assert failures.failing_for(181.0) == 181.0
    assert failures.level("ConnectionRefusedError: refused", now=190.0) is None
    assert failures.level(missing, now=200.0) == logging.WARNING  # another failure after the warning


def test_a_lost_link_or_a_worker_that_answers_and_refuses_is_a_warning_at_once() -> None:
    failures = LinkFailures(start_s=180)
    assert failures.level("InvalidStatus: HTTP 401", now=0.0, listening=True) == logging.WARNING
    assert failures.level("InvalidStatus: HTTP 401", now=1.0, listening=True) is None
    failures.connected()
    assert failures.level("ConnectionError: the worker closed the connection", now=50.0, lost=True) == logging.WARNING
    assert failures.level("FileNotFoundError: no socket", now=51.0) == logging.DEBUG  # (restarting)
    assert failures.level("FileNotFoundError: no socket", now=232.0) == logging.WARNING


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_getting_started_shows_the_warning_an_open_server_gives(page: str) -> None:
    shown = re.search(r"`(SERVING ON 0\.0\.0\.0 WITH NO API KEY:[^`]*)`", (ROOT / page).read_text())
    assert shown, page
    assert exposure_warning("0.0.0.0", guarded=False).startswith(re.sub(r"\s+", " ", shown.group(1)))
