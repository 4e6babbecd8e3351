"""One call's echo canceller: what the gateway sent on the call (the far end) taken back out of what the caller sends
(the near end), before any VAD decision.

The canceller is WebRTC's audio-processing module (AEC3, with its residual echo suppressor and double-talk handling)
through LiveKit's binding (gateway/listen/apm.py), 10 ms at a time. Measured against speexdsp's MDF
canceller on the same recordings through ``bench barge-in``'s line models (cbf_tools/bench/cancellers.py), it took
out far more echo and kept a double-talking caller as well.

The line's bulk delay (the echo's lag behind the far end as read) is measured by GCC-PHAT cross-correlation over the
latest ``HISTORY_S`` of both. AEC3 cancels best when it is told that delay (``DELAY_PAST_MS`` more) at its start,
and only then (told later, or started afresh mid-speech, it let more echo through than left alone): so a call's
first module finds it alone, and once the call has measured it the module is replaced, told it, at the next pause
in the gateway's speech. (Replacing it at once by a module told the delay that is first given the history, what
the module before it heard, was tried: its output is then, sample for sample, that of a module told the delay from
its start, yet on the bench's lines a caller talking over the gateway from its first 200 ms was cleared within
600 ms in 1 of 20 calls, against 15-16 of 20 with the module left to find the delay alone. Telling a new call what
recent calls measured was tried and left off: on the test server a delay measured on a call
with no echo made the next call's canceller hold back a loud caller; and a delay told longer than the line's lets
the echo through: the gateway stopped on its own voice.) Echo paths up to ``REACH_S`` are measured.

Alignment: each piece of the far end is recorded with when it plays (phone calls: the outbox's estimate; WebRTC:
the frame's time on the paced track's grid, when it is sent: the peer plays it after its jitter buffer and device,
and its microphone's frames reach us through our own receive buffer, so a WebRTC line's delay is the transport's
both ways and the room's, 0.33-0.36 s for an aiortc peer whose loudspeaker echoes 150 ms after it played, 0.36-0.41 s
for headless Chromium's), on the monotonic clock; each near-end frame comes with its stream time and when it
arrived. The stream clock is tied to ours by the earliest arrival seen (a frame can come late, never early), allowed
to creep by ``DRIFT`` a second (the carrier's clock and ours drift apart), so the far end read beside a
near-end frame is what played while it was being spoken: its echo comes later, by the line's round trip, within
reach of AEC3's delay estimator. Where what played has been silent (``SILENT``) for longer than the echo can come
back (``REACH_S``; once the line's delay is measured, that delay and ``TAIL_S``), as while the caller has their turn
or on a call no controller speaks on, the near end passes unchanged and the module is not run (no CPU): it holds
its state, both ends stopped at once, and goes on from it when what plays is loud again. A line that sent nothing back
while the gateway spoke its first ``NO_ECHO_S``, before anyone spoke, has no echo (a carrier that cancels its own, a
headset): whether what came was ``QUIET_DB`` below what played, or nothing came at all (a carrier that sends no
frames while nobody speaks, its silence suppressed: the call's first frame came only after the gateway had spoken
that long and the echo's reach). The canceller rests for the call (``echo_free``); AEC3 run on it held a caller who
talked over the gateway back (it never sees an echo to learn the line from).

A WebRTC peer (``guard_leaks``) plays what it gets after an adaptive jitter buffer of its own (Chromium's NetEq), which
moves the echo's delay during the call: it stretches and shortens what it plays a pitch period at a time, and drops
silence while the gateway's speech pauses. Measured under headless Chromium (tests/test_page_echo.py, the far and near
ends this canceller read): the delay held within 1 ms for the gateway's first 5-6 s, then shortened by 60-90 ms within
a second (388 -> 300 ms, 410 -> 321 ms; 488 -> 420 ms, 61 ms of it over a 0.25 s pause), every run. AEC3 finds a new
delay only from the echo itself: the first 100 ms or more of echo after such a step came out as loud as it went in,
long enough for the VAD to take it for the caller (the gateway stopped on its own voice), and after the 88 ms step it
had not found the echo again 5 s later. Such a line's canceller so (1) keeps measuring the delay (``_follow``): where
it moved, the read point moves with it, so the module finds the echo where it learnt it, or, where the echo came
sooner than the read point can go (the far end is not there yet), a new module starts, told the new delay; and (2)
checks what the module lets through against the far end (``_correlates``): output correlating with the far end at a lag
the echo may have now is the gateway's own voice, and is silenced. A phone line's far end is stamped with the outbox's
own playout estimate: neither runs there (the bench's lines gave the same figures with them or without).

Until the line's delay is ``sure`` (``SURE`` measures in a row agreed) or the line is echo free, AEC3 has not
converged and its suppressor held a caller talking over the gateway's first second back: the caller's side
(gateway/listen/caller.py) then hears the near end as it came (``raw``) by the level rule, except where it correlates
with the far end (``echoes``, ``RAW_ECHO_R``: a hot line's echo, louder than the level rule's margin allows); once it
is sure, likewise for a loud caller (its onset over the echo is attenuated by the suppressor).

Counted (``counts``): ``late_far`` (far-end samples that came after their time had been read: not cancelled),
``realigned`` (a near-end frame whose stream time jumped: the tie to our clock made afresh), ``resets`` (the module
diverged, its output louder than its input for ``DIVERGED_S``, or failed: a new one), ``delay_measures`` (the line's
delay measured with confidence), ``followed`` (the read point moved, or a module started afresh, as the delay moved),
``leaks`` (blocks of the module's output silenced as echo).
"""

