"""Coarse voice features of a reference clip (pitch, pitch spread, syllable rate), for engines that cannot clone."""

from __future__ import annotations

from dataclasses import dataclass

import librosa
import numpy as np
import soxr
from scipy.signal import find_peaks

from engine.engines.base import EngineError

_SR = 16000
_HOP = 160  # 10 ms
_FRAME = 1024
_FMIN, _FMAX = 60.0, 400.0
_ACTIVE_DB = 35.0  # frames within this many dB of the loudest count as speech
_VOICED_CORR = 0.6  # normalised autocorrelation at the pitch period above which a frame is voiced


@dataclass(frozen=True)
class VoiceFeatures:
    median_f0: float  # Hz, over voiced frames
    f0_spread_semitones: float  # inter-quartile range of the voiced pitch
    syllables_per_second: float  # energy peaks per second of active speech


def estimate_voice_features(wav: np.ndarray, sample_rate: int) -> VoiceFeatures:
    """Raises ``EngineError("bad_audio")`` when the clip holds too little voiced speech to measure."""
    y = soxr.resample(np.asarray(wav, dtype=np.float32), sample_rate, _SR) if sample_rate != _SR else wav
    y = np.asarray(y, dtype=np.float32)
    if y.size < _FRAME * 4 or not np.isfinite(y).all():
        raise EngineError("reference audio is too short or not finite", "bad_audio")
    frames = librosa.util.frame(np.pad(y, _FRAME // 2), frame_length=_FRAME, hop_length=_HOP).T
    rms_db = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)
    active = rms_db > rms_db.max() - _ACTIVE_DB
    f0 = librosa.yin(y, fmin=_FMIN, fmax=_FMAX, sr=_SR, frame_length=_FRAME, hop_length=_HOP, center=True)
    n = min(len(f0), len(frames))
    voiced = np.array([active[i] and _periodicity(frames[i], f0[i]) > _VOICED_CORR for i in range(n)])
    if voiced.sum() < 20:  # under 0.2 s of voiced speech
        raise EngineError("reference audio holds too little voiced speech", "bad_audio")
    semitones = 12 * np.log2(f0[:n][voiced])
    q1, med, q3 = np.percentile(semitones, [25, 50, 75])
    return VoiceFeatures(
        median_f0=float(2 ** (med / 12)),
        f0_spread_semitones=float(q3 - q1),
        syllables_per_second=_syllable_rate(rms_db, active),
    )


def _periodicity(frame: np.ndarray, f0: float) -> float:
    lag = int(round(_SR / f0))
    a, b = frame[:-lag], frame[lag:]
    denom = np.sqrt(np.dot(a, a) * np.dot(b, b))
    return float(np.dot(a, b) / denom) if denom > 0 else 0.0


def _syllable_rate(rms_db: np.ndarray, active: np.ndarray) -> float:
    """Syllable nuclei are loudness peaks: count prominent peaks of the smoothed envelope per active second."""
    envelope = np.convolve(rms_db, np.ones(5) / 5, mode="same")
    peaks, _ = find_peaks(envelope, prominence=4.0, distance=8)
    peaks = peaks[active[peaks]]
    active_seconds = max(active.sum() * _HOP / _SR, 1e-3)
    return float(len(peaks) / active_seconds)
