"""gateway/webrtc/outbound.py (a chunk's frames resampled and encoded in one call) and the track that sends what it
prepared: payloads decoded with libopus / G.711 as a listener would, barge-in dropping prepared frames (also those
still being prepared in a thread), and the encoder following what the listener heard across idle silence and a
barge-in."""

from __future__ import annotations

import asyncio
import fractions

import av
import numpy as np
import pytest
from aiortc.codecs.opus import OpusEncoder

from gateway.audio import Resampler, g711_decode, g711_encode
from gateway.webrtc.outbound import SETTLE_FRAMES, Outbound, idle_payload
from gateway.webrtc.track import PacedAudioTrack
from tests.rtc_helpers import tone
from tests.test_track import FakeTime

OPUS_FRAME = 960 * 2


def speech(seconds: float, seed: int) -> bytes:
    """Speech-like 24 kHz s16le: a few partials and some noise, at a level speech has."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 24000)) / 24000
    x = sum(a * np.sin(2 * np.pi * f * t + rng.uniform(0, 6)) for f, a in ((220, 6000), (440, 3000), (1200, 1500)))
    return (x + rng.normal(0, 300, t.size)).clip(-32000, 32000).astype("<i2").tobytes()


def aiortc_payloads(frames: bytes) -> list[bytes]:
    """What aiortc's sender made of these 48 kHz frames, each an ``av.AudioFrame`` through its Opus encoder."""
    encoder, payloads = OpusEncoder(), []
    for i in range(0, len(frames), OPUS_FRAME):
        frame = av.AudioFrame(format="s16", layout="mono", samples=960)
        frame.planes[0].update(frames[i:i + OPUS_FRAME])
        frame.sample_rate, frame.pts, frame.time_base = 48000, i // 2, fractions.Fraction(1, 48000)
        payloads += encoder.encode(frame)[0]
    return payloads


def decode_opus(payloads: list[bytes]) -> np.ndarray:
    ctx = av.CodecContext.create("libopus", "r")
    ctx.format, ctx.layout, ctx.sample_rate = "s16", "mono", 48000
    out = [f.to_ndarray().reshape(-1) for p in payloads for f in ctx.decode(av.Packet(p))]  # mono: stereo's left
    return np.concatenate(out).astype(np.float64)


def snr_db(reference: np.ndarray, other: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(reference ** 2) / max(1e-9, np.sum((other - reference) ** 2))))


def utterance(out: Outbound, pcm: bytes, pieces: int, generation: int = 0) -> tuple[bytes, list[bytes], list[bytes]]:
    """``pcm`` prepared in ``pieces`` uneven chunks, then finished: (frames, payloads, tail)."""
    cuts = sorted({0, len(pcm), *(2 * int(len(pcm) / 2 * f) for f in np.random.default_rng(7).random(pieces - 1))})
    frames, payloads = b"", []
    for a, b in zip(cuts, cuts[1:]):
        prepared = out.prepare(pcm[a:b], generation)
        frames += prepared.pcm
        payloads += prepared.payloads or []
    end = out.finish(generation)
    return frames + end.pcm, payloads + (end.payloads or []), end.tail


def test_chunks_become_whole_frames_each_with_its_payload_as_one_call_would_make_them() -> None:
    pcm = speech(1.0, 1)
    frames, payloads, tail = utterance(Outbound(48000, "opus"), pcm, pieces=7)
    whole_frames, whole_payloads, whole_tail = utterance(Outbound(48000, "opus"), pcm, pieces=1)
    assert len(frames) % OPUS_FRAME == 0 and len(payloads) == len(frames) // OPUS_FRAME
    assert (frames, payloads, tail) == (whole_frames, whole_payloads, whole_tail)  # chunking changes nothing
    expected = out_frames(pcm)
    assert frames[:len(expected)] == expected and not any(frames[len(expected):])  # the last frame padded
    assert len(tail) == SETTLE_FRAMES
    # As faithful as what aiortc's own encoder (stereo, the same bit rate) made of the same frames before.
    source = np.frombuffer(frames, "<i2").astype(np.float64)
    delay = 312  # libopus's pre-skip, which the decoder does not drop here
    ours = snr_db(source[:-delay], decode_opus(payloads)[delay:len(source)])
    aiortc = snr_db(source[:-delay], decode_opus(aiortc_payloads(frames))[delay:len(source)])
    assert ours > 6 and ours >= aiortc - 0.5, (ours, aiortc)


