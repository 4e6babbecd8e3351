"""The adaptive "buffer-ratchet" chunk planner: where to cut an utterance's text, one chunk at a time. Pure.

Each chunk is generated whole, so its size trades latency against prosody (the model conditions on the whole chunk).
The first chunk is the shortest natural unit, so first audio comes fast. Every later chunk is the longest prefix of the
pending text whose estimated generation time fits inside the audio already buffered ahead of the listener, minus a
safety margin: the buffer grows while the engine outruns playback, and the chunks grow with it.

One planner per utterance; the worker drives it::

    while not planner.finished:
        planned = planner.next_chunk(now())          # call only when the engine is free to start it at once
        if planned is None:                          # wait for text/flush/end/playout, or until planner.wake_at
            ...
        else:
            audio, gen_time = generate(planned.text)
            planner.on_generated(planned, gen_time=gen_time, audio_seconds=len(audio) / rate, now=now())

Times are seconds on any monotonic clock the caller chooses. Without client feedback, playback is assumed to run in
real time from the arrival of the first audio, pausing whenever everything delivered has been played.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.cost import CostModel
from engine.text import Boundary, BoundaryKind, count_words, find_boundaries, punc_norm, safe_cut


_ROUNDING_S = 1e-6  # so a chunk that fitted with zero spare at wake_at still fits when asked again at wake_at


class PlannerError(ValueError):
    """Misuse of the planner. ``code`` is stable: ``ended``, ``chunk_outstanding``, ``unknown_chunk``, ``bad_value``."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class PlannerConfig:
    first_chunk_min_words: int = 3  # a chunk chosen for speed (first, after a drained buffer, or when nothing fits)
    first_chunk_max_words: int = 6  # ...snaps to the earliest sentence, else clause, end within this many words
    # (never fewer than first_chunk_min_words: a client may raise the minimum per utterance)
    max_chars: int = 300  # Turbo hallucinates past ~350 characters of input
    safety_margin_s: float = 0.3  # buffered audio to keep in hand when a chunk's generation ends
    snap_fraction: float = 0.5  # a stronger boundary wins if its chunk is at least this share of the longest that fits

    def __post_init__(self) -> None:
        if self.first_chunk_min_words < 1 or self.first_chunk_max_words < 1:
            raise PlannerError("first_chunk_min_words and first_chunk_max_words must be >= 1", "bad_value")
        if self.max_chars < 1 or not 0 <= self.safety_margin_s < math.inf or not 0 <= self.snap_fraction <= 1:
            raise PlannerError("max_chars >= 1, a finite safety_margin_s >= 0, snap_fraction in [0, 1]", "bad_value")


@dataclass(frozen=True)
class PlannedChunk:
    seq: int  # 0, 1, 2, ... within the utterance
    text: str  # normalised with punc_norm: what the engine speaks
    source: str  # the client's text this chunk covers, as sent (stripped of surrounding whitespace)
    boundary: BoundaryKind  # what kind of place the chunk ends at (joins choose their pause from it)
    estimate_s: float  # the cost model's cautious (upper) estimate of its generation time, as budgeted


@dataclass(frozen=True)
class _Candidate:
    end: int
    kind: BoundaryKind
    estimate_s: float


