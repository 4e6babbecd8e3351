"""``chatterbox-fast bench barge-in``: how fast a phone caller talking over the gateway stops it, and whether anything
but speech does.

Every call is a simulated Twilio Media Stream (cbf_tools/peers/phone_callers.py: 20 ms mu-law frames at real time all call
long, the gateway's media played at real time, marks echoed, the time of every frame and clear recorded) driven by a
controller on ``WS /v1/stream?session=<callSid>`` that speaks a long text. The caller (cbf_tools/bench/caller_voices.py):

- speech trials: 1.0-3.0 s (at random) after the first audio it says the deploy gate's clip from its speech onset
  (t0: when its first frame went). Measured at the caller: onset to ``clear``, onset to the last voiced media frame it
  received; and the gateway's own ``reaction_ms`` (``interrupted``).
- echo trials: it never speaks, but sends back what it played, ``--echo-db`` quieter and 100-200 ms later.
- noise trials: it sends synthetic room noise at -45..-35 dBFS.
  For both: ``interrupted`` events and clears (false barge-ins), and ``speech_started`` (the VAD's false onsets).
- the VAD's CPU: Silero on the clip at 8 kHz in this process, per 32 ms window, back to back and paced at real time;
  and, when the bench started the server itself, the gateway process's CPU (psutil), the gateway silent, with no call,
  with a call whose caller is quiet (room noise), one whose caller talks, and that call's controller listening too.
- a slow listener: a call whose controller asks for the caller's audio (``listen`` pcm16) and never reads again,
  beside one with no listener and one with a listener that reads: first audio and pacing (media inter-arrival
  jitter, starved playout) at the caller.

Without ``--url`` it starts ``chatterbox-fast serve --engine espeak`` here; every trial uses the one server. Prints
the figures and, last, a JSON line (``--json``: only the JSON). Exit status 1 when a trial failed or a speech trial
got no clear, 2 when it could not run; missed targets are reported, not failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import httpx
import numpy as np
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException

from cbf_tools.bench import Summary, report
from cbf_tools.bench import caller_voices as voices
from cbf_tools.bench.engine import percentile
from cbf_tools.bench.procs import tree_cpu
from cbf_tools.peers.local_server import ServerFailed, local_server, quiet_client_logs
from cbf_tools.peers.phone_callers import PlayingStack, Voice, connect_call
from cbf_tools.peers.polling import until, within
from cbf_tools.peers.stopping_reader import stopping_socket
from gateway.listen.silero import SileroVad
from gateway.telephony.outbox import LEAD_S

TEXT = ("Thanks for calling the booking line. I can see your reservation for four people on Friday at noon, at the "
        "corner table by the window, and I have a note that one of your guests needs a high chair. Before I confirm "
        "it, let me read back the details so we are sure everything is right: the name on the booking, the phone "
        "number we should call if anything changes, and the card we hold it on. If any of that is wrong, just say so "
        "and I will fix it straight away. Otherwise I will send a confirmation message to your phone in a minute or "
        "two, and you will get a reminder the morning before.")
SPEECH_AFTER_S = (1.0, 3.0)  # the caller starts talking this long after the first audio, at random
ECHO_DELAY_S = (0.1, 0.2)  # after it played, at random
NOISE_DBFS = (-45.0, -35.0)
VOICED_DBFS = -55.0  # a media frame louder than this is voice, not silence
CLEAR_WAIT_S = 1.0  # past the clip's end, a speech trial waits this long for the clear
SETTLE_S = 0.3  # after the clear and ``interrupted``: anything sent late would show
LISTENERS = {"none": "no listener", "reading": "one that reads", "slow": "one that never reads"}
SLOW_ROUNDS = 2  # rounds of a call with each of LISTENERS, in turn (the order reversed every other round)
TARGETS = {"onset_to_clear_p50_ms": 250.0, "onset_to_clear_p95_ms": 350.0, "false_barge_ins_echo": 0,
           "false_barge_ins_noise": 0, "vad_core_pct": 1.0, "vad_paced_core_pct": 1.0}
SAME_FIRST_AUDIO_MS = 25.0  # a slow listener "changes nothing measurable": first audio within this of the other's,
SAME_JITTER_MS = 5.0  # jitter p95 within this, and no starved playout


class BenchError(Exception):
    """The bench could not place its calls."""


@dataclass
class Call:
    """One simulated call and its controller; ``events``: (monotonic s, event) as the controller read them."""

    stack: PlayingStack
    agent: ClientConnection
    events: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None

    def of(self, kind: str) -> list[tuple[float, dict[str, Any]]]:
        return [(at, e) for at, e in self.events if e["type"] == kind]

    async def speak(self) -> float:
        """The long text; returns when it went."""
        await self.agent.send(json.dumps({"type": "speak", "text": TEXT}))
        return time.monotonic()

    async def first_audio(self, timeout: float = 30.0) -> float:
        await until(lambda: bool(self.stack.arrived), timeout, "no audio reached the caller")
        return self.stack.arrived[0]

    async def hang_up(self) -> None:
        await self.stack.hang_up()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.agent.close(), 3)
        if self.reader is not None:
            self.reader.cancel()


async def _read(call: Call) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for frame in call.agent:
            if isinstance(frame, str):
                call.events.append((time.monotonic(), json.loads(frame)))


async def place_call(url: str, api_key: str | None, voice: Callable[[PlayingStack], Voice] | None = None,
                     listen: str | None = None, slow: bool = False, **params: str) -> Call:
    """A Twilio call (its caller saying ``voice(stack)``, else silence; ``params``: its <Parameter>s) and a controller
    attached by its callSid, asking for the caller's audio in ``listen``'s format where given, which reads every
    event, or (``slow``) never reads again (and has no permessage-deflate, which would shrink what it leaves
    unread)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    call_id = f"CA{uuid.uuid4().hex}"
    stack = await connect_call(url, "twilio", call_id, headers, **params, **({"key": api_key} if api_key else {}))
    if voice is not None:
        stack.voice = voice(stack)
    uri = url.replace("http", "ws", 1) + f"/v1/stream?session={call_id}&wait=10"
    try:
        if slow:
            agent = await connect(uri, additional_headers=headers, sock=await stopping_socket(url), max_queue=1,
                                  compression=None, close_timeout=1)
        else:
            agent = await connect(uri, additional_headers=headers, max_size=None)
        ready = json.loads(await asyncio.wait_for(agent.recv(), 15))
    except BaseException:
        await stack.hang_up()
        raise
    call = Call(stack, agent)
    if ready.get("type") != "ready":
        await call.hang_up()
        raise BenchError(f"the controller was not attached: {ready}")
    if listen is not None:
        await agent.send(json.dumps({"type": "listen", "format": listen}))
    if not slow:
        call.reader = asyncio.create_task(_read(call))
    return call


