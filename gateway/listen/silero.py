"""Silero VAD (MIT, v6) on onnxruntime: a speech probability per window of 32 ms, with no torch in the gateway.

The model file ships in this package (``silero_vad.onnx``, from the silero-vad wheel, whose own loader needs
torch); it is never fetched. One inference session serves every call (onnxruntime's ``run`` is thread-safe and
the recurrent state is an input), on one thread: ~0.3 ms a window back to back, ~0.9 ms paced at real time
(``bench barge-in`` measures both), so gateway/listen/caller.py runs it only where webrtcvad's cheap pre-gate (a few
microseconds a window) hears a voice, or while speech is under way.

The model takes a batch (its state is per row), and a run's fixed cost is most of a window's: ``run`` hears many
streams' windows in one run (gateway/listen/tick.py gathers every call's due windows), each stream's state as if
it had run alone.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Sequence

import numpy as np

MODEL = Path(__file__).with_name("silero_vad.onnx")
WINDOW = {8000: 256, 16000: 512}  # samples per window the model takes at each rate
CONTEXT = {8000: 32, 16000: 64}  # samples of the previous window it is given again


@cache
def _session():  # -> onnxruntime.InferenceSession, imported on first use: only calls that listen need it
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(MODEL), sess_options=options, providers=["CPUExecutionProvider"])


def load() -> None:
    """Load the model now (at start-up: the first call does not wait for it)."""
    _session()


class SileroVad:
    """One stream's VAD at ``rate`` (8 or 16 kHz): ``probability(window)`` for each ``window_samples`` of float32."""

    def __init__(self, rate: int) -> None:
        if rate not in WINDOW:
            raise ValueError(f"Silero VAD takes 8000 or 16000 Hz, not {rate}")
        self.rate = rate
        self.window_samples = WINDOW[rate]
        self._sr = np.array(rate, dtype=np.int64)
        self.reset()

    def reset(self) -> None:
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._context = np.zeros((1, CONTEXT[self.rate]), dtype=np.float32)

    def probability(self, window: np.ndarray) -> float:
        """The chance that ``window`` (``window_samples`` float32 in [-1, 1]) is speech."""
        return run([self], [window])[0]


def run(vads: Sequence[SileroVad], windows: Sequence[np.ndarray]) -> list[float]:
    """Each of ``vads`` hears its window of ``windows`` (the same rate, ``window_samples`` float32 each), in one run of
    the model: the chance each is speech."""
    if len(vads) != len(windows):
        raise ValueError("one window per VAD")
    if not vads:
        return []
    rate = vads[0].rate
    if any(vad.rate != rate for vad in vads):
        raise ValueError("one run takes one rate")
    x = np.concatenate([np.concatenate([vad._context, window.reshape(1, -1).astype(np.float32, copy=False)], axis=1)
                        for vad, window in zip(vads, windows)])
    state = np.concatenate([vad._state for vad in vads], axis=1)
    out, state = _session().run(None, {"input": x, "state": state, "sr": vads[0]._sr})
    keep = CONTEXT[rate]
    for i, vad in enumerate(vads):
        vad._state = state[:, i:i + 1]
        vad._context = x[i:i + 1, -keep:]
    return [float(p) for p in out[:, 0]]
