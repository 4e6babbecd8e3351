"""Compile librosa's cached numba functions once, in one process: ``make venv`` and the image build run it.

numba writes a cached guvectorize function as two files with nothing tying the pair together, so processes that
compile one at the same moment in a fresh install can leave one's file beside the other's, and the next call through
them jumps to address 0 (numba issue 10128). Seen here on a fresh clone: test processes and engine workers died with
SIGSEGV in ``librosa.yin``'s localmin (the voice features of every uploaded voice). Compiled here first, sequentially,
every later process only loads what this one wrote.
"""

from __future__ import annotations

import numpy as np


def warm() -> None:
    """Call each of librosa's cached numba functions the engine, the gate and the tests reach."""
    import librosa

    sr = 22050
    y = (0.1 * np.random.default_rng(0).standard_normal(sr)).astype(np.float32)
    librosa.yin(y, fmin=60, fmax=400, sr=sr)  # localmin, parabolic interpolation
    librosa.pyin(y, fmin=60, fmax=400, sr=sr)  # its Viterbi decoding too
    librosa.util.localmax(y)
    librosa.util.peak_pick(np.abs(y), pre_max=3, post_max=3, pre_avg=3, post_avg=5, delta=0.05, wait=10)
    librosa.zero_crossings(y)
    librosa.util.phasor(np.angle(np.fft.rfft(y)))
    librosa.util.abs2(np.fft.rfft(y))


if __name__ == "__main__":
    warm()
