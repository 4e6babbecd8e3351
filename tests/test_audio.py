"""gateway/audio.py: every encoder's output decodes back (with PyAV) to the tone that went in."""

import io
import tracemalloc
import wave

import av
import numpy as np
import pytest

from engine.protocol import SAMPLE_RATE
from gateway.audio import Resampler, make_encoder, wav_header
from gateway.formats import FORMATS

RAW_DEMUXERS = {"pcm": "s16le", "pcm_f32le": "f32le", "mulaw": "mulaw", "alaw": "alaw"}


def tone(seconds: float, freq: float = 440.0, rate: int = 24000, amp: int = 10000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * freq * t) * amp).astype("<i2").tobytes()


def decode(fmt: str, data: bytes, rate: int) -> tuple[np.ndarray, int]:
    """Decode with PyAV to float mono samples and their rate."""
    if fmt in RAW_DEMUXERS:
        container = av.open(io.BytesIO(data), format=RAW_DEMUXERS[fmt],
                            options={"sample_rate": str(rate), "ch_layout": "mono"})
    else:
        container = av.open(io.BytesIO(data))
    frames = [f.to_ndarray().astype(np.float64) for f in container.decode(audio=0)]
    out_rate = container.streams.audio[0].rate
    container.close()
    if not frames:
        return np.zeros(0), out_rate
    samples = np.concatenate([f.reshape(f.shape[0], -1)[0] if f.ndim > 1 else f for f in frames])
    if np.abs(samples).max() <= 1.5:  # float formats
        samples = samples * 32768
    return samples, out_rate


def peak_freq(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(samples.size)))
    return float(np.argmax(spectrum)) * rate / samples.size


def encode_chunked(enc, pcm: bytes, sizes) -> bytes:
    out, pos, i = [], 0, 0
    while pos < len(pcm):
        n = sizes[i % len(sizes)]
        out.append(enc.encode(pcm[pos:pos + n]))
        pos += n
        i += 1
    out.append(enc.flush())
    return b"".join(out)


@pytest.mark.parametrize("fmt", FORMATS)
def test_tone_survives(fmt):
    enc = make_encoder(fmt, None)
    data = encode_chunked(enc, tone(1.0), [4800])
    samples, rate = decode(fmt, data, enc.sample_rate)
    assert rate == enc.sample_rate
    duration = samples.size / rate
    assert 0.98 <= duration <= 1.12, duration  # codecs add priming/padding, never lose audio
    middle = samples[int(0.2 * rate):int(0.8 * rate)]
    assert abs(peak_freq(middle, rate) - 440) < 5
    rms = np.sqrt(np.mean(middle ** 2))
    assert 0.8 * 7071 < rms < 1.2 * 7071, rms


@pytest.mark.parametrize("fmt", ["pcm", "wav", "mp3", "aac", "flac"])
@pytest.mark.parametrize("rate", [8000, 16000, 48000])
def test_rates(fmt, rate):
    enc = make_encoder(fmt, rate)
    data = encode_chunked(enc, tone(0.5, 1000), [2400])
    samples, out_rate = decode("pcm" if fmt == "pcm" else fmt, data, rate)
    assert out_rate == rate
    # Nothing lost; MP3 without a seekable file has no LAME header to trim its priming, up to ~0.15 s at 8 kHz.
    assert 0.48 <= samples.size / rate <= 0.7
    assert abs(peak_freq(samples[int(0.1 * rate):int(0.4 * rate)], rate) - 1000) < 10


@pytest.mark.parametrize("fmt", ["pcm", "wav", "mulaw", "alaw", "flac"])
def test_chunked_equals_one_shot(fmt):
    pcm = tone(0.7, 300)
    one = make_encoder(fmt, None)
    whole = one.encode(pcm) + one.flush()
    # Odd chunk sizes split samples in half; the encoder must carry the odd byte.
    chunked = encode_chunked(make_encoder(fmt, None), pcm, [1, 333, 4801, 7, 960])
    assert chunked == whole


@pytest.mark.parametrize("fmt", ["opus", "mp3", "aac"])
def test_chunked_decodes_like_one_shot(fmt):
    pcm = tone(0.7, 300)
    one = make_encoder(fmt, None)
    whole, rate = decode(fmt, one.encode(pcm) + one.flush(), one.sample_rate)
    chunked, _ = decode(fmt, encode_chunked(make_encoder(fmt, None), pcm, [1, 333, 4801, 7]), rate)
    assert whole.size == chunked.size
    assert np.sqrt(np.mean((whole - chunked) ** 2)) < 0.02 * np.sqrt(np.mean(whole ** 2))


def test_opus_pages_leave_early():
    enc = make_encoder("opus", None)
    first = enc.encode(tone(0.1))
    assert first.startswith(b"OggS")
    assert b"OpusHead" in first
    assert first.count(b"OggS") >= 3  # head, tags and audio pages within 100 ms of input
    enc.flush()


def test_wav_header_streaming():
    enc = make_encoder("wav", 16000)
    data = encode_chunked(enc, tone(0.2), [4800])
    assert data.startswith(b"RIFF\xff\xff\xff\xffWAVE")
    assert data[:44] == wav_header(16000)
    assert data.count(b"RIFF") == 1
    assert len(data) - 44 == 2 * 3200


