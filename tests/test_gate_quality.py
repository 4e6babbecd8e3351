"""The deploy gate's quality criteria (cloned-voice similarity, intelligibility, seams) and its blind listening page,
through two real servers on 127.0.0.1 (the embedded eSpeak engine, the same build and flags), with the real
Resemblyzer encoder, the real pocketsphinx recognizer and Debian's Chromium for the page.

The candidates that must fail are stand-ins in front of a real server that change only each chunk's samples: one
whose joins click (every chunk but the first starts with a spike), and one whose speech is noise (white noise as long
and loud as the speech). Pure parts are tested directly.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import random
import wave
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import numpy as np
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cbf_tools.gate import deploy as deploy_gate
from cbf_tools.gate import intelligibility as gate_intelligibility
from cbf_tools.gate import listening as gate_listening
from cbf_tools.gate import seams as gate_seams
from cbf_tools.gate import similarity as gate_similarity
from gateway.cli import build_parser
from tests.server import running_servers, serving

# One text of two sentences: with --max-chunk-chars 60 the server sends it as three chunks (two joins).
TEXT = "Thanks for calling the front desk. I can move your booking to Thursday evening, or keep it on Friday."
SERVER_FLAGS = ("--max-chunk-chars", "60", "--log-level", "warning")
SPIKE = 0.5  # full scale


@pytest.fixture(scope="module")
def texts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gate") / "texts.txt"
    path.write_text(f"# the gate's texts for these tests\n\n{TEXT}\n")
    return path


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(baseline, candidate): two real eSpeak servers, each with its own voices folder."""
    folders = [tmp_path_factory.mktemp(role) for role in ("baseline", "candidate")]
    with running_servers(*SERVER_FLAGS, voices_dirs=folders) as (baseline, candidate):
        yield baseline, candidate


def run_gate(report_dir: Path, capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, dict[str, Any], str]:
    """``chatterbox-fast gate ARGV`` in this process: (exit status, the JSON line, everything printed)."""
    code = deploy_gate.run(build_parser().parse_args(["gate", "--report-dir", str(report_dir), *argv]))
    out = capsys.readouterr().out
    return code, json.loads(out.strip().splitlines()[-1]), out


@pytest.fixture(scope="module")
def self_run(servers, texts, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], str, Path]:
    """The whole gate, every criterion, the candidate against a baseline that is the same server."""
    baseline, candidate = servers
    report_dir = tmp_path_factory.mktemp("report")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = deploy_gate.run(build_parser().parse_args([
            "gate", "--url", candidate, "--baseline-url", baseline, "--texts", str(texts), "--report-dir",
            str(report_dir), "--seed", "7"]))
    out = printed.getvalue()
    return code, json.loads(out.strip().splitlines()[-1]), out, report_dir


def test_the_same_server_against_itself_passes_every_criterion(self_run) -> None:
    code, result, out, report_dir = self_run
    assert code == 0, out
    assert result["gate"] == "pass" and result["failures"] == []
    assert result["criteria"] == {c: "pass" for c in ("audio", "ttfa", "rtf", "underrun", "watermark", "similarity",
                                                      "intelligibility", "seams")}
    quality = result["quality"]
    assert quality["similarity"]["encoder"] == "resemblyzer-ge2e"
    assert {v["voice"] for v in quality["similarity"]["voices"]} == {"low", "high"}  # the shipped clips
    assert quality["seams"]["joins"] >= 2 and quality["seams"]["clicks"] == 0
    heard = quality["intelligibility"]["candidate"][0]["heard"]
    assert {"thursday", "friday"} & set(heard.split()), heard  # the recognizer hears words of the text
    assert json.loads((report_dir / "report.json").read_text()) == result
    assert "PASS" in out and "similarity (resemblyzer-ge2e): " in out and "seams: " in out


def test_a_clone_sounds_more_like_its_own_reference_than_like_the_other(self_run) -> None:
    voices = self_run[1]["quality"]["similarity"]["voices"]
    for voice in voices:
        [(other, to_other)] = voice["other_references"].items()
        assert voice["candidate"] > to_other + 0.1, voice  # measured: about 0.9 against about 0.6
        assert voice["baseline"] == pytest.approx(voice["candidate"], abs=0.03)  # the same server, the same voice


