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

The server passes when TTFA p50 < 0.6 s, RTF > 3x, there is no underrun and every utterance carries the watermark.
A baseline server (the old one) can be measured beside it for comparison; it is shown, not judged. A server that
does not speak ``POST /v1/tts`` is driven through the OpenAI-compatible ``POST /v1/audio/speech`` instead.

Exit status: 0 pass, 1 fail, 2 the gate could not run (server unreachable, HTTP error).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import httpx
import numpy as np

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


class GateError(Exception):
    """The gate could not measure a server (unreachable, an HTTP error, a broken stream)."""


@dataclass(frozen=True)
class Endpoint:
    """One way of asking a server for streamed 24 kHz PCM."""

    path: str
    openai: bool

    def body(self, text: str, voice: str) -> dict[str, Any]:
        if self.openai:  # OpenAI's "pcm" is 24 kHz s16le mono too
            return {"model": "tts-1", "input": text, "voice": voice, "response_format": "pcm"}
        return {"text": text, "voice": voice, "format": "pcm", "sample_rate": SAMPLE_RATE}


NATIVE = Endpoint("/v1/tts", openai=False)
OPENAI = Endpoint("/v1/audio/speech", openai=True)


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
    with client.stream("POST", endpoint.path, json=endpoint.body(text, voice)) as response:
        if response.status_code != 200:
            response.read()
            raise GateError(f"POST {endpoint.path} answered HTTP {response.status_code}: {response.text[:300]}")
        for data in response.iter_bytes():
            if data:
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


def choose_endpoint(client: httpx.Client, voice: str) -> Endpoint:
    """Warm the connection (and the server) with one untimed request; pick ``/v1/tts``, else the OpenAI route."""
    for endpoint in (NATIVE, OPENAI):
        with client.stream("POST", endpoint.path, json=endpoint.body("Warming up.", voice)) as response:
            response.read()
            if response.status_code in (404, 405):
                continue
            if response.status_code != 200:
                raise GateError(f"POST {endpoint.path} answered HTTP {response.status_code}: {response.text[:300]}")
            return endpoint
    raise GateError("the server has neither POST /v1/tts nor POST /v1/audio/speech")


def measure_server(url: str, api_key: str | None, voice: str, timeout_s: float) -> tuple[ServerResult, list[bytes]]:
    """Measure the whole utterance set on one server."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    timeout = httpx.Timeout(timeout_s, connect=10.0)
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=timeout) as client:
            endpoint = choose_endpoint(client, voice)
            pairs = [measure(client, endpoint, name, text, voice) for name, text in UTTERANCES]
    except httpx.HTTPError as exc:
        raise GateError(f"{type(exc).__name__}: {exc}") from exc
    return ServerResult(url, endpoint.path, [m for m, _ in pairs]), [pcm for _, pcm in pairs]


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


def run(args: argparse.Namespace) -> int:
    """Measure, judge, print the table and the JSON line; the exit status is the verdict."""
    thresholds = Thresholds(args.max_ttfa_p50, args.min_rtf, args.min_watermark)
    try:
        result, pcms = measure_server(args.url, args.api_key, args.voice, args.timeout)
    except GateError as exc:
        print(f"gate: cannot measure {args.url}: {exc}", file=sys.stderr)
        print(json.dumps({"gate": "error", "url": args.url, "error": str(exc)}))
        return 2
    baseline, baseline_error = None, None
    if args.baseline_url:
        try:
            baseline, baseline_pcms = measure_server(args.baseline_url, args.baseline_api_key,
                                                     args.baseline_voice or args.voice, args.timeout)
            pcms = [*pcms, *baseline_pcms]
        except GateError as exc:
            baseline_error = str(exc)
            print(f"gate: baseline not measured: {exc}", file=sys.stderr)
    scores = watermark_scores(pcms)
    for m, score in zip([*result.measurements, *(baseline.measurements if baseline else [])], scores):
        m.watermark = score
    failures = evaluate(result, thresholds)
    if not args.json_only:
        title = f"chatterbox-fast gate: {result.url} (POST {result.endpoint})"
        if baseline:
            title += f" | baseline {baseline.url} (POST {baseline.endpoint})"
        print(title)
        print(render_table(result, baseline))
        for criterion, reason in failures:
            print(f"FAIL {criterion}: {reason}")
        print("PASS" if not failures else f"FAILED {len(failures)} criteria")
    print(json.dumps({
        "gate": "fail" if failures else "pass",
        **result.to_json(),
        "thresholds": asdict(thresholds),
        "failures": [{"criterion": c, "reason": r} for c, r in failures],
        "baseline": baseline.to_json() if baseline else ({"error": baseline_error} if baseline_error else None),
    }))
    return 1 if failures else 0
