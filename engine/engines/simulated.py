"""A stand-in for a GPU model we do not have: another engine's speech, delivered as slowly as that model would make it.

eSpeak is about a thousand times faster than real time, so on its own it never exercises the chunk planner's
buffer ratchet. This engine takes ``fixed_s + audio_seconds / rtf`` of wall time per chunk (the inner engine's own
time included), like Chatterbox-Turbo's per-chunk overhead plus its real-time factor, and stays cancellable throughout.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from engine.engines.base import Cancelled, Engine, EngineInfo


class SimulatedEngine(Engine):
    def __init__(self, inner: Engine, fixed_s: float = 0.15, rtf: float = 3.0) -> None:
        if fixed_s < 0 or rtf <= 0:
            raise ValueError(f"need fixed_s >= 0 and rtf > 0, got fixed_s={fixed_s}, rtf={rtf}")
        self.inner = inner
        self.fixed_s = fixed_s
        self.rtf = rtf
        self.sample_rate = inner.sample_rate
        self.conditionals_suffix = inner.conditionals_suffix
        self.info = EngineInfo(
            "simulated", inner.info.device, inner.info.dtype, inner.info.weights,
            notes=f"simulated: fixed={fixed_s:g}s rtf={rtf:g}x around {inner.info.name}",
        )

    def generation_time(self, audio_seconds: float) -> float:
        """Wall time one chunk of ``audio_seconds`` takes."""
        return self.fixed_s + audio_seconds / self.rtf

    def warmup(self) -> None:
        self.inner.warmup()

    def default_voice(self) -> Any:
        return self.inner.default_voice()

    def prepare_voice(self, wav: np.ndarray, sample_rate: int) -> Any:
        return self.inner.prepare_voice(wav, sample_rate)

    def save_conditionals(self, conds: Any, path: Path) -> None:
        self.inner.save_conditionals(conds, path)

    def load_conditionals(self, path: Path) -> Any:
        return self.inner.load_conditionals(path)

    def synthesize(self, text: str, voice: Any, cancel: threading.Event) -> np.ndarray:
        started = time.monotonic()
        wav = self.inner.synthesize(text, voice, cancel)
        remaining = self.generation_time(wav.size / self.sample_rate) - (time.monotonic() - started)
        if remaining > 0:
            cancel.wait(remaining)  # wakes as soon as cancel is set: the delay is cancellable at any moment
        if cancel.is_set():
            raise Cancelled()
        return wav
