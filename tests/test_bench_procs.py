"""cbf_tools/bench/procs.py: what the benches read of the processes they measure (issue 52 item 6), with psutil, a
dependency of the tools and not of the gateway or the engine worker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from cbf_tools.bench import procs
from cbf_tools.bench.chaos import role

ROOT = Path(__file__).resolve().parent.parent
# A parent that starts a child burning CPU, then both sleep: argv names ``gateway.cli serve`` as a gateway's would.
TREE = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time\\nend = time.process_time() + 0.3\\n"
                          "while time.process_time() < end: pass\\ntime.sleep(60)", "gateway.cli", "engine"])
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.fixture
def tree():
    parent = subprocess.Popen([sys.executable, "-c", TREE, "gateway.cli", "serve"], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        yield parent.pid, child
    finally:
        for pid in procs.descendants(parent.pid):
            os.kill(pid, 9)
        parent.kill()
        parent.wait()


def test_a_process_tree_its_cpu_and_its_commands(tree) -> None:
    parent, child = tree
    assert procs.descendants(parent) == [child] and procs.descendants(child) == []
    deadline = time.monotonic() + 20
    while (below := procs.tree_cpu(parent)[1]) < 0.25 and time.monotonic() < deadline:
        time.sleep(0.1)
    own, below = procs.tree_cpu(parent)
    assert 0.25 <= below < 5 and 0 < own < below  # the child burned 0.3 s (plus its start); the parent slept
    assert procs.command(child)[-2:] == ["gateway.cli", "engine"]
    assert (role(parent), role(child), role(os.getpid())) == ("gateway", "worker", None)
    assert parent in procs.threads(parent)  # the main thread's id is the process's


# A fresh process (a test worker's heap may already hold freed pages it would reuse): touches 64 MiB when told to.
TOUCHER = """
import sys, time
print("ready", flush=True)
sys.stdin.readline()
block = bytearray(64 * 2**20)
block[::4096] = b"\\1" * len(block[::4096])
print("touched", flush=True)
time.sleep(60)
"""


def test_resident_memory_follows_what_a_process_touches() -> None:
    toucher = subprocess.Popen([sys.executable, "-c", TOUCHER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert toucher.stdout.readline().strip() == "ready"
        before = procs.rss_mib(toucher.pid)
        toucher.stdin.write("go\n")
        toucher.stdin.flush()
        assert toucher.stdout.readline().strip() == "touched"
        after = procs.rss_mib(toucher.pid)
        assert before is not None and after is not None and after - before >= 60, (before, after)
    finally:
        toucher.kill()
        toucher.wait()


def test_a_process_gone_has_nothing() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert procs.descendants(gone.pid) == [] and procs.threads(gone.pid) == [] and procs.command(gone.pid) == []
    assert procs.tree_cpu(gone.pid) == (0.0, 0.0) and procs.rss_mib(gone.pid) is None and procs.rss_mib(None) is None
    assert role(gone.pid) is None


def test_psutil_is_the_tools_dependency_and_the_gateway_never_imports_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    named = lambda specs: any(s.split("=")[0].strip().lower() == "psutil" for s in specs)  # noqa: E731
    assert named(project["optional-dependencies"]["tools"])
    assert not named(project["dependencies"]) and not named(project["optional-dependencies"]["engine"])
    loaded = subprocess.run([sys.executable, "-c", "import sys, gateway.app, gateway.cli; "
                             "gateway.cli.build_parser(); print('psutil' in sys.modules)"],
                            cwd=ROOT, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False", loaded.stderr
