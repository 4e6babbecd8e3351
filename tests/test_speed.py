"""engine.speed: WSOLA time stretching measured on a vibrato tone and real eSpeak speech."""

from __future__ import annotations

import math
import threading

import librosa
import numpy as np
import pytest

from engine.protocol import MAX_SPEED, MIN_SPEED, ProtocolError, check_speed
from engine.speed import stretch, stretched_time

SR = 24000
SENTENCE = "The quick brown fox jumps over the lazy dog, and then it runs far away into the quiet forest."


def _tone(seconds: float = 3.0, phase: float = 0.0) -> np.ndarray:
    """A sustained voiced sound: 150 Hz with 15 harmonics and a 5 Hz, 2 % vibrato."""
    t = np.arange(round(seconds * SR)) / SR
    cycles = phase + np.cumsum(150.0 * (1 + 0.02 * np.sin(2 * np.pi * 5 * t))) / SR
    return (0.4 * sum(np.sin(2 * np.pi * k * cycles) / (2 * k) for k in range(1, 16))).astype(np.float32)


@pytest.fixture(scope="module")
def speech(espeak_engine) -> np.ndarray:
    return espeak_engine.synthesize(SENTENCE, espeak_engine.default_voice(), threading.Event())


def _median_f0(wav: np.ndarray) -> float:
    f0, voiced, _ = librosa.pyin(wav, fmin=60, fmax=400, sr=SR, frame_length=1024)
    return float(np.median(f0[voiced]))


def _cents(a: float, b: float) -> float:
    return 1200 * math.log2(a / b)


def _speech_span(wav: np.ndarray) -> float:
    """Seconds from the first to the last 10 ms frame above -40 dBFS."""
    frames = wav[: len(wav) // 240 * 240].reshape(-1, 240)
    loud = np.flatnonzero(20 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-12) > -40)
    return (loud[-1] - loud[0] + 1) * 0.010


@pytest.mark.parametrize("speed", [0.25, 0.5, 0.7, 1.2, 1.5, 2.0, 4.0])
@pytest.mark.parametrize("length", [1, 7, 241, 12345, 48000])
def test_length_is_exactly_the_input_over_the_speed(speed: float, length: int) -> None:
    out = stretch(_tone(length / SR), speed, SR)
    assert out.dtype == np.float32
    assert len(out) == round(length / speed)
    assert np.isfinite(out).all()


def test_speed_one_is_the_input_itself() -> None:
    wav = _tone(0.5)
    before = wav.copy()
    assert stretch(wav, 1.0, SR) is wav
    assert np.array_equal(wav, before)


@pytest.mark.parametrize("speed", [0.5, 1.5, 2.0])
def test_pitch_of_a_vibrato_tone_is_kept(speed: float) -> None:
    wav = _tone()
    assert abs(_cents(_median_f0(stretch(wav, speed, SR)), _median_f0(wav))) < 50


@pytest.mark.parametrize("speed", [0.5, 1.5, 2.0])
def test_pitch_of_speech_is_kept(speech: np.ndarray, speed: float) -> None:
    assert abs(_cents(_median_f0(stretch(speech, speed, SR)), _median_f0(speech))) < 50


@pytest.mark.parametrize("speed", [0.25, 0.5, 0.75, 1.25, 1.5, 2.0, 4.0])
def test_speech_duration_scales_by_one_over_the_speed(speech: np.ndarray, speed: float) -> None:
    out = stretch(speech, speed, SR)
    assert np.isfinite(out).all()
    assert _speech_span(out) == pytest.approx(_speech_span(speech) / speed, rel=0.05)


@pytest.mark.parametrize("speed", [0.25, 0.5, 1.5, 4.0])
def test_a_moment_lands_at_its_stretched_time(speed: float) -> None:
    onset = 1.0  # a tone starting a second into silence
    wav = np.concatenate([np.zeros(SR, dtype=np.float32), _tone(1.0)])
    heard = np.flatnonzero(np.abs(stretch(wav, speed, SR)) > 0.05)[0] / SR
    # WSOLA may slide by up to 20 ms of input (20 ms / speed of output), plus half a window
    assert heard == pytest.approx(stretched_time(onset, speed), abs=0.02 / min(speed, 1) + 0.025)
    assert stretched_time(3.0, 2.0) == 1.5


@pytest.mark.parametrize("speed", [0.5, 0.75, 1.5, 2.0, 4.0])
def test_no_click_at_either_end_of_a_chunk_cut_mid_sound(speed: float) -> None:
    out = stretch(_tone(0.8, phase=0.3), speed, SR)  # starts and ends at full level, mid-cycle
    edge = round(0.005 * SR)
    inner_jump = np.abs(np.diff(out[edge:-edge])).max()
    assert out[0] == 0 and out[-1] == 0
    assert np.abs(np.diff(out[: edge + 1])).max() <= inner_jump
    assert np.abs(np.diff(out[-edge - 1:])).max() <= inner_jump


@pytest.mark.parametrize("speed", [0.25, 0.8, 4.0])
def test_very_short_and_empty_chunks(speed: float) -> None:
    for wav in (_tone(0.010), np.zeros(0, dtype=np.float32), np.zeros(240, dtype=np.float32)):
        out = stretch(wav, speed, SR)
        assert out.dtype == np.float32 and len(out) == round(len(wav) / speed)
        assert np.isfinite(out).all()
    assert not stretch(np.zeros(240, dtype=np.float32), speed, SR).any()


def test_check_speed_accepts_the_range_and_none() -> None:
    assert check_speed(None) is None  # the default: 1
    assert check_speed(1) == 1.0 and isinstance(check_speed(1), float)
    assert check_speed(MIN_SPEED) == 0.25 and check_speed(MAX_SPEED) == 4.0
    assert check_speed(1.2) == 1.2


@pytest.mark.parametrize("value", [0.24, 4.01, 0, -1, float("nan"), float("inf"), "fast", "1.0", True, [1.0]])
def test_check_speed_rejects_naming_the_range(value: object) -> None:
    with pytest.raises(ProtocolError, match=r"0\.25 to 4\.0"):
        check_speed(value)
