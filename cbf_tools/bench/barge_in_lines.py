"""``bench barge-in``'s phone lines (cbf_tools/bench/line.py): for each line model, Twilio callers (streamdouble's
wire, cbf_tools/peers/phone_callers.py) whose line sends the gateway's own voice back (late, quieter, band-passed,
softly clipped) and, on the speech models, a caller ``caller_db`` below the gateway's speech level, 1-3 s into its
speech (double talk: 0.2 s in). Per model: clears and onset to clear (p50, p95) for speech, false barge-ins for echo
alone. Run on the server as it is configured (``--url``) or, where the bench starts its own, on one with
``--echo-canceller true`` (the default) and one with ``false`` (the level rule).

And the per-call CPU of the caller's side (canceller + VAD, in this process: gateway/listen/caller.py's
``CallerSide``) on the target line, with 1, 4 and 16 calls heard frame by frame, their due windows in one batched run
(gateway/listen/tick.py); the same where the gateway stops soon after the caller starts (as a barge-in clears it:
the canceller rests once its echo has died away); and the VAD with each call's windows run alone, as when no two
calls' frames coincide.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from typing import Any

import numpy as np

from cbf_tools.bench import barge_in as bench
from cbf_tools.bench import caller_voices as voices
from cbf_tools.bench import line
from cbf_tools.bench.engine import percentile
from cbf_tools.peers.polling import until, within
from gateway.audio import g711_encode
from gateway.listen.caller import CallerSide
from gateway.listen.detector import VadConfig
from gateway.listen.tick import hear_all

DOUBLE_TALK_S = 0.2
CLEAR_WITHIN_MS = 600.0
CALIBRATE_S = 3.0
CPU_CALLS = (1, 4, 16)
CPU_SECONDS = 6.0
YIELD_S = 0.3  # the CPU run where the gateway yields: it stops this long after the caller starts
WEBRTC_MODELS = (line.MODELS[0].name, line.TARGET_MODEL, "caller -20 dB, echo -12 dB 150 ms", line.TARGET_ECHO_MODEL)
TARGETS = {"cleared_pct": 90.0, "onset_to_clear_p50_ms": 300.0, "false_barge_ins_echo": 0,
           "double_talk_cleared_pct": 95.0, "caller_side_core_pct_16": 2.0, "vad_core_pct_16": 1.0}


async def gateway_level(url: str, api_key: str | None) -> float:
    """The gateway's speech level as a caller gets it (dBFS over its voiced frames)."""
    call = await bench.place_call(url, api_key)
    try:
        await call.speak()
        await call.first_audio()
        await asyncio.sleep(CALIBRATE_S)
        return voices.mulaw_level(b"".join(frame for _, frame in bench._voiced(call.stack)))
    finally:
        await call.hang_up()


async def speech_trial(url: str, api_key: str | None, rng: random.Random, model: line.LineModel,
                       speech: np.ndarray) -> tuple[float | None, int]:
    """(onset to the first clear after it in ms, None: none came; clears before the onset)."""
    made: list[voices.LineVoice] = []

    def voice(stack):
        made.append(voices.LineVoice(stack, model, speech))
        return made[-1]

    call = await bench.place_call(url, api_key, voice)
    try:
        await call.speak()
        first = await call.first_audio()
        made[0].starts_at = first + (DOUBLE_TALK_S if model.double_talk else rng.uniform(*bench.SPEECH_AFTER_S))
        await until(lambda: made[0].onset is not None, bench.SPEECH_AFTER_S[1] + 1, "the caller did not start")
        t0 = made[0].onset or 0.0
        await within(lambda: any(at >= t0 for at in call.stack.cleared_at),
                     speech.size / line.RATE + bench.CLEAR_WAIT_S)
        clears = [at for at in call.stack.cleared_at if at >= t0]
        return (round(1000 * (clears[0] - t0), 1) if clears else None), len(call.stack.cleared_at) - len(clears)
    finally:
        await call.hang_up()


async def echo_trial(url: str, api_key: str | None, model: line.LineModel, seconds: float) -> bool:
    """Whether the gateway's own voice back on the line alone stopped it."""
    call = await bench.place_call(url, api_key, lambda stack: voices.LineVoice(stack, model))
    try:
        await call.speak()
        await call.first_audio()
        await asyncio.sleep(seconds)
        return bool(call.stack.clears or call.of("interrupted"))
    finally:
        await call.hang_up()


