"""A call's inbound audio, frame by frame: checked, its echo of the gateway's voice cancelled, to the listening
controller, through the VAD, into barge-in.

No sockets: the call's adapter (gateway/sessions/driven.py) hands each frame in with its stream timestamp and carries out
what comes back: events for the controller and what barge-in does to the gateway's speech. Nothing here writes the
caller's audio anywhere but to the controller's feed.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import webrtcvad

from gateway.audio import Resampler, g711_decode, g711_encode
from gateway.listen.aec import EchoCanceller
from gateway.listen.barge_in import Act, BargeIn
from gateway.listen.detector import SpeechDetector, SpeechStarted, SpeechStopped, VadConfig
from gateway.listen.echo import EchoReference, rms
from gateway.listen.feed import CallerAudioFeed
from gateway.listen.silero import SileroVad

G711 = {"mulaw": "pcm_mulaw", "alaw": "pcm_alaw"}
PCM16_RATE = 16000  # what ``listen`` ``pcm16`` sends: what STT services take
MAX_FRAME_S = 1.0  # a caller frame of more audio than this is refused (carriers send 20 ms)
BURST_S = 1.0  # audio that may arrive ahead of real time before frames are dropped as a flood
PREGATE_MODE = 2  # webrtcvad's aggressiveness: on the gate clip it passes 98.9 % of Silero's voiced windows
DRAIN = 1.05  # the flood budget drains a little faster than real time: a carrier's clock may run fast
SURE_MARGIN_DB = 8.0  # once the canceller is sure, the VAD hears the caller's audio as it came only where it is no
#                       more than this below what the gateway sent (a loud caller: AEC3's suppressor took 9-21 dB
#                       off such a caller's first 64 ms over the echo, heard two windows late); quieter, the
#                       canceller's output (at the level rule's 15 dB, a caller 17 or 20 dB down over echo at -12 dB,
#                       its frames heard now as they came and now cleaned, was heard 1.3 / 2.5 s late in 2 of 18
#                       offline onsets where it had been in 0.3 s: cbf_tools/bench/aec_onsets.py)


class FloodGuard:
    """Audio faster than real time (a leaky bucket of ``BURST_S``): frames past it are dropped."""

    def __init__(self) -> None:
        self._level = 0.0
        self._last: float | None = None

    def admit(self, seconds: float, now: float) -> bool:
        if self._last is not None:
            self._level = max(0.0, self._level - (now - self._last) * DRAIN)
        self._last = now
        if self._level + seconds > BURST_S + 1e-9:
            return False
        self._level += seconds
        return True


class CallerSide:
    """The caller's side of one call whose inbound audio is ``encoding`` (mulaw, alaw, pcm: s16le) at ``rate``.

    ``tally(outcome, frames)`` counts frames: heard, rejected (empty, odd-sized or over ``MAX_FRAME_S``: not audio of
    the call's format), flooded (past the ``FloodGuard``), dropped (the listening controller did not read them).

    ``cancel_echo``: what the gateway sends on the call (``played``) is taken back out of the caller's audio
    (gateway/listen/aec.py) before the VAD hears it (at 8 kHz, whatever the call's rate), and before the controller
    does where its ``listen`` asks for that (``aec``, the default). ``echo_guard``: the level rule
    (gateway/listen/echo.py) judges what the VAD heard too; without the canceller it always does.
    ``echo_delay_moves``: the echo's delay moves during the call (a WebRTC peer's jitter buffer), so what the
    canceller lets through is checked against the far end (gateway/listen/aec.py's ``guard_leaks``).

    The level rule until the canceller is sure: until the line's echo delay is measured with confidence (the
    canceller's ``sure``), AEC3 has not converged and its suppressor holds a caller talking over the gateway back, so
    the VAD and barge-in hear the caller's audio as it came where the level rule takes it for the caller (as with the
    canceller off: not ``echo_margin_db`` below what the gateway sent) and it does not correlate with what the gateway
    sent (the canceller's ``echoes``: a hot line's echo, louder than the margin allows), else the canceller's output.
    Once it is sure, the same with ``SURE_MARGIN_DB`` for the margin: a loud caller is heard as it came (AEC3's
    suppressor attenuates the onset of a caller talking over the echo: a loud caller was heard 50-90 ms later through
    it than by the level rule), any quieter one through the canceller alone. The controller hears the canceller's
    output throughout.
    """

    def __init__(self, encoding: str, rate: int, vad: VadConfig, mode: str,
                 gateway_speaking: Callable[[], bool], tally: Callable[[str, int], None] = lambda outcome, n: None,
                 clock: Callable[[], float] = time.monotonic, cancel_echo: bool = True,
                 echo_guard: bool = False, echo_delay_moves: bool = False) -> None:
        if encoding not in (*G711, "pcm"):
            raise ValueError(f"caller audio is mulaw, alaw or pcm, not {encoding}")
        self.encoding, self.rate = encoding, rate
        self.echo = EchoReference()
        self.aec = EchoCanceller(rate, guard_leaks=echo_delay_moves) if cancel_echo else None
        self._echo_guard = echo_guard or not cancel_echo
        self._far_in: Resampler | None = None  # the far end at another rate (a WebRTC track's) to the caller's
        self._listen_clean = True  # the controller hears the canceller's output
        self.detector = SpeechDetector(vad)
        self.barge = BargeIn(mode)
        self._tally = tally
        self.feed: CallerAudioFeed | None = None  # the controller listens
        self._pcm16_out: Resampler | None = None
        self._gateway_speaking = gateway_speaking
        self._clock = clock
        self._flood = FloodGuard()
        # The VAD hears the canceller's output at 8 kHz: Silero's 16 kHz model heard a caller 17 dB below the gateway
        # through AEC3's suppression on a 300 ms line (a WebRTC peer's) in 33 % of its windows, its 8 kHz model in 85 %
        self._vad = SileroVad(8000 if rate == 8000 or cancel_echo else PCM16_RATE)
        self._pregate = webrtcvad.Vad(PREGATE_MODE)
        self._pregate_samples = self._vad.rate * 30 // 1000  # webrtcvad takes 10, 20 or 30 ms
        self._skipped: np.ndarray | None = None  # the window before, if the model did not hear it
        self._to_vad = None if rate == self._vad.rate else Resampler(self._vad.rate, rate)
        self._window = np.empty(0, dtype=np.float32)  # samples at the VAD's rate not yet decided
        self._window_at = 0.0  # the stream time (ms) of its first
        self._echo_level = 0.0  # the echo guard's level when its latest samples came
        self._residue_level = 0.0  # the gateway's level when they came, where the canceller worked on them
        self._due: np.ndarray | None = None  # the window the model is to hear next (``next_due``)
        self._then: np.ndarray | None = None  # where ``_due`` is the window before the gate opened: the one after
        self._out: list[dict[str, Any] | Act] = []  # what the decided windows did, not yet ``heard``
        self._samples = 0  # samples heard, for streams without timestamps (Asterisk)
        self._latest = (0.0, 0.0)  # (stream ms, monotonic s) of the latest frame's end
        self.onset_ms: float | None = None  # the latest speech onset
        self._bytes_per_sample = 2 if encoding == "pcm" else 1

    @property
    def vad(self) -> SileroVad:
        """This call's model state (gateway/listen/tick.py runs many calls' in one batch)."""
        return self._vad

    @property
    def vad_config(self) -> VadConfig:
        return self.detector.config

    def configure(self, vad: VadConfig) -> None:
        """New VAD settings; speech under way is judged afresh."""
        self.detector = SpeechDetector(vad)

    def played(self, start: float, pcm: np.ndarray, rate: int) -> None:
        """s16 ``pcm`` at ``rate`` that the gateway sent on the call plays from ``start`` (monotonic s): the echo
        guard's level and the canceller's far end."""
        self.echo.played(start, pcm.size / rate, rms(pcm / 32768))
        if self.aec is None:
            return
        if rate != self.rate:
            if self._far_in is None:
                self._far_in = Resampler(self.rate, rate)
            pcm = np.frombuffer(self._far_in.process(pcm.astype("<i2").tobytes()), "<i2")
        self.aec.played(start, pcm)

    def cleared(self, now: float) -> None:
        """What was to play after ``now`` was dropped (a barge-in)."""
        self.echo.clear(now)
        if self.aec is not None:
            self.aec.clear(now)

    def listen(self, fmt: str, aec: bool = True) -> dict[str, Any] | None:
        """``listen`` ``fmt`` (native, pcm16, off), the canceller's output (``aec``) or the audio as it came: the
        feed's start message, None for off."""
        self.feed = None
        self._listen_clean = aec
        self._pcm16_out = None
        if fmt == "off":
            return None
        if fmt == "native":  # as received: the carrier's G.711, or its PCM16 at its own rate
            self.feed = CallerAudioFeed("pcm16" if self.encoding == "pcm" else self.encoding, self.rate)
        else:
            self.feed = CallerAudioFeed("pcm16", PCM16_RATE)
            if self.rate != PCM16_RATE:
                self._pcm16_out = Resampler(PCM16_RATE, self.rate)
        return self.feed.start()

    def hear(self, audio: bytes, timestamp_ms: float | None) -> list[dict[str, Any] | Act]:
        """One frame as received, its windows heard by the model alone: events for the controller and what barge-in
        does, in order. (Many calls at once: ``take`` each, then ``hear_all``'s batched runs, as
        gateway/listen/tick.py does.)"""
        self.take(audio, timestamp_ms)
        while (window := self.next_due()) is not None:
            self.decided(self._vad.probability(window))
        return self.heard()

    def take(self, audio: bytes, timestamp_ms: float | None) -> None:
        """One frame as received: checked, echo cancelled, to the feed; its samples wait for the VAD (``next_due``)."""
        seconds = len(audio) / self._bytes_per_sample / self.rate
        if not audio or seconds > MAX_FRAME_S or len(audio) % self._bytes_per_sample:
            self._tally("rejected", 1)
            return
        now = self._clock()
        if not self._flood.admit(seconds, now):
            self._tally("flooded", 1)
            return
        self._tally("heard", 1)
        pcm = g711_decode(audio, G711[self.encoding]) if self.encoding in G711 else np.frombuffer(audio, "<i2")
        start_ms = timestamp_ms if timestamp_ms is not None else self._samples * 1000 / self.rate
        self._samples += pcm.size
        self._latest = (start_ms + seconds * 1000, now)
        heard, heard_ms, changed = pcm, start_ms, False
        judged = pcm  # what the VAD hears
        if self.aec is not None:
            at_s, heard = self.aec.process(pcm, start_ms / 1000, now)
            heard_ms, changed = at_s * 1000, not (self.aec.passed and heard.size == pcm.size)
            judged = heard
            margin = self.detector.config.echo_margin_db
            if self.aec.sure:
                margin = min(margin, SURE_MARGIN_DB)
            floor = self.echo.level(now) * 10 ** (-margin / 20)
            if rms(self.aec.raw / 32768) >= floor and not self.aec.echoes():
                judged = self.aec.raw  # the level rule's caller, not the echo (the class docstring)
        if self.feed is not None:
            if self._listen_clean and changed:  # the canceller took echo out, or held back part of a 10 ms block
                if heard.size:
                    self._tally("dropped", self.feed.push(heard_ms, self._listener_bytes(self._encoded(heard), heard)))
            else:
                self._tally("dropped", self.feed.push(start_ms, self._listener_bytes(audio, pcm)))
        if judged.size:
            self._queue(judged, heard_ms, now)

    def _encoded(self, pcm: np.ndarray) -> bytes:
        """s16 as the call's own encoding."""
        raw = pcm.astype("<i2").tobytes()
        return g711_encode(raw, G711[self.encoding]) if self.encoding in G711 else raw

    def since(self, stream_ms: float, now: float) -> float:
        """Milliseconds from when the audio of stream time ``stream_ms`` arrived to ``now`` (monotonic s)."""
        latest_ms, arrived = self._latest
        return (now - arrived) * 1000 + latest_ms - stream_ms

    def _listener_bytes(self, audio: bytes, pcm: np.ndarray) -> bytes:
        if self.feed is None or self.feed.encoding != "pcm16" or self.feed.rate == self.rate:
            return audio
        raw = pcm.astype("<i2").tobytes()
        return self._pcm16_out.process(raw) if self._pcm16_out is not None else raw

    def _queue(self, pcm: np.ndarray, start_ms: float, now: float) -> None:
        """``pcm`` (the call's rate, from stream time ``start_ms``) into the VAD's window; the echo guard's level as
        of ``now`` judges the windows it completes."""
        samples = pcm if self._to_vad is None else np.frombuffer(
            self._to_vad.process(pcm.astype("<i2").tobytes()), "<i2")
        self._window_at = start_ms - self._window.size * 1000 / self._vad.rate
        self._window = np.concatenate([self._window, samples.astype(np.float32) / 32768])
        level = self.echo.level(now)
        self._echo_level = level if self._echo_guard else 0.0
        self._residue_level = level if self.aec is not None and not self.aec.passed else 0.0

    def next_due(self) -> np.ndarray | None:
        """The next window the model must hear for this call (then ``decided`` with what it said), or None: none is.
        Windows the pre-gate spares the model are decided here, without it. Where the gate opens, the model first
        hears the window before (its state as if it had run throughout): that one is due first, its answer unused."""
        if self._due is not None:
            return self._due
        size = self._vad.window_samples
        while self._window.size >= size:
            window = self._window[:size]
            head = (window[:self._pregate_samples] * 32767).astype("<i2").tobytes()
            if self.detector.listening_closely or self._pregate.is_speech(head, self._vad.rate):
                self._due, self._then = (self._skipped, window) if self._skipped is not None else (window, None)
                self._skipped = None
                return self._due
            self._skipped = window
            self._decide(0.0)
        return None

    def decided(self, probability: float) -> None:
        """What the model said of the window ``next_due`` gave."""
        if self._due is None:
            raise RuntimeError("no window is due")
        if self._then is not None:  # the window before the gate opened: now the one it opened on
            self._due, self._then = self._then, None
            return
        self._due = None
        self._decide(probability)

    def heard(self) -> list[dict[str, Any] | Act]:
        """Events for the controller and what barge-in does, in order, since the last time."""
        out, self._out = self._out, []
        return out

    def _decide(self, probability: float) -> None:
        """The window at the head of the queue is heard: the detector's verdict, and what it does."""
        size = self._vad.window_samples
        window, self._window = self._window[:size], self._window[size:]
        window_ms = size * 1000 / self._vad.rate
        at_ms, self._window_at = self._window_at, self._window_at + window_ms
        event = self.detector.window(at_ms, window_ms, probability, rms(window), self._echo_level,
                                     self._residue_level)
        self._out += self._on(event, at_ms + window_ms)

    def _on(self, event: SpeechStarted | SpeechStopped | None, at_ms: float) -> list[dict[str, Any] | Act]:
        match event:
            case SpeechStarted(onset_ms=onset, at_ms=confirmed):
                self.onset_ms = onset
                act = self.barge.started(onset, confirmed, self._gateway_speaking())
                started = {"type": "speech_started", "timestamp": round(onset, 1), "confirmed": round(confirmed, 1)}
                return [started] + ([act] if act else [])
            case SpeechStopped(at_ms=stopped, duration_ms=duration):
                act = self.barge.stopped()
                return [{"type": "speech_stopped", "timestamp": round(stopped, 1), "duration_ms": round(duration)}
                        ] + ([act] if act else [])
        act = self.barge.speaking(at_ms) if self.detector.speaking and self.detector.voiced_now else None
        return [act] if act else []
