"""``chatterbox-fast gate``: the A-B deploy gate, run from outside against a running server.

It speaks a fixed set of utterances through the server's HTTP API (streamed 24 kHz s16le PCM) and measures, per
utterance, what a listener gets:

- ``ttfa_s``: seconds from sending the request to the first audio byte;
- ``total_s``: seconds from sending the request to the end of the stream;
- ``audio_s``: seconds of audio received;
- ``rtf`` (real-time factor): ``audio_s / total_s``, audio seconds delivered per wall-clock second, first-chunk
  latency included (a buffered server is judged on its whole wait, and the figure never divides by a tiny span);
  the set's RTF is ``sum(audio_s) / sum(total_s)``;
- ``underruns``: a listener starts playing at the first byte at 1x speed; every time the played clock passes the
  audio received so far the player starves (one underrun; it resumes when audio arrives);
- ``watermark``: the PerTh detector's confidence on the received audio.

The speed criteria: TTFA p50 < 0.6 s, RTF > 3x, no underrun, every utterance watermarked; the baseline's figures
are shown beside them, not judged. The quality criteria compare the candidate with the baseline (the current
server), each in its own module: cloned-voice similarity (similarity.py), intelligibility
(intelligibility.py), seams on the received stream (seams.py); quality.py drives them. With a baseline
the gate also writes the blind listening page (listening.py). ``--checks`` picks the criteria (all by default);
the report (every figure, each criterion's pass/fail, the total) is printed as one JSON line and written to
``--report-dir``/report.json. A server that does not speak ``POST /v1/tts`` is driven through the OpenAI-compatible
``POST /v1/audio/speech`` instead.

Exit status: 0 every criterion passes, 1 one fails, 2 the gate could not run (server unreachable, HTTP error, no
reference clips); a baseline that cannot be measured is an error when a quality criterion needs it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import httpx
import numpy as np

from cbf_tools.gate import listening as gate_listening
from cbf_tools.gate import quality as gate_quality
from cbf_tools.gate.http import Endpoint, GateError, choose_endpoint, speech
from cbf_tools.gate.listening import Pair
from cbf_tools.gate.quality import Side, Verdict
from cbf_tools.gate.similarity import SHIPPED_REFERENCES, load_encoder, load_references, voice_name
from engine.protocol import SAMPLE_RATE

BYTES_PER_SECOND = SAMPLE_RATE * 2  # s16le mono

# The fixed set: short, medium, long (past one chunk's text cap, so several chunks and joins), and a paralinguistic tag.
UTTERANCES: tuple[tuple[str, str], ...] = (
    ("short", "Hello! Your table for two is ready."),
    ("medium", "Thanks for calling the front desk. I can move your booking to Thursday evening, "
               "or keep it on Friday if that still works for you."),
    ("long", "Here is a quick summary of your account. Your last payment arrived on the third of the month, "
             "and your next statement will be ready at the end of next week. You have two open support requests: "
             "one about a delayed parcel, which our courier has now located, and one about a billing address change, "
             "which we completed this morning. If anything in this summary looks wrong, just say so, and I will "
             "connect you with someone from the accounts team who can go through it with you line by line."),
    ("laugh", "Oh, that is the funniest thing I have heard all week [laugh] tell me again how it happened."),
)


@dataclass
class Measurement:
    """What a listener got for one utterance."""

    name: str
    chars: int
    ttfa_s: float | None  # None when no audio arrived
    total_s: float
    audio_s: float
    rtf: float
    underruns: int
    starved_s: float  # total time the simulated player waited for audio after first audio
    watermark: float | None = None  # PerTh confidence, filled in after all requests


@dataclass
class ServerResult:
    url: str
    endpoint: str
    measurements: list[Measurement]

    @property
    def ttfa_p50(self) -> float | None:
        values = [m.ttfa_s for m in self.measurements if m.ttfa_s is not None]
        return statistics.median(values) if values else None

    @property
    def rtf(self) -> float:
        total = sum(m.total_s for m in self.measurements)
        return sum(m.audio_s for m in self.measurements) / total if total > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "ttfa_p50_s": self.ttfa_p50,
            "rtf": self.rtf,
            "audio_s": sum(m.audio_s for m in self.measurements),
            "underruns": sum(m.underruns for m in self.measurements),
            "watermark_min": min((m.watermark for m in self.measurements if m.watermark is not None), default=None),
        }

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "endpoint": self.endpoint, "summary": self.summary(),
                "utterances": [asdict(m) for m in self.measurements]}


@dataclass(frozen=True)
class Thresholds:
    max_ttfa_p50_s: float
    min_rtf: float
    min_watermark: float


def count_underruns(arrivals: Sequence[tuple[float, float]]) -> tuple[int, float]:
    """Underruns of a listener who starts at the first arrival; ``arrivals`` are (seconds, cumulative audio seconds).

    The player plays at 1x; when its position reaches the audio received so far it stops (one underrun) and resumes
    at the next arrival. Returns (underruns, seconds spent starved)."""
    underruns, starved = 0, 0.0
    if not arrivals:
        return underruns, starved
    clock, position = arrivals[0][0], 0.0
    received = arrivals[0][1]
    for when, total in arrivals[1:]:
        position += when - clock
        clock = when
        if position > received:
            underruns += 1
            starved += position - received
            position = received
        received = total
    return underruns, starved


def measure(client: httpx.Client, endpoint: Endpoint, name: str, text: str, voice: str) -> tuple[Measurement, bytes]:
    """Speak one utterance, timing every arrival; returns the measurement and the PCM received."""
    chunks: list[bytes] = []
    arrivals: list[tuple[float, float]] = []
    received = 0
    start = time.perf_counter()
    for data in speech(client, endpoint, text, voice):
        received += len(data)
        chunks.append(data)
        arrivals.append((time.perf_counter() - start, received / BYTES_PER_SECOND))
    total = time.perf_counter() - start
    underruns, starved = count_underruns(arrivals)
    audio_s = received / BYTES_PER_SECOND
    measurement = Measurement(
        name=name, chars=len(text), ttfa_s=arrivals[0][0] if arrivals else None, total_s=total, audio_s=audio_s,
        rtf=audio_s / total, underruns=underruns, starved_s=starved,
    )
    return measurement, b"".join(chunks)


def watermark_scores(pcms: Sequence[bytes]) -> list[float]:
    """PerTh confidence (0 to 1) for each stretch of 24 kHz s16le audio; silence or nothing scores 0."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):  # perth prints and warns on load
        warnings.simplefilter("ignore")
        import perth

        detector = perth.PerthImplicitWatermarker()
    scores = []
    for pcm in pcms:
        wav = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float32) / 32768.0
        score = float(detector.get_watermark(wav, sample_rate=SAMPLE_RATE)) if wav.size else 0.0
        scores.append(0.0 if math.isnan(score) else score)
    return scores


