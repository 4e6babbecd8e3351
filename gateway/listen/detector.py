"""When the caller starts and stops speaking (pure): the VAD's probability per window in, onsets and ends out.

A window is *voiced* when the model says speech (``threshold``; once speaking, ``threshold - RELEASE`` keeps it) and,
while the gateway is speaking, when it is also loud enough beside the gateway's own voice: the echo guard. The
gateway knows what it is sending (gateway/listen/echo.py); its voice coming back on the line (a speakerphone, a
carrier with no echo cancelling) is quieter than what went out, so a window more than ``echo_margin_db`` below the
loudest the gateway sent in the echo's reach is taken for echo. Speech *starts* once voiced windows have run
``min_speech_ms`` unbroken (the onset is the first of them) and *stops* after ``min_silence_ms`` unvoiced.

Where an echo canceller judges instead (gateway/listen/aec.py), what it leaves of the gateway's voice is no caller: a
window under one step of s16 (``SILENCE``: its suppressor's zeroes) is never voiced, and while the gateway speaks a
run starts speech only once a window of it comes within ``RESIDUE_DB`` of the gateway's level (Silero's probability
hardly depends on level: it heard the canceller's residue of the echo, 45-50 dB down, as speech).
"""

from __future__ import annotations

from dataclasses import dataclass

RELEASE = 0.15  # how far below the threshold speech under way may dip (Silero's own neg_threshold)
SILENCE = 1 / 32768  # a window whose RMS is under one step of s16 is digital silence: never voiced, whatever the
#                      model says (AEC3's suppressor zeroes the echo it holds back to +-1 step, -98 dBFS; Silero,
#                      its state primed by a window of echo the canceller let through before it converged, said
#                      0.55-0.98 on such windows, four in a row: the gateway stopped on its own echo. Fresh, it says
#                      0.01 on them; a caller's windows through the canceller were never under -86 dBFS)
RESIDUE_DB = 35.0  # where the gateway speaks and the canceller works (``residue_level``), a run of voiced windows
#                   starts speech only once one of them comes within this of the loudest the gateway sent: AEC3 left
#                   a hot line's echo (-6 dB) at -64 to -72 dBFS, 45-50 dB under what the gateway sent, and Silero
#                   said 0.55-0.95 on it, four windows in a row; a caller 20 dB under the gateway's speech had a
#                   window at -40 to -48 dBFS among its first four through the canceller in every offline onset


@dataclass(frozen=True)
class VadConfig:
    threshold: float = 0.5
    min_speech_ms: float = 120.0
    min_silence_ms: float = 300.0
    echo_margin_db: float = 15.0  # 10 missed callers 10 dB below the gateway's voice; 20 took echo at -15 dB

    def __post_init__(self) -> None:
        if not 0 < self.threshold < 1:
            raise ValueError("the VAD threshold is between 0 and 1")
        if not (0 <= self.min_speech_ms <= 5000 and 0 <= self.min_silence_ms <= 5000):
            raise ValueError("the VAD's minimum speech and silence are 0-5000 ms")
        if not 0 <= self.echo_margin_db <= 60:
            raise ValueError("the echo margin is 0-60 dB")


@dataclass(frozen=True)
class SpeechStarted:
    onset_ms: float  # stream time of the first voiced window
    at_ms: float  # stream time it was confirmed (min_speech_ms later)


@dataclass(frozen=True)
class SpeechStopped:
    at_ms: float  # stream time of the first unvoiced window of the silence that ended it
    duration_ms: float


SpeechEvent = SpeechStarted | SpeechStopped


class SpeechDetector:
    """One caller's speech, window by window."""

    def __init__(self, config: VadConfig = VadConfig()) -> None:
        self.config = config
        self._echo_ratio = 10 ** (-config.echo_margin_db / 20)
        self.speaking = False
        self._run_from: float | None = None  # the first voiced window of the current run
        self._run_peak = 0.0  # the loudest window of that run
        self._silent_from: float | None = None  # the first unvoiced window since speech started
        self.echo_rejected = 0  # voiced windows the echo guard set aside
        self.voiced_now = False  # the latest window was voiced

    @property
    def listening_closely(self) -> bool:
        """Speech is under way, or a run of voiced windows may be becoming speech: every window counts."""
        return self.speaking or self._run_from is not None

    def voiced(self, probability: float, level: float, echo_level: float) -> bool:
        floor = self.config.threshold - (RELEASE if self.speaking else 0.0)
        if probability < floor or level < SILENCE:
            return False
        if level < echo_level * self._echo_ratio:
            self.echo_rejected += 1
            return False
        return True

    def window(self, at_ms: float, window_ms: float, probability: float, level: float,
               echo_level: float = 0.0, residue_level: float = 0.0) -> SpeechEvent | None:
        """One window starting at stream time ``at_ms``: its probability, its RMS ``level`` and the gateway's own
        loudest level in the echo's reach (0: silent) for the echo guard (``echo_level``) or, where an echo canceller
        took the echo out, for what it leaves (``residue_level``: ``RESIDUE_DB``). Returns what changed, if
        anything."""
        end = at_ms + window_ms
        self.voiced_now = self.voiced(probability, level, echo_level)
        if self.voiced_now:
            self._silent_from = None
            if self._run_from is None:
                self._run_from, self._run_peak = at_ms, 0.0
            self._run_peak = max(self._run_peak, level)
            if (not self.speaking and end - self._run_from >= self.config.min_speech_ms
                    and self._run_peak >= residue_level * 10 ** (-RESIDUE_DB / 20)):
                self.speaking = True
                return SpeechStarted(self._run_from, end)
            return None
        if not self.speaking:
            self._run_from = None
            return None
        if self._silent_from is None:
            self._silent_from = at_ms
        if end - self._silent_from >= self.config.min_silence_ms:
            started, self._run_from = self._run_from or at_ms, None
            self.speaking = False
            return SpeechStopped(self._silent_from, self._silent_from - started)
        return None
