"""The adaptive "buffer-ratchet" chunk planner: where to cut an utterance's text, one chunk at a time. Pure.

Each chunk is generated whole, so its size trades latency against prosody (the model conditions on the whole chunk).
One invariant holds every choice: when a chunk is done, the audio buffered ahead of the listener must cover generating
the shortest chunks that could follow it (two minimal units, one after the other) plus a safety margin, by cautious
estimates (the cost model's upper bound on generation time, its lower bound on audio per character, or this
utterance's own speaking rate once heard). So:

- the first chunk (and the first after a drained buffer) is, with a first-audio budget, the longest best-ranked unit
  whose cautious generation time fits that budget (a whole clause on a fast engine the cost model knows); without one,
  or where no unit fits it, the shortest natural unit whose estimated audio covers making the next one: the minimum
  words on a fast engine, longer on a slow or unknown one, so the listener never waits for chunk 2. With open input and
  no such cut yet, it waits a little for more text;
- every later chunk is the longest prefix whose estimated generation fits in the buffered audio minus the margin and
  that keeps the invariant: the buffer grows while the engine outruns playback, and the chunks grow with it;
- where no cut can keep it, the chunk with the least predicted waiting (no wait now, if any chunk fits).

Among the cuts a rule allows, the best-ranked boundary wins (sentence > clause > phrase > word > inside a phrase, see
``engine.text``) if its chunk keeps ``snap_fraction`` of the longest; a cut inside a phrase only where nothing better
fits. Only a chunk that ends a sentence (or closed text) is normalised as a sentence, and only the chunk after it
starts with a capital: a fragment is never given a false sentence end.

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
from engine.text import WORD_JOINER, Boundary, BoundaryKind, count_words, find_boundaries, punc_norm, safe_cut


_ROUNDING_S = 1e-6  # so a chunk that fitted with zero spare at wake_at still fits when asked again at wake_at
_LEAD_POLL_S = 0.1  # how soon to look again when a client that reports its position is past the lead limit


_TYPICAL_WORD_CHARS = 8  # a long English word and its space, for text not sent yet (err long: it is a guess)
_RATE_RANGE = (0.03, 0.15)  # plausible speech, seconds per character: long silences or clipped audio say little
_LOOKAHEAD_UNITS = 2  # a chunk must leave audio to cover making this many minimal units after it, one by one


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
    # Audio generated ahead of what a client that reports its position has taken, beyond what the longest chunk
    # needs: past it, wait for the client (one that stopped reading, a turn queued behind another takes nothing), so
    # no utterance runs unboundedly ahead of its transport. A client that reads fast is never held back.
    max_lead_s: float = 10.0
    # First audio: the first chunk (and the first after a drained buffer) is the longest best-ranked unit whose cautious
    # generation time fits this many seconds, where one does; 0: off (the shortest natural unit, for slow engines).
    first_audio_target_s: float = 0.0
    # An engine slower than real time even at the longest chunk: hold first audio back until the rest of the text can
    # play through without a stall, instead of stuttering (``release_at``). Off: such an engine's listener waits
    # between chunks.
    hold_slow_start: bool = False
    # How fast the utterance is spoken (engine/speed.py stretches each chunk): its audio is 1/speed of what the model
    # made. The cost model learns the model's audio (what the text makes at speed 1); the buffer counts what plays.
    speed: float = 1.0

    def __post_init__(self) -> None:
        if self.first_chunk_min_words < 1 or self.first_chunk_max_words < 1:
            raise PlannerError("first_chunk_min_words and first_chunk_max_words must be >= 1", "bad_value")
        if self.max_chars < 1 or not 0 <= self.safety_margin_s < math.inf or not 0 <= self.snap_fraction <= 1:
            raise PlannerError("max_chars >= 1, a finite safety_margin_s >= 0, snap_fraction in [0, 1]", "bad_value")
        if not 0 < self.max_lead_s < math.inf:
            raise PlannerError("max_lead_s must be finite and > 0", "bad_value")
        if not 0 <= self.first_audio_target_s < math.inf:
            raise PlannerError("first_audio_target_s must be finite and >= 0", "bad_value")
        if not 0 < self.speed < math.inf:
            raise PlannerError("speed must be finite and > 0", "bad_value")


@dataclass(frozen=True)
class PlannedChunk:
    seq: int  # 0, 1, 2, ... within the utterance
    text: str  # normalised with punc_norm (as a sentence only where one starts/ends): what the engine speaks
    source: str  # the client's text this chunk covers, as sent (stripped of surrounding whitespace)
    boundary: BoundaryKind  # what kind of place the chunk ends at (joins choose their pause from it)
    estimate_s: float  # the cost model's cautious (upper) estimate of its generation time, as budgeted
    start: int = 0  # where ``source`` is in all the text appended to the planner (character offsets)
    end: int = 0


@dataclass(frozen=True)
class _Candidate:
    end: int
    kind: BoundaryKind
    estimate_s: float
    words: int  # spoken words in the chunk
    follow: tuple[int, ...]  # characters of the shortest chunks that could come next, in order (none: input over)


class ChunkPlanner:
    """Plans one utterance's chunks. All schedule state lives here, so nothing leaks between utterances."""

    def __init__(self, config: PlannerConfig, cost_model: CostModel) -> None:
        self.config = config
        self.cost_model = cost_model
        self._pending = ""  # text not yet planned; never starts with whitespace
        self._received = 0  # characters appended so far (_pending is always the last of them)
        self._closed: list[int] = []  # flush points: positions in _pending that chunks end at and never cross
        self._ended = False
        self._outstanding: PlannedChunk | None = None
        self._seq = 0
        self._delivered_s = 0.0  # audio generated so far
        self._played_s = 0.0  # audio the listener has heard (estimated or reported)
        self._clock: float | None = None  # when _played_s was last brought up to date; None before first audio
        self._taken_s: float | None = None  # audio the client has taken (reported); None: it does not report
        self._unit_since: float | None = None  # when a first chunk could first have been cut, had it covered
        self._spoken = (0, 0.0)  # characters generated and the audio they made: this utterance's speaking rate
        self._sentence_start = True  # the next chunk starts a sentence (the previous one ended one, or none came yet)
        self.wake_at: float | None = None  # when next_chunk returned None: call again by then even if nothing happens
        self._holding = False  # first audio is generated but held back (a slow engine: see release_at)
        self._first_ready: float | None = None  # when the held first audio was ready
        self.start_delay: float | None = None  # how long first audio was held back, once released
        self._generating_s = 0.0  # generation time of this utterance's chunks so far

    # Input -------------------------------------------------------------------------------------------------------
    def append(self, text: str) -> None:
        """Add text as it arrives (token by token is fine); it is only cut at complete boundaries."""
        if self._ended:
            raise PlannerError("text after the end of the utterance", "ended")
        self._received += len(text)
        self._pending += text if self._pending else text.lstrip()

    def flush(self) -> None:
        """Speak everything sent so far without waiting for more text; no chunk spans the flush point."""
        if self._pending.strip() and (not self._closed or self._closed[-1] < len(self._pending)):
            self._closed.append(len(self._pending))

    def end(self) -> None:
        """No more text will come for this utterance."""
        self._ended = True

    @property
    def ended(self) -> bool:
        """Whether the input has ended (``end``)."""
        return self._ended

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
        self._delivered_s += audio_seconds
        self._outstanding = None
        made = audio_seconds * self.config.speed  # the model's audio, before stretching
        self.cost_model.observe(len(planned.text), gen_time)
        self.cost_model.observe_audio(len(planned.text), made)
        self._spoken = (self._spoken[0] + len(planned.text), self._spoken[1] + made)
        self._generating_s += gen_time
        if self._clock is None and not self._holding:  # first audio: it plays from now, unless it must wait
            if self.config.hold_slow_start and self.slower_than_real_time():
                self._holding, self._first_ready = True, now
            else:
                self._clock = now

    def on_playout(self, played_seconds: float, now: float) -> None:
        """Client feedback: ``played_seconds`` of this utterance's audio have been taken by the listener as of ``now``
        (heard, on a paced transport; sent, on one the client reads at its own pace). The listener cannot have heard
        more, nor more than real time since the first audio allows; and the lead limit counts from it."""
        _check_seconds(played_seconds=played_seconds)
        # taken counts before the first audio plays too: a client reporting from the start holds the engine to the
        # lead from its first chunks (else every chunk planned before its first report after the first audio is free)
        self._taken_s = min(played_seconds, self._delivered_s)
        if self._clock is not None:
            self._advance(now)
            self._played_s = min(self._played_s, self._taken_s)

    @property
    def taken(self) -> float | None:
        """Seconds of this utterance's audio its client has taken (``on_playout``); None where it does not report."""
        return self._taken_s

    def buffered(self, now: float) -> float:
        """Seconds of generated audio still ahead of the listener at ``now``."""
        self._advance(now)
        return self._delivered_s - self._played_s

    # Holding first audio back (a slow engine) ---------------------------------------------------------------------
    @property
    def holding(self) -> bool:
        """First audio is generated and must not be sent yet: see ``release_at``."""
        return self._holding

    def slower_than_real_time(self) -> bool:
        """Whether the engine cannot make even the longest chunk faster than it plays, by cautious estimates. Never
        when this utterance's chunks so far came faster than real time: a longer chunk spreads the fixed cost wider
        still (and a cost model calibrated under other load may be far off)."""
        if self._spoken[1] / self.config.speed > self._generating_s:
            return False
        chars = self.config.max_chars
        return self._upper(chars) > self._audio_lower(chars)

    def release_at(self, now: float) -> float | None:
        """While first audio is held: when to let it go, so that the rest of the text known by ``now`` plays without a
        stall, generated from ``now`` in the longest chunks at the engine's pace: the learnt (cautious) one, or this
        utterance's own so far where that is slower (a cost model learnt on a faster engine, still catching up). None
        when nothing is held; ``now`` or earlier: at once.

        Each later chunk must be ready by the time playback reaches it: release + audio before it >= its end of
        generation, for every chunk; the latest of those, plus the safety margin."""
        if not self._holding:
            return None
        rest = len(self._pending.strip()) + (len(self._outstanding.text) if self._outstanding else 0)
        ready, before, release = now, self._delivered_s, -math.inf
        # this utterance's generation seconds per character so far
        own = self._generating_s / self._spoken[0] if self._spoken[0] else 0.0
        while rest > 0:
            chars = min(rest, self.config.max_chars)
            ready += max(self._upper(chars), own * chars)
            release = max(release, ready - before)
            before += self._audio_lower(chars)
            rest -= chars
        return max(now, release + self.config.safety_margin_s)

    def release(self, now: float) -> None:
        """The held audio goes to the listener now: playback starts."""
        if self._holding:
            self._holding, self._clock = False, now
            self.start_delay = now - (self._first_ready or now)

    # Planning ----------------------------------------------------------------------------------------------------
    def next_chunk(self, now: float, max_gen_s: float | None = None) -> PlannedChunk | None:
        """The next chunk to generate now, or None: wait for more text (see ``wake_at``), or everything is planned.

        ``max_gen_s`` caps a later chunk's estimated generation time on top of the buffer's budget: the worker sets it
        while other utterances share the device, so one long chunk cannot hold up another caller's first audio.
        """
        if self._outstanding is not None:
            raise PlannerError("the previous chunk has not been reported with on_generated", "chunk_outstanding")
        self.wake_at = None
        while self._pending.strip():
            cut = self._choose(now, max_gen_s)
            if cut is None:
                return None
            source = self._pending[: cut.end].strip().replace(WORD_JOINER, " ")
            start = self._received - len(self._pending)
            self._consume(cut.end)
            self._unit_since = None
            starts, self._sentence_start = self._sentence_start, cut.kind.ends_sentence
            text = punc_norm(source, starts_sentence=starts, ends_sentence=cut.kind.ends_sentence)
            if text:  # nothing speakable (stray quotes, say): skip it
                self._outstanding = PlannedChunk(self._seq, text, source, cut.kind, cut.estimate_s, start,
                                                 start + len(source))
                self._seq += 1
                return self._outstanding
        return None

    def _choose(self, now: float, max_gen_s: float | None) -> _Candidate | None:
        candidates = self._candidates()
        if self._holding:  # nobody listens yet: the most context per chunk (release_at waits for what it costs)
            if not candidates or (not self._closed and not self._ended and len(self._window()) <= self.config.max_chars):
                return None  # text still arriving may make this chunk longer: wait for it (or the release)
            return self._longest(candidates)
        ahead = self.buffered(now)
        # the client is far behind: wait for it to take more (before the drained-buffer case below: the playhead
        # runs on in real time, and a client that stopped reading would otherwise get a chunk each time it catches up)
        if self._taken_s is not None and (lead := self._delivered_s - self._taken_s - self.lead_limit()) > 0:
            self.wake_at = now + max(lead, _LEAD_POLL_S)
            return None
        if self._clock is None or ahead <= 0:  # nothing playing: first audio (again) as fast as the lookahead allows
            return self._shortest(candidates, now)
        units = self._units(candidates)
        if not units:  # too few words for a unit: only the end of closed text or the cap can force a cut
            return self._shortest(candidates, now)
        budget = ahead - self.config.safety_margin_s
        if max_gen_s is not None:
            budget = min(budget, max_gen_s)
        fitting = [c for c in units if c.estimate_s <= budget + _ROUNDING_S]
        safe = [c for c in fitting if self._slack(c, ahead) >= -_ROUNDING_S]
        if not safe:  # the buffer is too low to keep both promises: no wait now, and the most in hand for the next
            if fitting:  # (a predicted wait later may yet be planned away; one now is certain)
                return max(fitting, key=lambda c: self._slack(c, ahead))
            return min(units, key=lambda c: self._shortfall(c, ahead))
        chosen = self._longest(safe)
        if not self._closed and not self._ended and safe[-1] is candidates[-1] and self._could_grow(budget):
            spare = min(budget - chosen.estimate_s, self._slack(chosen, ahead))
            if spare > _ROUNDING_S:  # more text may arrive in time for a longer chunk: wait while the buffer allows
                self.wake_at = now + spare
                return None
        return chosen

    def lead_limit(self) -> float:
        """The most audio kept ahead of the listener: the longest chunk's cautious generation time (at most
        ``max_lead_s``: an unlearnt cost model's estimate can be far off; a smaller buffer only means shorter chunks),
        the safety margin, and ``max_lead_s``."""
        longest = min(self._upper(self.config.max_chars), self.config.max_lead_s)
        return longest + self.config.safety_margin_s + self.config.max_lead_s

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
        words = _prefix_words(self._pending, [b.end for b in cuts])
        ahead = self._lookahead()
        return [
            _Candidate(b.end, b.kind, self._upper(b.end), n, self._next_units(b.end, n, ahead))
            for b, n in zip(cuts, words)
        ]

    def _rate(self) -> float | None:
        """This utterance's speaking rate (audio seconds per character) once it has been heard, else None."""
        chars, seconds = self._spoken
        return min(max(seconds / chars, _RATE_RANGE[0]), _RATE_RANGE[1]) if chars and seconds else None

    def _upper(self, chars: int) -> float:
        """The cost model's cautious generation time, for text that speaks as long as this utterance's does.

        Generation time follows the audio made (speech tokens), and the cost model learnt it per character over
        this voice's earlier utterances: text that speaks slower than they did costs proportionally more.
        """
        rate = self._rate()
        scale = max(1.0, rate / self.cost_model.audio_per_char_s) if rate else 1.0
        return self.cost_model.upper(math.ceil(chars * scale)) if scale > 1.0 else self.cost_model.upper(chars)

    def _lookahead(self) -> list[tuple[int, int]]:
        """``(end, words before it)`` of every boundary within reach of a chunk and the one after it."""
        text = self._pending[: 2 * self.config.max_chars + 2]
        found = find_boundaries(text)
        return list(zip((b.end for b in found), _prefix_words(text, [b.end for b in found])))

    def _next_units(self, end: int, words: int, lookahead: list[tuple[int, int]]) -> tuple[int, ...]:
        """Characters of the shortest chunks that could follow a cut at ``end`` (``words`` before it), up to
        ``_LOOKAHEAD_UNITS`` of them; fewer where the input is over."""
        units: list[int] = []
        while len(units) < _LOOKAHEAD_UNITS:
            unit = self._next_unit(end, words, lookahead)
            if unit is None:
                break
            end, chars, words = unit
            units.append(chars)
        return tuple(units)

    def _next_unit(self, end: int, words: int, lookahead: list[tuple[int, int]]) -> tuple[int, int, int] | None:
        """``(end, characters, words before its end)`` of the shortest chunk that could follow a cut at ``end``.

        It has the minimum words and stops early at a flush point or the end of the input (None: nothing follows).
        Text not sent yet (open input) is taken to make a unit of typical length, or as long as what has arrived.
        """
        cap = self.config.max_chars
        start = len(self._pending) - len(self._pending[end:].lstrip())
        stop = next((p for p in self._closed if p > end), None)  # the next flush point, if any
        if stop is None and self._ended:
            stop = len(self._pending.rstrip())
        if stop is not None and stop <= start:
            return None
        minimum = self.config.first_chunk_min_words
        for boundary_end, boundary_words in lookahead:
            if boundary_end <= start:
                continue
            if boundary_end - start > cap or (stop is not None and boundary_end >= stop):
                break
            if boundary_words - words >= minimum:
                return boundary_end, boundary_end - start, boundary_words
        if stop is not None and stop - start <= cap:
            return stop, stop - start, words + minimum
        chars = min(cap, max(len(self._pending) - start, minimum * _TYPICAL_WORD_CHARS))
        return start + chars, chars, words + minimum

    def _shortest(self, candidates: list[_Candidate], now: float) -> _Candidate | None:
        """The shortest natural unit whose audio covers making the next one, snapped to the strongest boundary nearby.

        With nothing playing, the chunk's own generation time is the wait for (first) audio, so it is as short as it
        can be while its estimated audio still outlasts the estimated generation of the shortest chunk after it (plus
        the safety margin): the listener must not wait again for the second chunk. On a fast engine that is the
        minimum words; on a slow one (or one the cost model does not know yet) the chunk grows until it covers.
        """
        config = self.config
        units = self._units(candidates)
        if units:
            safe = [c for c in units if self._slack(c, 0.0) >= -_ROUNDING_S]
            if not safe:  # no cut so far covers the next chunk: the least waiting, first audio included...
                best = min(units, key=lambda c: self._shortfall(c, 0.0))
                if not self._closed and not self._ended and len(self._pending) <= config.max_chars:
                    # ...but text still arriving may hold a cut that does: wait for it at most as long as the
                    # listener would otherwise wait for the second chunk
                    if self._unit_since is None:
                        self._unit_since = now
                    deadline = self._unit_since - self._slack(best, 0.0)
                    if now < deadline:
                        self.wake_at = deadline
                        return None
                return best
            budgeted = [c for c in safe if c.kind >= BoundaryKind.WORD
                        and c.estimate_s <= config.first_audio_target_s + _ROUNDING_S]
            if budgeted:  # a fast engine: the best natural unit that still comes within the first-audio budget
                return self._longest(budgeted)
            least = max(config.first_chunk_min_words, safe[0].words)
            window = max(0, config.first_chunk_max_words - config.first_chunk_min_words)
            most = max(config.first_chunk_max_words, least + window)
            nearby = [c for c in safe if c.words <= most]
            if max(c.kind for c in nearby) < BoundaryKind.WORD:  # only cuts inside a phrase nearby: the next better
                reach = most + max(window, config.first_chunk_min_words)  # ...one within reach, never a whole sentence
                nearby = [c for c in safe if c.kind >= BoundaryKind.WORD and c.words <= reach][:1] or nearby
            strongest = max(c.kind for c in nearby)
            return next(c for c in nearby if c.kind == strongest)
        if candidates and (candidates[-1].kind == BoundaryKind.END or len(self._window()) > config.max_chars):
            return candidates[-1]  # too few words, but no more text can come within the cap
        return None

    def _units(self, candidates: list[_Candidate]) -> list[_Candidate]:
        """The cuts with at least the minimum words: chunks worth making while audio plays."""
        return [c for c in candidates if c.words >= self.config.first_chunk_min_words]

    def _slack(self, cut: _Candidate, ahead: float) -> float:
        """Buffered audio to spare, by cautious estimates, while the shortest chunks after ``cut`` are generated.

        Cutting here with ``ahead`` seconds buffered leaves ``ahead - generation + audio`` when the chunk is done;
        that must cover generating the next minimal unit plus the safety margin, or the listener waits for it, and
        what is left then (with that unit's audio) must cover the unit after it. The same invariant holds the first
        chunk (``ahead`` 0) and every later one.
        """
        margin = self.config.safety_margin_s
        buffer = max(0.0, ahead - cut.estimate_s) + self._audio_lower(cut.end)
        slack = math.inf
        for chars in cut.follow:
            generation = self._upper(chars)
            slack = min(slack, buffer - generation - margin)
            buffer = max(0.0, buffer - generation) + self._audio_lower(chars)
        return slack if cut.follow else buffer

    def _audio_lower(self, chars: int) -> float:
        """A cautious estimate of the seconds ``chars`` characters play for (at this utterance's speed)."""
        return self.cost_model.audio_lower(chars, self._rate()) / self.config.speed

    def _shortfall(self, cut: _Candidate, ahead: float) -> float:
        """Predicted waiting (margins included) if cut here: for this chunk, then for the next minimal unit."""
        return max(0.0, cut.estimate_s + self.config.safety_margin_s - ahead) + max(0.0, -self._slack(cut, ahead))

    def _longest(self, fitting: list[_Candidate]) -> _Candidate:
        """The longest fitting cut, snapped back to a stronger boundary if that keeps enough of its length, and never
        a cut inside a phrase where another fits."""
        floor = self.config.snap_fraction * fitting[-1].end
        near = [c for c in fitting if c.end >= floor]
        if max(c.kind for c in near) < BoundaryKind.WORD:
            near = fitting
        strongest = max(c.kind for c in near)
        return [c for c in near if c.kind == strongest][-1]

    def _window(self) -> str:
        """The pending text the next chunk may come from: up to the first flush point."""
        return self._pending[: self._closed[0]] if self._closed else self._pending

    def _could_grow(self, budget: float) -> bool:
        """Whether more text could make a longer chunk that still fits (open input only)."""
        size = len(self._pending.rstrip())
        return size < self.config.max_chars and self._upper(size + 1) <= budget

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


def _prefix_words(text: str, ends: list[int]) -> list[int]:
    """``count_words(text[:end])`` for each of the increasing ``ends`` (cuts fall between words: counts add up)."""
    counts, total, previous = [], 0, 0
    for end in ends:
        total += count_words(text[previous:end])
        counts.append(total)
        previous = end
    return counts


def _check_seconds(**values: float) -> None:
    for name, value in values.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise PlannerError(f"{name} must be a finite number of seconds >= 0, not {value!r}", "bad_value")
