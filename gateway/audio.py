"""Streaming resampler and wire encoders for the engine's mono s16le speech (PyAV); the formats: gateway/formats.py.

Everything here is incremental: ``encode(pcm24k)`` returns whatever bytes exist so far, ``flush()`` returns the rest
at the end of an utterance (or stream). No sockets, no event loop.
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from functools import cache

import av
import numpy as np

from engine.protocol import SAMPLE_RATE
from gateway.formats import FORMATS, output_format


def _frame(samples: np.ndarray, rate: int) -> av.AudioFrame:
    frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
    frame.sample_rate = rate
    return frame


def _frame_bytes(frame: av.AudioFrame) -> bytes:
    return frame.to_ndarray().tobytes()


class _Pcm16Input:
    """Turns a byte stream of s16le into whole samples, carrying an odd trailing byte to the next call."""

    def __init__(self) -> None:
        self._carry = b""

    def take(self, pcm: bytes) -> np.ndarray:
        data = self._carry + bytes(pcm)
        cut = len(data) & ~1
        self._carry = data[cut:]
        return np.frombuffer(data[:cut], dtype="<i2")

    def reset(self) -> None:
        self._carry = b""


# The most samples handed to PyAV's resampler at once. libswresample sizes its buffers for the largest frame it was
# given and keeps them for the stream's life: an engine chunk of 17 s handed whole cost ~19 MiB per 48 kHz stream
# (held for as long as a client that stops reading keeps its session: --stall-timeout); in 100 ms pieces, kilobytes.
RESAMPLE_BLOCK = SAMPLE_RATE // 10


class Resampler:
    """Streaming s16 mono resampler (one ``av.AudioResampler`` per stream), fed at most ``RESAMPLE_BLOCK`` samples
    at a time.

    ``process`` may hold back a few samples (filter delay); ``flush`` returns them at the end of an utterance and
    readies the resampler for the next one; ``reset`` drops them (barge-in).
    """

    def __init__(self, out_rate: int, in_rate: int = SAMPLE_RATE) -> None:
        if out_rate <= 0 or in_rate <= 0:
            raise ValueError(f"bad sample rates {in_rate} -> {out_rate}")
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._input = _Pcm16Input()
        self._av: av.AudioResampler | None = None

    def _resampler(self) -> av.AudioResampler:
        if self._av is None:
            self._av = av.AudioResampler(format="s16", layout="mono", rate=self.out_rate)
        return self._av

    def process(self, pcm: bytes) -> bytes:
        """Resample a piece of s16le at ``in_rate``; returns s16le at ``out_rate`` (possibly empty)."""
        samples = self._input.take(pcm)
        if self.in_rate == self.out_rate or samples.size == 0:
            return samples.tobytes()
        resampler = self._resampler()
        return b"".join(_frame_bytes(out) for start in range(0, samples.size, RESAMPLE_BLOCK)
                        for out in resampler.resample(_frame(samples[start:start + RESAMPLE_BLOCK], self.in_rate)))

    def flush(self) -> bytes:
        """Return the held-back tail and start afresh for the next utterance."""
        self._input.reset()
        if self._av is None:
            return b""
        frames = self._av.resample(None)
        self._av = None
        return b"".join(_frame_bytes(f) for f in frames)

    def reset(self) -> None:
        """Drop everything held back (barge-in)."""
        self._input.reset()
        self._av = None


class Encoder(ABC):
    """Incremental encoder from the engine's mono s16le to one wire format."""

    format: str
    content_type: str
    sample_rate: int

    @abstractmethod
    def encode(self, pcm24k: bytes) -> bytes:
        """Encode a piece of engine audio; returns the bytes that exist so far (possibly empty)."""

    @abstractmethod
    def flush(self) -> bytes:
        """End of the utterance: return every byte still held back."""


@cache
def _g711_table(codec: str) -> np.ndarray:
    """Lookup table from every s16 value (as uint16) to its G.711 byte, built once with FFmpeg's own encoder."""
    ctx = av.CodecContext.create(codec, "w")
    ctx.sample_rate = 8000
    ctx.layout = "mono"
    ctx.format = "s16"
    every = np.arange(65536, dtype=np.uint16).view(np.int16)
    packets = ctx.encode(_frame(every, 8000)) + ctx.encode(None)
    table = np.frombuffer(b"".join(bytes(p) for p in packets), dtype=np.uint8)
    assert table.size == 65536
    return table


def g711_encode(pcm: bytes, codec: str) -> bytes:
    """s16le (8 kHz) to G.711 bytes; ``codec`` is ``pcm_mulaw`` or ``pcm_alaw``."""
    samples = np.frombuffer(pcm, dtype="<i2").view(np.uint16)
    return _g711_table(codec)[samples].tobytes()