@pytest.mark.parametrize("codec", ["pcmu", "pcma"])
def test_g711_payloads_are_its_frames_coded(codec: str) -> None:
    frames, payloads, tail = utterance(Outbound(8000, codec), speech(0.5, 2), pieces=5)
    assert [len(p) for p in payloads] == [160] * (len(frames) // 320) and tail == []
    decoded = g711_decode(b"".join(payloads), {"pcmu": "pcm_mulaw", "pcma": "pcm_alaw"}[codec]).astype(np.float64)
    assert snr_db(np.frombuffer(frames, "<i2").astype(np.float64), decoded) > 30
    assert idle_payload(codec, 8000) == g711_encode(bytes(320), {"pcmu": "pcm_mulaw", "pcma": "pcm_alaw"}[codec])


def test_without_a_codec_only_frames() -> None:
    pcm = speech(0.31, 3)
    frames, payloads, tail = utterance(Outbound(8000), pcm, pieces=3)
    assert frames[:len(out_frames(pcm, 8000))] == out_frames(pcm, 8000) and len(frames) % 320 == 0
    assert len(frames) - len(out_frames(pcm, 8000)) < 320  # padded to a whole frame, no more
    assert payloads == [] and tail == []


def reference_after_silence(first: bytes, second: bytes, silent_frames: int) -> np.ndarray:
    """What a listener hears of ``second`` when the encoder saw every frame the listener got: ``first``, then
    ``silent_frames`` of silence."""
    out = Outbound(48000, "opus")
    _, a, tail = utterance(out, first, 1)
    gap = out.encoder.silence(silent_frames - len(tail))
    _, b, _ = utterance(out, second, 1)
    return decode_opus(a + tail + gap + b)[(len(a) + len(tail) + len(gap)) * 960:]


def test_after_idle_silence_the_next_utterance_decodes_as_if_the_encoder_had_seen_it_all() -> None:
    first, second, idle = speech(0.6, 4), speech(0.6, 5), 40
    out = Outbound(48000, "opus")
    _, a, tail = utterance(out, first, 3)
    _, b, _ = utterance(out, second, 3)
    sent = a + tail + [idle_payload("opus", 48000)] * (idle - len(tail)) + b  # what the track sends
    heard = decode_opus(sent)[(len(a) + idle) * 960:]
    assert snr_db(reference_after_silence(first, second, idle), heard) > 30


def test_after_a_barge_in_the_encoder_settles_before_the_next_utterance() -> None:
    first, second, idle = speech(0.6, 6), speech(0.6, 7), 25
    out = Outbound(48000, "opus")
    cut = out.prepare(first, 0).payloads[:10]  # 200 ms of it played, the rest dropped by the barge-in
    _, b, _ = utterance(out, second, 2, generation=1)
    heard = decode_opus(cut + [idle_payload("opus", 48000)] * idle + b)[(len(cut) + idle) * 960:]
    reference = Outbound(48000, "opus")
    played = reference.encoder.encode(out_frames(first)[:10 * OPUS_FRAME])
    rest = reference.encoder.silence(idle)
    _, b_ref, _ = utterance(reference, second, 1)
    expected = decode_opus(played + rest + b_ref)[(len(played) + idle) * 960:]
    assert snr_db(expected, heard) > 30
    # Without settling (what the encoder held mid-speech), the next utterance would fade in instead.
    unsettled = Outbound(48000, "opus")
    unsettled.prepare(first, 0)
    unsettled._settled = True  # as if it had not noticed
    _, b_bad, _ = utterance(unsettled, second, 1, generation=1)
    faded = decode_opus(cut + [idle_payload("opus", 48000)] * idle + b_bad)[(len(cut) + idle) * 960:]
    assert snr_db(expected, faded) < snr_db(expected, heard) - 10


def out_frames(pcm: bytes, rate: int = 48000) -> bytes:
    resampler = Resampler(rate)
    return resampler.process(pcm) + resampler.flush()


async def test_the_track_sends_prepared_payloads_and_barge_in_drops_them() -> None:
    t = FakeTime()
    track = PacedAudioTrack(clock=t.clock, sleep=t.sleep)
    track.set_sample_rate(48000, "opus")
    idle = idle_payload("opus", 48000)
    assert bytes(await track.recv()) == idle  # idle: the settled encoder's silence
    await track.prepare(tone(0.5))  # in a thread
    packets = [await track.recv() for _ in range(5)]
    assert all(isinstance(p, av.Packet) for p in packets)
    assert [p.pts for p in packets] == [960 * k for k in range(1, 6)] and packets[0].time_base.denominator == 48000
    assert all(bytes(p) != idle for p in packets) and track.jitter.frames_out == 5
    track.clear()  # barge-in: the next frame is silence, the prepared ones are gone
    assert bytes(await track.recv()) == idle and track.jitter.buffered_seconds == 0
    # A chunk still being prepared in its thread when the barge-in comes is dropped when it lands.
    pending = asyncio.ensure_future(track.prepare(tone(0.5)))
    await asyncio.sleep(0)
    track.clear()
    await pending
    assert track.jitter.buffered_seconds == 0 and bytes(await track.recv()) == idle
    # An utterance's end: its last frames, then the encoder's tail, then idle silence.
    await track.prepare(tone(0.1))
    track.end_of_utterance()
    sent = [bytes(await track.recv()) for _ in range(5 + SETTLE_FRAMES + 2)]
    assert track.jitter.frames_out == 5 + 5 and not track.jitter.playing and track.jitter.underruns == 0
    assert all(p != idle for p in sent[:5]) and sent[-2:] == [idle, idle]
