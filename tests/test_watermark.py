"""The PerTh watermark on joined eSpeak chunks: present when applied, absent when not, and never silently missing."""

from __future__ import annotations

import threading

import av
import numpy as np
import perth
import pytest

from engine.engines.espeak import EspeakEngine
from engine.joins import Joiner
from engine.watermark import Watermarker, WatermarkUnavailable

SR = 24000
UTTERANCE = [
    ("Yes.", None),  # about 0.4 s
    ("Sure, let me check that for you,", "sentence"),
    ("it will only take", "clause"),
    ("a moment.", "word"),
    ("[laugh] Here it is: your booking is confirmed for Friday at noon.", "sentence"),
]


@pytest.fixture(scope="module")
def joined_chunks(espeak_engine: EspeakEngine) -> list[np.ndarray]:
    joiner = Joiner()
    voice = espeak_engine.default_voice()
    return [
        joiner.process(espeak_engine.synthesize(text, voice, threading.Event()), SR, boundary)
        for text, boundary in UTTERANCE
    ]


@pytest.fixture(scope="module")
def marked_chunks(joined_chunks, watermarker: Watermarker) -> list[np.ndarray]:
    return [watermarker.apply(chunk, SR) for chunk in joined_chunks]


def mulaw_8k_round_trip(wav: np.ndarray) -> np.ndarray:
    """Resample to 8 kHz, encode as G.711 mu-law and decode again with PyAV (what a phone bridge hears)."""
    frame = av.AudioFrame.from_ndarray((np.clip(wav, -1, 1) * 32767).astype(np.int16)[None, :], "s16", "mono")
    frame.sample_rate = SR
    resampler = av.AudioResampler(format="s16", layout="mono", rate=8000)
    encoder = av.CodecContext.create("pcm_mulaw", "w")
    encoder.sample_rate, encoder.format, encoder.layout = 8000, "s16", "mono"
    decoder = av.CodecContext.create("pcm_mulaw", "r")
    decoder.sample_rate, decoder.layout = 8000, "mono"
    packets = [p for f in resampler.resample(frame) + resampler.resample(None) for p in encoder.encode(f)]
    packets += encoder.encode(None)
    decoded = [d.to_ndarray().reshape(-1) for p in packets for d in decoder.decode(p)]
    return np.concatenate(decoded).astype(np.float32) / 32768


def test_each_chunk_marked_then_concatenated_reads_marked(joined_chunks, marked_chunks, watermarker) -> None:
    for chunk, mark in zip(joined_chunks, marked_chunks):
        assert mark.dtype == np.float32 and mark.shape == chunk.shape
    assert watermarker.detect(np.concatenate(marked_chunks), SR) >= 0.5
    assert watermarker.detect(np.concatenate(joined_chunks), SR) < 0.5


def test_short_chunks_carry_the_mark_on_their_own(joined_chunks, marked_chunks, watermarker) -> None:
    for chunk, mark in zip(joined_chunks, marked_chunks):
        assert 0.3 < chunk.size / SR < 4.0
        assert watermarker.detect(mark, SR) >= 0.5
    assert watermarker.detect(joined_chunks[0], SR) < 0.5  # the shortest, unmarked


def test_the_mark_is_a_small_change_to_the_speech(joined_chunks, marked_chunks) -> None:
    for chunk, mark in zip(joined_chunks, marked_chunks):
        change = mark - chunk
        assert 0 < np.sum(change**2) < 0.1 * np.sum(chunk**2)  # more than 10 dB below the speech


def test_the_mark_survives_mulaw_at_8k(joined_chunks, marked_chunks, watermarker) -> None:
    assert watermarker.detect(mulaw_8k_round_trip(np.concatenate(marked_chunks)), 8000) >= 0.5
    assert watermarker.detect(mulaw_8k_round_trip(np.concatenate(joined_chunks)), 8000) < 0.5


def test_a_silent_chunk_passes_unchanged(watermarker: Watermarker) -> None:
    silence = np.zeros(SR // 4, dtype=np.float32)
    assert np.array_equal(watermarker.apply(silence, SR), silence)


def test_a_missing_implicit_watermarker_refuses_to_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perth, "PerthImplicitWatermarker", None)  # what setuptools >= 81 does to resemble-perth
    with pytest.raises(WatermarkUnavailable, match="setuptools"):
        Watermarker()


def test_a_no_op_watermarker_fails_the_self_test(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perth, "PerthImplicitWatermarker", lambda device: perth.DummyWatermarker())
    with pytest.raises(WatermarkUnavailable, match="self-test"):
        Watermarker()