def evaluate(result: ServerResult, thresholds: Thresholds) -> list[tuple[str, str]]:
    """The failed criteria as (criterion, reason); empty when the server passes."""
    failures = []
    silent = [m.name for m in result.measurements if m.ttfa_s is None]
    if silent:
        failures.append(("audio", f"no audio at all for: {', '.join(silent)}"))
    p50 = result.ttfa_p50
    if p50 is None or not p50 < thresholds.max_ttfa_p50_s:
        shown = "none" if p50 is None else f"{p50:.3f} s"
        failures.append(("ttfa", f"time to first audio p50 is {shown}, not below {thresholds.max_ttfa_p50_s:g} s"))
    if not result.rtf > thresholds.min_rtf:
        failures.append(("rtf", f"real-time factor (audio s / wall s) is {result.rtf:.2f}x, "
                                f"not above {thresholds.min_rtf:g}x"))
    starved = [f"{m.name} ({m.underruns}, {m.starved_s:.2f} s starved)" for m in result.measurements if m.underruns]
    if starved:
        failures.append(("underrun", f"the listener ran out of audio after first audio: {', '.join(starved)}"))
    unmarked = [f"{m.name} ({_cell(m.watermark, '.2f')})" for m in result.measurements
                if m.watermark is None or not m.watermark >= thresholds.min_watermark]
    if unmarked:
        failures.append(("watermark", f"PerTh confidence below {thresholds.min_watermark:g}: {', '.join(unmarked)}"))
    return failures


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _row(m: Measurement) -> list[str]:
    return [_cell(m.ttfa_s, ".3f"), _cell(m.total_s, ".3f"), _cell(m.audio_s, ".2f"), _cell(m.rtf, ".2f"),
            str(m.underruns), _cell(m.watermark, ".2f")]


def _summary_row(result: ServerResult) -> list[str]:
    s = result.summary()
    return [_cell(s["ttfa_p50_s"], ".3f"), _cell(sum(m.total_s for m in result.measurements), ".3f"),
            _cell(s["audio_s"], ".2f"), _cell(s["rtf"], ".2f"), str(s["underruns"]),
            _cell(s["watermark_min"], ".2f")]


