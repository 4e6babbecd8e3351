"""The GPU measurement kit (``scripts/gpu-bench``): every Turbo figure in one process, written as JSON as it goes.

Phases, each adding to ``<out>/gpu-bench.json`` (so a run cut short still leaves what it measured):
  t3_step     ms per decode step, eager vs CUDA graph, per batch size (and upstream's eager loop at batch 1)
  prefill     a chunk's prefill with the voice prompt's keys and values reused vs prefilled again
  dispatch    aten operations the host dispatches per T3 step, prefill and S3Gen call (and per audio second;
              S3Gen eager and replayed from graphs)
  s3gen_batched  S3Gen ms per chunk, upstream's one call per chunk vs chunks batched across callers
  s3gen       S3Gen milliseconds per second of audio, per token length
  self_check  the warm-up as the server runs it: T3's and S3Gen's graphs captured and checked (or the fallback)
  s3gen_graphed  S3Gen ms per chunk, batched calls eager vs replayed from their bucket's CUDA graphs
  s3gen_compiled  (only with --compile MODE) S3Gen ms per chunk with both stages through torch.compile, and what
              compiling cost
  worker      through the real worker (planner, batched decode loop, joins, watermark) over its real protocol:
              time to first chunk at 1 and N concurrent streams, and the most concurrent streams with no underrun;
              and the first chunk's time and words under the default first-audio budget and larger ones
  placement   placement by fit on this host's cards: their memory, the need, the start's refusals, a reload over a
              list of an absent UUID and a present one (engine/gpu_kit/placement_phase.py)
  unload      a probe Turbo worker unloaded and reloaded on the card as --unload-after does it: the reload's time
              (the first utterance after it pays it), the memory the unload gave back (engine/gpu_kit/unload_phase.py)
Random weights are fine: they cost what the released model costs (and stop at a speech-like length).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from engine import protocol
from chatterbox.models.s3gen.const import S3GEN_SIL
from chatterbox.models.s3tokenizer import SPEECH_VOCAB_SIZE

from engine.engines.s3gen_batch import (
    EagerStages,
    FlowInputs,
    HiftInputs,
    Shape,
    VocodeRow,
    exact_shape,
    flow_stage,
    hift_stage,
    prepare,
    run,
    vocode_rows,
)
from engine.engines.s3gen_graphs import GraphedVocoder, Replay
from engine.engines.t3_batch import BatchDecoder, Join
from engine.engines.t3_sampling import Sampling
from engine.engines.t3_static import voice_prefix
from engine.engines.turbo import TurboEngine, TurboVoice
from engine.gpu_kit.op_count import LAUNCH_US, count_ops, launch_ms
from engine.gpu_kit.placement_phase import placement_figures
from engine.gpu_kit.unload_phase import unload_figures
from engine.settings import EngineSettings
from engine.text import count_words
from engine.startup_checks import Misconfigured, loading, preflight
from engine.watermark import Watermarker
from engine.worker import serve_worker, worker_for

SHORT_TEXTS = ("Hello there, thanks for calling.", "Sure, I can help with that right away.",
               "Your order shipped this morning.", "Let me check that for you, one moment please.")
PARAGRAPH = ("Thanks for waiting. I looked at your account and the payment went through this morning, so the "
             "order is confirmed. It ships from our northern warehouse tomorrow and should reach you by Friday. "
             "You will get an email with the tracking number as soon as it leaves.")
FIRST_AUDIO_TEXT = ("Hello there, this is a streaming test of the real-time voice gateway. It should start speaking "
                    "before the text is complete.")
FIRST_AUDIO_LATENCIES: tuple[str | float, ...] = ("balanced", 0.25, "prosody")  # the default, then larger budgets
UNDERRUN_SLACK_S = 0.02  # a chunk this late after the previous one ran out is still heard as continuous


class Figures:
    """The JSON file, rewritten after every phase."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {}
        self.failed: list[str] = []
        self.started = time.monotonic()

    def phase(self, key: str, measure: Callable[[], Any]) -> Any:
        """Run one phase and add what it returns under ``key``; a phase that raises adds ``{"error": ...}`` there
        (its traceback goes to the log) and the kit goes on with the next one."""
        try:
            value = measure()
        except Exception as exc:
            traceback.print_exc()
            self.failed.append(key)
            value = {"error": f"{type(exc).__name__}: {exc}"}
        if value is not None:
            self.add(key, value)
        return value

    def add(self, key: str, value: Any) -> None:
        self.data[key] = value
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2))
        tmp.replace(self.path)
        print(f"== {key} (at {time.monotonic() - self.started:.1f} s): {json.dumps(value)}", flush=True)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, fn: Callable[[], Any], repeat: int) -> float:
    """Median seconds of ``fn`` over ``repeat`` runs (device work included)."""
    times = []
    for _ in range(repeat):
        sync(device)
        started = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def environment() -> dict[str, Any]:
    """Versions, driver and GPU: written first, before anything can fail."""
    env: dict[str, Any] = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda}
    for name in ("transformers", "numpy", "numba", "chatterbox"):
        try:
            env[name] = importlib.metadata.version("chatterbox-tts" if name == "chatterbox" else name)
        except importlib.metadata.PackageNotFoundError:
            env[name] = None
    if torch.cuda.is_available():
        env["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=20).stdout.strip() or None
    return env


def engine_facts(engine: TurboEngine) -> dict[str, Any]:
    return {"engine": engine.info.__dict__, "t3_parameters": sum(p.numel() for p in engine.t3.parameters()),
            "kv_capacity": engine.decoder.kv.capacity, "slots": engine.decoder.slots}


# ----- T3 -----

def t3_steps(engine: TurboEngine, voice: TurboVoice, batches: list[int], steps: int, graph: bool) -> dict[str, Any]:
    """ms per decode step with ``batch`` live slots (noise draws, the step, stop-flag reads every 4 steps), eager or
    replayed as CUDA graphs (each captured during the warm-up run, before its timed window)."""
    mode = "graph" if graph else "eager"
    result: dict[str, Any] = {}
    for batch in batches:
        seconds = time_steps(engine, voice, batch, graph, steps)
        result[f"{mode}_b{batch}_ms"] = round(1000 * seconds / steps, 3)
        result[f"{mode}_b{batch}_tokens_per_s"] = round(batch * steps / seconds, 1)
        gc.collect()  # a decoder and its graphs refer to each other: free their memory before the next one
        if engine.device.type == "cuda":
            torch.cuda.empty_cache()
    if not graph:
        result["upstream_inference_turbo_b1_ms"] = round(1000 * upstream_per_step(engine, voice, steps), 3)
    return result


def time_steps(engine: TurboEngine, voice: TurboVoice, batch: int, graph: bool, steps: int) -> float:
    """Seconds for ``steps`` decode steps of ``batch`` live slots, after as many steps of warm-up (and capture)."""
    decoder = BatchDecoder(engine.t3, batch, Sampling(max_tokens=2 * steps + 8))  # room for warm-up + timing
    if graph:
        from engine.engines.cuda_graphs import GraphedSteps

        decoder.run_step = GraphedSteps(decoder)
        decoder.noise_in_step = True  # as the engine decodes under graphs: the noise drawn inside the replay
    tokens = engine.tokenizer(SHORT_TEXTS[0], return_tensors="pt").input_ids
    for slot in range(batch):
        decoder.join(slot, engine._prefix(voice), tokens, torch.Generator(engine.device).manual_seed(slot), 10**6)

    def run() -> None:
        for i in range(steps):
            decoder.advance()
            if i % 4 == 3:
                decoder.stopped_slots()

    with torch.inference_mode():
        run()
        return timed(engine.device, run, 1)


def upstream_per_step(engine: TurboEngine, voice: TurboVoice, steps: int) -> float:
    """Seconds per decode step of upstream's ``T3.inference_turbo`` (a transformers forward and a host read-back per
    token): a run of ``steps`` tokens minus a run of none, so its prefill is not counted."""
    import copy

    tokens = engine.tokenizer(SHORT_TEXTS[0], return_tensors="pt").input_ids.to(engine.device)
    cond = copy.copy(voice.t3).to(device=engine.device, dtype=engine.dtype)

    def run(n: int) -> None:
        with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink), contextlib.redirect_stdout(sink):
            engine.t3.inference_turbo(copy.copy(cond), tokens, max_gen_len=n)

    with torch.inference_mode():
        run(steps)
        return (timed(engine.device, lambda: run(steps), 1) - timed(engine.device, lambda: run(0), 1)) / steps


