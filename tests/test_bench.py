"""``chatterbox-fast bench gateway`` in-process, for each transport, against a real server (eSpeak engine): the JSON
line's fields are present and sane. No timing thresholds: the figures depend on the machine."""

from __future__ import annotations

import json

import pytest

from gateway.cli import build_parser
from server import running_server

FIELDS = {"bench", "transport", "codec", "receiver_prefetch", "sessions", "pause_s", "utterances", "errors", "engine", "server",
          "ttfa_p50_ms", "ttfa_p95_ms", "server_ttfa_p50_ms", "server_ttfa_p95_ms", "transport_p50_ms",
          "transport_p95_ms", "no_audio", "underruns_server", "underruns_client", "starved_ms", "audio_s", "window_s",
          "stream_s", "gateway_cpu_s", "engine_cpu_s", "cpu_ms_per_stream_s", "server_cpu_pct", "loadavg_1m"}


@pytest.fixture(scope="module")
def url():
    with running_server() as base:
        yield base


def bench(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, dict, str]:
    """Run the command in-process; returns its exit status, its last stdout line as JSON, and the rest."""
    args = build_parser().parse_args(["bench", "gateway", "--sessions", "2", "--utterances", "1", *flags])
    status = args.run(args)
    lines = capsys.readouterr().out.strip().splitlines()
    return status, json.loads(lines[-1]), "\n".join(lines[:-1])


@pytest.mark.parametrize("transport", ["webrtc", "ws", "http"])
def test_bench_each_transport(url: str, transport: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, result, table = bench(capsys, "--transport", transport, "--url", url, "--stagger", "0.2")
    assert status == 0, table
    assert set(result) == FIELDS
    assert result["bench"] == "gateway" and result["transport"] == transport and result["server"] == url
    assert result["sessions"] == 2 and result["utterances"] == 2 and result["errors"] == 0
    assert result["engine"] == "espeak" and result["no_audio"] == 0
    assert 0 < result["ttfa_p50_ms"] <= result["ttfa_p95_ms"]
    assert result["audio_s"] > 1.0 and result["window_s"] > 0
    assert result["stream_s"] == pytest.approx(2 * result["window_s"], abs=0.02)
    assert result["underruns_client"] >= 0 and result["starved_ms"] >= 0
    if transport == "http":
        assert result["server_ttfa_p50_ms"] is None and result["transport_p50_ms"] is None
    else:
        assert 0 < result["server_ttfa_p50_ms"] < result["ttfa_p50_ms"]
        assert result["transport_p50_ms"] is not None
    if transport == "webrtc":
        assert result["codec"] == "opus" and result["receiver_prefetch"] == 0 and result["underruns_server"] >= 0
    else:
        assert result["codec"] is None and result["underruns_server"] is None
    assert result["cpu_ms_per_stream_s"] is None and result["gateway_cpu_s"] is None  # not its server: no CPU
    assert "targets:" in table and "time to first audio" in table


def test_bench_starts_its_own_server_and_measures_its_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    status, result, table = bench(capsys, "--transport", "ws", "--stagger", "0.2")
    assert status == 0, table
    assert result["server"] == "started" and result["engine"] == "espeak" and result["utterances"] == 2
    assert result["gateway_cpu_s"] > 0 and result["engine_cpu_s"] > 0
    assert result["cpu_ms_per_stream_s"] > 0 and result["server_cpu_pct"] > 0


def test_bad_counts_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["bench", "gateway", "--sessions", "0"])
    assert args.run(args) == 2


def test_bench_engine_prints_its_figures_as_a_json_line(tmp_path) -> None:
    import subprocess
    import sys

    from tools.local_server import ROOT

    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "bench", "engine", "--engine", "espeak", "--runs", "1",
         "--voices-dir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["bench"] == "engine" and figures["engine"] == "espeak" and figures["utterances"] == 4
    assert 0 < figures["first_chunk_p50_s"] <= figures["first_chunk_p95_s"]
    assert figures["chunks_per_utterance"] >= 1 and figures["rtf"] > 0