def render_table(result: ServerResult, baseline: ServerResult | None) -> str:
    """The measurements as a fixed-width table, the baseline's columns beside the candidate's."""
    columns = ["ttfa_s", "total_s", "audio_s", "rtf", "underrun", "wmark"]
    header = ["utterance", "chars", *columns]
    if baseline is not None:
        header += [f"base:{c}" for c in columns]
    rows = []
    for i, m in enumerate(result.measurements):
        rows.append([m.name, str(m.chars), *_row(m), *(_row(baseline.measurements[i]) if baseline else [])])
    rows.append(["all", str(sum(m.chars for m in result.measurements)), *_summary_row(result),
                 *(_summary_row(baseline) if baseline else [])])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths)))
             for r in [header, *rows]]
    lines.append("all: ttfa is the p50, total and audio are sums, rtf = audio/total, wmark the lowest confidence")
    return "\n".join(lines)


CHECKS = ("speed", "similarity", "intelligibility", "seams")
SPEED_CRITERIA = ("audio", "ttfa", "rtf", "underrun", "watermark")


def read_texts(path: Path) -> tuple[tuple[str, str], ...]:
    """``--texts``: one utterance a line (blank lines and ``#`` comments skipped), named text1, text2, ..."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    texts = [line for line in lines if line and not line.startswith("#")]
    if not texts:
        raise ValueError(f"{path} holds no text")
    return tuple((f"text{i}", text) for i, text in enumerate(texts, 1))


def baseline_voices(value: str | None, default: str) -> tuple[str, dict[str, str]]:
    """``--baseline-voice``: a voice name for the texts, and ``REF=NAME`` items naming the baseline's voice for each
    reference clip (a baseline that cannot take uploads), comma-separated in any order."""
    voice, clones = default, {}
    for item in filter(None, (part.strip() for part in (value or "").split(","))):
        ref, sep, name = item.partition("=")
        if sep:
            clones[voice_name(ref.strip())] = name.strip()  # the clip's name as the gate reads it from its file
        else:
            voice = item
    return voice, clones


def open_side(stack: contextlib.ExitStack, role: str, url: str, api_key: str | None, voice: str,
              clones: dict[str, str], timeout_s: float) -> Side:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    client = stack.enter_context(httpx.Client(base_url=url, headers=headers,
                                              timeout=httpx.Timeout(timeout_s, connect=10.0)))
    try:
        return Side(role, url, client, choose_endpoint(client, voice), voice, clones)
    except httpx.HTTPError as exc:
        raise GateError(f"{type(exc).__name__}: {exc}") from exc


def measure_set(side: Side, texts: Sequence[tuple[str, str]]) -> tuple[ServerResult, list[bytes]]:
    """Measure the whole utterance set on one server."""
    try:
        pairs = [measure(side.client, side.endpoint, name, text, side.voice) for name, text in texts]
    except httpx.HTTPError as exc:
        raise GateError(f"{type(exc).__name__}: {exc}") from exc
    return ServerResult(side.url, side.endpoint.path, [m for m, _ in pairs]), [pcm for _, pcm in pairs]


def _error(url: str, exc: Exception, what: str = "measure") -> int:
    print(f"gate: cannot {what} {url}: {exc}", file=sys.stderr)
    print(json.dumps({"gate": "error", "url": url, "error": str(exc)}))
    return 2


def _quality(args: argparse.Namespace, candidate: Side, baseline: Side | None, texts: Sequence[tuple[str, str]],
             pcms: list[bytes], baseline_pcms: list[bytes] | None) -> tuple[list[Verdict], list[Pair]]:
    """The quality criteria asked for, and the clones' pairs for the listening page."""
    verdicts, pairs = [], []
    if "similarity" in args.checks:
        references = load_references(args.reference_dir or SHIPPED_REFERENCES)
        verdict, pairs = gate_quality.similarity(candidate, baseline, references, load_encoder(args.model_dir),
                                                 args.similarity_margin, args.min_similarity,
                                                 [text for _, text in texts[:gate_quality.CLONE_TEXTS]])
        verdicts.append(verdict)
    if "intelligibility" in args.checks:
        verdicts.append(gate_quality.intelligibility(texts, pcms, baseline_pcms, args.wer_margin, args.max_wer))
    if "seams" in args.checks:
        verdicts.append(gate_quality.seams(candidate, texts, baseline_pcms))
    return verdicts, pairs


