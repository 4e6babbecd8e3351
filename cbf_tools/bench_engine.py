"""``chatterbox-fast bench engine``: time to first chunk, per-chunk generation time and real-time factor of a worker
over a fixed set of texts, and the join check (the pause at every seam against the punctuation it follows, clicks at
every join; ``join_check.py``). Prints a table and, last, one JSON line."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from dataclasses import asdict

import numpy as np

from engine.protocol import SAMPLE_RATE, EngineReady
from gateway.utterance_stream import UtteranceStats
from cbf_tools.join_check import Seam, seams, summary
from cbf_tools.say import speak, worker_client

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


def summarise(results: list[UtteranceStats], ready: EngineReady | None, joins: list[Seam]) -> dict:
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
    }


async def _bench(args: argparse.Namespace, engine_args: list[str]) -> dict:
    async with worker_client(engine_args + ["--log-level", "warning"], args.engine_url,
                             secret=args.engine_secret) as client:
        await speak(client, TEXTS[0], args.voice)  # warm-up
        results, joins = [], []
        for _ in range(args.runs):
            for text in TEXTS:
                pcm, spoken = await speak(client, text, args.voice)
                results.append(spoken)
                audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768
                found = seams(audio, SAMPLE_RATE, spoken.chunk_samples, spoken.chunk_texts)
                joins += found
                print(f"first chunk {spoken.first_chunk_s * 1000:7.1f} ms  total {spoken.total_s:6.2f} s  "
                      f"audio {spoken.audio_s:5.2f} s  rtf {spoken.rtf:6.1f}x  chunks "
                      f"{[len(t) for t in spoken.chunk_texts]}\n  {summary(found)}")
        return summarise(results, client.ready, joins)


def run(args: argparse.Namespace, engine_args: list[str]) -> int:
    print(json.dumps(asyncio.run(_bench(args, engine_args))))
    return 0