@dataclass
class SpeechTrial:
    onset_to_clear_ms: float | None  # None: no clear came
    onset_to_last_voiced_ms: float | None
    reaction_ms: float | None  # the gateway's, from ``interrupted``
    early_clears: int  # clears before the caller spoke


@dataclass
class QuietTrial:
    """An echo or noise trial: what the gateway did although the caller never spoke."""

    interrupted: int
    clears: int
    speech_started: int
    sent_dbfs: float | None  # what the caller sent (the echo, the noise), over its frames that were not silence
    played_dbfs: float | None  # the gateway's voice as the caller got it, over its voiced frames


def _voiced(stack: PlayingStack) -> list[tuple[float, bytes]]:
    """(arrival, frame) of the gateway's media frames that are voice, not silence."""
    return [(at, frame) for at, frame in zip(stack.arrived, stack.frames) if voices.mulaw_level(frame) > VOICED_DBFS]


async def speech_trial(url: str, api_key: str | None, rng: random.Random, clip: list[bytes]) -> SpeechTrial:
    speech = voices.Speech(clip, float("inf"))
    call = await place_call(url, api_key, lambda stack: speech)
    try:
        await call.speak()
        speech.starts_at = await call.first_audio() + rng.uniform(*SPEECH_AFTER_S)
        await until(lambda: speech.onset is not None, SPEECH_AFTER_S[1] + 1, "the clip did not start")
        t0 = speech.onset or 0.0
        await within(lambda: any(at >= t0 for at in call.stack.cleared_at) and bool(call.of("interrupted")),
                     len(clip) * voices.FRAME_S + CLEAR_WAIT_S)
        await asyncio.sleep(SETTLE_S)
        clears = [at for at in call.stack.cleared_at if at >= t0]
        voiced = [at for at, _ in _voiced(call.stack)]
        interrupted = call.of("interrupted")
        return SpeechTrial(
            round(1000 * (clears[0] - t0), 1) if clears else None,
            round(1000 * (voiced[-1] - t0), 1) if voiced else None,
            interrupted[0][1].get("reaction_ms") if interrupted else None,
            len(call.stack.cleared_at) - len(clears))
    finally:
        await call.hang_up()


