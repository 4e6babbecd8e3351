"""``chatterbox-fast bench gateway`` in-process: for each transport against a real server (eSpeak engine), the JSON
line's fields are present, add up and are sane, with no underrun (eSpeak runs far faster than real time); against a
stand-in server that stalls mid-stream, the starved listener is reported. No latency thresholds: those depend on the
machine."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from gateway.cli import build_parser
from server import serving
from cbf_tools.bench.gateway import PCM_BYTES_PER_SECOND, TEXTS

FIELDS = {"bench", "transport", "tls", "codec", "receiver_prefetch", "sessions", "pause_s", "playback_rate",
          "playout_reports", "utterances", "errors", "engine", "server",
          "ttfa_p50_ms", "ttfa_p95_ms", "server_ttfa_p50_ms", "server_ttfa_p95_ms", "transport_p50_ms",
          "transport_p95_ms", "no_audio", "underruns_server", "underruns_client", "starved_ms", "audio_s", "window_s",
          "stream_s", "gateway_cpu_s", "engine_cpu_s", "cpu_ms_per_stream_s", "server_cpu_pct", "loadavg_1m",
          "slow_readers"}


@pytest.fixture(scope="module")
def url(plain_server: str) -> str:
    return plain_server  # tests/conftest.py: one server for the files that only speak through it


def bench(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, dict, str]:
    """Run the command in-process; returns its exit status, its last stdout line as JSON, and the rest."""
    args = build_parser().parse_args(["bench", "gateway", "--sessions", "2", "--utterances", "1", *flags])
    status = args.run(args)
    lines = capsys.readouterr().out.strip().splitlines()
    return status, json.loads(lines[-1]), "\n".join(lines[:-1])


@pytest.fixture(scope="module")
def spoken_s(espeak_engine) -> float:
    """eSpeak's audio for the two texts the bench's two sessions speak, each synthesised whole."""
    voice = espeak_engine.default_voice()
    return sum(len(espeak_engine.synthesize(t, voice, threading.Event())) / 24000 for t in TEXTS[:2])


@pytest.mark.parametrize("transport", ["webrtc", "ws", "http"])
def test_bench_each_transport(url: str, transport: str, spoken_s: float, capsys: pytest.CaptureFixture[str]) -> None:
    status, result, table = bench(capsys, "--transport", transport, "--url", url, "--stagger", "0.2")
    assert status == 0, table
    assert set(result) == FIELDS
    assert result["bench"] == "gateway" and result["transport"] == transport and result["server"] == url
    assert result["sessions"] == 2 and result["utterances"] == 2 and result["errors"] == 0
    assert result["engine"] == "espeak" and result["no_audio"] == 0
    # What was heard: both texts, at eSpeak's length (chunk joins add short pauses), each in real time.
    assert 0.9 * spoken_s <= result["audio_s"] <= 1.3 * spoken_s, (result["audio_s"], spoken_s)
    assert result["window_s"] >= result["audio_s"] / 2 - 0.02  # a session speaks only as fast as it is heard
    assert result["stream_s"] == pytest.approx(2 * result["window_s"], abs=0.02)
    assert 0 < result["ttfa_p50_ms"] <= result["ttfa_p95_ms"] < 1000 * result["window_s"]
    # eSpeak makes speech tens of times faster than real time: a listener never runs dry after first audio.
    assert result["underruns_client"] == 0 and result["starved_ms"] == 0.0, table
    if transport == "http":
        assert result["server_ttfa_p50_ms"] is None and result["transport_p50_ms"] is None
    else:
        assert 0 < result["server_ttfa_p50_ms"] < result["ttfa_p50_ms"]
        assert 0 < result["transport_p50_ms"] <= result["transport_p95_ms"]
    if transport == "webrtc":
        assert result["codec"] == "opus" and result["receiver_prefetch"] == 0 and result["underruns_server"] == 0
    else:
        assert result["codec"] is None and result["underruns_server"] is None
    assert result["cpu_ms_per_stream_s"] is None and result["gateway_cpu_s"] is None  # not its server: no CPU
    assert "targets:" in table and "time to first audio" in table


def test_bench_ws_with_a_slow_listener_that_reports_its_playout(url: str, spoken_s: float,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    status, result, table = bench(capsys, "--transport", "ws", "--url", url, "--stagger", "0.2",
                                  "--playback-rate", "0.9", "--report-playout")
    assert status == 0, table
    assert result["playback_rate"] == 0.9 and result["errors"] == 0 and result["no_audio"] == 0
    assert 0.9 * spoken_s <= result["audio_s"] <= 1.3 * spoken_s
    assert result["window_s"] >= result["audio_s"] / 2 / 0.9 - 0.02  # each session's listener plays at 0.9x
    assert result["playout_reports"] >= 2 * (result["audio_s"] / 2 / 0.9 / 0.1) * 0.5  # ~every 100 ms of playing
    assert "played at 0.9x, reporting playout" in table
    refused = build_parser().parse_args(["bench", "gateway", "--transport", "http", "--playback-rate", "0.9"])
    assert refused.run(refused) == 2 and "for --transport ws" in capsys.readouterr().err  # WebSocket only


CLIP_S = 1.0  # what the stand-in says to any text
STALL_AFTER_S, STALL_S = 0.1, 0.8  # audio sent before the stall; the stall
SERVER_TTFA_S = 0.05  # the stand-in's done.ttfa


def stalling_app() -> Starlette:
    """A stand-in for the gateway that speaks a second of tone to any text and stalls 0.8 s after its first 0.1 s,
    over ``POST /v1/tts`` and ``/v1/stream``. Each side of the stall is one write: sent as many small ones, a busy
    machine's scheduling between them became underruns of their own (3 where the stall makes 2)."""
    clip = (b"\x00\x10" * (PCM_BYTES_PER_SECOND // 2))[: int(CLIP_S * PCM_BYTES_PER_SECOND)]
    stall_at = int(STALL_AFTER_S * PCM_BYTES_PER_SECOND)

    async def pieces():
        yield clip[:stall_at]
        await asyncio.sleep(STALL_S)
        yield clip[stall_at:]

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "engine": {"engine": "stand-in"}})

    async def tts(request: Request) -> Response:
        return StreamingResponse(pieces(), media_type="audio/pcm")

    async def stream(ws: WebSocket) -> None:
        await ws.accept()
        await ws.send_json({"type": "ready"})
        while True:
            message = await ws.receive_json()
            if message["type"] == "speak":
                async for data in pieces():
                    await ws.send_bytes(data)
                await ws.send_json({"type": "done", "ttfa": SERVER_TTFA_S})

    return Starlette(routes=[Route("/health", health), Route("/v1/tts", tts, methods=["POST"]),
                             WebSocketRoute("/v1/stream", stream)])


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_prompt_cache_hits_and_misses_are_measured_apart(url: str, transport: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # One text, said twice: each utterance is heard in real time (~4 s), so more texts only make the test longer
    status, result, table = bench(capsys, "--transport", transport, "--url", url, "--sessions", "1",
                                  "--utterances", "1", "--pause", "0", "--prompt-cache")
    assert status == 0, table
    assert set(result) == FIELDS | {f"cache_{name}{figure}" for name in ("hit", "miss")
                                    for figure in ("_ttfa_p50_ms", "_ttfa_p95_ms")} | {"cache_hits", "cache_misses"}
    assert result["utterances"] == 2 and result["cache_hits"] + result["cache_misses"] == 2
    assert result["cache_hits"] >= 1 and result["cache_hit_ttfa_p50_ms"] > 0  # the text's second time at least
    assert "prompt cache hits" in table and "prompt cache misses" in table


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_a_stream_that_stalls_is_reported_as_starved(transport: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each utterance plays 0.1 s, then the listener waits for the rest: one underrun an utterance, and the wait."""
    with serving(stalling_app()) as standin:
        status, result, table = bench(capsys, "--transport", transport, "--url", standin, "--stagger", "0.2")
    assert status == 0, table  # a starved stream is a finding, not a failure of the bench
    assert result["engine"] == "stand-in" and result["utterances"] == 2 and result["errors"] == 0
    assert result["audio_s"] == 2 * CLIP_S  # every byte counted
    assert result["underruns_client"] == 2, table
    # each wait is the stall less the audio in hand, give or take the test machine's scheduling
    assert 2 * (STALL_S - STALL_AFTER_S - 0.3) <= result["starved_ms"] / 1000 <= 2 * STALL_S, result["starved_ms"]
    assert result["window_s"] >= CLIP_S + STALL_S - STALL_AFTER_S - 0.3  # the bench waited out the stall
    if transport == "ws":
        assert result["server_ttfa_p50_ms"] == result["server_ttfa_p95_ms"] == 1000 * SERVER_TTFA_S
    assert "simulated listener 2 (" in table


def test_bench_starts_its_own_server_and_measures_its_cpu_and_slow_readers(
        capsys: pytest.CaptureFixture[str]) -> None:
    """And, with --slow-readers, what clients that never read cost: memory read, and the audio each was sent
    (the lead and a piece of the 5,000 characters asked for) once the server closed them after its stall timeout."""
    status, result, table = bench(capsys, "--transport", "ws", "--stagger", "0.2", "--slow-readers", "1",
                                  "--stall-timeout", "3")
    assert status == 0, table
    assert result["server"] == "started" and result["engine"] == "espeak" and result["utterances"] == 2
    assert result["gateway_cpu_s"] > 0 and result["engine_cpu_s"] > 0
    assert result["cpu_ms_per_stream_s"] > 0 and result["server_cpu_pct"] > 0
    slow = result["slow_readers"]
    assert slow["count"] == 1 and slow["settle_s"] == 1.5 and slow["gateway_grew_mib"] is not None
    ((sent, received),) = slow["sent_s"]
    assert 0 < sent <= received < 60, slow  # of ~300 s asked for
    assert "slow readers: 1 WebSocket clients" in table


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_bench_tls_starts_a_tls_server_its_clients_trust(transport: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--tls: the started server serves wss/https with a throwaway CA's certificate, and the clients trust that CA."""
    status, result, table = bench(capsys, "--transport", transport, "--tls", "--stagger", "0.2")
    assert status == 0, table
    assert set(result) == FIELDS and result["tls"] is True and result["server"] == "started"
    assert result["utterances"] == 2 and result["errors"] == 0 and result["no_audio"] == 0
    assert 0 < result["ttfa_p50_ms"] <= result["ttfa_p95_ms"]
    assert f"bench gateway: {transport} over TLS (" in table


@pytest.mark.parametrize("flags", [["--transport", "webrtc"], ["--transport", "ws", "--url", "https://127.0.0.1:1"]],
                         ids=["webrtc", "url"])
def test_tls_where_it_does_not_apply_is_one_sentence_and_exit_2(flags: list[str],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["bench", "gateway", "--tls", *flags])
    assert args.run(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("bench gateway: --tls is for "), err


def test_bad_counts_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["bench", "gateway", "--sessions", "0"])
    assert args.run(args) == 2


@pytest.mark.parametrize("engine", [["espeak"], ["simulated", "--sim-rtf", "20", "--sim-fixed", "0.02"]],
                         ids=["espeak", "simulated"])
def test_bench_engine_prints_its_figures_as_a_json_line(tmp_path, engine: list[str],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["bench", "engine", "--engine", *engine, "--runs", "1",
                                      "--voices-dir", str(tmp_path)])
    status = args.run(args)  # in-process (its worker is a child process all the same): no interpreter start
    stdout, stderr = capsys.readouterr()
    assert status == 0, stderr
    figures = json.loads(stdout.strip().splitlines()[-1])
    assert figures["bench"] == "engine" and figures["engine"] == engine[0] and figures["utterances"] == 4
    assert 0 < figures["first_chunk_p50_s"] <= figures["first_chunk_p95_s"]
    assert figures["chunks_per_utterance"] >= 1 and figures["rtf"] > 0
    # The join check: every seam printed with its pause, none clicks, every pause fits its punctuation.
    assert figures["joins"] >= 1 and figures["clicks"] == 0 and figures["pauses_off"] == 0
    assert stdout.count("joins: ") == 4 and "CLICK" not in stdout


def test_a_server_it_cannot_reach_exits_2_with_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    from cbf_tools.peers.local_server import free_port

    args = build_parser().parse_args(["bench", "gateway", "--transport", "http", "--url",
                                      f"http://127.0.0.1:{free_port()}"])
    assert args.run(args) == 2
    out, err = capsys.readouterr()
    line = json.loads(out.strip().splitlines()[-1])
    assert (line["bench"], line["transport"]) == ("gateway", "http") and line["error"], line
    assert err.startswith("bench gateway: ConnectError: ")


def test_bench_engine_with_unload_after_measures_the_idle_unload_and_the_reload(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["bench", "engine", "--engine", "espeak", "--unload-after", "0.5", "--runs", "1",
                                      "--voices-dir", str(tmp_path)])
    status = args.run(args)
    stdout, stderr = capsys.readouterr()
    assert status == 0, stderr
    figures = json.loads(stdout.strip().splitlines()[-1])
    assert figures["bench"] == "engine-unload" and figures["cycles"] == 1 and figures["every_reload_spoke"]
    assert figures["reload_p50_s"] > 0 and figures["late_max_s"] > -0.5  # unloaded, then reloaded by speech
    assert figures["rss_fall_min"] is not None  # the worker it started, read loaded and unloaded
