"""``chatterbox-fast bench engine``: time to first chunk, per-chunk generation time and real-time factor of a worker
over a fixed set of texts, and the join check (the pause at every seam against the punctuation it follows, clicks at
every join; ``join_check.py``). Prints a table and, last, one JSON line.
With ``--unload-after S`` it measures the idle unload and the reload instead (``unload.py``).

With ``--engine http`` it also asks the TTS server for each whole text in one request, as a client of that server
alone would, and prints the time that took beside the ratchet's first chunk (``buffered_s``, ``speedup``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import threading
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Callable

import numpy as np

from engine.protocol import SAMPLE_RATE, EngineReady
from gateway.utterance_stream import UtteranceStats
from cbf_tools.bench import unload
from cbf_tools.join_check import Seam, seams, summary
from cbf_tools.say import speak, worker_client

if TYPE_CHECKING:
    from engine.settings import EngineSettings

TEXTS = (
    "Hello there, thanks for calling.",
    "Your appointment is confirmed for Tuesday at three in the afternoon. Is there anything else I can help with?",
    "Well [laugh] that is a very good question, and I am glad you asked it.",
    "The quarterly report shows steady growth across every region, with the strongest gains in the north. "
    "Operating costs fell slightly, while customer satisfaction reached its highest level in five years. "
    "We expect the trend to continue into next year, although supply constraints remain a risk.",
)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summarise(results: list[UtteranceStats], ready: EngineReady | None, joins: list[Seam],
              buffered: list[float] | None = None) -> dict:
    engine = asdict(ready) if ready else {}
    firsts = [r.first_chunk_s for r in results if r.first_chunk_s is not None]
    gens = [g for r in results for g in r.chunk_gen_s]
    audio, total = sum(r.audio_s for r in results), sum(r.total_s for r in results)
    return {
        "bench": "engine", "engine": engine.get("engine"), "device": engine.get("device"),
        "dtype": engine.get("dtype"), "weights": engine.get("weights"), "utterances": len(results),
        "first_chunk_p50_s": round(statistics.median(firsts), 4), "first_chunk_p95_s": round(percentile(firsts, 0.95), 4),
        "chunk_gen_p50_s": round(statistics.median(gens), 4), "chunk_gen_p95_s": round(percentile(gens, 0.95), 4),
        "chunks_per_utterance": round(len(gens) / len(results), 2),
        "rtf": round(audio / total, 2) if total else None,
        "joins": len(joins), "clicks": sum(j.click for j in joins),
        "pauses_off": sum(not j.pause_fits for j in joins),  # seams whose pause does not fit the punctuation
        **(_buffered_figures(results, buffered) if buffered else {}),
    }


def _buffered_figures(results: list[UtteranceStats], buffered: list[float]) -> dict:
    """The server's whole-text time against the ratchet's first audio, for the longest text (a paragraph)."""
    longest = max(range(len(TEXTS)), key=lambda i: len(TEXTS[i]))
    whole = [b for i, b in enumerate(buffered) if i % len(TEXTS) == longest]
    first = [r.first_chunk_s or 0.0 for i, r in enumerate(results) if i % len(TEXTS) == longest]
    delays = [r.done.start_delay for r in results if r.done and r.done.start_delay is not None]
    return {"paragraph_buffered_s": round(statistics.median(whole), 3),
            "paragraph_first_chunk_s": round(statistics.median(first), 3),
            "paragraph_speedup": round(statistics.median(whole) / max(statistics.median(first), 1e-6), 1),
            "start_delay_max_s": round(max(delays), 3) if delays else None}


def whole_text_timer(settings: EngineSettings, voice: str) -> Callable[[str], float] | None:
    """For ``--engine http``: seconds the server takes to answer ``text`` whole, in one request (its own buffering)."""
    if settings.engine != "http":
        return None
    from engine.engines.http import HttpEngine

    server = HttpEngine.from_settings(settings)
    server.warmup()
    conds = server.named_voices().get(voice.lower(), server.default_voice())

    def timed(text: str) -> float:
        t0 = time.monotonic()
        server.synthesize(text, conds, threading.Event())
        return time.monotonic() - t0

    return timed


async def _bench(args: argparse.Namespace, engine_args: list[str], settings: EngineSettings) -> dict:
    async with worker_client(engine_args + ["--log-level", "warning"], args.engine_url,
                             secret=args.engine_secret) as client:
        if settings.unload_after_s is not None:  # the idle unload's figures instead (cbf_tools/bench/unload.py)
            return await unload.measure(client, settings.unload_after_s, args.runs)
        await speak(client, TEXTS[0], args.voice)  # warm-up
        whole = whole_text_timer(settings, args.voice)
        results, joins, buffered = [], [], []
        for _ in range(args.runs):
            for text in TEXTS:
                pcm, spoken = await speak(client, text, args.voice)
                results.append(spoken)
                audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768
                found = seams(audio, SAMPLE_RATE, spoken.chunk_samples, spoken.chunk_texts)
                joins += found
                delay = spoken.done.start_delay if spoken.done else None
                print(f"first chunk {spoken.first_chunk_s * 1000:7.1f} ms  total {spoken.total_s:6.2f} s  "
                      f"audio {spoken.audio_s:5.2f} s  rtf {spoken.rtf:6.1f}x  chunks "
                      f"{[len(t) for t in spoken.chunk_texts]}"
                      + (f"  held back {delay:.2f} s" if delay else "") + f"\n  {summary(found)}")
                if whole is not None:
                    buffered.append(await asyncio.to_thread(whole, text))
                    print(f"  the server alone, whole text: first audio after {buffered[-1]:6.2f} s")
        return summarise(results, client.ready, joins, buffered)


def run(args: argparse.Namespace, engine_args: list[str], settings: EngineSettings) -> int:
    """``engine_args`` and ``settings``: the engine flags, as the worker's command line and as settings."""
    print(json.dumps(asyncio.run(_bench(args, engine_args, settings))))
    return 0