async def quiet_trial(url: str, api_key: str | None, voice: Callable[[PlayingStack], Voice],
                      seconds: float) -> QuietTrial:
    meters: list[voices.Metered] = []

    def metered(stack: PlayingStack) -> voices.Metered:
        meters.append(voices.Metered(voice(stack)))
        return meters[-1]

    call = await place_call(url, api_key, metered)
    try:
        await call.speak()
        await call.first_audio()
        await asyncio.sleep(seconds)
        played = b"".join(frame for _, frame in _voiced(call.stack))
        return QuietTrial(len(call.of("interrupted")), call.stack.clears, len(call.of("speech_started")),
                          meters[0].dbfs, voices.mulaw_level(played) if played else None)
    finally:
        await call.hang_up()


def echo_voice(rng: random.Random, echo_db: float) -> Callable[[PlayingStack], voices.Echo]:
    delay = rng.uniform(*ECHO_DELAY_S)
    return lambda stack: voices.Echo(stack, delay, echo_db)


def noise_voice(rng: random.Random) -> Callable[[PlayingStack], voices.Looped]:
    noise = voices.room_noise(rng.uniform(*NOISE_DBFS), rng.choice((50.0, 60.0)),
                              np.random.default_rng(rng.getrandbits(32)))
    frames = voices.wire_frames(noise)
    return lambda stack: voices.Looped(frames)


@dataclass
class Pacing:
    """One call's outbound audio as its caller got it."""

    first_audio_ms: float  # speak sent -> first media frame at the caller
    jitter_p95_ms: float  # |inter-arrival - the previous frame's length|, past the first LEAD_S of audio
    jitter_max_ms: float
    starved_ms: float  # the caller's playout waited for audio
    audio_s: float
    caller_frames_dropped: int  # the listener's caller audio the gateway dropped (it did not read)


def pacing(stack: PlayingStack, spoke: float, dropped: int) -> Pacing:
    lengths = [len(frame) / stack.bytes_per_second for frame in stack.frames]
    deviations, starved, position, plays_until = [], 0.0, 0.0, stack.arrived[0]
    for i, (at, length) in enumerate(zip(stack.arrived, lengths)):
        if i and position > LEAD_S:
            deviations.append(abs(at - stack.arrived[i - 1] - lengths[i - 1]))
        starved += max(0.0, at - plays_until)
        plays_until = max(at, plays_until) + length
        position += length
    return Pacing(round(1000 * (stack.arrived[0] - spoke), 1),
                  round(1000 * percentile(deviations, 0.95), 1) if deviations else 0.0,
                  round(1000 * max(deviations, default=0.0), 1), round(1000 * starved, 1), round(position, 2),
                  dropped)


