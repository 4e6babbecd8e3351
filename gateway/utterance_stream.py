"""Consuming one engine utterance: its chunks in order, timed as the consumer takes them.

The one loop over an utterance's events, shared by the sessions (WebSocket, WebRTC), the HTTP speech endpoints and
the command-line tools, and the one stats type they report from.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

from engine.protocol import SAMPLE_RATE, Chunk, ChunkHeader, Done
from gateway.engine_link.failover import Utterance
from gateway.prompt_cache.utterances import CachedUtterance, Spoken
from gateway.metrics import Metrics


@dataclass
class UtteranceStats:
    """One utterance as its consumer saw it. Times are seconds on the consumer's clock from ``started``."""

    started: float
    first_chunk_s: float | None = None  # time to the first chunk taken
    total_s: float | None = None  # time to the engine's ``done``
    chunk_texts: list[str] = field(default_factory=list)
    chunk_gen_s: list[float] = field(default_factory=list)
    chunk_samples: list[int] = field(default_factory=list)  # each chunk's length: where the joins fall
    samples: int = 0
    done: Done | None = None  # the engine's summary
    cached: bool = False  # served from the prompt cache (gateway/prompt_cache/)

    @property
    def audio_s(self) -> float:
        return self.samples / SAMPLE_RATE

    @property
    def rtf(self) -> float:
        """Audio seconds delivered per second waited, first chunk included (what a client of this path gets)."""
        return self.audio_s / self.total_s if self.total_s else 0.0

    def on_chunk(self, header: ChunkHeader, samples: int, now: float) -> None:
        if self.first_chunk_s is None:
            self.first_chunk_s = now - self.started
        self.chunk_texts.append(header.text)
        self.chunk_gen_s.append(header.gen_time)
        self.chunk_samples.append(samples)
        self.samples += samples

    def on_done(self, done: Done, now: float) -> None:
        self.done = done
        self.total_s = now - self.started

    @property
    def engine_rtf(self) -> float | None:
        """Audio seconds per second of generation, from the engine's ``done``; None before it or without generation."""
        if self.done is None or self.done.gen_time <= 0:
            return None
        return self.done.audio / self.done.gen_time

    def summary(self) -> dict[str, Any]:
        """The figures of a ``done`` event (docs/protocol.md)."""
        done, rtf = self.done, self.engine_rtf
        return {
            "ttfa": round(self.first_chunk_s, 4) if self.first_chunk_s is not None else None,
            "audio_seconds": round(done.audio, 3) if done else 0.0,
            "chunks": done.chunks if done else 0,
            "gen_time": round(done.gen_time, 4) if done else 0.0,
            "rtf": round(rtf, 2) if rtf else None,
            "latency": done.latency if done else None,  # the preference that applied, and its first-audio budget
            "first_audio_s": done.first_audio_s if done else None,
            **({"start_delay": done.start_delay} if done and done.start_delay is not None else {}),
            **({"reload_s": done.reload_s} if done and done.reload_s is not None else {}),  # an unloaded model's reload
            **({"failovers": done.failovers, "failover_gap": done.failover_gap} if done and done.failovers else {}),
            **({"cached": True} if self.cached else {}),
        }


@dataclass(frozen=True)
class MetricsLabel:
    """Where a consumer's figures go: the gateway's metrics, under its transport's label."""

    metrics: Metrics
    transport: str


async def chunks(utterance: Utterance | Spoken, stats: UtteranceStats, *, to: MetricsLabel | None = None,
                 clock: Callable[[], float] = time.monotonic) -> AsyncIterator[Chunk]:
    """``utterance``'s chunks in order, each recorded in ``stats`` (and metrics) as the consumer takes it.

    Once the last is taken, ``stats.done`` holds the engine's summary. Raises ``EngineRequestError`` when the engine
    fails the utterance.
    """
    stats.cached = isinstance(utterance, CachedUtterance)
    async for event in utterance.events():
        if isinstance(event, Chunk):
            first = stats.first_chunk_s is None
            stats.on_chunk(event.header, len(event.pcm) // 2, clock())
            if to is not None:
                if first:
                    to.metrics.ttfa.labels(to.transport).observe(stats.first_chunk_s)
                to.metrics.chunk_gen.observe(event.header.gen_time)
            yield event
        else:
            stats.on_done(event, clock())
            if to is not None:
                if stats.engine_rtf is not None:
                    to.metrics.rtf.observe(stats.engine_rtf)
                to.metrics.utterances.labels(to.transport, "done").inc()
