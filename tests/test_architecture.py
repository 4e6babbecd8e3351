"""The import rules docs/architecture.md states, checked on fresh interpreters.

- Every module of ``gateway/`` and ``cbf_tools/`` imports without torch or OpenTelemetry, and of ``engine`` only
  ``engine.protocol``, ``engine.traces`` and ``engine.heap``.
- The engine worker command (``chatterbox-fast engine``) never loads aiortc, httpx (but ``--engine http``), Starlette,
  uvicorn or the tools.
- Nothing in ``gateway/`` or ``cbf_tools/`` imports ``gateway.cli`` back.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

IMPORT_EVERYTHING = """
import importlib, pkgutil, sys
import gateway, cbf_tools
names = [m.name for pkg in (gateway, cbf_tools) for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
for name in names:
    importlib.import_module(name)
print(len(names))
for name in sorted(sys.modules):
    print(name)
"""


def test_gateway_and_tools_import_no_torch_and_no_engine_module_but_the_protocol() -> None:
    out = subprocess.run([sys.executable, "-c", IMPORT_EVERYTHING], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    imported, loaded = int(out[0]), set(out[1:])
    assert imported > 30  # the walk found the sub-packages too
    assert {"gateway.sessions.core", "gateway.webrtc.signalling", "gateway.http.speech", "cbf_tools.bench.gateway",
            "cbf_tools.gate.similarity", "aiortc", "starlette"} <= loaded  # (the gate's encoders load torch when run)
    assert not {"resemblyzer", "pocketsphinx", "jiwer", "librosa"} & loaded  # nor the gate's models, until they run
    assert not {name for name in loaded if name.split(".")[0] == "torch"}
    # the protocol, the one list it shares with the engine's text front end (Turbo's tags), the traces' spans and the
    # heap's trim (both processes give freed memory back alike)
    assert {name for name in loaded if name.split(".")[0] == "engine"} == {"engine", "engine.heap", "engine.protocol",
                                                                          "engine.speech_text",
                                                                          "engine.speech_text.tags", "engine.traces"}
    assert "opentelemetry" not in loaded  # imported only with --otlp-endpoint


def test_the_engine_worker_command_loads_no_gateway_transport_and_no_tool(tmp_path: Path) -> None:
    """The real command, run until it listens; ``-X importtime`` names every module it imported."""
    sock, log = tmp_path / "engine.sock", tmp_path / "stderr.txt"
    with log.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "gateway.cli", "engine", "--engine",
                                 "espeak", "--listen", f"unix:{sock}", "--log-level", "warning"], cwd=ROOT,
                                stderr=stderr)
        try:
            deadline = time.monotonic() + 120
            while not sock.exists():
                assert proc.poll() is None, "the worker exited"
                assert time.monotonic() < deadline, "the worker did not listen"
                time.sleep(0.1)
        finally:
            proc.terminate()
            proc.wait(30)
    lines = log.read_text().splitlines()
    loaded = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    assert {"engine.worker", "engine.engines.espeak", "gateway", "websockets"} <= loaded
    forbidden = {"aiortc", "httpx", "starlette", "uvicorn", "cbf_tools", "opentelemetry"}  # (no --otlp-endpoint)
    assert not {name for name in loaded if name.split(".")[0] in forbidden}


def test_nothing_imports_the_cli_back() -> None:
    importers = []
    for path in [*ROOT.glob("gateway/**/*.py"), *ROOT.glob("cbf_tools/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            if "gateway.cli" in names:
                importers.append(path.relative_to(ROOT).as_posix())
    assert importers == []