async def _caller_audio_dropped(http: httpx.AsyncClient) -> int:
    return (await http.get("/health")).json().get("caller_audio", {}).get("dropped", 0)


async def paced_call(url: str, api_key: str | None, http: httpx.AsyncClient, listener: str, noise: list[bytes],
                     seconds: float) -> Pacing:
    """A call whose caller's room noise (``noise``: it compresses as speech does, unlike silence) goes to ``listener``
    (one of LISTENERS) as PCM16; barge-in off, so nothing but pacing is at stake."""
    dropped = await _caller_audio_dropped(http)
    call = await place_call(url, api_key, lambda stack: voices.Looped(noise), None if listener == "none" else "pcm16",
                            listener == "slow", barge_in="off")
    try:
        spoke = await call.speak()
        await call.first_audio()
        await asyncio.sleep(seconds)
        return pacing(call.stack, spoke, await _caller_audio_dropped(http) - dropped)
    finally:
        await call.hang_up()


async def vad_cpu(pcm: np.ndarray, seconds: float, passes: int = 3) -> dict[str, float]:
    """Silero's CPU per 32 ms window at 8 kHz over the clip, as a share of one core: back to back (after a warm-up
    pass: the model stays in the caches), and paced as a call feeds it, one window every 32 ms for ``seconds`` (each
    window finds the caches as the rest of the machine left them)."""
    vad = SileroVad(voices.RATE)
    samples = (pcm / 32768).astype(np.float32)
    windows = [samples[i:i + vad.window_samples] for i in range(0, samples.size - vad.window_samples + 1,
                                                                 vad.window_samples)]
    window_s = vad.window_samples / vad.rate
    for window in windows:
        vad.probability(window)
    started = time.thread_time()
    for _ in range(passes):
        vad.reset()
        for window in windows:
            vad.probability(window)
    back_to_back = (time.thread_time() - started) / (passes * len(windows))
    vad.reset()
    paced, spent = [windows[i % len(windows)] for i in range(max(1, round(seconds / window_s)))], 0.0
    for window in paced:
        started = time.thread_time()
        vad.probability(window)
        spent += time.thread_time() - started
        await asyncio.sleep(window_s)
    return {"windows": passes * len(windows), "ms_per_window": round(1000 * back_to_back, 3),
            "core_pct": round(100 * back_to_back / window_s, 2), "paced_windows": len(paced),
            "paced_ms_per_window": round(1000 * spent / len(paced), 3),
            "paced_core_pct": round(100 * spent / len(paced) / window_s, 2)}


async def _sessions_gone(http: httpx.AsyncClient, within: float = 15.0) -> None:
    """Until the server holds no session (the trials' calls have closed), or ``within`` seconds."""
    deadline = time.monotonic() + within
    while (await http.get("/health")).json()["sessions"] and time.monotonic() < deadline:
        await asyncio.sleep(0.1)


async def process_cpu(url: str, api_key: str | None, pid: int, http: httpx.AsyncClient, clip: list[bytes],
                      room: list[bytes], seconds: float) -> dict[str, float]:
    """The gateway process's CPU (its own, not its engine worker's), each over ``seconds``, the gateway silent: with no
    call; with one whose caller is quiet (``room``: its room noise); with one whose caller talks (the clip, looped:
    the VAD at work, and the rest of the inbound path); and with that call's controller listening too (``listen``:
    every frame to it)."""
    async def spent() -> float:
        before = tree_cpu(pid)[0]
        await asyncio.sleep(seconds)
        return 100 * (tree_cpu(pid)[0] - before) / seconds

    await _sessions_gone(http)
    idle = await spent()
    call = await place_call(url, api_key, lambda stack: voices.Looped(room))
    try:
        quiet = await spent()
    finally:
        await call.hang_up()
    call = await place_call(url, api_key, lambda stack: voices.Looped(clip))
    try:
        talking = await spent()
        await call.agent.send(json.dumps({"type": "listen", "format": "native"}))
        await until(lambda: bool(call.of("caller_audio")), 10, "the listener got no caller audio")
        listened = await spent()
    finally:
        await call.hang_up()
    return {"window_s": seconds, "idle_core_pct": round(idle, 2), "quiet_call_core_pct": round(quiet, 2),
            "talking_call_core_pct": round(talking, 2), "listened_call_core_pct": round(listened, 2),
            "per_quiet_call_core_pct": round(quiet - idle, 2), "per_talking_call_core_pct": round(talking - idle, 2),
            "per_listener_core_pct": round(listened - talking, 2)}


