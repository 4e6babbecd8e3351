"""Decoding uploaded audio from memory with PyAV."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile as sf

from engine.audio_decode import decode_audio
from engine.engines.base import EngineError


def wav(samples: np.ndarray, rate: int, subtype: str) -> bytes:
    out = io.BytesIO()
    sf.write(out, samples, rate, format="WAV", subtype=subtype)
    return out.getvalue()


def test_stereo_is_averaged_at_the_native_rate() -> None:
    t = np.arange(44100) / 44100
    left, right = 0.5 * np.sin(2 * np.pi * 220 * t), 0.25 * np.sin(2 * np.pi * 330 * t)
    samples, rate = decode_audio(wav(np.stack([left, right], axis=1).astype(np.float32), 44100, "FLOAT"))
    assert rate == 44100 and samples.dtype == np.float32
    np.testing.assert_allclose(samples, (left + right) / 2, atol=1e-6)


def test_pcm16_is_scaled_to_unit_range() -> None:
    samples, rate = decode_audio(wav(np.full(800, 0.5, dtype=np.float32), 8000, "PCM_16"))
    assert rate == 8000 and samples.shape == (800,)
    np.testing.assert_allclose(samples, 0.5, atol=1e-4)


def test_decoding_stops_past_the_limit() -> None:
    data = wav(np.full(8000 * 3, 0.1, dtype=np.float32), 8000, "PCM_16")
    with pytest.raises(EngineError) as err:
        decode_audio(data, max_seconds=2.0)
    assert err.value.code == "too_long"
    assert decode_audio(data, max_seconds=3.0)[0].size == 8000 * 3


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00" * 64, b"ID3" + bytes(200), wav(np.array([0.1, np.nan, 0.2], dtype=np.float32), 8000, "FLOAT")],
    ids=["empty", "zeros", "bare-id3", "nan"],
)
def test_undecodable_data_is_bad_audio(data: bytes) -> None:
    with pytest.raises(EngineError) as err:
        decode_audio(data)
    assert err.value.code == "bad_audio"