def test_the_listening_page_pairs_each_texts_audio_blind_with_the_key_apart(self_run) -> None:
    _, result, _, report_dir = self_run
    listening = result["listening"]
    assert listening["pairs"] == 3  # the text, and each of the two clones saying it
    key = json.loads((report_dir / "key.json").read_text())
    assert [p["name"] for p in key["pairs"]] == ["text1", "clone high 1", "clone low 1"]
    assert all({p["x"], p["y"]} == {"baseline", "candidate"} for p in key["pairs"])
    page = (report_dir / "index.html").read_text()
    rows = page[page.index("<section>"):]
    assert not {"baseline", "candidate", *key["servers"].values()} & set(rows.split())  # nothing there unblinds it
    assert not [w for w in ("baseline", "candidate", "127.0.0.1") if w in rows]
    sources = _sources(page)
    assert sources == [f"audio/pair-{n:02d}-{xy}.wav" for n in (1, 2, 3) for xy in "xy"]
    for src in sources:
        with wave.open(str(report_dir / src)) as wav:
            assert wav.getframerate() == 24000 and wav.getnchannels() == 1 and wav.getnframes() > 24000


def test_the_listening_page_plays_from_the_folder_with_no_network_and_keeps_the_choices(self_run) -> None:
    """In Debian's Chromium, every request but file:// refused: each clip loads and has its length; choices stay."""
    sync_playwright = _sync_playwright()
    report_dir = self_run[3]
    refused: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            context = browser.new_context()
            page = context.new_page()
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
                       else (refused.append(route.request.url), route.abort()))
            page.goto((report_dir / "index.html").as_uri())
            durations = page.evaluate("""() => Promise.all([...document.querySelectorAll("audio")].map(a =>
                new Promise((ok, fail) => { a.onloadedmetadata = () => ok(a.duration); a.onerror = fail; a.load(); })))""")
            page.check("input[name=p1][value=y]")
            page.check("input[name=p3][value=same]")
            # the page's localStorage reaches the browser's store over its own channel: a reload at once may read the
            # store before it has them (seen once in CI), so a second page on the same file first waits to see them
            other = context.new_page()
            other.goto((report_dir / "index.html").as_uri())
            other.wait_for_function("""() => JSON.parse(localStorage.getItem("cbf-gate-choices:" + location.pathname)
                || "{}")["3"] === 'same'""", timeout=10_000)
            page.reload()
            assert page.is_checked("input[name=p1][value=y]")
            choices = json.loads(page.input_value("#choices"))
        finally:
            browser.close()
    assert refused == []
    assert len(durations) == 6 and all(d > 1.0 for d in durations)
    assert choices == {"1": "y", "3": "same"}


def altered_candidate(upstream: str, alter: Callable[[int, np.ndarray], np.ndarray]) -> Starlette:
    """A stand-in candidate: the real server behind it (``POST /v1/tts``, PCM or ndjson), each chunk's samples
    (int16) passed through ``alter(seq, samples)``; the chunks, their texts, offsets and lengths stay as they were."""

    async def tts(request: Request) -> Response:
        body = await request.json()
        async with httpx.AsyncClient(base_url=upstream, timeout=60) as client:
            answer = await client.post("/v1/tts", json={**body, "format": "ndjson"})
        lines = [json.loads(line) for line in answer.text.splitlines()]
        chunks = [line for line in lines if line["type"] == "chunk"]
        for line in chunks:
            samples = np.frombuffer(base64.b64decode(line["audio"]), "<i2")
            line["audio"] = base64.b64encode(alter(line["seq"], samples.copy()).astype("<i2").tobytes()).decode()
        if body.get("format") == "ndjson":
            return Response("".join(json.dumps(line) + "\n" for line in lines), media_type="application/x-ndjson")
        return Response(b"".join(base64.b64decode(line["audio"]) for line in chunks), media_type="audio/pcm")

    return Starlette(routes=[Route("/v1/tts", tts, methods=["POST"])])


def spike_at_the_start(seq: int, samples: np.ndarray) -> np.ndarray:
    """Every chunk but the first starts with a spike: a discontinuity at every join, nothing else changed."""
    if seq and samples.size:
        samples[0] = int(SPIKE * 32767 * (-1) ** seq)
    return samples


def noise_as_loud(seq: int, samples: np.ndarray) -> np.ndarray:
    """White noise as long and as loud (RMS) as the chunk's speech."""
    rms = float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) if samples.size else 0.0
    noise = np.random.default_rng(seq).standard_normal(samples.size) * rms
    return np.clip(noise, -32768, 32767)