def _stats(values: list[float | None]) -> dict[str, float | None]:
    got = [v for v in values if v is not None]
    return {"p50": percentile(got, 0.5) if got else None, "p95": percentile(got, 0.95) if got else None,
            "max": max(got) if got else None}


def _quiet_summary(trials: list[QuietTrial]) -> dict[str, Any]:
    def median(values: list[float | None]) -> float | None:
        got = [v for v in values if v is not None]
        return round(statistics.median(got), 1) if got else None

    return {"trials": len(trials), "false_barge_ins": sum(bool(t.interrupted or t.clears) for t in trials),
            "interrupted": sum(t.interrupted for t in trials), "clears": sum(t.clears for t in trials),
            "speech_started": sum(t.speech_started for t in trials),
            "sent_dbfs": median([t.sent_dbfs for t in trials]), "played_dbfs": median([t.played_dbfs for t in trials])}


async def _attempt(what: str, work: Awaitable[Any], errors: list[str]) -> Any:
    """``work``'s result, or None with why it failed in ``errors`` (one failed call does not lose the run)."""
    try:
        return await work
    except (BenchError, TimeoutError, OSError, WebSocketException, httpx.HTTPError) as exc:
        errors.append(f"{what}: {type(exc).__name__}: {exc}")
        return None


async def _trials(kind: str, count: int, concurrency: int, errors: list[str],
                  trial: Callable[[random.Random], Awaitable[Any]], seed: int) -> list[Any]:
    """``count`` trials, ``concurrency`` at a time, each with a random source of its own (reproducible by seed)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> Any:
        async with gate:
            return await _attempt(f"{kind} trial {i}", trial(random.Random(f"{seed}-{kind}-{i}")), errors)

    return [r for r in await asyncio.gather(*(one(i) for i in range(count))) if r is not None]


async def measure(url: str, api_key: str | None, pid: int | None, args: argparse.Namespace) -> dict[str, Any]:
    pcm = voices.clip_pcm()
    clip = voices.wire_frames(pcm)
    errors: list[str] = []
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
        (await http.get("/health")).raise_for_status()
        speech = await _trials("speech", args.trials, args.concurrency, errors,
                               lambda rng: speech_trial(url, api_key, rng, clip), args.seed)
        echo = await _trials("echo", args.trials, args.concurrency, errors, lambda rng: quiet_trial(
            url, api_key, echo_voice(rng, args.echo_db), args.call_seconds), args.seed)
        noise = await _trials("noise", args.trials, args.concurrency, errors, lambda rng: quiet_trial(
            url, api_key, noise_voice(rng), args.call_seconds), args.seed)
        slow: dict[str, list[Pacing]] = {name: [] for name in LISTENERS}
        room = voices.wire_frames(voices.room_noise(NOISE_DBFS[1], 50.0, np.random.default_rng(args.seed)))
        for r in range(SLOW_ROUNDS):
            for name in list(LISTENERS)[::1 if r % 2 == 0 else -1]:
                paced = await _attempt(f"{name} listener call {r}", paced_call(
                    url, api_key, http, name, room, args.call_seconds), errors)
                slow[name] += [paced] if paced else []
        process = await _attempt("process CPU", process_cpu(
            url, api_key, pid, http, clip, room, args.call_seconds), errors) if pid else None
    vad = await vad_cpu(pcm, args.call_seconds)
    return summarise(args, "started" if pid else url, speech, echo, noise, slow, vad, process, errors,
                     {"seconds": round(len(clip) * voices.FRAME_S, 2), "active_dbfs": round(_active_dbfs(pcm), 1)},
                     time.monotonic() - started)


def _active_dbfs(pcm: np.ndarray) -> float:
    """The clip's level over its voiced frames."""
    frames = [pcm[i:i + voices.FRAME] for i in range(0, pcm.size - voices.FRAME + 1, voices.FRAME)]
    voiced = [f for f in frames if voices.dbfs(f) > voices.ONSET_DBFS]
    return voices.dbfs(np.concatenate(voiced)) if voiced else float("-inf")


