"""A simulated engine and listener for the chunk planner: simulated clock, no sleeping.

The engine takes ``fixed_s + audio / rtf`` seconds per chunk and makes ``seconds_per_char`` of audio per character
(``SECONDS_PER_CHAR`` unless a test gives each text or voice its own speaking rate).
The listener plays in real time from the first audio; an underrun is any wait for audio after first audio. Underruns
are measured here from arrival times alone, independently of the planner's own bookkeeping.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.cost import CostModel
from engine.planner import ChunkPlanner, PlannedChunk, PlannerConfig

SECONDS_PER_CHAR = 0.065  # about 15 characters of English per second of speech


@dataclass(frozen=True)
class SimEngine:
    fixed_s: float
    rtf: float  # real-time factor: seconds of audio made per second of generation
    seconds_per_char: float = SECONDS_PER_CHAR  # speaking rate

    def audio_seconds(self, text: str) -> float:
        return len(text) * self.seconds_per_char

    def gen_time(self, text: str) -> float:
        return self.fixed_s + self.audio_seconds(text) / self.rtf


@dataclass
class Playback:
    """Arrival time and duration of each chunk's audio, and what a real-time listener hears of them."""

    arrivals: list[tuple[float, float]] = field(default_factory=list)

    def add(self, arrival: float, duration: float) -> None:
        self.arrivals.append((arrival, duration))

    @property
    def first_audio(self) -> float:
        return self.arrivals[0][0]

    def stalls(self) -> list[float]:
        """Seconds the listener waited before each chunk after the first (0 where the audio was there in time)."""
        waits, play_end = [], None
        for arrival, duration in self.arrivals:
            if play_end is not None:
                waits.append(max(0.0, arrival - play_end))
            play_end = max(arrival, play_end or 0.0) + duration
        return waits

    def underruns(self) -> int:
        return sum(1 for wait in self.stalls() if wait > 1e-9)


@dataclass
class Run:
    chunks: list[PlannedChunk]
    playback: Playback


def run_planner(
    engine: SimEngine,
    arrivals: list[tuple[float, str]],
    config: PlannerConfig | None = None,
    cost_model: CostModel | None = None,
    flush_at_end: bool = False,
) -> Run:
    """Drive a planner like the worker does. ``arrivals``: (time, text) pieces in time order, then the input ends.
    While the planner holds first audio back, chunks are kept and reach the listener together at ``release_at``."""
    planner = ChunkPlanner(config or PlannerConfig(), cost_model or CostModel())
    playback, chunks, now, i = Playback(), [], 0.0, 0
    held: list[float] = []  # durations of the chunks held back
    release: float | None = None  # when the held chunks go out, as last planned

    def release_by(t: float) -> None:
        nonlocal release
        if planner.holding and release is not None and release <= t:
            planner.release(release)
            for duration in held:
                playback.add(release, duration)
            held.clear()

    def deliver_until(t: float) -> None:
        nonlocal i
        while i < len(arrivals) and arrivals[i][0] <= t:
            planner.append(arrivals[i][1])
            i += 1
        if i == len(arrivals):
            if flush_at_end:
                planner.flush()
            planner.end()

    deliver_until(now)
    while not planner.finished:
        planned = planner.next_chunk(now)
        if planned is None:
            wakes = [t for t in (planner.wake_at, arrivals[i][0] if i < len(arrivals) else None,
                                 release if planner.holding else None) if t is not None]
            assert wakes, "the planner waits with no text to come and no wake-up time"
            now = max(now, min(wakes))
            release_by(now)
            deliver_until(now)
            continue
        gen = engine.gen_time(planned.text)
        release_by(now + gen)  # the held audio went out while this chunk was generated
        now += gen
        chunks.append(planned)
        deliver_until(now)
        planner.on_generated(planned, gen_time=gen, audio_seconds=engine.audio_seconds(planned.text), now=now)
        if planner.holding:
            held.append(engine.audio_seconds(planned.text))
            release = planner.release_at(now)
            release_by(now)
        else:
            playback.add(now, engine.audio_seconds(planned.text))
    release = now
    release_by(now)
    return Run(chunks, playback)


def run_fixed_chunks(engine: SimEngine, chunk_texts: list[str]) -> Playback:
    """A fixed splitter's chunks, all text known at once, generated back to back."""
    playback, now = Playback(), 0.0
    for text in chunk_texts:
        now += engine.gen_time(text)
        playback.add(now, engine.audio_seconds(text))
    return playback