def render_quality(verdicts: Sequence[Verdict]) -> list[str]:
    lines = []
    for v in verdicts:
        f = v.figures
        if v.criterion == "similarity":
            voices = ", ".join(f"{r['voice']} {r['candidate']:.3f}"
                               + (f" (baseline {r['baseline']:.3f})" if r["baseline"] is not None else "")
                               for r in f["voices"])
            lines.append(f"similarity ({f['encoder']}): {voices}")
        elif v.criterion == "intelligibility":
            base = f" (baseline {f['baseline_wer']:.3f})" if f["baseline_wer"] is not None else ""
            lines.append(f"intelligibility ({f['recognizer']}): WER {f['candidate_wer']:.3f}{base}, "
                         f"limit {f['limit']:.3f}")
        else:
            lines.append(f"seams: {f['joins']} joins, {f['clicks']} clicks, {f['pauses_off']} pauses off")
    return lines


def run(args: argparse.Namespace) -> int:
    """Measure, judge, print the table and the JSON line; the exit status is the verdict."""
    thresholds = Thresholds(args.max_ttfa_p50, args.min_rtf, args.min_watermark)
    try:
        texts = read_texts(args.texts) if args.texts else UTTERANCES
    except (OSError, ValueError) as exc:
        return _error(args.url, exc, "read the texts for")
    quality = [c for c in args.checks if c != "speed"]
    baseline_voice, clones = baseline_voices(args.baseline_voice, args.voice)
    baseline = baseline_result = baseline_pcms = baseline_error = None
    with contextlib.ExitStack() as stack:
        try:
            candidate = open_side(stack, "candidate", args.url, args.api_key, args.voice, {}, args.timeout)
            result, pcms = measure_set(candidate, texts)
        except GateError as exc:
            return _error(args.url, exc)
        if args.baseline_url:
            try:
                baseline = open_side(stack, "baseline", args.baseline_url, args.baseline_api_key, baseline_voice,
                                     clones, args.timeout)
                baseline_result, baseline_pcms = measure_set(baseline, texts)
            except GateError as exc:
                if quality:  # parity cannot be judged without it
                    return _error(args.baseline_url, exc)
                baseline, baseline_error = None, str(exc)
                print(f"gate: baseline not measured: {exc}", file=sys.stderr)
        try:
            verdicts, clone_pairs = _quality(args, candidate, baseline, texts, pcms, baseline_pcms)
        except (GateError, ValueError, ImportError) as exc:  # ImportError: the gate extra is not installed
            return _error(args.url, exc, "judge the quality of")
    failures: list[tuple[str, str]] = []
    if "speed" in args.checks:
        scores = watermark_scores([*pcms, *(baseline_pcms or [])])
        for m, score in zip([*result.measurements, *(baseline_result.measurements if baseline_result else [])],
                            scores):
            m.watermark = score
        failures = evaluate(result, thresholds)
    failures += [(v.criterion, reason) for v in verdicts for reason in v.failures]
    failed = {c for c, _ in failures}
    criteria = {c: ("fail" if c in failed else "pass") if group in args.checks else "skipped"
                for group in CHECKS for c in (SPEED_CRITERIA if group == "speed" else (group,))}
    report = {
        "gate": "fail" if failures else "pass",
        **result.to_json(),
        "thresholds": asdict(thresholds),
        "criteria": criteria,
        "failures": [{"criterion": c, "reason": r} for c, r in failures],
        "quality": {v.criterion: v.to_json() for v in verdicts},
        "listening": None,
        "baseline": (baseline_result.to_json() if baseline_result
                     else ({"error": baseline_error} if baseline_error else None)),
    }
    if baseline_result is not None:
        pairs = [Pair(name, text, base, ours)
                 for (name, text), base, ours in zip(texts, baseline_pcms, pcms)] + clone_pairs
        report["listening"] = gate_listening.write(args.report_dir, pairs, random.Random(args.seed),
                                                   {"baseline": baseline_result.url, "candidate": result.url})
    args.report_dir.mkdir(parents=True, exist_ok=True)
    (args.report_dir / "report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if not args.json_only:
        title = f"chatterbox-fast gate: {result.url} (POST {result.endpoint})"
        if baseline_result:
            title += f" | baseline {baseline_result.url} (POST {baseline_result.endpoint})"
        print(title)
        print(render_table(result, baseline_result))
        for line in render_quality(verdicts):
            print(line)
        if report["listening"]:
            print(f"blind listening: {report['listening']['page']} ({report['listening']['pairs']} pairs; the key "
                  f"is {report['listening']['key']})")
        print(f"report: {args.report_dir / 'report.json'}")
        for criterion, reason in failures:
            print(f"FAIL {criterion}: {reason}")
        print("PASS" if not failures else f"FAILED {len(failed)} criteria")
    print(json.dumps(report))
    return 1 if failures else 0
