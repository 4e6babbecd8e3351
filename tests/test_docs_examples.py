"""Every runnable example in README.md and docs/ runs, as written, against a real server (issue 52 item 1).

A fenced block in a runnable language (python, sh, bash) is an example and carries a marker on the line before its
fence, an HTML comment the site does not show:

- ``<!-- example: run -->``: run here, against a real gateway (the embedded eSpeak engine) as ``make run`` starts
  it; ``<!-- example: run; secure -->``: against one with an API key (``your-key``, also in ``$CBF_API_KEY``) and TLS
  (a throwaway CA's certificate, which the example trusts through ``SSL_CERT_FILE``); ``...; expect: REGEX -->``:
  what it prints must also match REGEX.
- ``<!-- example: not run: REASON -->``: it needs what a test machine has not (a GPU, a carrier's account, docker,
  a call in progress), or is an outline of an API rather than a script; the reason is printed with the count.

The docs' addresses (localhost:8197, HOST:8197, tts.example.com, the Wyoming port 10200...) are rewritten to the test
server's. An example passes when it exits 0 without a traceback,
prints what its marker expects, and every audio file it leaves decodes to sound. An unmarked example fails the test:
the docs cannot grow one that nobody runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import av
import pytest

from cbf_tools.peers.certificates import make_certificates, trusting
from cbf_tools.peers.local_server import free_port, local_server
from tests.server import running_server

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNNABLE = {"python", "sh", "bash"}
FENCE = re.compile(r"^```(\w*)")
MARKER = re.compile(r"^<!-- example: (run(?P<secure>; secure)?(?:; expect: (?P<expect>.+?))?|not run: (?P<reason>.+?)) -->$")
KEY = "your-key"  # the secure server's
AUDIO = {".wav", ".mp3", ".opus", ".ogg", ".flac", ".pcm"}
PLAIN = {"http": "http", "https": "http", "ws": "ws", "wss": "ws"}  # the test server has no TLS
TIMEOUT_S = 90  # a bound on a hang, not a speed


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    language: str
    code: str
    marker: re.Match[str] | None

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def examples() -> list[Example]:
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        inside = None
        for number, line in enumerate(lines, 1):
            fence = FENCE.match(line.strip())
            if fence and inside is None:
                inside, language, start = [], fence.group(1), number
            elif line.strip() == "```" and inside is not None:
                if language in RUNNABLE:
                    before = lines[start - 2].strip() if start > 1 else ""
                    found.append(Example(page.relative_to(ROOT).as_posix(), start, language,
                                         textwrap.dedent("\n".join(inside) + "\n"),
                                         MARKER.match(before)))
                inside = None
            elif inside is not None:
                inside.append(line)
    return found


EXAMPLES = examples()
TO_RUN = [e for e in EXAMPLES if e.marker and not e.marker.group("reason")]


def census() -> str:
    """What the docs' examples come to: how many run, and each one not run with its reason (printed at the end of
    every test run by tests/conftest.py)."""
    not_run = [e for e in EXAMPLES if e.marker and e.marker.group("reason")]
    unmarked = sum(e.marker is None for e in EXAMPLES)
    lines = [f"docs examples: {len(TO_RUN)} run, {len(not_run)} not run, {unmarked} unmarked"]
    return "\n".join(lines + [f"  not run: {e.name}: {e.marker.group('reason')}" for e in not_run])  # type: ignore


def test_every_example_is_marked() -> None:
    unmarked = [e.name for e in EXAMPLES if e.marker is None]
    assert not unmarked, f"examples with no <!-- example: ... --> marker on the line before the fence: {unmarked}"
    assert len(TO_RUN) >= 15  # the docs' examples are mostly run: markers cannot quietly turn them all off


@dataclass(frozen=True)
class Server:
    url: str
    wyoming: int | None = None
    ca: Path | None = None  # a secure server's CA


@pytest.fixture(scope="module")
def example_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    wyoming = free_port()
    with running_server("--wyoming-port", str(wyoming), voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield Server(url, wyoming)


@pytest.fixture(scope="module")
def secure_example_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    files = make_certificates(tmp_path_factory.mktemp("tls"))
    flags = ["--engine", "espeak", "--api-key", KEY, "--tls-cert", str(files["cert"]), "--tls-key", str(files["key"]),
             "--voices-dir", str(tmp_path_factory.mktemp("voices"))]
    with local_server(flags, verify=trusting(files["ca"])) as (url, _):
        yield Server(url, ca=files["ca"])


def addressed(code: str, server: Server) -> str:
    """The example as it would be typed against ``server``: the docs' hosts and ports become its own."""
    scheme, host_port = server.url.split("://", 1)
    secure = scheme == "https"
    hosts = r"(?:localhost|127\.0\.0\.1|HOST|tts\.example\.com|gateway\.example\.com)"
    code = re.sub(rf"\b(http|ws)s?://{hosts}(?::8197)?", lambda m: f"{m[1]}{'s' if secure else ''}://{host_port}", code)
    code = re.sub(r"(?<![/\w.])(?:localhost|127\.0\.0\.1):8197\b", server.url if secure else host_port, code)
    return re.sub(r"\"localhost\", 10200\b", f"\"127.0.0.1\", {server.wyoming}", code)


def audio_seconds(path: Path) -> float:
    if path.suffix == ".pcm":
        return path.stat().st_size / 2 / 24000
    with av.open(str(path)) as container:
        return sum(frame.samples / frame.sample_rate for frame in container.decode(audio=0))


@pytest.mark.parametrize("example", TO_RUN, ids=lambda e: e.name)
def test_the_example_runs_as_written(example: Example, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    secure = bool(example.marker.group("secure"))  # type: ignore[union-attr]
    server: Server = request.getfixturevalue("secure_example_server" if secure else "example_server")
    code = addressed(example.code, server)
    env = {**os.environ, "CBF_API_KEY": KEY, "KEY": KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # (else it fetches)
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    if server.ca is not None:
        env |= {"SSL_CERT_FILE": str(server.ca), "CURL_CA_BUNDLE": str(server.ca)}
    script = tmp_path / ("example.py" if example.language == "python" else "example.sh")
    script.write_text(code)
    command = [sys.executable, script.name] if example.language == "python" else ["bash", "-eu", script.name]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in said, f"{example.name} failed:\n{code}\n---\n{said}"
    expect = example.marker.group("expect")  # type: ignore[union-attr]
    if expect:
        assert re.search(expect, done.stdout, re.S), f"{example.name} printed no match for {expect!r}:\n{said}"
    for made in tmp_path.iterdir():
        if made.suffix in AUDIO:
            assert audio_seconds(made) > 0.2, f"{example.name} left {made.name} without sound"