def test_a_candidate_whose_joins_click_fails_the_seams(servers, texts, tmp_path, capsys) -> None:
    baseline, candidate = servers
    with serving(altered_candidate(candidate, spike_at_the_start)) as clicking:
        code, result, out = run_gate(tmp_path, capsys, "--url", clicking, "--baseline-url", baseline,
                                     "--texts", str(texts), "--checks", "seams")
    assert code == 1, out
    assert result["criteria"]["seams"] == "fail" and result["criteria"]["similarity"] == "skipped"
    joins = result["quality"]["seams"]["utterances"][0]["joins"]
    assert len(joins) >= 2 and all(j["click"] and j["step"] > 0.4 for j in joins)
    assert any(j["flux_click"] for j in joins)  # the spectral check hears them too, on its own
    assert "FAIL seams: text1: " in out and "join(s) click" in out


def test_a_candidate_whose_speech_is_noise_fails_intelligibility(servers, texts, tmp_path, capsys) -> None:
    """A stand-in, not random-weights Turbo: a Turbo server on the tiny checkpoint costs about 15 s of CPU to start,
    half this file's budget. The stand-in's chunks are white noise as long and as loud as the real speech."""
    baseline, candidate = servers
    with serving(altered_candidate(candidate, noise_as_loud)) as noisy:
        code, result, out = run_gate(tmp_path, capsys, "--url", noisy, "--baseline-url", baseline,
                                     "--texts", str(texts), "--checks", "intelligibility")
    assert code == 1, out
    assert result["criteria"]["intelligibility"] == "fail"
    figures = result["quality"]["intelligibility"]
    assert figures["candidate_wer"] > figures["limit"] >= figures["baseline_wer"]
    assert "FAIL intelligibility: word error rate" in out


def test_a_baseline_without_voice_upload_needs_its_voices_named(servers, texts, tmp_path, capsys) -> None:
    """A baseline with speech but no /v1/voices (an older server): the gate says how to name its clones."""
    baseline, candidate = servers

    async def speech(request: Request) -> Response:
        async with httpx.AsyncClient(base_url=baseline, timeout=60) as client:
            answer = await client.post("/v1/audio/speech", json=await request.json())
        return Response(answer.content, status_code=answer.status_code, media_type="audio/pcm")

    old = Starlette(routes=[Route("/v1/audio/speech", speech, methods=["POST"])])
    with serving(old) as old_url:
        code, result, _ = run_gate(tmp_path, capsys, "--url", candidate, "--baseline-url", old_url,
                                   "--texts", str(texts), "--checks", "similarity")
    assert code == 2 and result["gate"] == "error"
    assert "no POST /v1/voices" in result["error"] and "--baseline-voice high=NAME,low=NAME" in result["error"]


# The pure parts.

def test_received_rebuilds_the_utterance_and_checks_each_offset() -> None:
    pcm = [np.full(n, 1000, "<i2").tobytes() for n in (2400, 4800)]

    def line(seq: int, offset: float) -> dict[str, Any]:
        return {"type": "chunk", "seq": seq, "text": f"c{seq}.", "offset": offset,
                "audio": base64.b64encode(pcm[seq]).decode()}

    good = gate_seams.received([line(0, 0.0), line(1, 0.1), {"type": "done"}], 24000)
    assert good.chunk_samples == [2400, 4800] and good.audio.size == 7200 and good.offset_error_s == 0.0
    late = gate_seams.received([line(0, 0.0), line(1, 0.15), {"type": "done"}], 24000)
    assert late.offset_error_s == pytest.approx(0.05)
    with pytest.raises(gate_seams.BadStream, match="without its done line"):
        gate_seams.received([line(0, 0.0)], 24000)
    with pytest.raises(gate_seams.BadStream, match="KeyError"):
        gate_seams.received([{"type": "chunk", "seq": 0}, {"type": "done"}], 24000)


