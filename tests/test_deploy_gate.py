"""The deploy gate (`chatterbox-fast gate`) against stand-in servers on 127.0.0.1, and against the real server.

Every stand-in answers any text with the same ~2 s clip of real eSpeak speech (watermarked with PerTh, or not), and
differs only in how it delivers it: fast, late, with a stall mid-stream, or through the OpenAI route only.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator

import numpy as np
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.cli import build_parser
from cbf_tools.gate import deploy as deploy_gate
from tests.server import serving

CLIP_TEXT = "Hello there, this is a quick test."  # about 2 s of speech
API_KEY = "stand-in-key"


@dataclass(frozen=True)
class Delivery:
    """How a stand-in sends its clip."""

    first_delay_s: float = 0.0  # before the first byte
    stall_after_s: float | None = None  # audio seconds sent before a stall
    stall_s: float = 0.0
    openai_only: bool = False  # no /v1/tts: only /v1/audio/speech
    api_key: str | None = None


def to_pcm(wav: np.ndarray) -> bytes:
    return (np.clip(wav, -1.0, 1.0) * 32767).astype("<i2").tobytes()


@pytest.fixture(scope="module")
def clips(espeak_engine, watermarker) -> dict[str, bytes]:
    wav = espeak_engine.synthesize(CLIP_TEXT, espeak_engine.default_voice(), threading.Event())
    return {"plain": to_pcm(wav), "marked": to_pcm(watermarker.apply(wav, deploy_gate.SAMPLE_RATE))}


def standin_app(pcm: bytes, delivery: Delivery) -> Starlette:
    """A server that checks the gate's request like the real one would, then streams ``pcm`` as ``delivery`` says."""

    async def stream() -> AsyncIterator[bytes]:
        await asyncio.sleep(delivery.first_delay_s)
        if delivery.stall_after_s is not None:
            # one write on each side of the stall: in 50 ms pieces a loaded machine's own scheduling gaps could
            # starve the listener a second time
            cut = int(delivery.stall_after_s * deploy_gate.BYTES_PER_SECOND)
            yield pcm[:cut]
            await asyncio.sleep(delivery.stall_s)
            yield pcm[cut:]
            return
        piece = deploy_gate.BYTES_PER_SECOND // 20  # 50 ms of audio per write
        for start in range(0, len(pcm), piece):
            yield pcm[start:start + piece]
            await asyncio.sleep(0)

    async def speak(request: Request) -> Response:
        if delivery.api_key and request.headers.get("authorization") != f"Bearer {delivery.api_key}":
            return JSONResponse({"error": {"code": "unauthorized"}}, status_code=401)
        body = await request.json()
        native = request.url.path == "/v1/tts"
        ok = (body.get("format") == "pcm" and body.get("sample_rate") == 24000 and body.get("text") if native
              else body.get("response_format") == "pcm" and body.get("input"))
        if not ok or body.get("voice") != "default":
            return JSONResponse({"error": {"code": "bad_request"}}, status_code=400)
        return StreamingResponse(stream(), media_type="audio/pcm")

    routes = [Route("/v1/audio/speech", speak, methods=["POST"])]
    if not delivery.openai_only:
        routes.append(Route("/v1/tts", speak, methods=["POST"]))
    return Starlette(routes=routes)


@pytest.fixture(autouse=True)
def report_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each gate run writes its report into the test's own folder."""
    monkeypatch.setenv("CBF_GATE_REPORT_DIR", str(tmp_path / "gate-report"))
    return tmp_path / "gate-report"


def run_gate(*argv: str) -> int:
    """``chatterbox-fast gate --checks speed ARGV`` in this process; returns its exit status. (The stand-ins answer
    every text with the same clip, so only the speed criteria mean anything here: tests/test_gate_quality.py has the
    quality ones.)"""
    return deploy_gate.run(build_parser().parse_args(["gate", "--checks", "speed", *argv]))


def gate_against(clip: bytes, delivery: Delivery, capsys: pytest.CaptureFixture, *extra: str) -> tuple[int, dict, str]:
    """Run the gate against a stand-in; returns (exit status, the JSON line, everything printed)."""
    with serving(standin_app(clip, delivery)) as url:
        code = run_gate("--url", url, *extra)
    out = capsys.readouterr().out
    return code, json.loads(out.strip().splitlines()[-1]), out


def criteria(result: dict) -> set[str]:
    return {failure["criterion"] for failure in result["failures"]}