def _model_summary(model: line.LineModel, speech: list[tuple[float | None, int]], echo: list[bool]) -> dict[str, Any]:
    if model.caller_db is None:
        return {"kind": "echo", "trials": len(echo), "false_barge_ins": sum(echo)}
    got = [ms for ms, _ in speech if ms is not None]
    within = [ms for ms in got if ms <= CLEAR_WITHIN_MS]
    return {"kind": "speech", "trials": len(speech), "cleared": len(got), "cleared_within_600_ms": len(within),
            "early_clears": sum(early for _, early in speech),
            "onset_to_clear_p50_ms": percentile(got, 0.5) if got else None,
            "onset_to_clear_p95_ms": percentile(got, 0.95) if got else None}


async def webrtc_speech_trial(url: str, api_key: str | None, rng: random.Random, model: line.LineModel,
                              speech: np.ndarray) -> tuple[float | None, int]:
    """A WebRTC peer on a loudspeaker (cbf_tools/peers/loudspeaker.py): (the caller's onset to ``interrupted`` at the
    peer in ms, None: none came; interruptions before the onset)."""
    from cbf_tools.peers.loudspeaker import Loudspeaker, SpeakerPeer

    assert model.caller_db is not None
    peer = SpeakerPeer(Loudspeaker(model))
    try:
        await peer.connect(url, api_key)
        peer.send({"type": "speak", "text": bench.TEXT})
        after = DOUBLE_TALK_S if model.double_talk else rng.uniform(*bench.SPEECH_AFTER_S)
        if not await peer.wait_for(lambda: peer.speaker.loud_seconds() >= after, 30):
            if early := peer.times_of("interrupted"):  # it stopped on its own echo before the caller spoke
                return None, len(early)
            raise bench.BenchError(f"the gateway's speech did not reach the peer: {peer.speaker.loud_seconds():.2f} "
                                   f"s of it in 30 s; events {[e['type'] for e in peer.events][:8]}")
        peer.speaker.talk(speech, -model.caller_db)
        await peer.wait_for(lambda: peer.speaker.onset is not None, 5)
        t0 = peer.speaker.onset or 0.0
        await peer.wait_for(lambda: any(at >= t0 for at in peer.times_of("interrupted")),
                            speech.size / line.RATE + bench.CLEAR_WAIT_S)
        times = peer.times_of("interrupted")
        after_onset = [at for at in times if at >= t0]
        return (round(1000 * (after_onset[0] - t0), 1) if after_onset else None), len(times) - len(after_onset)
    finally:
        await peer.close()


async def webrtc_echo_trial(url: str, api_key: str | None, model: line.LineModel, seconds: float) -> bool:
    """Whether the gateway's own voice back from a WebRTC peer's loudspeaker alone stopped it."""
    from cbf_tools.peers.loudspeaker import Loudspeaker, SpeakerPeer

    peer = SpeakerPeer(Loudspeaker(model))
    try:
        await peer.connect(url, api_key)
        peer.send({"type": "speak", "text": bench.TEXT})
        if not await peer.wait_for(lambda: peer.speaker.loud_seconds() > 0, 30):
            raise bench.BenchError("the gateway's speech never reached the peer")
        await asyncio.sleep(seconds)
        return bool(peer.of("interrupted") or peer.of("cancelled"))
    finally:
        await peer.close()


async def measure_webrtc(url: str, api_key: str | None, args: argparse.Namespace,
                         errors: list[str]) -> dict[str, Any]:
    """``WEBRTC_MODELS``' trials with WebRTC peers on a loudspeaker (the line's delay counted from when the peer
    played the audio: the transport's buffers come on top)."""
    _, caller = clip_pair()
    out: dict[str, Any] = {}
    for model in (m for m in line.MODELS if m.name in WEBRTC_MODELS):
        if model.caller_db is None:
            echo = await bench._trials(f"webrtc {model.name} echo", args.webrtc_trials, args.concurrency, errors,
                                       lambda rng, m=model: webrtc_echo_trial(url, api_key, m, args.call_seconds),
                                       args.seed)
            out[model.name] = _model_summary(model, [], echo)
        else:
            trials = await bench._trials(
                f"webrtc {model.name} speech", args.webrtc_trials, args.concurrency, errors,
                lambda rng, m=model: webrtc_speech_trial(url, api_key, rng, m, caller), args.seed)
            out[model.name] = _model_summary(model, trials, [])
    return out