@cache
def _g711_decode_table(codec: str) -> np.ndarray:
    """Every G.711 byte's s16 value, decoded once with FFmpeg's own decoder."""
    ctx = av.CodecContext.create(codec, "r")
    ctx.sample_rate, ctx.layout = 8000, "mono"
    frames = ctx.decode(av.Packet(bytes(range(256))))
    table = np.concatenate([f.to_ndarray().reshape(-1) for f in frames]).astype("<i2")
    assert table.size == 256
    return table


def g711_decode(data: bytes, codec: str) -> np.ndarray:
    """G.711 bytes to s16 samples; ``codec`` is ``pcm_mulaw`` or ``pcm_alaw``."""
    return _g711_decode_table(codec)[np.frombuffer(data, dtype=np.uint8)]


UNKNOWN_SIZE = 0xFFFFFFFF


WAV_TAGS = {"pcm": (1, 16), "pcm_f32le": (3, 32), "alaw": (6, 8), "mulaw": (7, 8)}  # format: (format tag, bits)


def wav_header(sample_rate: int, data_bytes: int | None = None, fmt: str = "pcm") -> bytes:
    """A WAV header (mono; 16-bit PCM, or ``fmt``'s samples: WAV_TAGS) for ``data_bytes`` of samples; None: a
    streaming header whose RIFF and data sizes are unknown (0xFFFFFFFF, which players read as "up to the end of the
    stream")."""
    tag, bits = WAV_TAGS[fmt]
    width = bits // 8
    fmt_chunk = struct.pack("<HHIIHH", tag, 1, sample_rate, sample_rate * width, width, bits)
    riff = UNKNOWN_SIZE if data_bytes is None else 4 + 8 + len(fmt_chunk) + 8 + data_bytes
    return (
        b"RIFF" + struct.pack("<I", riff) + b"WAVE"
        + b"fmt " + struct.pack("<I", len(fmt_chunk)) + fmt_chunk
        + b"data" + struct.pack("<I", UNKNOWN_SIZE if data_bytes is None else data_bytes)
    )


class RawEncoder(Encoder):
    """PCM s16le or f32le (``float32``), or G.711, at a fixed rate (optionally behind a streaming WAV header).

    It can be used again after ``flush``: the next utterance simply continues the stream (the header is sent once).
    """

    def __init__(self, fmt: str, sample_rate: int, content_type: str, g711: str | None = None,
                 header: bytes = b"", float32: bool = False) -> None:
        self.format = fmt
        self.sample_rate = sample_rate
        self.content_type = content_type
        self._g711 = g711
        self._float32 = float32
        self._header = header
        self._resampler = Resampler(sample_rate)

    def _out(self, pcm: bytes) -> bytes:
        body = g711_encode(pcm, self._g711) if self._g711 else pcm
        if self._float32:
            body = (np.frombuffer(body, dtype="<i2") / np.float32(32768)).astype("<f4").tobytes()
        if self._header and body:
            body, self._header = self._header + body, b""
        return body

    def encode(self, pcm24k: bytes) -> bytes:
        return self._out(self._resampler.process(pcm24k))

    def flush(self) -> bytes:
        return self._out(self._resampler.flush())


class WavFileEncoder(Encoder):
    """A whole WAV file with its true sizes: holds every sample back until ``flush`` (one utterance).

    The file is held as one copy: the samples gather behind room for the header, which ``flush`` fills in place and
    hands over the buffer itself (a 5,000-character utterance is ~14 MB at 24 kHz; copying it at the end made two)."""

    format = "wav"
    HEADER_BYTES = len(wav_header(SAMPLE_RATE, 0))

    def __init__(self, sample_rate: int, content_type: str) -> None:
        self.sample_rate = sample_rate
        self.content_type = content_type
        self._resampler = Resampler(sample_rate)
        self._data = bytearray(self.HEADER_BYTES)

    def encode(self, pcm24k: bytes) -> bytes:
        self._data += self._resampler.process(pcm24k)
        return b""

    def flush(self) -> bytearray:
        self._data += self._resampler.flush()
        data, self._data = self._data, bytearray(self.HEADER_BYTES)
        data[:self.HEADER_BYTES] = wav_header(self.sample_rate, len(data) - self.HEADER_BYTES)
        return data


class _GrowingBuffer:
    """A write-only, non-seekable file for PyAV: containers write into it, the encoder drains it."""

    def __init__(self) -> None:
        self._data = bytearray()

    def write(self, data: bytes) -> int:
        self._data += data
        return len(data)

    def drain(self) -> bytes:
        out = bytes(self._data)
        self._data.clear()
        return out


