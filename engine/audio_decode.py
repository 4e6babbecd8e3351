"""Decode an uploaded audio file from memory into float32 mono samples.

PyAV reads any container and codec; it is imported on first use, so the engine runs where it is not installed (the GPU
measurement host, where its 35 MB wheel does not fit beside the others). Without it, libsndfile (``soundfile``) reads
WAV, FLAC and Ogg Vorbis/Opus; other formats are then refused as ``bad_audio`` with the reason.
"""

from __future__ import annotations

import io
import itertools
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import soundfile as sf

from engine.engines.base import EngineError

if TYPE_CHECKING:
    import av


def decode_audio(data: bytes, *, max_seconds: float | None = None) -> tuple[np.ndarray, int]:
    """Return ``(samples, sample_rate)``: float32 mono (channels averaged) at the file's native rate.

    Raises ``EngineError`` with code ``bad_audio`` for data that holds no decodable, finite audio, and ``too_long``
    as soon as more than ``max_seconds`` have been decoded (so a small upload cannot expand into gigabytes).
    """
    try:
        import av
    except ImportError:
        samples, rate = _decode_with_soundfile(data, max_seconds)
    else:
        samples, rate = _decode_with_pyav(av, data, max_seconds)
    if samples.size == 0:
        raise EngineError("the file holds no audio samples", "bad_audio")
    if not np.isfinite(samples).all():
        raise EngineError("the audio holds non-finite samples", "bad_audio")
    return samples, rate


def _decode_with_pyav(av: ModuleType, data: bytes, max_seconds: float | None) -> tuple[np.ndarray, int]:
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.audio:
                raise EngineError("the file holds no audio stream", "bad_audio")
            return _decode_stream(av, container, container.streams.audio[0], max_seconds)
    except (av.FFmpegError, ValueError, MemoryError) as exc:  # ValueError: PyAV's own checks on odd streams
        raise EngineError(f"undecodable audio: {exc}", "bad_audio") from exc


def _decode_stream(
    av: ModuleType, container: av.container.InputContainer, stream: av.AudioStream, max_seconds: float | None
) -> tuple[np.ndarray, int]:
    """Decode every frame of ``stream`` to float planar at the first frame's rate, then average the channels."""
    parts: list[np.ndarray] = []
    total = 0
    rate = 0
    resampler: av.AudioResampler | None = None
    for frame in itertools.chain(container.decode(stream), [None]):  # None flushes the resampler
        if resampler is None:
            if frame is None:
                break
            rate = frame.sample_rate
            if rate <= 0:
                raise EngineError("the audio has no sample rate", "bad_audio")
            resampler = av.AudioResampler(format="fltp", rate=rate)
        for out in resampler.resample(frame):
            parts.append(out.to_ndarray().mean(axis=0, dtype=np.float32))
            total += parts[-1].size
        _check_length(total, rate, max_seconds)
    samples = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    return samples.astype(np.float32, copy=False), rate


def _decode_with_soundfile(data: bytes, max_seconds: float | None) -> tuple[np.ndarray, int]:
    """WAV, FLAC and Ogg through libsndfile, for hosts without PyAV; the length is checked before decoding."""
    try:
        with sf.SoundFile(io.BytesIO(data)) as f:
            _check_length(f.frames, f.samplerate, max_seconds)
            samples = f.read(dtype="float32", always_2d=True)
            return samples.mean(axis=1, dtype=np.float32), f.samplerate
    except (sf.SoundFileError, RuntimeError, TypeError) as exc:
        raise EngineError(f"undecodable audio (without PyAV only WAV, FLAC and Ogg are read): {exc}",
                          "bad_audio") from exc


def _check_length(samples: int, rate: int, max_seconds: float | None) -> None:
    if max_seconds is not None and samples > max_seconds * rate:
        raise EngineError(f"the audio is longer than {max_seconds:g} s", "too_long")
