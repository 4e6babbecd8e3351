"""Joins between chunks: no clicks, even loudness, pauses that follow the punctuation, nothing clipped."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from scipy.signal import butter, sosfiltfilt

from engine.engines.espeak import EspeakEngine
from engine.joins import JoinConfig, Joiner, to_int16

SR = 24000
CHUNKS = [
    ("Hello there, my friend.", None),
    ("This is the second part,", "sentence"),
    ("and here comes the third", "clause"),
    ("piece of the story. Goodbye!", "word"),
]
GAINS = [1.0, 0.35, 1.0, 3.0]  # neighbours up to 10 dB apart, 19 dB from quietest to loudest

# eSpeak speech resampled from 22050 Hz has no energy above 11 kHz, while a discontinuity spreads energy over every
# frequency: anything in the 11-12 kHz band above this level is a click. Clean eSpeak reads about 1e-5 there.
_CLICK_BAND = butter(8, 11000, "highpass", fs=SR, output="sos")
CLICK_LEVEL = 1e-3


def click_positions(wav: np.ndarray) -> np.ndarray:
    """Sample indices where the signal's energy above 11 kHz exceeds CLICK_LEVEL."""
    return np.flatnonzero(np.abs(sosfiltfilt(_CLICK_BAND, wav.astype(np.float64))) > CLICK_LEVEL)


def cut_mid_sound(wav: np.ndarray) -> np.ndarray:
    """The chunk as a vocoder may hand it over: starting and ending abruptly inside a sound."""
    loud = np.flatnonzero(np.abs(wav) > 0.3 * np.abs(wav).max())
    return wav[loud[0]: loud[-1] + 1]


def active_rms_db(wav: np.ndarray, frame: int = 240) -> float:
    frames = wav[: wav.size // frame * frame].reshape(-1, frame).astype(np.float64)
    level = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-20)
    return float(10 * np.log10(np.mean(10 ** (level[level > level.max() - 30] / 10))))


def leading_silence(wav: np.ndarray) -> float:
    """Seconds before the signal first rises within 40 dB of its peak."""
    return np.flatnonzero(np.abs(wav) > 0.01 * np.abs(wav).max())[0] / SR


def trailing_silence(wav: np.ndarray) -> float:
    return (wav.size - 1 - np.flatnonzero(np.abs(wav) > 0.01 * np.abs(wav).max())[-1]) / SR


@pytest.fixture(scope="module")
def chunks(espeak_engine: EspeakEngine) -> list[np.ndarray]:
    voice = espeak_engine.default_voice()
    return [espeak_engine.synthesize(text, voice, threading.Event()) for text, _ in CHUNKS]


def join(chunks: list[np.ndarray], gains: list[float], joiner: Joiner | None = None) -> list[np.ndarray]:
    joiner = joiner or Joiner()
    return [joiner.process(c * g, SR, boundary) for c, g, (_, boundary) in zip(chunks, gains, CHUNKS)]


def test_click_detector_finds_clicks_in_raw_butt_joins(chunks: list[np.ndarray]) -> None:
    for chunk in chunks:  # clean eSpeak speech has none...
        assert click_positions(chunk).size == 0
    parts = [cut_mid_sound(c) * g for c, g in zip(chunks, GAINS)]
    raw = np.concatenate(parts)
    joins = np.cumsum([p.size for p in parts])[:-1]
    found = click_positions(raw)
    for j in joins:  # ...while every raw butt join of chunks cut mid-sound clicks
        assert np.any(np.abs(found - j) < 24), f"no click found at the join at sample {j}"


def test_joined_chunks_have_no_clicks(chunks: list[np.ndarray]) -> None:
    for prepare in (lambda c: c, cut_mid_sound):
        out = np.concatenate(join([prepare(c) for c in chunks], GAINS))
        assert click_positions(out).size == 0
    unfaded = Joiner(JoinConfig(fade_in=0.0, fade_out=0.0))  # the fades are what keeps abrupt chunks click-free
    assert click_positions(np.concatenate(join([cut_mid_sound(c) for c in chunks], GAINS, unfaded))).size > 0