from __future__ import annotations

from typing import Callable, Protocol

import numpy as np

from gateway.listen.apm import WebRtcApm

BLOCK_S = 0.01  # the module takes exactly 10 ms
FAR_S = 4.0  # far end held ahead of and behind the near end's read point
REACH_S = 0.6  # the far end counts for this long after it played (echo.py's reach: the longest echo path) ...
TAIL_S = 0.35  # ... or, once the line's delay is measured, for that delay and this more (the echo's tail, the
#                 playout estimate's jitter)
NO_ECHO_S = 0.6  # a line that sends nothing back while the gateway speaks this long has no echo: the canceller
QUIET_DB = 45.0  # rests for the call (nothing more than this far below what plays is something coming back)
LOUD = 330  # a far-end stretch this loud (RMS, -40 dBFS) is speech whose echo would be heard
SILENT = 32  # a far-end sample no louder than this (-60 dBFS) is silence: its echo is below anything heard
DRIFT = 0.002  # s/s: the stream clock's tie to ours may creep this fast (a carrier clock 0.2 % slow)
HEADROOM_S = 0.02  # the far end is read this much earlier still: its echo is never ahead of it (AEC3 needs that)
JUMP_S = 0.02  # the read point follows the tie; it jumps (counted) only when they part by more than this
GAP_S = 1.0  # a near-end frame this far from where the stream was: a discontinuity, the tie made afresh
DIVERGED_S = 0.5  # output louder than input (by DIVERGED_DB) this long: the module is reset
DIVERGED_DB = 6.0
HISTORY_S = 1.5  # far and near end kept for the delay measurement
MEASURE_EVERY_S = 0.5  # of far-end audio processed, until the delay is sure (SURE measures in a row agree)
SURE = 3
CONFIDENT = 8.0  # the correlation's peak over its mean magnitude: below this the measure is not taken
AGREE_MS = 10.0
PHAT_FLOOR = 1e-3  # GCC-PHAT weighs a frequency no more than this share of the loudest's magnitude below it: bands
#                    where neither end has anything (a phone band's echo at 16 kHz: nothing above 4 kHz) are noise
#                    that PHAT would raise to the level of the speech (its peak came out at lag 0 on a 300 ms line)
DELAY_PAST_MS = 20  # AEC3 is told the measured lag and this much more: it cancelled best so on every line tried
FOLLOW_EVERY_S = 0.25  # ``guard_leaks``' lines: the echo's lag measured again this often (of far end processed) ...
FOLLOW_NEAR_S = 0.5  # ... over this much of the latest near end (against the far end up to ``REACH_S`` before it)
FOLLOW_MIN_MS = 6.0  # the read point moves when two measures in a row put the lag this far from where it is held
FOLLOW_AHEAD_MS = 10.0  # the read point moves ahead (the echo came sooner) at most this far: further, it would read
#                         the far end before it was sent (HEADROOM_S is all it has): a module told the new lag instead
FOLLOW_KEEP_S = 0.25  # the far end stays in the ring this long after it was read (the read point may move back)
LEAK_S = 0.032  # the latest this much of the module's output is held against the far end (``leak``) ...
LEAK_EARLY_MS = 120.0  # ... at lags from this much under the line's measured delay (a peer's jitter buffer shortens
LEAK_LATE_MS = 60.0  # its playout by tens of ms at a time) to this much over it (all of ``REACH_S`` until sure):
RAW_ECHO_R = 0.65  # the near end as it came that correlates this well with the far end at a lag the echo may have
#                   (within reach until the delay is sure; then near it) is the echo (``echoes``)
LEAK_R = 0.5  # where it correlates this well with the far end at one of them, it is the gateway's own voice that
#              the module let through, not the caller: silenced