def t3_concurrent(engine: TurboEngine, voice: TurboVoice, counts: list[int]) -> dict[str, Any]:
    """Aggregate T3 tokens/s with ``n`` chunks submitted at once to the engine's decode loop (S3Gen not included)."""
    result: dict[str, Any] = {}
    for n in counts:
        started = time.perf_counter()
        futures = [engine.submit_tokens(SHORT_TEXTS[i % len(SHORT_TEXTS)], voice, threading.Event(), time.monotonic())
                   for i in range(n)]
        tokens = sum(len(f.result()) for f in futures)
        seconds = time.perf_counter() - started
        result[str(n)] = {"tokens": tokens, "seconds": round(seconds, 3), "tokens_per_s": round(tokens / seconds, 1),
                          "most_live_slots": engine.loop.most_live}
    return result


def prefill(engine: TurboEngine, voice: TurboVoice, repeat: int) -> dict[str, Any]:
    """One chunk's prefill (text of SHORT_TEXTS[3]) with the voice prefix reused vs prefilled again."""
    tokens = engine.tokenizer(SHORT_TEXTS[3], return_tensors="pt").input_ids
    decoder, slot = BatchDecoder(engine.t3, 1), 0
    prefix = voice_prefix(engine.t3, decoder.body, voice.t3)
    gen = torch.Generator(engine.device)

    def run(reuse: bool) -> None:
        if reuse:
            decoder.join(slot, prefix, tokens, gen, budget=1)
        else:
            decoder.join_without_prefix(slot, voice.t3, tokens, gen, budget=1)
        decoder.leave(slot)

    with torch.inference_mode():
        run(True), run(False)
        reused, full = timed(engine.device, lambda: run(True), repeat), timed(engine.device, lambda: run(False), repeat)
        once = timed(engine.device, lambda: voice_prefix(engine.t3, decoder.body, voice.t3), repeat)
    return {"text_tokens": tokens.shape[1], "prompt_positions": prefix.length,
            "tokens_prefilled_reused": tokens.shape[1] + 1,
            "tokens_prefilled_full": prefix.length + tokens.shape[1] + 1,
            "reused_ms": round(1000 * reused, 2), "full_ms": round(1000 * full, 2),
            "voice_prefix_once_ms": round(1000 * once, 2)}


