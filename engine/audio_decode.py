"""Decode an uploaded audio file (any container/codec PyAV reads) from memory into float32 mono samples."""

from __future__ import annotations

import io
import itertools

import av
import numpy as np

from engine.engines.base import EngineError


def decode_audio(data: bytes, *, max_seconds: float | None = None) -> tuple[np.ndarray, int]:
    """Return ``(samples, sample_rate)``: float32 mono (channels averaged) at the file's native rate.

    Raises ``EngineError`` with code ``bad_audio`` for data that holds no decodable, finite audio, and ``too_long``
    as soon as more than ``max_seconds`` have been decoded (so a small upload cannot expand into gigabytes).
    """
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.audio:
                raise EngineError("the file holds no audio stream", "bad_audio")
            samples, rate = _decode_stream(container, container.streams.audio[0], max_seconds)
    except (av.FFmpegError, ValueError, MemoryError) as exc:  # ValueError: PyAV's own checks on odd streams
        raise EngineError(f"undecodable audio: {exc}", "bad_audio") from exc
    if samples.size == 0:
        raise EngineError("the file holds no audio samples", "bad_audio")
    if not np.isfinite(samples).all():
        raise EngineError("the audio holds non-finite samples", "bad_audio")
    return samples, rate


def _decode_stream(
    container: av.container.InputContainer, stream: av.AudioStream, max_seconds: float | None
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
        if max_seconds is not None and total > max_seconds * rate:
            raise EngineError(f"the audio is longer than {max_seconds:g} s", "too_long")
    samples = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    return samples.astype(np.float32, copy=False), rate