def test_whole_wav_holds_everything_back_and_states_its_true_sizes():
    enc = make_encoder("wav", 16000, whole=True)
    assert enc.encode(tone(0.1)) == b"" and enc.encode(tone(0.1)) == b""
    data = enc.flush()
    assert data[:44] == wav_header(16000, 2 * 3200) and len(data) == 44 + 2 * 3200
    with wave.open(io.BytesIO(data)) as clip:
        assert (clip.getframerate(), clip.getnframes(), clip.getnchannels()) == (16000, 3200, 1)
    assert make_encoder("pcm", whole=True).encode(tone(0.1))  # a format that streams as it is, whole or not


def test_a_whole_wav_is_held_as_one_copy_and_goes_out_in_pieces():
    """A long utterance's whole WAV (a minute here, 2.9 MB) is held once: its end copies nothing whole (before, the
    file was copied twice there), and the body sends it 64 KiB at a time."""
    from gateway.http.stream import WRITE_BYTES, in_pieces

    enc, second = make_encoder("wav", 24000, whole=True), tone(1.0)
    for _ in range(60):
        enc.encode(second)
    tracemalloc.start()
    try:
        data = enc.flush()
        pieces = [len(piece) for piece in in_pieces(data)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(data) == 44 + 60 * len(second) and data[:44] == wav_header(24000, 60 * len(second))
    assert peak < 1.5 * len(data), peak / len(data)  # (a buffer's last growth may move it: one copy at most)
    assert sum(pieces) == len(data) and max(pieces) == WRITE_BYTES
    assert enc.flush() == wav_header(24000, 0)  # the next utterance starts empty


def test_raw_encoder_continues_after_flush():
    enc = make_encoder("wav", 24000)
    first = enc.encode(tone(0.1)) + enc.flush()
    second = enc.encode(tone(0.1)) + enc.flush()
    assert first[:4] == b"RIFF" and b"RIFF" not in second
    assert len(second) == 4800


def test_container_encoder_restarts_after_flush():
    enc = make_encoder("opus", None)
    first = enc.encode(tone(0.2)) + enc.flush()
    second = enc.encode(tone(0.2)) + enc.flush()
    assert second.startswith(b"OggS") and b"OpusHead" in second
    samples, _ = decode("opus", second, 48000)
    assert samples.size >= 0.2 * 48000
    assert first


def test_silence_round_trip_mulaw_is_quiet():
    enc = make_encoder("mulaw", 8000)
    data = enc.encode(bytes(4800)) + enc.flush()  # 0.1 s
    assert len(data) == 800
    samples, _ = decode("mulaw", data, 8000)
    assert np.abs(samples).max() < 16


@pytest.mark.parametrize("fmt,rate", [("ogg", None), ("mulaw", 16000), ("opus", 24000), ("pcm", 11025),
                                      ("wav", 0), ("alaw", 48000)])
def test_bad_format_or_rate(fmt, rate):
    with pytest.raises(ValueError) as err:
        make_encoder(fmt, rate)
    assert fmt in str(err.value)


def test_content_types():
    assert make_encoder("opus").content_type.startswith("audio/ogg")
    assert make_encoder("mp3").content_type == "audio/mpeg"
    assert make_encoder("pcm_s16le", 16000).format == "pcm"
    assert make_encoder("mulaw").sample_rate == 8000


@pytest.mark.parametrize("out_rate", [8000, 16000, 24000, 48000])
def test_resampler_streaming_length_and_tone(out_rate):
    r = Resampler(out_rate)
    pcm = tone(1.0, 1000)
    out = b"".join(r.process(pcm[i:i + 961]) for i in range(0, len(pcm), 961)) + r.flush()
    samples = np.frombuffer(out, dtype="<i2").astype(np.float64)
    assert abs(samples.size - out_rate) <= 2
    assert abs(peak_freq(samples, out_rate) - 1000) < 3
    # Ready for the next utterance after a flush.
    again = r.process(pcm[:4800]) + r.flush()
    assert abs(len(again) // 2 - out_rate // 10) <= 2  # 0.1 s


def test_resampler_reset_drops_tail():
    r = Resampler(48000)
    r.process(tone(0.05))
    r.reset()
    assert r.flush() == b""


def _anon_mib() -> float:
    return next(int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith("RssAnon"))


def test_a_long_chunk_costs_a_live_resampler_no_memory_to_speak_of() -> None:
    """libswresample keeps buffers sized for the largest frame it was given for as long as the stream lives (a
    WebSocket client at 48 kHz that stops reading keeps its session, so its encoder, until --stall-timeout): handed a
    17 s engine chunk whole it held ~19 MiB per stream. In RESAMPLE_BLOCK pieces the output is the same, and 8 live
    streams after such a chunk each hold a few MiB between them."""
    chunk = (np.random.default_rng(1).standard_normal(SAMPLE_RATE * 17) * 3000).astype("<i2").tobytes()
    one = av.AudioResampler(format="s16", layout="mono", rate=48000)  # the chunk as one frame, as before the blocks
    frame = av.AudioFrame.from_ndarray(np.frombuffer(chunk, "<i2").reshape(1, -1), format="s16", layout="mono")
    frame.sample_rate = SAMPLE_RATE
    whole = b"".join(f.to_ndarray().tobytes() for f in [*one.resample(frame), *one.resample(None)])
    ours = Resampler(48000)
    assert ours.process(chunk) + ours.flush() == whole
    Resampler(48000).process(chunk[:4800])  # the libraries loaded and warm
    before = _anon_mib()
    live = [Resampler(48000) for _ in range(8)]
    for resampler in live:
        assert len(resampler.process(chunk)) > 0
    assert _anon_mib() - before < 16, f"{_anon_mib() - before:.1f} MiB for 8 live 48 kHz streams"