def s3gen(engine: TurboEngine, voice: TurboVoice, lengths: list[int], repeat: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for n in lengths:
        tokens = [int(t) for t in torch.randint(0, 6561, (n,))]
        engine.vocode(tokens, voice)
        seconds = timed(engine.device, lambda: engine.vocode(tokens, voice), repeat)
        audio_s = (n + 3) * 0.04
        result[f"tokens_{n}"] = {"ms": round(1000 * seconds, 1), "ms_per_audio_s": round(1000 * seconds / audio_s, 1)}
    return result


# ----- many callers: operations dispatched, S3Gen batched across callers -----

def upstream_vocode(engine: TurboEngine, tokens: list[int], voice: TurboVoice) -> torch.Tensor:
    """Upstream's ``S3Gen.inference`` on one chunk, as the engine called it before S3Gen was batched."""
    speech = torch.tensor(tokens + [S3GEN_SIL] * 3, device=engine.device)
    with torch.inference_mode(), open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), \
            contextlib.redirect_stderr(sink):
        return engine.s3gen.inference(speech_tokens=speech, ref_dict=dict(voice.gen), n_cfm_timesteps=2)[0]


def skipped_replays(stage: Callable[[], torch.Tensor]) -> tuple[Replay, torch.Tensor]:
    """A capture for counting only: the stage runs once for its output's shape; its "replay" launches nothing."""
    return (lambda: None), stage()


def graphed_ops(engine: TurboEngine, counting: GraphedVocoder, tokens: list[int], voice: TurboVoice,
                batch: int) -> int:
    """Operations a call of ``batch`` chunks dispatches when its stages are replayed: the per-row work, counted, and
    one launch per replay (2)."""
    rows = engine.vocode_inputs([(tokens, voice)] * batch)
    shape = counting.buckets.holding(exact_shape(rows))
    if shape is None:
        return -1  # past the largest bucket: eager
    counting.capture_bucket(shape)
    ops, _ = count_ops(lambda: counting(rows))
    return ops + 2