def test_the_spectral_flux_of_a_spike_stands_out_from_a_steady_voice() -> None:
    t = np.arange(24000) / 24000
    voice = 0.3 * np.sin(2 * np.pi * 150 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
    flux = gate_seams.spectral_flux(voice, 24000)
    level = gate_seams.speech_level(flux, [12007], 24000)
    spiked = voice.copy()
    spiked[12007] += SPIKE
    assert gate_seams._flux_at(gate_seams.spectral_flux(spiked, 24000), 12007, 24000) > 2 * level
    assert gate_seams._flux_at(flux, 12007, 24000) < level


def test_words_and_word_errors() -> None:
    assert gate_intelligibility.words("Oh, that's it [laugh] well-known!") == ["oh", "that's", "it", "well", "known"]
    t = gate_intelligibility.score("a", "Hello there, my friend.", "hello their friend")
    assert (t.errors, t.reference_words) == (2, 4)  # one substitution, one deletion
    assert gate_intelligibility.score("b", "Hello there.", "").wer == 1.0


@pytest.mark.parametrize(("baseline_wer", "candidate_wer", "limit", "fails"), [
    (0.4, 0.5, 0.5, False),  # 0.4 + 25 % of it
    (0.4, 0.52, 0.5, True),
    (0.0, 0.05, 0.05, False),  # a perfect baseline: 0.05 absolute slack
    (0.9, 0.96, 0.95, True),  # never over the ceiling
    (None, 0.9, 0.95, False),  # no baseline: the ceiling alone
])
def test_intelligibility_is_judged_relative_to_the_baseline(baseline_wer, candidate_wer, limit, fails) -> None:
    def set_of(wer: float) -> list[gate_intelligibility.Transcript]:
        return [gate_intelligibility.Transcript("t", "", round(wer * 100), 100)]

    got, failure = gate_intelligibility.judge(set_of(candidate_wer), None if baseline_wer is None else
                                              set_of(baseline_wer), 0.25, 0.95)
    assert got == pytest.approx(limit) and (failure is not None) == fails


def test_similarity_is_judged_within_the_margin_of_the_baseline_or_above_the_floor() -> None:
    def at(cosine: float) -> np.ndarray:  # a unit vector at this cosine from (1, 0, 0)
        return np.array([cosine, np.sqrt(1 - cosine ** 2), 0.0])

    refs = {"a": np.array([1.0, 0, 0]), "b": np.array([0, 0, 1.0])}
    results = gate_similarity.compare(refs, {"a": [at(0.88)], "b": [np.array([0, 0.6, 0.8])]},
                                      {"a": [at(0.90)], "b": [np.array([0, 0.3, np.sqrt(0.91)])]}, 0.03, 0.75)
    assert [r.failure is None for r in results] == [True, False]  # a: 0.02 below; b: 0.8 vs 0.954, too far
    assert results[0].candidate == pytest.approx(0.88) and results[0].other_references["b"] == pytest.approx(0.0)
    alone = gate_similarity.compare(refs, {"a": [at(0.7)], "b": [np.array([0, 0.6, 0.8])]}, None, 0.03, 0.75)
    assert [r.failure is None for r in alone] == [False, True]  # no baseline: 0.7 and 0.8 against the floor 0.75


def test_baseline_voice_names_the_texts_voice_and_each_clone() -> None:
    assert deploy_gate.baseline_voices(None, "default") == ("default", {})
    assert deploy_gate.baseline_voices("ana, low=low.wav,High Voice=h.wav", "default") == (
        "ana", {"low": "low.wav", "high-voice": "h.wav"})  # clip names as read from the files: "High Voice.ogg"
    assert gate_similarity.voice_name("High Voice") == "high-voice"


def test_chatterbox_encoder_is_used_when_the_model_dir_has_its_weights(tiny_checkpoint, tmp_path) -> None:
    encoder = gate_similarity.load_encoder(tiny_checkpoint)
    assert encoder.name == "chatterbox-ve"
    [ref] = [r for r in gate_similarity.load_references(gate_similarity.SHIPPED_REFERENCES) if r.name == "low"]
    embedding = encoder.embed(ref.audio, ref.rate)
    assert embedding.shape == (256,) and np.linalg.norm(embedding) == pytest.approx(1.0, abs=1e-4)
    assert gate_similarity.load_encoder(tmp_path).name == "resemblyzer-ge2e"  # no ve.safetensors there


def test_each_pairs_order_is_drawn_on_its_own_and_the_key_tells_it(tmp_path) -> None:
    pairs = [gate_listening.Pair(f"t{i}", "text", b"\x01\x00" * 10, b"\x02\x00" * 10) for i in range(24)]
    gate_listening.write(tmp_path, pairs, random.Random(5), {"baseline": "old", "candidate": "new"})
    key = json.loads((tmp_path / "key.json").read_text())
    assert {(p["x"], p["y"]) for p in key["pairs"]} == {("baseline", "candidate"), ("candidate", "baseline")}
    for p in key["pairs"]:
        with wave.open(str(tmp_path / "audio" / f"pair-{p['pair']:02d}-x.wav")) as x:
            assert x.readframes(10) == (b"\x01\x00" if p["x"] == "baseline" else b"\x02\x00") * 10


CHROMIUM = os.environ.get("CBF_CHROMIUM", "/usr/bin/chromium")  # Debian's package, as in tests/test_page.py


def _sync_playwright():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium is missing at {CHROMIUM}: `scripts/install-chromium`", pytrace=False)
    from playwright.sync_api import sync_playwright

    return sync_playwright


class _Audio(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "audio":
            self.sources.append(dict(attrs)["src"] or "")


def _sources(page: str) -> list[str]:
    parser = _Audio()
    parser.feed(page)
    return parser.sources