async def measure(url: str, api_key: str | None, args: argparse.Namespace, errors: list[str]) -> dict[str, Any]:
    """Every line model's trials on the server at ``url``, one model after another (and ``WEBRTC_MODELS``' with
    WebRTC peers, ``--webrtc-trials``)."""
    level = await gateway_level(url, api_key)
    _, caller = clip_pair()
    out: dict[str, Any] = {"gateway_dbfs": round(level, 1), "models": {}}
    if args.webrtc_trials:
        out["webrtc"] = await measure_webrtc(url, api_key, args, errors)
    for model in line.MODELS:
        if model.caller_db is None:
            echo = await bench._trials(f"{model.name} echo", args.line_trials, args.concurrency, errors,
                                       lambda rng, m=model: echo_trial(url, api_key, m, args.call_seconds), args.seed)
            out["models"][model.name] = _model_summary(model, [], echo)
            continue
        speech = line.to_s16(line.caller_at(caller, model, level))
        trials = await bench._trials(f"{model.name} speech", args.line_trials, args.concurrency, errors,
                                     lambda rng, m=model, s=speech: speech_trial(url, api_key, rng, m, s), args.seed)
        out["models"][model.name] = _model_summary(model, trials, [])
    return out


def clip_pair() -> tuple[np.ndarray, np.ndarray]:
    """(a gateway's voice, a caller's): the gate's two recordings at 8 kHz."""
    return voices.clip_pcm(line.RATE, voices.CLIP.with_name("low.ogg")), voices.clip_pcm(line.RATE)


def caller_side_cpu(cancel_echo: bool, calls: int, seconds: float = CPU_SECONDS, batched: bool = True,
                    yields: bool = False) -> float:
    """Per call, the share of a core ``CallerSide`` takes (the canceller, where on, and the VAD) hearing ``calls``
    calls on the target line (the gateway speaking, the caller over it from a third of the way in) frame by frame,
    back to back. ``batched``: every call's frame arrives at once and their due windows run as one batch
    (gateway/listen/tick.py: the most a pass of the event loop can gather); else each call's windows run alone
    (frames that never coincide). ``yields``: the gateway stops ``YIELD_S`` after the caller starts (barge-in's
    clear), so the canceller rests once the echo has died away."""
    model = next(m for m in line.MODELS if m.name == line.TARGET_MODEL)
    gateway, caller = clip_pair()
    n = round(seconds * line.RATE)
    gateway = np.resize(gateway, n)
    voice, start = np.zeros(n), n // 3
    if yields:
        gateway[start + round(YIELD_S * line.RATE):] = 0
    said = line.caller_at(caller, model, line.active_dbfs(gateway))[:n - start]
    voice[start:start + said.size] = said
    near = g711_encode(line.to_s16(line.echo_of(gateway, model) + voice).tobytes(), "pcm_mulaw")
    frame = voices.FRAME
    clock = [0.0]
    sides = [CallerSide("mulaw", line.RATE, VadConfig(), "vad", lambda: True, clock=lambda: clock[0],
                        cancel_echo=cancel_echo) for _ in range(calls)]
    spent = 0.0
    for i in range(0, n - frame + 1, frame):
        clock[0] = 100.0 + (i + frame) / line.RATE
        began = time.thread_time()
        for side in sides:
            if i == 0:
                side.played(100.0, gateway[:line.RATE], line.RATE)
            if i % (10 * frame) == 0:  # the outbox's 100 ms frames, sent a second ahead of their playout
                side.played(100.0 + i / line.RATE + 1.0, gateway[i + 8000:i + 8000 + 10 * frame], line.RATE)
            side.take(near[i:i + frame], 1000 * i / line.RATE)
            if not batched:
                hear_all([side])
        if batched:
            hear_all(sides)
        for side in sides:
            side.heard()
        spent += time.thread_time() - began
    return round(100 * spent / calls / (n / line.RATE), 2)


CPU_RUNS = (("canceller + VAD", True, True, False), ("canceller + VAD, the gateway yielding", True, True, True),
            ("VAD alone", False, True, False), ("VAD alone, each call's windows alone", False, False, False))


