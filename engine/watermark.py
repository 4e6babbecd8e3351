"""Resemble's PerTh watermark on every chunk. No watermark, no start: this never degrades to a no-op."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.heap import collector_paused
from engine.librosa_import import import_librosa_audio
from engine.protocol import SAMPLE_RATE

_PROBE_RATE = SAMPLE_RATE  # the rate every chunk is marked at


class WatermarkUnavailable(RuntimeError):
    """The PerTh implicit watermarker cannot be loaded; the engine must refuse to start."""


class Watermarker:
    """Wraps ``perth.PerthImplicitWatermarker``. Not thread-safe: the worker calls it from one thread at a time."""

    def __init__(self, device: str = "cpu") -> None:
        self._torch, self._impl = _load(device)
        self._on_stream = _own_stream(self._torch, device)
        self._self_test()

    def _self_test(self) -> None:
        """Mark a speech-like probe and read it back (also warms up): a loaded but broken model must not start."""
        probe = _speechlike_probe(_PROBE_RATE)
        marked, clean = self.detect(self.apply(probe, _PROBE_RATE), _PROBE_RATE), self.detect(probe, _PROBE_RATE)
        # Real PerTh reads this probe ~0.99 marked and ~0.03 clean; wide margins so a detector answering at random
        # (perth's DummyWatermarker averages 32 random bits) cannot pass by chance (odds ~1e-8, not 1 in 4).
        if not (marked >= 0.9 and clean <= 0.3):
            raise WatermarkUnavailable(f"PerTh self-test failed: marked probe read {marked:.2f}, clean {clean:.2f}")

    def apply(self, wav: np.ndarray, sample_rate: int) -> np.ndarray:
        """The watermarked chunk: float32, same length as ``wav``. Chunks without sound come back unchanged."""
        wav = np.asarray(wav, dtype=np.float32).reshape(-1)
        if not np.any(wav):
            return wav.copy()  # nothing to carry a mark (and PerTh's analysis of silence is undefined)
        with self._torch.inference_mode(), self._on_stream():
            marked = self._impl.apply_watermark(wav, sample_rate=sample_rate)
        return _fit_length(np.asarray(marked, dtype=np.float32).reshape(-1), wav.size)

    def detect(self, wav: np.ndarray, sample_rate: int) -> float:
        """PerTh's confidence, 0..1, that ``wav`` carries the watermark (about 1 marked, about 0 clean)."""
        wav = np.asarray(wav, dtype=np.float32).reshape(-1)
        with self._torch.inference_mode(), self._on_stream():
            score = self._impl.get_watermark(wav, sample_rate=sample_rate, round=False)
        return float(np.mean(score))


def _own_stream(torch: Any, device: str) -> Callable[[], contextlib.AbstractContextManager]:
    """On CUDA, PerTh's kernels go to a stream of their own on its device, not in the queue of the decode loop's
    steps; elsewhere nothing."""
    if not device.startswith("cuda"):
        return contextlib.nullcontext
    stream = torch.cuda.Stream(device)

    @contextlib.contextmanager
    def on_stream() -> Any:
        with torch.cuda.device(device), torch.cuda.stream(stream):
            yield

    return on_stream


def _load(device: str) -> tuple[Any, Any]:
    try:
        with collector_paused(), warnings.catch_warnings():
            import torch

            warnings.simplefilter("ignore", UserWarning)  # perth's own pkg_resources deprecation notice
            import_librosa_audio()  # what PerTh imports, without lazy_loader's inspect.stack() (engine/librosa_import.py)
            import perth
    except ImportError as exc:
        raise WatermarkUnavailable(f"cannot import the PerTh watermarker (resemble-perth): {exc}") from exc
    if getattr(perth, "PerthImplicitWatermarker", None) is None:
        raise WatermarkUnavailable(
            "perth.PerthImplicitWatermarker is None: resemble-perth could not import its implicit watermarker, "
            "usually because setuptools >= 81 removed pkg_resources (install 'setuptools<81'). Refusing to run "
            "without the watermark."
        )
    try:
        return torch, perth.PerthImplicitWatermarker(device=device)
    except Exception as exc:  # a missing checkpoint, a bad device: any failure means no watermark
        raise WatermarkUnavailable(f"the PerTh implicit watermarker failed to load on {device}: {exc}") from exc


def _speechlike_probe(sample_rate: int, seconds: float = 1.0) -> np.ndarray:
    """A voiced-speech stand-in: a harmonic-rich 120 Hz tone with vibrato and syllable-rate loudness changes.

    (A pure sine is a poor PerTh test signal; this one reads about 0.03 clean and 0.99 marked.)
    """
    t = np.arange(int(sample_rate * seconds)) / sample_rate
    f0 = 120.0 * (1 + 0.08 * np.sin(2 * np.pi * 3 * t))
    phase = 2 * np.pi * np.cumsum(f0) / sample_rate
    harmonics = sum(np.sin(k * phase) / k for k in range(1, int(sample_rate / 2 / f0.max())))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t) ** 2
    return (0.1 * harmonics * envelope).astype(np.float32)


def _fit_length(wav: np.ndarray, n: int) -> np.ndarray:
    """PerTh's STFT round trip may change the length by a few samples; give back exactly ``n``."""
    if wav.size >= n:
        return wav[:n]
    return np.concatenate([wav, np.zeros(n - wav.size, dtype=np.float32)])