def test_fast_watermarked_server_passes_with_openai_baseline_beside_it(clips, capsys):
    old = Delivery(first_delay_s=0.3, openai_only=True)  # the buffered server: everything after a wait
    with serving(standin_app(clips["marked"], old)) as baseline_url:
        code, result, out = gate_against(clips["marked"], Delivery(api_key=API_KEY), capsys,
                                         "--api-key", API_KEY, "--baseline-url", baseline_url)
    assert code == 0, out
    assert result["gate"] == "pass" and result["failures"] == []
    assert result["endpoint"] == "/v1/tts"
    clip_s = len(clips["marked"]) / deploy_gate.BYTES_PER_SECOND
    assert [u["name"] for u in result["utterances"]] == [name for name, _ in deploy_gate.UTTERANCES]
    assert all(u["audio_s"] == pytest.approx(clip_s) and u["watermark"] >= 0.5 for u in result["utterances"])
    baseline = result["baseline"]
    assert baseline["endpoint"] == "/v1/audio/speech"
    assert all(u["ttfa_s"] >= 0.3 for u in baseline["utterances"])
    assert baseline["summary"]["ttfa_p50_s"] > result["summary"]["ttfa_p50_s"]
    assert "base:ttfa_s" in out and "PASS" in out
    assert result["criteria"] == {"audio": "pass", "ttfa": "pass", "rtf": "pass", "underrun": "pass",
                                  "watermark": "pass", "similarity": "skipped", "intelligibility": "skipped",
                                  "seams": "skipped"}


def test_slow_server_fails_on_first_audio_and_real_time_factor(clips, capsys):
    code, result, out = gate_against(clips["marked"], Delivery(first_delay_s=0.8), capsys)
    assert code == 1
    assert criteria(result) == {"ttfa", "rtf"}
    assert result["summary"]["ttfa_p50_s"] >= 0.8 and result["summary"]["rtf"] < 3
    assert re.search(r"FAIL ttfa: time to first audio p50 is \d\.\d+ s, not below 0\.6 s", out)
    assert "FAIL rtf: real-time factor" in out and "not above 3x" in out


def test_unwatermarked_speech_fails_on_the_watermark(clips, capsys):
    code, result, out = gate_against(clips["plain"], Delivery(), capsys)
    assert code == 1
    assert criteria(result) == {"watermark"}
    assert all(u["watermark"] < 0.5 for u in result["utterances"])
    assert "FAIL watermark: PerTh confidence below 0.5: short (" in out


def test_mid_stream_stall_fails_on_underruns(clips, capsys):
    # starved ~0.5 s: a first read up to 0.4 s late (a loaded machine) still counts 0.1 s or more
    code, result, out = gate_against(clips["marked"], Delivery(stall_after_s=0.1, stall_s=0.6), capsys)
    assert code == 1
    assert criteria(result) == {"underrun"}
    assert all(u["underruns"] == 1 and 0.1 <= u["starved_s"] for u in result["utterances"])
    assert "FAIL underrun: the listener ran out of audio after first audio: short (1," in out


def test_rejected_key_is_an_error_not_a_verdict(clips, capsys):
    code, result, _ = gate_against(clips["marked"], Delivery(api_key=API_KEY), capsys, "--api-key", "wrong")
    assert code == 2
    assert result["gate"] == "error" and "401" in result["error"]


def test_real_server_with_the_embedded_engine_passes(capsys, plain_server: str):
    code = run_gate("--url", plain_server, "--json-only")
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.count("\n") == 1  # --json-only: the JSON line and nothing else
    result = json.loads(out)
    assert result["gate"] == "pass" and result["endpoint"] == "/v1/tts"
    long = next(u for u in result["utterances"] if u["name"] == "long")
    assert long["audio_s"] > 10 and long["watermark"] >= 0.5


@pytest.mark.parametrize(("arrivals", "underruns", "starved"), [
    ([], 0, 0.0),
    ([(0.2, 1.0)], 0, 0.0),
    ([(0.1, 0.5), (0.3, 1.0), (0.9, 2.0)], 0, 0.0),  # always ahead of the listener
    ([(0.0, 0.1), (0.5, 2.0)], 1, 0.4),  # plays 0.1 s, waits 0.4 s
    ([(0.0, 0.2), (0.5, 0.4), (1.0, 0.6)], 2, 0.6),  # starves twice, 0.3 s each
])
def test_count_underruns(arrivals, underruns, starved):
    counted, waited = deploy_gate.count_underruns(arrivals)
    assert counted == underruns
    assert waited == pytest.approx(starved)