class ChunkPlanner:
    """Plans one utterance's chunks. All schedule state lives here, so nothing leaks between utterances."""

    def __init__(self, config: PlannerConfig, cost_model: CostModel) -> None:
        self.config = config
        self.cost_model = cost_model
        self._pending = ""  # text not yet planned; never starts with whitespace
        self._closed: list[int] = []  # flush points: positions in _pending that chunks end at and never cross
        self._ended = False
        self._outstanding: PlannedChunk | None = None
        self._seq = 0
        self._delivered_s = 0.0  # audio generated so far
        self._played_s = 0.0  # audio the listener has heard (estimated or reported)
        self._clock: float | None = None  # when _played_s was last brought up to date; None before first audio
        self.wake_at: float | None = None  # when next_chunk returned None: call again by then even if nothing happens

    # Input -------------------------------------------------------------------------------------------------------
    def append(self, text: str) -> None:
        """Add text as it arrives (token by token is fine); it is only cut at complete boundaries."""
        if self._ended:
            raise PlannerError("text after the end of the utterance", "ended")
        self._pending += text if self._pending else text.lstrip()

    def flush(self) -> None:
        """Speak everything sent so far without waiting for more text; no chunk spans the flush point."""
        if self._pending.strip() and (not self._closed or self._closed[-1] < len(self._pending)):
            self._closed.append(len(self._pending))

    def end(self) -> None:
        """No more text will come for this utterance."""
        self._ended = True

    @property
    def finished(self) -> bool:
        """True once the input has ended and every piece of it has been planned."""
        return self._ended and not self._pending.strip()

    # Feedback ----------------------------------------------------------------------------------------------------
    def on_generated(self, planned: PlannedChunk, *, gen_time: float, audio_seconds: float, now: float) -> None:
        """The engine finished ``planned``: its audio joins the buffer and its cost teaches the cost model."""
        if planned is not self._outstanding:
            raise PlannerError("on_generated for a chunk that is not the one being generated", "unknown_chunk")
        _check_seconds(gen_time=gen_time, audio_seconds=audio_seconds)
        self._advance(now)
        if self._clock is None:
            self._clock = now
        self._delivered_s += audio_seconds
        self._outstanding = None
        self.cost_model.observe(len(planned.text), gen_time)

    def on_playout(self, played_seconds: float, now: float) -> None:
        """Client feedback: ``played_seconds`` of this utterance's audio have been heard as of ``now``."""
        _check_seconds(played_seconds=played_seconds)
        if self._clock is not None:
            self._played_s = min(played_seconds, self._delivered_s)
            self._clock = max(self._clock, now)

    def buffered(self, now: float) -> float:
        """Seconds of generated audio still ahead of the listener at ``now``."""
        self._advance(now)
        return self._delivered_s - self._played_s

    # Planning ----------------------------------------------------------------------------------------------------
    def next_chunk(self, now: float) -> PlannedChunk | None:
        """The next chunk to generate now, or None: wait for more text (see ``wake_at``), or everything is planned."""
        if self._outstanding is not None:
            raise PlannerError("the previous chunk has not been reported with on_generated", "chunk_outstanding")
        self.wake_at = None
        while self._pending.strip():
            cut = self._choose(now)
            if cut is None:
                return None
            source = self._pending[: cut.end].strip()
            self._consume(cut.end)
            text = punc_norm(source)
            if text:  # nothing speakable (stray quotes, say): skip it
                self._outstanding = PlannedChunk(self._seq, text, source, cut.kind, cut.estimate_s)
                self._seq += 1
                return self._outstanding
        return None

    def _choose(self, now: float) -> _Candidate | None:
        candidates = self._candidates()
        ahead = self.buffered(now)
        if self._clock is None or ahead <= 0:  # nothing playing: first audio (again) as fast as possible
            return self._shortest(candidates)
        quickest = self._quickest(candidates)
        if quickest is None:  # too few words for a unit: only the end of closed text or the cap can force a cut
            return self._shortest(candidates)
        budget = ahead - self.config.safety_margin_s
        fitting = [c for c in candidates if quickest.end <= c.end and c.estimate_s <= budget + _ROUNDING_S]
        if not fitting:
            return quickest
        chosen = self._longest(fitting)
        if not self._closed and not self._ended and fitting[-1] is candidates[-1] and self._could_grow(budget):
            spare = budget - chosen.estimate_s
            if spare > 0:  # more text may arrive in time for a longer chunk: wait while the buffer allows
                self.wake_at = now + spare
                return None
        return chosen

    def _candidates(self) -> list[_Candidate]:
        """Where the pending text may be cut now, within the length cap and before the first flush point."""
        cap = self.config.max_chars
        window = self._window()
        cuts = [b for b in find_boundaries(window[: cap + 1]) if b.end <= cap]
        closed_end = len(window.rstrip())
        if self._closed or self._ended:
            cuts = [b for b in cuts if b.end < closed_end]
            if closed_end <= cap:
                cuts.append(Boundary(closed_end, BoundaryKind.END))
        if not cuts and len(window) > cap:
            cuts = [Boundary(safe_cut(window, cap), BoundaryKind.HARD)]
        return [_Candidate(b.end, b.kind, self.cost_model.upper(b.end)) for b in cuts]

    def _shortest(self, candidates: list[_Candidate]) -> _Candidate | None:
        """The shortest natural unit: at least the minimum words, snapped to the strongest boundary nearby."""
        config = self.config
        most = max(config.first_chunk_min_words, config.first_chunk_max_words)
        nearby = [c for c in candidates if config.first_chunk_min_words <= count_words(self._pending[: c.end]) <= most]
        if nearby:
            strongest = max(c.kind for c in nearby)
            return next(c for c in nearby if c.kind == strongest)
        quickest = self._quickest(candidates)  # the minimum words lie beyond the snap window
        if quickest is not None:
            return quickest
        if candidates and (candidates[-1].kind == BoundaryKind.END or len(self._window()) > config.max_chars):
            return candidates[-1]  # too few words, but no more text can come within the cap
        return None

    def _quickest(self, candidates: list[_Candidate]) -> _Candidate | None:
        """The earliest cut with the minimum words, unsnapped: the smallest chunk worth making while audio plays."""
        minimum = self.config.first_chunk_min_words
        return next((c for c in candidates if count_words(self._pending[: c.end]) >= minimum), None)

    def _longest(self, fitting: list[_Candidate]) -> _Candidate:
        """The longest fitting cut, snapped back to a stronger boundary if that keeps enough of its length."""
        floor = self.config.snap_fraction * fitting[-1].end
        near = [c for c in fitting if c.end >= floor]
        strongest = max(c.kind for c in near)
        return [c for c in near if c.kind == strongest][-1]

    def _window(self) -> str:
        """The pending text the next chunk may come from: up to the first flush point."""
        return self._pending[: self._closed[0]] if self._closed else self._pending

    def _could_grow(self, budget: float) -> bool:
        """Whether more text could make a longer chunk that still fits (open input only)."""
        size = len(self._pending.rstrip())
        return size < self.config.max_chars and self.cost_model.upper(size + 1) <= budget

    def _consume(self, end: int) -> None:
        rest = self._pending[end:]
        used = len(self._pending) - len(rest.lstrip())
        self._pending = rest.lstrip()
        self._closed = [p - used for p in self._closed if p - used > 0]

    def _advance(self, now: float) -> None:
        """Bring the playhead to ``now``: playback runs in real time but never past what was delivered."""
        if self._clock is not None and now > self._clock:
            self._played_s = min(self._delivered_s, self._played_s + (now - self._clock))
            self._clock = now


def _check_seconds(**values: float) -> None:
    for name, value in values.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise PlannerError(f"{name} must be a finite number of seconds >= 0, not {value!r}", "bad_value")