class ContainerEncoder(Encoder):
    """A compressed format in a streamable container (Ogg/Opus, MP3, ADTS AAC, FLAC) written to memory.

    The container is opened on the first audio and closed by ``flush``; the next ``encode`` starts a new one (a
    chained Ogg stream, or simply concatenated MP3/ADTS frames).
    """

    def __init__(self, fmt: str, container: str, codec: str, sample_rate: int, content_type: str,
                 container_options: dict[str, str] | None = None, codec_options: dict[str, str] | None = None,
                 bit_rate: int | None = None) -> None:
        self.format = fmt
        self.sample_rate = sample_rate
        self.content_type = content_type
        self._container_format = container
        self._codec = codec
        self._container_options = {"flush_packets": "1", **(container_options or {})}
        self._codec_options = codec_options or {}
        self._bit_rate = bit_rate
        self._input = _Pcm16Input()
        self._buffer = _GrowingBuffer()
        self._container: av.container.OutputContainer | None = None
        self._stream: av.audio.stream.AudioStream | None = None

    def _open(self) -> av.audio.stream.AudioStream:
        self._container = av.open(self._buffer, "w", format=self._container_format,
                                  options=self._container_options)
        stream = self._container.add_stream(self._codec, rate=self.sample_rate, layout="mono")
        if self._bit_rate:
            stream.codec_context.bit_rate = self._bit_rate
        stream.codec_context.options = dict(self._codec_options)
        self._stream = stream
        return stream

    def _mux(self, frame: av.AudioFrame | None) -> None:
        assert self._container is not None and self._stream is not None
        for packet in self._stream.encode(frame):
            self._container.mux(packet)

    def encode(self, pcm24k: bytes) -> bytes:
        samples = self._input.take(pcm24k)
        if samples.size:
            if self._stream is None:
                self._open()
            # PyAV's encoder resamples to the codec's rate, sample format and frame size itself.
            self._mux(_frame(samples, SAMPLE_RATE))
        return self._buffer.drain()

    def flush(self) -> bytes:
        self._input.reset()
        if self._container is not None:
            self._mux(None)
            self._container.close()
            self._container = self._stream = None
        return self._buffer.drain()


def make_encoder(format: str, sample_rate: int | None = None, whole: bool = False, in_wav: bool = False) -> Encoder:
    """Build an encoder for ``format`` (a name or alias in gateway/formats.py); ``sample_rate`` None means the
    format's default; ``whole``: one complete file rather than a stream where that differs (a WAV header with its true
    sizes, sent at the end); ``in_wav``: a raw format's samples behind a streaming WAV header of their kind. Raises
    ValueError for an unknown format or a rate the format does not take."""
    spec = output_format(format)
    fmt = spec.name
    rate = sample_rate if sample_rate is not None else spec.default_rate
    if rate not in spec.rates:
        raise ValueError(f"{fmt} supports sample_rate {', '.join(map(str, spec.rates))}, not {sample_rate!r}")
    ctype = spec.content_type
    if in_wav and fmt in WAV_TAGS:
        g711 = f"pcm_{fmt}" if fmt in ("mulaw", "alaw") else None
        return RawEncoder(fmt, rate, FORMATS["wav"].content_type, g711=g711, header=wav_header(rate, fmt=fmt),
                          float32=fmt == "pcm_f32le")
    if fmt == "pcm":
        return RawEncoder(fmt, rate, ctype)
    if fmt == "pcm_f32le":
        return RawEncoder(fmt, rate, ctype, float32=True)
    if fmt == "wav":
        return WavFileEncoder(rate, ctype) if whole else RawEncoder(fmt, rate, ctype, header=wav_header(rate))
    if fmt in ("mulaw", "alaw"):
        return RawEncoder(fmt, rate, ctype, g711="pcm_mulaw" if fmt == "mulaw" else "pcm_alaw")
    if fmt == "opus":
        # One Ogg page per 20 ms packet, so pages leave as soon as they exist.
        return ContainerEncoder(fmt, "ogg", "libopus", rate, ctype, container_options={"page_duration": "20000"},
                                codec_options={"application": "voip"}, bit_rate=32000)
    if fmt == "mp3":
        return ContainerEncoder(fmt, "mp3", "libmp3lame", rate, ctype, bit_rate=64000)
    if fmt == "aac":
        return ContainerEncoder(fmt, "adts", "aac", rate, ctype, bit_rate=64000)
    return ContainerEncoder(fmt, "flac", "flac", rate, ctype)
