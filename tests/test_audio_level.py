"""The vectorised audio level gives exactly aiortc's own figure, frame for frame."""

from __future__ import annotations

import numpy as np
import pytest
from aiortc import rtp
from av import AudioFrame

from gateway.webrtc import audio_level

ORIGINAL = audio_level.AIORTC_AUDIO_LEVEL


def frame(samples: np.ndarray, rate: int) -> AudioFrame:
    f = AudioFrame.from_ndarray(samples.astype(np.int16).reshape(1, -1), format="s16", layout="mono")
    f.sample_rate = rate
    return f


@pytest.mark.parametrize("rate,size", [(48000, 960), (8000, 160)])
def test_same_level_as_aiortc(rate: int, size: int) -> None:
    rng = np.random.default_rng(7)
    frames = [np.zeros(size), np.full(size, 32767), np.full(size, -32768), np.ones(size)]
    frames += [rng.normal(0, scale, size).clip(-32768, 32767) for scale in (0.5, 3, 30, 300, 3000, 20000)]
    frames += [32767 * np.sin(np.linspace(0, 40 * np.pi, size)) * gain for gain in (1.0, 0.1, 0.001)]
    for samples in frames:
        f = frame(samples, rate)
        assert audio_level.audio_level_dbov(f) == ORIGINAL(f)


def test_install_replaces_the_senders_function() -> None:
    audio_level.install()
    assert rtp.compute_audio_level_dbov is audio_level.audio_level_dbov
