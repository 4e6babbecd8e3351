"""``chatterbox-fast bench barge-in``, short: three trials of each kind (speech, echo, noise) on a server it starts
(eSpeak), the VAD's CPU, the gateway's CPU over a call it listens to, and the slow-listener calls. Structure and sanity
only: every speech trial is cleared, every figure is a number, the false barge-ins are counted. No timing
thresholds (the machines are noisy); the figures go in the README."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from cbf_tools.bench import caller_voices as voices
from gateway.cli import build_parser


def test_the_callers_voices_start_at_the_onset_and_have_their_levels() -> None:
    clip = voices.clip_pcm()
    assert voices.dbfs(clip[:voices.FRAME]) > voices.ONSET_DBFS and clip.size > 4 * voices.RATE
    noise = voices.room_noise(-40.0, 50.0, np.random.default_rng(1))
    assert voices.dbfs(noise) == pytest.approx(-40.0, abs=0.1)
    frames = voices.wire_frames(noise)
    assert all(len(f) == voices.FRAME for f in frames)
    assert voices.mulaw_level(b"".join(frames)) == pytest.approx(-40.0, abs=1.0)


def _numbers(figures: dict) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in figures.values())


def test_a_short_run_clears_every_speech_trial_and_counts_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["bench", "barge-in", "--trials", "3", "--concurrency", "3",
                                      "--call-seconds", "1.5", "--line-trials", "0"])
    status = args.run(args)
    out = capsys.readouterr().out.strip().splitlines()
    summary = json.loads(out[-1])
    assert status == 0 and not summary["errors"], summary
    speech = summary["speech"]
    assert speech["trials"] == speech["cleared"] == 3 and speech["early_clears"] == 0
    for figures in (speech["onset_to_clear_ms"], speech["onset_to_last_voiced_ms"], speech["reaction_ms"]):
        assert _numbers(figures) and figures["p50"] <= figures["p95"] <= figures["max"]
    assert speech["onset_to_clear_ms"]["p50"] > 0 and speech["reaction_ms"]["p50"] > 0
    for kind in ("echo", "noise"):
        counts = summary[kind]
        assert counts["trials"] == 3 and all(isinstance(counts[k], int) and counts[k] >= 0 for k in (
            "false_barge_ins", "interrupted", "clears", "speech_started")), counts
    assert summary["noise"]["synthetic"] is True and -46 < summary["noise"]["sent_dbfs"] < -34
    echo = summary["echo"]  # the echo was sent, about 20 dB below the gateway's voice
    assert echo["gain_db"] == -20 and -30 < echo["sent_dbfs"] - echo["played_dbfs"] < -10, echo
    assert _numbers(summary["vad_cpu"]) and summary["vad_cpu"]["core_pct"] > 0
    assert _numbers(summary["process_cpu"]) and summary["process_cpu"]["talking_call_core_pct"] > 0
    for side in ("none", "reading", "slow"):
        pacing = summary["slow_listener"][side]
        assert _numbers(pacing) and pacing["first_audio_ms"] > 0 and pacing["audio_s"] > 1
    assert set(summary["met"]) == {*summary["targets"], "slow_listener"}
    assert any(line.startswith("onset -> clear (caller)") for line in out)


def test_the_line_models_report_clears_false_barge_ins_and_the_callers_side_cpu(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's three target lines, one trial each on the canceller's server (the level rule's beside it is the
    same code on another server), and the caller's side CPU: counts and numbers, no thresholds."""
    from cbf_tools.bench import barge_in_lines, line

    targets = (line.TARGET_MODEL, line.TARGET_ECHO_MODEL, line.DOUBLE_TALK_MODEL)
    monkeypatch.setattr(line, "MODELS", tuple(m for m in line.MODELS if m.name in targets))
    monkeypatch.setattr(barge_in_lines, "CPU_CALLS", (1, 2))
    args = build_parser().parse_args(["bench", "barge-in", "--lines-only", "--line-trials", "1", "--line-compare",
                                      "false", "--call-seconds", "2", "--webrtc-trials", "1"])
    status = args.run(args)
    out = capsys.readouterr().out.strip().splitlines()
    summary = json.loads(out[-1])
    assert status == 0 and not summary["errors"], summary
    lines = summary["lines"]
    models = lines["runs"]["canceller"]["models"]
    assert set(models) == set(targets) and -40 < lines["runs"]["canceller"]["gateway_dbfs"] < -5
    for name in (line.TARGET_MODEL, line.DOUBLE_TALK_MODEL):
        assert models[name]["kind"] == "speech" and models[name]["trials"] == 1 and models[name]["cleared"] <= 1
    assert models[line.TARGET_ECHO_MODEL] == {"kind": "echo", "trials": 1,
                                              "false_barge_ins": models[line.TARGET_ECHO_MODEL]["false_barge_ins"]}
    for figures in lines["cpu"].values():
        assert set(figures) == {"1", "2"} and all(v > 0 for v in figures.values())
    assert set(lines["met"]) == set(barge_in_lines.TARGETS)
    assert any(line_.strip().startswith(line.TARGET_MODEL) for line_ in out)
    # and the WebRTC line: a peer on a loudspeaker, one trial of the target caller and one of the echo alone
    webrtc = lines["runs"]["canceller"]["webrtc"]
    assert set(webrtc) == {line.TARGET_MODEL, line.TARGET_ECHO_MODEL}
    assert webrtc[line.TARGET_MODEL]["kind"] == "speech" and webrtc[line.TARGET_MODEL]["trials"] == 1
    assert webrtc[line.TARGET_ECHO_MODEL]["kind"] == "echo" and webrtc[line.TARGET_ECHO_MODEL]["trials"] == 1
    assert any(line_.strip().startswith("WebRTC " + line.TARGET_MODEL) for line_ in out)