class Module(Protocol):
    """An echo canceller on 10 ms blocks of s16: ``far`` what plays, ``near`` what the microphone got."""

    def process(self, far: np.ndarray, near: np.ndarray, delay_ms: int) -> np.ndarray: ...


class EchoCanceller:
    """One call's canceller at ``rate`` (8 or 16 kHz s16); ``module(rate)`` makes the canceller proper."""

    def __init__(self, rate: int, module: Callable[[int], Module] = WebRtcApm, guard_leaks: bool = False) -> None:
        self.rate = rate
        self.guard_leaks = guard_leaks  # the echo's delay moves during the call: what the module lets through is
        #                                 checked against the far end (``_correlates``: a WebRTC peer's)
        self.block = round(rate * BLOCK_S)
        self._make = module
        self._module: Module | None = None
        self._module_hint = 0  # the delay the module was told at its start (ms)
        self._far = np.zeros(round(FAR_S * rate) * 2, dtype=np.int16)  # a ring, indexed by sample on our clock
        self._origin: float | None = None  # monotonic s of far index 0
        self._read = 0  # far index of the next sample the near end reads
        self._reading = False  # the near end has read
        self._loud_until = -1  # far index past the latest far-end sample read that was louder than ``SILENT``
        self._tie: float | None = None  # monotonic s - stream s: when stream time 0 was spoken, by our clock
        self._tied_at: float | None = None  # stream s of the latest near-end frame's end
        self._near = np.empty(0, dtype=np.int16)  # less than a block, waiting for the rest
        self._near_at = 0.0  # stream s of _near's first sample
        self._louder = 0  # blocks in a row whose output was louder than their input
        self.passed = True  # the latest near end came back unchanged (no far end in reach)
        self.raw = np.empty(0, dtype=np.int16)  # the latest near end as it came (what ``process`` cleaned)
        self._history = np.zeros((3, round(HISTORY_S * rate)), dtype=np.float32)  # far (as read), near, far (where
        #                                                                           it played): a ring of the latest
        self._history_at = 0  # where the next sample goes (the oldest now)
        self._unmeasured = 0  # samples processed since the delay was last measured
        self._agreeing = 0  # measures in a row that agreed
        self.delay_ms: int | None = None  # the line's delay as measured
        self.echo_free: bool | None = None  # the line sends nothing back (None: not known yet)
        self._quiet_far = 0  # far-end samples heard loud with nothing coming back
        self._recent = np.zeros((3, round((REACH_S + LEAK_S) * rate)), dtype=np.float32)  # far (as read), output,
        #                                                   near as it came: the latest, in order (``_correlates``)
        self._shift = 0  # samples the read point is ahead of where the far end played (``guard_leaks``: followed)
        self._held: int | None = None  # the lag (samples, as read) the read point holds the echo at
        self._moved: int | None = None  # the lag (samples, where the far end played) the latest measure found
        self._unfollowed = 0  # samples processed since the lag was last measured
        self.counts = {"late_far": 0, "realigned": 0, "resets": 0, "delay_measures": 0, "leaks": 0, "followed": 0}

    # The far end.

    def _index(self, at: float) -> int:
        if self._origin is None:
            self._origin = at - FAR_S
            self._read = round(FAR_S * self.rate)
        return round((at - self._origin) * self.rate)

    def played(self, start: float, pcm: np.ndarray) -> None:
        """s16 ``pcm`` the gateway sent plays from ``start`` (monotonic s)."""
        if not pcm.size:
            return
        first = self._index(start)
        skip = max(0, self._read - first)  # its time was read already
        ahead = first + pcm.size - (self._read + self._far.size // 2)  # past what the ring holds ahead
        self.counts["late_far"] += min(skip, pcm.size) + max(0, ahead)
        pcm = pcm[skip:pcm.size - max(0, ahead)]
        if not pcm.size:
            return
        first += skip
        slots = np.arange(first, first + pcm.size) % self._far.size
        self._far[slots] = pcm

    def clear(self, now: float) -> None:
        """What was to play after ``now`` was dropped (a barge-in)."""
        if self._origin is None:
            return
        start = max(self._index(now), self._read)
        end = self._read + self._far.size // 2
        if end > start:
            self._far[np.arange(start, end) % self._far.size] = 0

    # The near end.

    def process(self, pcm: np.ndarray, stream_s: float, arrived: float) -> tuple[float, np.ndarray]:
        """The caller's s16 ``pcm`` from stream time ``stream_s``, arrived (its end) at ``arrived`` (monotonic s):
        (the stream time it starts at, what of it is whole blocks, cleaned); what is left waits for the next frame.
        Where the far end is silent the samples come back as they were (``passed``: the latest did)."""
        end_s = stream_s + pcm.size / self.rate
        if self._near.size and abs(stream_s - (self._near_at + self._near.size / self.rate)) > GAP_S / 2:
            self._near = np.empty(0, dtype=np.int16)  # what waited is not this frame's start
        if self._tie is None and self.echo_free is None:
            self._nothing_came(arrived)
        self._tie_to(end_s, arrived)
        if not self._near.size:
            self._near_at = stream_s
        self._near = np.concatenate([self._near, pcm.astype(np.int16, copy=False)])
        blocks = self._near.size // self.block
        at = self._near_at
        if not blocks:
            self.raw = np.empty(0, dtype=np.int16)
            return at, self.raw
        take = blocks * self.block
        near, self._near = self._near[:take], self._near[take:]
        self._near_at += take / self.rate
        self.raw = near
        return at, self._cancel(near, at)

    def _nothing_came(self, arrived: float) -> None:
        """The call's first frame, ``arrived``: where the gateway had spoken ``NO_ECHO_S`` (loud) more than the echo's
        reach before it, the line sent nothing back while it did (a carrier that suppresses silence sends no frames
        until the caller speaks): it has no echo."""
        if self._origin is None:
            return
        start = self._read
        end = min(self._index(arrived - REACH_S), start + self._far.size // 2)
        blocks = (end - start) // self.block
        if blocks * BLOCK_S < NO_ECHO_S:
            return
        far = self._far[np.arange(start, start + blocks * self.block) % self._far.size]
        if np.count_nonzero(_energies(far, self.block) > self.block * LOUD ** 2) * BLOCK_S >= NO_ECHO_S:
            self.echo_free = True

    def _tie_to(self, end_s: float, arrived: float) -> None:
        tie = arrived - end_s
        jumped = self._tied_at is not None and abs(end_s - self._tied_at) > GAP_S
        if self._tie is None or jumped or tie < self._tie:
            self.counts["realigned"] += jumped
            self._reading = self._reading and not jumped  # the read point moves with the tie, counted once
            self._tie = tie
        else:
            self._tie = min(tie, self._tie + DRIFT * max(0.0, end_s - (self._tied_at or end_s)))
        self._tied_at = end_s

    def _cancel(self, near: np.ndarray, at_s: float) -> np.ndarray:
        assert self._tie is not None
        start = self._index(self._tie + at_s - HEADROOM_S) + self._shift
        if abs(start - self._read) > JUMP_S * self.rate:
            self.counts["realigned"] += self._reading
            if start > self._read:  # what lies between is not to be read a lap later
                skipped = np.arange(self._read, min(start, self._read + self._far.size))
                self._far[skipped % self._far.size] = 0
            self._read = start
        self._reading = True
        first, self._read = self._read, self._read + near.size
        slots = np.arange(first, self._read) % self._far.size
        far = self._far[slots].copy()
        played = far if not self._shift else self._far[(slots - self._shift) % self._far.size]
        keep = round(FOLLOW_KEEP_S * self.rate) if self.guard_leaks else 0  # behind the read point, where it may
        self._far[(slots - keep) % self._far.size] = 0  # move back: read, the slot is free for what plays a lap later
        loud = np.flatnonzero((far > SILENT) | (far < -SILENT))
        if loud.size:
            self._loud_until = first + int(loud[-1]) + 1
        self.passed = self._loud_until + self._reach() < first or self._no_echo(far, near)
        if self.passed:
            if self._module is not None and not self.settled and self.delay_ms is not None:
                self._module = None  # told the wrong delay: the next speech starts a module told this call's
            return near  # no far end within the echo's reach: nothing to take out
        self._measure(far, near, played)
        out = np.empty_like(near)
        for i in range(0, near.size, self.block):
            out[i:i + self.block] = self._block(far[i:i + self.block], near[i:i + self.block])
        self._watch(near, out)
        self._remember(far, out, near)
        if self.guard_leaks and self._correlates(1, within_delay=True):
            self.counts["leaks"] += 1
            return np.zeros_like(out)
        return out

    def echoes(self) -> bool:
        """Whether the latest near end as it came (``raw``) is the far end's echo: it correlates ``RAW_ECHO_R`` with the
        far end at a lag the echo may have (near the line's delay once it is sure; else any within reach). The caller's
        side judges the near end as it came where the level rule takes it for the caller and it is not this."""
        return not self.passed and self._correlates(2, within_delay=True, enough=RAW_ECHO_R)

    def _no_echo(self, far: np.ndarray, near: np.ndarray) -> bool:
        """Whether the line sends nothing back: the near end stayed ``QUIET_DB`` below the far end while the gateway
        spoke its first ``NO_ECHO_S``, before anyone spoke (once anything came back, it may be echo: never)."""
        if self.echo_free is None:
            far_energy, near_energy = _energies(far, far.size)[0], _energies(near, near.size)[0]
            if near_energy > far_energy * 10 ** (-QUIET_DB / 10) and near_energy > far.size * SILENT ** 2:
                self.echo_free = False
            elif far_energy > far.size * LOUD ** 2:
                self._quiet_far += far.size
                if self._quiet_far >= NO_ECHO_S * self.rate:
                    self.echo_free = True
        return bool(self.echo_free)

    @property
    def sure(self) -> bool:
        """The line's delay is measured with confidence (``SURE`` measures in a row agreed), or the line has no echo:
        until then AEC3 may not have converged, and its suppressor holds a caller talking over the gateway back (the
        caller's side judges the near end as it came, by the level rule, meanwhile: gateway/listen/caller.py)."""
        return bool(self.echo_free) or self._agreeing >= SURE

    def _remember(self, far: np.ndarray, out: np.ndarray, near: np.ndarray) -> None:
        recent, n = self._recent, out.size
        keep = min(n, recent.shape[1])
        recent[:, :-keep] = recent[:, keep:]
        recent[0, -keep:], recent[1, -keep:], recent[2, -keep:] = far[-keep:], out[-keep:], near[-keep:]

    def _correlates(self, row: int, within_delay: bool, enough: float = LEAK_R) -> bool:
        """Whether the latest ``LEAK_S`` of ``row`` (1: the module's output, 2: the near end as it came) is the far
        end's echo: it correlates (normalised, ``LEAK_R``) with the far end as read at a lag the echo may have now
        (``within_delay``, once the delay is sure: near the line's; else any within reach). Row 2, until the delay is
        sure: the caller's side hears the near end as it came, except where it is the echo (a hot line's, louder than
        the level rule's margin allows).

        Row 1, ``guard_leaks``: the module's leak after the echo's delay moved (the module docstring) is the far end's
        own signal, shifted:
        it correlated with it at the new lag 0.6-0.9 over 64 ms, where what the module left of the echo otherwise
        correlated 0.1-0.2; a caller's voice does not. Over 64 ms the check caught a leak that rose over 60-80 ms
        only once it was loud (the gateway stopped on its echo in 2 of 6 Chromium runs): over 32 ms, 2-3 frames
        sooner."""
        recent = self._recent
        size = round(LEAK_S * self.rate)
        heard = recent[row, -size:].astype(np.float64)
        power = float(heard @ heard)
        if power <= size * SILENT ** 2:
            return False
        reach = round(REACH_S * self.rate)
        if not within_delay or self.delay_ms is None or self._agreeing < SURE:  # (a first measure, taken while
            early, late = 0, reach  # nothing had come back yet, was 189 ms on a 396 ms line: the leak after it was
            #                         let through)
        else:
            early = max(0, round((self.delay_ms - LEAK_EARLY_MS) * self.rate / 1000))
            late = min(reach, round((self.delay_ms + LEAK_LATE_MS) * self.rate / 1000))
        reference = recent[0, recent.shape[1] - size - late:recent.shape[1] - early].astype(np.float64)
        if not reference.any():
            return False
        fft = 1 << int(np.ceil(np.log2(reference.size + size)))
        # correlation[i]: heard against reference[i:i + size], the far end ``late - i`` samples before it
        correlation = np.fft.irfft(np.fft.rfft(reference, fft) * np.conj(np.fft.rfft(heard, fft)), fft)
        correlation = correlation[:reference.size - size + 1]
        energy = np.cumsum(np.concatenate([[0.0], reference * reference]))
        energy = energy[size:] - energy[:-size]
        return bool(np.max(np.abs(correlation) / np.sqrt(energy * power + 1e-9)) >= enough)

    def _reach(self) -> float:
        """How long (samples) the far end's echo may come back after it played."""
        return (REACH_S if self.delay_ms is None else self.delay_ms / 1000 + TAIL_S) * self.rate

    def _block(self, far: np.ndarray, near: np.ndarray) -> np.ndarray:
        if self._module is None:
            self._module = self._make(self.rate)
            self._module_hint = 0 if self.delay_ms is None else self.delay_ms + DELAY_PAST_MS
        try:
            return self._module.process(far, near, self._module_hint)
        except (RuntimeError, ValueError):
            self._reset()
            return near

    def _watch(self, near: np.ndarray, out: np.ndarray) -> None:
        """A module whose output has been louder than its input for ``DIVERGED_S`` is reset."""
        energy_in, energy_out = _energies(near, self.block), _energies(out, self.block)
        louder = (energy_out > energy_in * 10 ** (DIVERGED_DB / 10)) & (energy_out > self.block * 100.0 ** 2)
        for block_louder in louder:
            self._louder = self._louder + 1 if block_louder else 0
            if self._louder * BLOCK_S >= DIVERGED_S:
                self._reset()

    @property
    def settled(self) -> bool:
        """The module (or the next one) is told the line's delay this call measured."""
        if self._module is None:
            return self.delay_ms is not None
        return self._module_hint > 0 and (
            self.delay_ms is None or abs(self.delay_ms + DELAY_PAST_MS - self._module_hint) <= AGREE_MS)

    def _measure(self, far: np.ndarray, near: np.ndarray, played: np.ndarray) -> None:
        """Keep both ends (until the delay is sure; ``guard_leaks``: throughout); now and then, the lag of the near
        end behind the far end (GCC-PHAT)."""
        if self._agreeing >= SURE and not self.guard_leaks:
            return
        self._keep(far, near, played)
        if self._agreeing >= SURE:
            self._follow(far.size)
            return
        self._unmeasured += far.size
        if self._unmeasured < MEASURE_EVERY_S * self.rate:
            return
        self._unmeasured = 0
        reference, heard, _ = np.roll(self._history, -self._history_at, axis=1)  # the oldest first
        lag = _lag(reference, heard, round(REACH_S * self.rate))
        if lag is None:
            return
        self.counts["delay_measures"] += 1
        delay_ms = round(lag * 1000 / self.rate)
        same = self.delay_ms is not None and abs(delay_ms - self.delay_ms) <= AGREE_MS
        self._agreeing = self._agreeing + 1 if same else 1
        self.delay_ms = delay_ms

    def _follow(self, processed: int) -> None:
        """``guard_leaks``, once the line's delay is sure: every ``FOLLOW_EVERY_S``, the lag of the latest
        ``FOLLOW_NEAR_S`` of the near end behind the far end where it played. Where two measures in a row agree on a
        lag ``FOLLOW_MIN_MS`` or more from where the echo is held (the delay measured), the read point moves by as
        much: the module goes on finding the echo where it learnt it. Where the echo now comes more than
        ``FOLLOW_AHEAD_MS`` sooner, the read point cannot go there (it would read the far end before it was sent:
        tried, it read zeros and the gateway stopped on its echo in 2 of 3 runs): a module starts afresh, told the new
        lag, the read point back where the far end played. (Chromium's jitter buffer shortened a line by 88 ms within
        a second, 6 s into the gateway's speech; AEC3 had not found the echo again 5 s later.)"""
        if self._held is None:
            assert self.delay_ms is not None
            self._held = round(self.delay_ms * self.rate / 1000)
        self._unfollowed += processed
        if self._unfollowed < FOLLOW_EVERY_S * self.rate:
            return
        self._unfollowed = 0
        reach, near_size = round(REACH_S * self.rate), round(FOLLOW_NEAR_S * self.rate)
        _, heard, reference = np.roll(self._history, -self._history_at, axis=1)
        lag = _lag(reference[-(near_size + reach):], heard[-near_size:], reach, late=True)
        agreed = lag is not None and self._moved is not None and abs(lag - self._moved) <= AGREE_MS * self.rate / 1000
        self._moved = lag
        if not agreed:
            return
        assert lag is not None
        shift = self._held - lag
        if abs(shift - self._shift) < FOLLOW_MIN_MS * self.rate / 1000:
            return
        self.counts["followed"] += 1
        if shift > FOLLOW_AHEAD_MS * self.rate / 1000:  # the module starts afresh, told the lag where it played
            self._module, self._held, shift = None, lag, 0
            self.delay_ms = round(lag * 1000 / self.rate)
        self._read += shift - self._shift
        self._shift = shift

    def _keep(self, far: np.ndarray, near: np.ndarray, played: np.ndarray) -> None:
        """Both ends into the history's ring (the latest ``HISTORY_S``): the far end as read, the near end, the far
        end where it played."""
        size, n = self._history.shape[1], far.size
        if n >= size:
            self._history[:, :] = far[-size:], near[-size:], played[-size:]
            self._history_at = 0
            return
        first = min(n, size - self._history_at)
        self._history[:, self._history_at:self._history_at + first] = far[:first], near[:first], played[:first]
        self._history[:, :n - first] = far[first:], near[first:], played[first:]
        self._history_at = (self._history_at + n) % size

    def _reset(self) -> None:
        self.counts["resets"] += 1
        self._module = None
        self._louder = 0


def _lag(reference: np.ndarray, heard: np.ndarray, reach: int, late: bool = False) -> int | None:
    """The lag (samples, under ``reach``) of ``heard`` behind ``reference`` by GCC-PHAT, or None where its peak is
    not ``CONFIDENT``. Both end at the same time; ``late``: ``heard`` is ``reach`` shorter (its lag behind what came
    before it is measured), else they are as long."""
    if not reference.any() or not heard.any():
        return None
    size = 1 << int(np.ceil(np.log2(reference.size + heard.size)))
    cross = np.fft.rfft(heard, size) * np.conj(np.fft.rfft(reference, size))
    magnitude = np.abs(cross)
    cross /= magnitude + PHAT_FLOOR * float(magnitude.max()) + 1e-9
    correlation = np.fft.irfft(cross, size)
    # correlation[m]: heard[j] against reference[j - m]; late, heard[j] is at reference's j + reach: lag k at k - reach
    lags = correlation[np.arange(-reach, 0) if late else np.arange(reach)]
    lag = int(np.argmax(lags))
    if lags[lag] < CONFIDENT * (float(np.mean(np.abs(lags))) + 1e-12):
        return None
    return lag


def _energies(pcm: np.ndarray, block: int) -> np.ndarray:
    """The sum of the squares of each ``block`` of s16 ``pcm``."""
    wide = pcm.astype(np.float64).reshape(-1, block)
    return np.einsum("ij,ij->i", wide, wide)