def cpu() -> dict[str, dict[str, float]]:
    return {name: {str(c): caller_side_cpu(on, c, batched=batched, yields=yields) for c in CPU_CALLS}
            for name, on, batched, yields in CPU_RUNS}


def met(lines: dict[str, Any], cpu_pct: dict[str, dict[str, float]]) -> dict[str, bool]:
    models = lines["models"]
    target, echo, double = models[line.TARGET_MODEL], models[line.TARGET_ECHO_MODEL], models[line.DOUBLE_TALK_MODEL]
    p50 = target["onset_to_clear_p50_ms"]
    return {
        "cleared_pct": target["trials"] > 0 and 100 * target["cleared_within_600_ms"] / target["trials"]
        >= TARGETS["cleared_pct"],
        "onset_to_clear_p50_ms": p50 is not None and p50 <= TARGETS["onset_to_clear_p50_ms"],
        "false_barge_ins_echo": echo["trials"] > 0 and echo["false_barge_ins"] == 0,
        "double_talk_cleared_pct": double["trials"] > 0 and 100 * double["cleared"] / double["trials"]
        >= TARGETS["double_talk_cleared_pct"],
        "caller_side_core_pct_16": _at_most_calls(cpu_pct["canceller + VAD"]) <= TARGETS["caller_side_core_pct_16"],
        "vad_core_pct_16": _at_most_calls(cpu_pct["VAD alone"]) <= TARGETS["vad_core_pct_16"]}


def _at_most_calls(figures: dict[str, float]) -> float:
    """The figure at the most calls measured."""
    return figures[max(figures, key=int)]


def _cell(r: dict[str, Any] | None) -> str:
    """One line model's figures in the table: false barge-ins on the echo alone, or a caller's clears."""
    if r is None:
        return "-"
    if r["kind"] == "echo":
        return f"false barge-ins {r['false_barge_ins']}/{r['trials']}"
    return (f"cleared {r['cleared']}/{r['trials']} ({r['cleared_within_600_ms']} <= 600 ms), "
            f"{bench._ms(r['onset_to_clear_p50_ms'])}/{bench._ms(r['onset_to_clear_p95_ms'])}")


def render(s: dict[str, Any]) -> list[str]:
    runs = s["runs"]
    names = list(runs)
    out = [f"phone lines (cbf_tools/bench/line.py), {s['trials']} trials each; the caller's level is relative to the "
           "gateway's speech as a caller gets it (" + ", ".join(f"{n}: {runs[n]['gateway_dbfs']:g} dBFS"
                                                                 for n in names) + ")",
           f"  {'line model':48s}" + "".join(f"{n:>44s}" for n in names)]
    for model in line.MODELS:
        cells = []
        for n in names:
            cells.append(_cell(runs[n]["models"].get(model.name, {"kind": "echo", "false_barge_ins": -1, "trials": 0})))
        out.append(f"  {model.name:48s}" + "".join(f"{c:>44s}" for c in cells))
    if any("webrtc" in runs[n] for n in names):
        out.append("  WebRTC peers on a loudspeaker (cbf_tools/peers/loudspeaker.py; the delay from when the peer "
                   "played it, the transport's buffers on top; onset -> interrupted at the peer)")
        for model in line.MODELS:
            if model.name not in WEBRTC_MODELS:
                continue
            cells = []
            for n in names:
                cells.append(_cell(runs[n].get("webrtc", {}).get(model.name)))
            out.append(f"  {'WebRTC ' + model.name:48s}" + "".join(f"{c:>44s}" for c in cells))
    out.append("  (speech: cleared, within 600 ms of the onset, onset -> clear p50/p95)")
    cpu_pct = s["cpu"]
    out.append("  caller's side CPU per call, in process, the target line, back to back, the calls' windows batched "
               "unless said: " + "; ".join(
        f"{name} " + ", ".join(f"{pct:.2f} % at {calls}" for calls, pct in figures.items())
        for name, figures in cpu_pct.items()))
    verdict = ", ".join(f"{k} {'met' if ok else 'NOT MET'}" for k, ok in s["met"].items())
    out.append(f"  targets ({line.TARGET_MODEL}, {line.TARGET_ECHO_MODEL}, double talk, canceller + VAD, VAD, "
               f"batched, at the most calls): {verdict}")
    return out