def s3gen_graphed(engine: TurboEngine, voice: TurboVoice, batches: list[int], lengths: list[int],
                  repeat: int) -> dict[str, Any]:
    """S3Gen ms per chunk replayed from its bucket's graphs (after the start-up self-check) beside the same calls
    eager, and what capturing cost."""
    graphs = engine.vocoder_graphs
    if graphs is None or engine.vocoder is not graphs:
        return {"skipped": engine.info.vocode_fallback or "S3Gen's graphs are off (no CUDA, or --vocode eager)"}
    result: dict[str, Any] = {k: v for k, v in (engine.vocode_check or {}).items() if k in ("graphs", "capture_s")}
    try:
        for n in lengths:
            items = [(random_tokens(n, n), voice)]
            per: dict[str, Any] = {}
            for batch in batches:
                for kind, vocoder in (("eager", lambda rows: vocode_rows(engine.s3gen, rows)), ("graphed", graphs)):
                    engine.vocoder = vocoder
                    engine.vocode_batch(items * batch)
                    seconds = timed(engine.device, lambda: engine.vocode_batch(items * batch), repeat)
                    per[f"{kind}_b{batch}_ms_per_chunk"] = round(1000 * seconds / batch, 2)
            result[f"tokens_{n}"] = per
    finally:
        engine.vocoder = graphs
    result["eager_calls_past_the_largest_bucket"] = graphs.eager_calls
    return result


class CompiledStages:
    """S3Gen's two stages through ``torch.compile`` (``fullgraph``: a graph break is an error, not a slow fragment),
    one static shape per call."""

    def __init__(self, s3gen: Any, backend: str, mode: str) -> None:
        options = {"backend": backend, "fullgraph": True, "dynamic": False, "mode": None if mode == "default" else mode}
        self.s3gen = s3gen
        self._flow = torch.compile(flow_stage, **options)
        self._hift = torch.compile(hift_stage, **options)

    def flow(self, shape: Shape, inputs: FlowInputs) -> torch.Tensor:
        return self._flow(self.s3gen, inputs)

    def hift(self, shape: Shape, mel: torch.Tensor, inputs: HiftInputs) -> torch.Tensor:
        return self._hift(self.s3gen, mel, inputs)


def s3gen_compiled(engine: TurboEngine, voice: TurboVoice, batches: list[int], tokens: int, repeat: int,
                   backend: str, mode: str) -> dict[str, Any]:
    """S3Gen ms per chunk with both stages compiled, at the bucket shapes S3Gen's graphs use (the exact shape past
    the largest), beside eager at the same shapes: the first call's seconds (compiling) and its largest difference
    from eager. ``torch.compile`` as the alternative to the captured graphs (issue 20); the graphs' figures for the
    same calls are in ``s3gen_graphed``."""
    s3gen = engine.s3gen
    kinds = {"eager": EagerStages(s3gen), "compiled": CompiledStages(s3gen, backend, mode)}
    items = [(random_tokens(tokens, tokens), voice)]
    result: dict[str, Any] = {"backend": backend, "mode": mode, "tokens": tokens}
    limit = torch._dynamo.config.recompile_limit
    torch._dynamo.config.recompile_limit = max(limit, 2 * len(batches))  # a shape per batch and stage
    try:
        for batch in batches:
            shape = engine.vocode_buckets.holding(exact_shape(engine.vocode_inputs(items * batch)))

            def call(kind: str) -> list[torch.Tensor]:
                torch.manual_seed(batch)  # every call the same rows, the same noise
                rows = engine.vocode_inputs(items * batch)
                return run(s3gen, prepare(s3gen, rows, shape or exact_shape(rows)), kinds[kind])

            eager = call("eager")
            started = time.perf_counter()
            compiled = call("compiled")
            sync(engine.device)
            first_s = time.perf_counter() - started
            per = {f"{kind}_ms_per_chunk": round(1000 * timed(engine.device, lambda: call(kind), repeat) / batch, 2)
                   for kind in kinds}
            result[f"b{batch}"] = {"first_call_s": round(first_s, 1), **per,
                                   "max_abs_vs_eager": max(float((a - b).abs().max()) for a, b in zip(compiled, eager))}
    finally:
        torch._dynamo.config.recompile_limit = limit
    return result