def _median_pacing(runs: list[Pacing]) -> dict[str, float | None]:
    return {name: round(statistics.median(getattr(r, name) for r in runs), 2) if runs else None
            for name in Pacing.__dataclass_fields__}


def summarise(args: argparse.Namespace, server: str, speech: list[SpeechTrial], echo: list[QuietTrial],
              noise: list[QuietTrial], slow: dict[str, list[Pacing]], vad: dict[str, float],
              process: dict[str, float] | None, errors: list[str], clip: dict[str, float],
              seconds: float) -> dict[str, Any]:
    clear = _stats([t.onset_to_clear_ms for t in speech])
    pacing_of = {name: _median_pacing(runs) for name, runs in slow.items()}
    without, with_ = pacing_of["none"], pacing_of["slow"]
    echo_s, noise_s = _quiet_summary(echo), _quiet_summary(noise)
    met = {
        "onset_to_clear_p50_ms": clear["p50"] is not None and clear["p50"] <= TARGETS["onset_to_clear_p50_ms"],
        "onset_to_clear_p95_ms": clear["p95"] is not None and clear["p95"] <= TARGETS["onset_to_clear_p95_ms"],
        "false_barge_ins_echo": echo_s["false_barge_ins"] == 0 and len(echo) == args.trials,
        "false_barge_ins_noise": noise_s["false_barge_ins"] == 0 and len(noise) == args.trials,
        "vad_core_pct": vad["core_pct"] <= TARGETS["vad_core_pct"],
        "vad_paced_core_pct": vad["paced_core_pct"] <= TARGETS["vad_paced_core_pct"],
        "slow_listener": bool(slow["slow"] and slow["none"]
                              and abs(with_["first_audio_ms"] - without["first_audio_ms"]) <= SAME_FIRST_AUDIO_MS
                              and with_["jitter_p95_ms"] - without["jitter_p95_ms"] <= SAME_JITTER_MS
                              and with_["starved_ms"] == 0),
    }
    return {
        "bench": "barge-in", "server": server, "trials": args.trials, "concurrency": args.concurrency,
        "seed": args.seed, "call_seconds": args.call_seconds, "clip": clip,
        "speech": {"trials": len(speech), "cleared": sum(t.onset_to_clear_ms is not None for t in speech),
                   "early_clears": sum(t.early_clears for t in speech), "onset_to_clear_ms": clear,
                   "onset_to_last_voiced_ms": _stats([t.onset_to_last_voiced_ms for t in speech]),
                   "reaction_ms": _stats([t.reaction_ms for t in speech])},
        "echo": {**echo_s, "gain_db": args.echo_db, "delay_ms": [1000 * d for d in ECHO_DELAY_S]},
        "noise": {**noise_s, "dbfs": list(NOISE_DBFS), "synthetic": True},
        "vad_cpu": vad, "process_cpu": process,
        "slow_listener": {"rounds": SLOW_ROUNDS, **pacing_of},
        "targets": TARGETS, "met": met, "errors": errors, "seconds": round(seconds, 1),
        "loadavg_1m": round(os.getloadavg()[0], 2)}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _db(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} dBFS"