def test_joined_and_watermarked_chunks_have_no_audible_clicks(chunks: list[np.ndarray], watermarker) -> None:
    marked = np.concatenate([watermarker.apply(part, SR) for part in join(chunks, GAINS)])
    assert click_positions(marked).size == 0


def test_loudness_is_even_across_chunks_made_at_very_different_gains(chunks: list[np.ndarray]) -> None:
    out = join(chunks, GAINS)
    levels = [active_rms_db(part) for part in out]
    assert max(levels) - min(levels) < 1.5, levels
    assert abs(np.mean(levels) - JoinConfig().target_rms_db) < 1.5


def test_nothing_clips_even_when_the_engine_overshoots(chunks: list[np.ndarray]) -> None:
    ceiling = JoinConfig().ceiling
    for part in join(chunks, [8.0, 8.0, 8.0, 8.0]):  # far beyond full scale going in
        assert np.abs(part).max() <= ceiling
    loud = Joiner(JoinConfig(target_rms_db=-6.0)).process(chunks[0], SR, None)  # a target whose peaks exceed 0 dBFS
    assert np.abs(loud).max() <= ceiling
    assert active_rms_db(loud) > JoinConfig().target_rms_db + 5  # only the peaks were limited: still far louder


def test_a_short_chunk_moves_the_gain_less_than_a_long_one(chunks: list[np.ndarray], espeak_engine) -> None:
    short = espeak_engine.synthesize("Oh.", espeak_engine.default_voice(), threading.Event())
    shifts = []
    for quiet in (short, chunks[1]):
        joiner = Joiner()
        first = joiner.process(chunks[0], SR, None)
        second = joiner.process(quiet * 0.3, SR, "sentence")  # 10 dB quieter than the first
        shifts.append(active_rms_db(second) - active_rms_db(first))
    assert shifts[0] < shifts[1] - 3  # the short one stays quieter: too little speech to trust its level
    assert abs(shifts[1]) < 1.5


def test_pauses_follow_the_previous_punctuation(chunks: list[np.ndarray]) -> None:
    pauses = JoinConfig().pauses
    lead = {}
    for boundary in (None, "word", "clause", "sentence"):
        lead[boundary] = leading_silence(Joiner().process(chunks[1], SR, boundary))
        assert pauses[boundary] <= lead[boundary] < pauses[boundary] + 0.03
    assert lead[None] < lead["word"] < lead["clause"] < lead["sentence"]


def test_engine_silence_at_the_edges_is_trimmed(chunks: list[np.ndarray]) -> None:
    padded = np.concatenate([np.zeros(SR // 2), chunks[2], np.zeros(SR // 2)]).astype(np.float32)
    out = Joiner().process(padded, SR, None)
    assert leading_silence(out) < 0.03
    assert trailing_silence(out) < 0.06
    assert out.size < chunks[2].size + 0.06 * SR  # of the second of padding, only the kept margins remain


def test_boundary_kinds_from_the_text_module_are_accepted(chunks: list[np.ndarray]) -> None:
    from engine.text import BoundaryKind

    by_enum = Joiner().process(chunks[1], SR, BoundaryKind.CLAUSE)
    by_name = Joiner().process(chunks[1], SR, "clause")
    assert np.array_equal(by_enum, by_name)
    with pytest.raises(ValueError):
        Joiner().process(chunks[1], SR, "paragraph")


def test_silent_or_empty_chunk_keeps_only_the_pause() -> None:
    for wav in (np.zeros(0, dtype=np.float32), np.zeros(SR, dtype=np.float32)):
        out = Joiner().process(wav, SR, "sentence")
        assert out.size == round(JoinConfig().pauses["sentence"] * SR) and not np.any(out)


def test_to_int16_is_clipped_little_endian_pcm() -> None:
    pcm = to_int16(np.array([0.0, 0.5, -0.5, 1.5, -1.5, np.nan], dtype=np.float32))
    assert np.frombuffer(pcm, dtype="<i2").tolist() == [0, 16384, -16384, 32767, -32767, 0]