def random_tokens(n: int, seed: int) -> list[int]:
    return torch.randint(0, SPEECH_VOCAB_SIZE, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def dispatch_counts(engine: TurboEngine, voice: TurboVoice, batches: list[int], s3gen_batches: list[int],
                    lengths: list[int]) -> dict[str, Any]:
    """Aten operations the host dispatches (engine/gpu_kit/op_count.py) per T3 step and per prefill at each of ``batches``,
    and per S3Gen call at each of ``lengths`` tokens: upstream's one chunk per call vs ``s3gen_batches`` chunks per
    call, eager and replayed from graphs (the per-row work plus one launch per replay; counted here with the replays
    skipped, so on any device); each also per second of audio, with the launch time it implies on a GPU (an
    estimate)."""
    text = engine.tokenizer(SHORT_TEXTS[3], return_tensors="pt").input_ids
    prefix = engine._prefix(voice)
    counting = GraphedVocoder(engine.s3gen, engine.vocode_buckets, skipped_replays)
    result: dict[str, Any] = {"launch_us_assumed": list(LAUNCH_US)}
    with torch.inference_mode():
        for batch in batches:
            decoder = BatchDecoder(engine.t3, batch, Sampling(max_tokens=16))
            joins = [count_ops(lambda slot=slot: decoder.join(slot, prefix, text, torch.Generator(engine.device),
                                                              10**6))[0] for slot in range(batch)]
            step, _ = count_ops(decoder.advance)
            together = BatchDecoder(engine.t3, batch, Sampling(max_tokens=16))
            prefill, _ = count_ops(lambda: together.join_many(
                [Join(slot, prefix, text, torch.Generator(engine.device), 10**6) for slot in range(batch)]))
            result[f"t3_b{batch}"] = {"step": step, "per_audio_s": round(step * 25 / batch),
                                      "launch_ms_per_audio_s": launch_ms(round(step * 25 / batch)),
                                      "prefills_one_by_one": sum(joins), "prefill_together": prefill}
        for n in lengths:
            audio_s = (n + 3) * 0.04
            tokens = random_tokens(n, n)
            upstream, _ = count_ops(lambda: upstream_vocode(engine, tokens, voice))
            per = {"upstream_b1": upstream, "upstream_per_audio_s": round(upstream / audio_s),
                   "upstream_launch_ms": launch_ms(upstream)}
            for batch in s3gen_batches:
                ops, _ = count_ops(lambda: engine.vocode_batch([(tokens, voice)] * batch))
                per[f"batched_b{batch}"] = ops
                per[f"batched_b{batch}_per_audio_s"] = round(ops / (batch * audio_s))
                per[f"graphed_b{batch}"] = graphed_ops(engine, counting, tokens, voice, batch)
            result[f"s3gen_tokens_{n}"] = per
    return result


def batched_rows_check(engine: TurboEngine, voice: TurboVoice, batch: int, lengths: list[int]) -> dict[str, Any]:
    """A batch of ``batch`` chunks of mixed lengths against each chunk vocoded alone (same generator seed): the largest
    difference; on a CPU also against upstream's ``S3Gen.inference`` under ``torch.manual_seed`` (on CUDA upstream
    draws its sine phases from the CPU generator, so only the first comparison applies there)."""
    speech = [torch.tensor(random_tokens(lengths[i % len(lengths)], i) + [S3GEN_SIL] * 3) for i in range(batch)]

    def rows(indices: range) -> list[VocodeRow]:
        return [VocodeRow(speech[i], voice.gen, torch.Generator(engine.device).manual_seed(i)) for i in indices]

    together = vocode_rows(engine.s3gen, rows(range(batch)))
    alone = [vocode_rows(engine.s3gen, rows(range(i, i + 1)))[0] for i in range(batch)]
    result = {"batch": batch, "max_abs_vs_alone": max((a - b).abs().max().item() for a, b in zip(together, alone))}
    if engine.device.type == "cpu":
        upstream = []
        for i in range(batch):
            torch.manual_seed(i)
            upstream.append(upstream_vocode(engine, speech[i][:-3].tolist(), voice)[0])
        result["max_abs_vs_upstream"] = max((a - b).abs().max().item() for a, b in zip(together, upstream))
    result["peak_abs"] = max(a.abs().max().item() for a in alone)
    return result


def s3gen_batched(engine: TurboEngine, voice: TurboVoice, batches: list[int], lengths: list[int],
                  repeat: int) -> dict[str, Any]:
    """S3Gen ms per chunk: upstream's call per chunk (eager, one at a time) vs ``batch`` chunks in one call; and the
    rows of the largest batch checked against their solo runs."""
    result: dict[str, Any] = {"rows_check": batched_rows_check(engine, voice, max(batches), lengths)}
    for n in lengths:
        tokens = random_tokens(n, n)
        upstream_vocode(engine, tokens, voice)
        per = {"upstream_ms_per_chunk": round(1000 * timed(engine.device, lambda: upstream_vocode(
            engine, tokens, voice), repeat), 1)}
        for batch in batches:
            items = [(tokens, voice)] * batch
            engine.vocode_batch(items)
            seconds = timed(engine.device, lambda: engine.vocode_batch(items), repeat)
            per[f"batched_b{batch}_ms_per_chunk"] = round(1000 * seconds / batch, 1)
            per[f"batched_b{batch}_ms_per_audio_s"] = round(1000 * seconds / (batch * (n + 3) * 0.04), 1)
        result[f"tokens_{n}"] = per
    return result


# ----- through the worker -----

@dataclass
class Stream:
    """One listener: when each chunk arrived, and how long it plays."""

    started: float
    arrivals: list[tuple[float, float]] = field(default_factory=list)
    error: str | None = None
    first_text: str = ""  # what the first chunk spoke
    done: protocol.Done | None = None

    @property
    def first_chunk_s(self) -> float | None:
        return self.arrivals[0][0] - self.started if self.arrivals else None

    def underruns(self) -> tuple[int, float]:
        """Times playback ran dry after the first chunk, and the seconds of silence in all."""
        if not self.arrivals:
            return 0, 0.0
        count, silent = 0, 0.0
        play_end = self.arrivals[0][0] + self.arrivals[0][1]
        for arrived, duration in self.arrivals[1:]:
            if arrived > play_end + UNDERRUN_SLACK_S:
                count, silent = count + 1, silent + arrived - play_end
                play_end = arrived
            play_end += duration
        return count, silent


async def speak(path: str, text: str, latency: str | float | None = None) -> Stream:
    """One utterance over the engine protocol (its own connection, as one gateway would), with ``latency``."""
    from websockets.asyncio.client import unix_connect

    async with unix_connect(path, max_size=None) as ws:
        await ws.recv()  # ready
        uid = uuid.uuid4().hex
        stream = Stream(time.monotonic())
        for message in (protocol.Start(uid, latency=latency), protocol.Text(uid, text), protocol.End(uid)):
            await ws.send(protocol.encode(message))
        async for frame in ws:
            event = protocol.decode_event(frame)
            if isinstance(event, protocol.Chunk):
                stream.arrivals.append((time.monotonic(), event.header.duration))
                stream.first_text = stream.first_text or event.header.text
            elif isinstance(event, protocol.Error):
                stream.error = event.code
                return stream
            elif isinstance(event, protocol.Done):
                stream.done = event
                return stream
    return stream


async def first_audio_budgets(path: str, repeats: int, text: str = FIRST_AUDIO_TEXT) -> dict[str, Any]:
    """The first chunk's time (p50) and length in words under the default first-audio budget and larger ones, for
    one text: what the default (engine/settings.py GPU_FIRST_AUDIO_TARGET_S) should be, measured."""
    figures: dict[str, Any] = {}
    for latency in FIRST_AUDIO_LATENCIES:
        streams = [await speak(path, text, latency) for _ in range(repeats)]
        firsts = [s.first_chunk_s for s in streams if s.first_chunk_s is not None]
        figures[str(latency)] = {
            "budget_s": streams[-1].done.first_audio_s if streams[-1].done else None,
            "first_chunk_p50_ms": round(1000 * percentile(firsts, 0.5)) if firsts else None,
            "first_chunk_words": count_words(streams[-1].first_text), "first_chunk_text": streams[-1].first_text,
            "errors": sum(s.error is not None for s in streams)}
    return figures


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(streams: list[Stream], wall_s: float) -> dict[str, Any]:
    firsts = [s.first_chunk_s for s in streams if s.first_chunk_s is not None]
    runs = [s.underruns() for s in streams]
    audio = sum(d for s in streams for _, d in s.arrivals)
    return {"streams": len(streams), "errors": sum(s.error is not None for s in streams),
            "first_chunk_p50_ms": round(1000 * percentile(firsts, 0.5)) if firsts else None,
            "first_chunk_p95_ms": round(1000 * percentile(firsts, 0.95)) if firsts else None,
            "first_chunk_max_ms": round(1000 * max(firsts)) if firsts else None,
            "streams_with_underrun": sum(count > 0 for count, _ in runs),
            "underrun_s": round(sum(silent for _, silent in runs), 3),
            "audio_s": round(audio, 2), "wall_s": round(wall_s, 2),
            "aggregate_rtf": round(audio / wall_s, 2) if wall_s > 0 else None}


async def through_worker(engine: TurboEngine, sock: Path, repeats: int, streams: list[int], paragraph: str,
                         deadline: float, report: Callable[[str, Any], None],
                         first_audio_text: str = FIRST_AUDIO_TEXT) -> None:
    settings = EngineSettings(engine="chatterbox-turbo", voices_dir=sock.parent / "voices")
    worker = await asyncio.to_thread(worker_for, engine, settings, Watermarker())
    stop = asyncio.Event()
    server = asyncio.create_task(serve_worker(worker, f"unix:{sock}", stop))
    try:
        while not sock.exists():
            await asyncio.sleep(0.05)
        path = str(sock)
        singles, started = [], time.monotonic()
        for i in range(repeats):
            singles.append(await speak(path, SHORT_TEXTS[i % len(SHORT_TEXTS)]))
        report("worker_1_stream", summary(singles, time.monotonic() - started))
        report("first_audio_budgets", await first_audio_budgets(path, repeats, first_audio_text))
        sweep: dict[str, Any] = {}
        held = 0
        for n in streams:
            if time.monotonic() > deadline:
                sweep["stopped"] = f"time budget spent before {n} streams"
                break
            if n > engine.decoder.slots:
                sweep["stopped"] = f"{n} streams exceed the {engine.decoder.slots} batch slots"
                break
            started = time.monotonic()
            if engine.device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(engine.device)
            result = await asyncio.gather(*(speak(path, paragraph) for _ in range(n)))
            sweep[str(n)] = summary(list(result), time.monotonic() - started)
            sweep[str(n)]["most_live_slots"] = engine.loop.most_live
            sweep[str(n)]["most_prefilled_together"] = engine.loop.most_joined
            if worker.synth.vocoder is not None and worker.synth.vocoder.sizes:
                sweep[str(n)]["most_vocoded_together"] = max(worker.synth.vocoder.sizes)
            if engine.device.type == "cuda":
                sweep[str(n)]["peak_vram_gib"] = round(torch.cuda.max_memory_allocated(engine.device) / 2**30, 2)
            report("worker_streams", sweep)
            if sweep[str(n)]["streams_with_underrun"] or sweep[str(n)]["errors"]:
                break
            held = n
        sweep["most_streams_without_underrun"] = held
        report("worker_streams", sweep)
    finally:
        stop.set()
        await server


# ----- main -----

def ints(value: str) -> list[int]:
    return [int(v) for v in value.split(",") if v]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--weights", default="random", choices=("random", "pretrained"))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--decode", default="auto", choices=("auto", "eager", "graph"))
    parser.add_argument("--vocode", default="auto", choices=("auto", "eager", "graph"))
    parser.add_argument("--batches", type=ints, default=[1, 8, 32], help="batch sizes for the T3 step timings")
    parser.add_argument("--steps", type=int, default=60, help="decode steps per timing")
    parser.add_argument("--concurrent", type=ints, default=[1, 8, 32], help="chunks decoded at once (T3 tokens/s)")
    parser.add_argument("--s3gen-tokens", type=ints, default=[25, 50, 100, 200])
    parser.add_argument("--s3gen-batches", type=ints, default=[1, 4, 8, 16], help="chunks per batched S3Gen call")
    parser.add_argument("--s3gen-batch-tokens", type=ints, default=[25, 50, 100], help="tokens per chunk, batched")
    parser.add_argument("--compile", default=None, metavar="MODE",
                        help="also time S3Gen through torch.compile in this mode (default, reduce-overhead, "
                             "max-autotune-no-cudagraphs...) at the smallest and largest --s3gen-batches and the "
                             "middle --s3gen-batch-tokens: minutes of compiling, so not in the one-call run")
    parser.add_argument("--compile-backend", default="inductor", help="torch.compile's backend (aot_eager: a CPU test)")
    parser.add_argument("--callers-only", action="store_true",
                        help="only the many-callers phases (dispatch counts, batched S3Gen): a CPU run of them")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--single-runs", type=int, default=10, help="sequential utterances for the 1-stream figure")
    parser.add_argument("--streams", type=ints, default=[8, 16, 32, 64, 96, 128], help="concurrent-stream sweep")
    parser.add_argument("--no-worker", action="store_true", help="skip the phase through the worker")
    parser.add_argument("--paragraph", default=PARAGRAPH, help="what each stream of the sweep says")
    parser.add_argument("--first-audio-text", default=FIRST_AUDIO_TEXT,
                        help="what the first-audio budget figures speak (each budget, --single-runs times)")
    parser.add_argument("--time-budget", type=float, default=400.0, help="seconds; the sweep stops past it")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Phases in this order: environment; load; every eager figure (before any CUDA graph is captured, so a failed
    capture cannot spoil them); the engine's warm-up with its CUDA-graph self-check; graph step timings; then what
    runs through the decode loop and the worker (its graphs all captured by then, none inside a timed window)."""
    args = parse(argv)
    deadline = time.monotonic() + args.time_budget
    args.out.mkdir(parents=True, exist_ok=True)
    figures = Figures(args.out / "gpu-bench.json")
    started = time.monotonic()
    figures.phase("environment", environment)
    try:  # the server's start-up checks: no weights, no CUDA, --decode graph off CUDA... are one sentence, exit 3
        settings = preflight(EngineSettings(engine="chatterbox-turbo", model_dir=args.model_dir, weights=args.weights,
                                            device=args.device, dtype=args.dtype, decode=args.decode,
                                            vocode=args.vocode),
                             "chatterbox-turbo")
        with loading(settings, on_gpu=True):
            engine = TurboEngine.load(settings.model_dir, weights=args.weights, device=args.device, dtype=args.dtype,
                                      decode=args.decode, vocode=args.vocode,
                                      slots=max(args.concurrent + ([] if args.no_worker else args.streams)))
    except Misconfigured as exc:
        print(f"engine.gpu_kit.turbo_bench: refusing to start: {exc}", file=sys.stderr)
        raise SystemExit(3) from None
    figures.add("load_s", round(time.monotonic() - started, 1))
    figures.phase("engine", lambda: engine_facts(engine))
    voice = engine.default_voice()
    cuda = engine.device.type == "cuda"
    figures.phase("dispatch", lambda: dispatch_counts(engine, voice, args.batches, args.s3gen_batches,
                                                      args.s3gen_batch_tokens))
    figures.phase("s3gen_batched", lambda: s3gen_batched(engine, voice, args.s3gen_batches, args.s3gen_batch_tokens,
                                                         args.repeat))
    if not args.callers_only:
        figures.phase("t3_step", lambda: t3_steps(engine, voice, args.batches, args.steps, graph=False))
        figures.phase("prefill", lambda: prefill(engine, voice, args.repeat))
        figures.phase("s3gen", lambda: s3gen(engine, voice, args.s3gen_tokens, args.repeat))
        figures.phase("self_check", lambda: self_check(engine))
        figures.phase("t3_step_graph", lambda: t3_steps(engine, voice, args.batches, args.steps, graph=True) if cuda
                      else {"skipped": "no CUDA device"})
        figures.phase("s3gen_graphed", lambda: s3gen_graphed(engine, voice, args.s3gen_batches,
                                                             args.s3gen_batch_tokens, args.repeat))
        figures.phase("t3_concurrent", lambda: t3_concurrent(engine, voice, args.concurrent))
    if args.compile:
        tokens = sorted(args.s3gen_batch_tokens)[len(args.s3gen_batch_tokens) // 2]
        figures.phase("s3gen_compiled", lambda: s3gen_compiled(
            engine, voice, sorted({min(args.s3gen_batches), max(args.s3gen_batches)}), tokens, args.repeat,
            args.compile_backend, args.compile))
    if not (args.no_worker or args.callers_only):
        with tempfile.TemporaryDirectory(prefix="cbf-bench-") as tmp:  # short: Unix socket paths are ~100 bytes
            figures.phase("worker", lambda: asyncio.run(through_worker(
                engine, Path(tmp) / "engine.sock", args.single_runs, args.streams, args.paragraph, deadline,
                figures.add, args.first_audio_text)))
    if cuda:
        figures.add("peak_vram_gib", round(torch.cuda.max_memory_allocated(engine.device) / 2**30, 2))
    figures.phase("placement", lambda: placement_figures(settings))  # after the peak: it loads a second engine
    figures.phase("unload", lambda: unload_figures(settings, speak))  # a probe worker unloaded and reloaded
    figures.phase("prompt_cache", engine.prompts.figures)
    figures.add("failed_phases", figures.failed)
    figures.add("total_s", round(time.monotonic() - started, 1))
    engine.loop.close()


def self_check(engine: TurboEngine) -> dict[str, Any]:
    """The engine's warm-up, as the server runs it before saying ready: with CUDA graphs, every bucket captured and
    the start-up self-check (what it compared, its figures, and the fallback to eager if it failed)."""
    started = time.monotonic()
    engine.warmup()
    return {"warmup_s": round(time.monotonic() - started, 2), "decode": engine.info.decode,
            "decode_fallback": engine.info.decode_fallback, "graphs_captured": len(engine.graphs.graphs)
            if engine.graphs else 0, **(engine.graph_check or {}),
            "vocode": engine.info.vocode, "vocode_fallback": engine.info.vocode_fallback,
            "vocode_check": engine.vocode_check}


if __name__ == "__main__":
    main()