def render(s: dict[str, Any]) -> str:
    sp, echo, noise = s["speech"], s["echo"], s["noise"]
    verdict = {name: "met" if ok else "NOT MET" for name, ok in s["met"].items()}
    lines = [f"bench barge-in: {s['trials']} trials of each kind, {s['concurrency']} at a time, server "
             f"{s['server']}, {s['seconds']} s, load {s['loadavg_1m']}",
             f"speech: the gate clip ({s['clip']['seconds']} s, {s['clip']['active_dbfs']} dBFS active) 1-3 s into "
             f"the gateway's speech; {sp['cleared']}/{sp['trials']} cleared, {sp['early_clears']} clears before it",
             f"{'':34s}{'p50':>9s}{'p95':>9s}{'max':>9s}"]
    for key, name in (("onset_to_clear_ms", "onset -> clear (caller)"),
                      ("onset_to_last_voiced_ms", "onset -> last voiced frame (caller)"),
                      ("reaction_ms", "reaction_ms (gateway, interrupted)")):
        v = sp[key]
        lines.append(f"{name:34s}{_ms(v['p50']):>9s}{_ms(v['p95']):>9s}{_ms(v['max']):>9s}")
    lines += [f"  target: onset -> clear p50 <= {TARGETS['onset_to_clear_p50_ms']:.0f} ms "
              f"({verdict['onset_to_clear_p50_ms']}), p95 <= {TARGETS['onset_to_clear_p95_ms']:.0f} ms "
              f"({verdict['onset_to_clear_p95_ms']})",
              f"echo (the gateway's own voice back at {echo['gain_db']:g} dB, {echo['delay_ms'][0]:.0f}-"
              f"{echo['delay_ms'][1]:.0f} ms late; median {_db(echo['sent_dbfs'])} sent, the gateway's voice "
              f"{_db(echo['played_dbfs'])}): false barge-ins {echo['false_barge_ins']}/{echo['trials']} "
              f"({echo['interrupted']} interrupted, {echo['clears']} clears; {echo['speech_started']} speech_started)"
              f" - {verdict['false_barge_ins_echo']}",
              f"noise (synthetic: pink + brown noise and a mains hum, {noise['dbfs'][0]:g}..{noise['dbfs'][1]:g} "
              f"dBFS, median {_db(noise['sent_dbfs'])} sent): false barge-ins {noise['false_barge_ins']}/"
              f"{noise['trials']} ({noise['interrupted']} interrupted, {noise['clears']} clears; "
              f"{noise['speech_started']} speech_started) - {verdict['false_barge_ins_noise']}",
              f"VAD CPU (Silero, 8 kHz, in process), per 32 ms window, target <= {TARGETS['vad_core_pct']:g} % of a "
              f"core per call: back to back {s['vad_cpu']['ms_per_window']:.3f} ms = {s['vad_cpu']['core_pct']:.2f} % "
              f"({verdict['vad_core_pct']}); paced one per 32 ms as a call feeds it "
              f"{s['vad_cpu']['paced_ms_per_window']:.3f} ms = {s['vad_cpu']['paced_core_pct']:.2f} % "
              f"({verdict['vad_paced_core_pct']})"]
    if (p := s["process_cpu"]) is not None:
        lines.append(f"gateway process CPU, the gateway silent (over {p['window_s']:g} s each): idle "
                     f"{p['idle_core_pct']:.2f} %; a call whose caller is quiet (room noise) "
                     f"{p['quiet_call_core_pct']:.2f} % -> {p['per_quiet_call_core_pct']:.2f} % of a core per call; "
                     f"whose caller talks {p['talking_call_core_pct']:.2f} % -> "
                     f"{p['per_talking_call_core_pct']:.2f} %; "
                     f"its controller listening too {p['listened_call_core_pct']:.2f} % -> "
                     f"{p['per_listener_core_pct']:.2f} % more")
    else:
        lines.append("gateway process CPU: not measured (the bench did not start the server)")
    sl = s["slow_listener"]
    lines.append(f"slow listener: the caller's room noise as PCM16 to a controller, median of {sl['rounds']} calls "
                 f"each (barge-in off)")
    lines.append(f"  {'':36s}" + "".join(f"{label:>22s}" for label in LISTENERS.values()))
    for key, name in (("first_audio_ms", "first audio at the caller"), ("jitter_p95_ms", "media jitter p95"),
                      ("jitter_max_ms", "media jitter max"), ("starved_ms", "starved playout")):
        lines.append(f"  {name:36s}" + "".join(f"{_ms(sl[listener][key]):>22s}" for listener in LISTENERS))
    lines.append(f"  {'caller frames dropped, unread':36s}"
                 + "".join(f"{_count(sl[listener]['caller_frames_dropped']):>22s}" for listener in LISTENERS))
    lines.append(f"  target: one that never reads changes nothing measurable beside no listener (first audio within "
                 f"{SAME_FIRST_AUDIO_MS:g} ms, jitter p95 within {SAME_JITTER_MS:g} ms, no starved playout): "
                 f"{verdict['slow_listener']}")
    lines += [f"error: {e}" for e in s["errors"][:10]]
    return "\n".join(lines)


def render_all(s: dict[str, Any]) -> str:
    from cbf_tools.bench import barge_in_lines

    out = [render(s)] if "speech" in s else []
    if "lines" in s:
        out.append("\n".join(barge_in_lines.render(s["lines"])))
    return "\n".join(out)


async def _bench(args: argparse.Namespace) -> dict[str, Any]:
    from cbf_tools.bench import barge_in_lines as lines

    # the level rule's server is for the line models' comparison alone: with --line-trials 0 none is started for it
    servers = [("as configured", [])] if args.url else [("canceller", ["--echo-canceller", "true"]), ("level rule", [
        "--echo-canceller", "false"])][:1 + (args.line_compare and args.line_trials > 0)]
    summary: dict[str, Any] = {}
    runs: dict[str, Any] = {}
    errors: list[str] = []
    flags = ["--engine", "espeak", "--log-level", "warning", "--max-sessions", str(max(32, 4 * args.concurrency))]
    for i, (name, extra) in enumerate(servers):
        if args.url:
            url, pid, server = args.url.rstrip("/"), None, contextlib.nullcontext()
            api_key = args.api_key
        else:
            server, api_key = local_server(flags + extra, quiet=True), None
        with server as started:
            if started is not None:
                url, pid = started
            if i == 0 and not args.lines_only:
                summary = await measure(url, api_key, pid, args)
            if args.line_trials:
                runs[name] = await lines.measure(url, api_key, args, errors)
    if args.line_trials:
        cpu = lines.cpu()
        first = next(iter(runs.values()))
        summary["lines"] = {"trials": args.line_trials, "runs": runs, "cpu": cpu, "targets": lines.TARGETS,
                            "met": lines.met(first, cpu), "errors": errors}
        summary.setdefault("errors", []).extend(errors)
    return summary


def run(args: argparse.Namespace) -> int:
    if args.trials < 1 or args.concurrency < 1 or args.call_seconds <= 0:
        print("bench barge-in: --trials and --concurrency must be at least 1, --call-seconds above 0", file=sys.stderr)
        return 2
    quiet_client_logs()

    def failed(summary: Summary) -> bool:
        speech = summary.get("speech", {"cleared": 1, "trials": 1})  # (--lines-only: none)
        return bool(summary["errors"]) or speech["cleared"] < speech["trials"] or not speech["trials"]

    return report("barge-in", lambda: asyncio.run(_bench(args)),
                  (BenchError, ServerFailed, TimeoutError, OSError, WebSocketException, httpx.HTTPError), failed,
                  None if args.json else render_all)
