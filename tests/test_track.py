"""gateway/webrtc/track.py: pacing on a fake clock, and a real in-process pair of aiortc peers."""

import asyncio
import threading
import time

import av

import numpy as np
import pytest

from gateway.webrtc.signalling import negotiate
from gateway.webrtc.track import PacedAudioTrack, TrackSink
from cbf_tools.peers.rtc_listener import SPEECH_RMS, Listener
from tests.rtc_helpers import loopback_only, tone


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


async def test_frames_exact_paced_from_first_recv():
    t = FakeTime()
    track = PacedAudioTrack(48000, clock=t.clock, sleep=t.sleep)
    t.now += 5.0  # time before the first recv() does not count
    frames = [await track.recv() for _ in range(5)]
    assert [f.pts for f in frames] == [0, 960, 1920, 2880, 3840]
    assert all(f.samples == 960 and f.sample_rate == 48000 and f.format.name == "s16" for f in frames)
    assert all(f.layout.name == "mono" for f in frames)
    assert t.sleeps == pytest.approx([0.02] * 4)
    assert not np.any(frames[0].to_ndarray())  # idle: silence, never None


async def test_tracks_started_apart_tick_together_on_one_grid():
    """A track's first frame waits for the next tick of the 20 ms grid every track shares, so tracks started at any
    moments fall due at the same instants: the event loop wakes once a tick for all of them."""
    opus_time, pcmu_time = FakeTime(), FakeTime()
    opus_time.now, pcmu_time.now = 100.003, 100.011
    opus = PacedAudioTrack(48000, clock=opus_time.clock, sleep=opus_time.sleep)
    pcmu = PacedAudioTrack(8000, clock=pcmu_time.clock, sleep=pcmu_time.sleep)
    for _ in range(3):
        await opus.recv()
        await pcmu.recv()
    assert opus_time.now == pytest.approx(100.06) and pcmu_time.now == pytest.approx(100.06)
    assert opus_time.sleeps == pytest.approx([0.017, 0.02, 0.02]) and opus.late_ticks == pcmu.late_ticks == 0


async def test_stall_caught_up_not_reanchored():
    t = FakeTime()
    track = PacedAudioTrack(8000, clock=t.clock, sleep=t.sleep)
    for _ in range(3):
        await track.recv()
    t.now += 0.2  # the event loop was blocked
    t.sleeps.clear()
    pts, slept = [], []
    for _ in range(12):
        pts.append((await track.recv()).pts)
        slept.append(bool(t.sleeps))
        t.sleeps.clear()
    assert pts == list(range(3 * 160, 15 * 160, 160))  # continuous
    # The ten frames due during the stall go out at once, then the original 20 ms schedule resumes.
    assert slept == [False] * 10 + [True] * 2
    assert track.late_ticks == 9 and track.max_late == pytest.approx(0.18)
    assert t.now == pytest.approx(100.0 + track.frames_sent * 0.02 - 0.02, abs=1e-6)


async def test_feed_resamples_and_pads():
    t = FakeTime()
    track = PacedAudioTrack(8000, clock=t.clock, sleep=t.sleep)
    track.feed(tone(0.05))  # 50 ms at 24 kHz -> 400 samples at 8 kHz
    track.end_of_utterance()
    frames = [await track.recv() for _ in range(4)]
    loud = [float(np.sqrt(np.mean(f.to_ndarray().astype(float) ** 2))) > SPEECH_RMS for f in frames]
    assert loud == [True, True, True, False]
    assert track.jitter.samples_in + track.jitter.samples_padded == 480
    assert track.jitter.underruns == 0


async def test_an_underrun_while_a_chunk_is_being_prepared_is_counted_as_the_gateways():
    """Running dry while a chunk that has arrived is still being encoded in its thread is the gateway's underrun;
    running dry with nothing in hand is the engine's (``bench cpu`` and ``/metrics`` tell them apart)."""
    t = FakeTime()
    track = PacedAudioTrack(48000, clock=t.clock, sleep=t.sleep)
    track.set_sample_rate(48000, "opus")
    sink, frame_24k = TrackSink(track), bytes(960)  # 20 ms at 24 kHz
    await track.prepare(frame_24k * 2)  # reaches an empty track: prepared at once
    release, prepare = threading.Event(), track.outbound.prepare
    track.outbound.prepare = lambda pcm, generation: release.wait(5) and prepare(pcm, generation)  # a slow encoder
    slow = asyncio.create_task(track.prepare(frame_24k * 2))  # the track is not empty: this one goes to a thread
    await asyncio.sleep(0.01)
    assert [isinstance(track.take(t.now), av.Packet) for _ in range(3)] == [True] * 3  # 2 frames, then silence
    assert (sink.underruns(), sink.underruns_in_gateway()) == (1, 1)
    release.set()
    await slow
    track.take(t.now), track.take(t.now)
    track.take(t.now)  # dry again, with nothing in hand: the engine's
    assert (sink.underruns(), sink.underruns_in_gateway()) == (2, 1)


async def test_rate_fixed_once_started():
    track = PacedAudioTrack(48000, clock=FakeTime().clock, sleep=FakeTime().sleep)
    track.set_sample_rate(8000)
    assert track.frame_samples == 160
    await track.recv()
    with pytest.raises(RuntimeError):
        track.set_sample_rate(48000)


async def test_sink_played_seconds_and_end_waits_for_playout():
    t = FakeTime()
    track = PacedAudioTrack(8000, clock=t.clock, sleep=t.sleep)
    sink = TrackSink(track)
    await sink.begin()
    await sink.write(tone(0.1))
    ended = asyncio.ensure_future(sink.end())
    await asyncio.sleep(0)
    assert not ended.done()
    for _ in range(3):
        await track.recv()
    assert sink.played_seconds() == pytest.approx(0.06)
    for _ in range(2):
        await track.recv()
    await asyncio.wait_for(ended, 1)
    assert sink.played_seconds() == pytest.approx(0.1)
    # A cleared utterance ends at once.
    await sink.begin()
    await sink.write(tone(1.0))
    ended = asyncio.ensure_future(sink.end())
    await asyncio.sleep(0)
    await sink.clear()
    await asyncio.wait_for(ended, 1)
    assert sink.played_seconds() == 0


async def pair(monkeypatch, codecs=None, codec=None) -> tuple[PacedAudioTrack, Listener, object, str]:
    """A server peer with a PacedAudioTrack and a listening client peer, connected on loopback."""
    from aiortc import RTCConfiguration, RTCPeerConnection

    loopback_only(monkeypatch)
    server = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    track = PacedAudioTrack()
    client = Listener.create(codecs=codecs, datachannel=False)
    chosen = await negotiate(server, track, await client.offer(), codec)
    await client.accept(server.localDescription.sdp)
    await client.wait_for(lambda: len(client.frames) >= 3)
    return track, client, server, chosen


async def test_tone_arrives_opus(monkeypatch):
    track, client, server, chosen = await pair(monkeypatch)
    try:
        assert chosen == "opus" and track.sample_rate == 48000
        pushed = time.time()
        track.feed(tone(0.5))
        track.end_of_utterance()
        # the track has sent the tone, and the client has decoded a frame after its last loud one (frames come in order)
        await client.wait_for(lambda: not track.jitter.playing and (heard := client.loud(pushed))
                              and client.frames[-1].at > heard[-1].at)
        loud = client.loud(pushed)
        assert 23 <= len(loud) <= 27  # 0.5 s of tone, give or take codec edges
        assert client.gaps_in_speech(pushed) == 0
        assert track.jitter.underruns == 0
        print(f"push->decoded (client prefetch 0): {1000 * (loud[0].at - pushed):.1f} ms")
    finally:
        await client.close()
        await server.close()


async def test_pcmu_when_offered_only(monkeypatch):
    track, client, server, chosen = await pair(monkeypatch, codecs=["pcmu"])
    try:
        assert chosen == "pcmu" and track.sample_rate == 8000 and track.frame_samples == 160
        track.feed(tone(0.3, 1000))
        await client.wait_for(lambda: len(client.loud()) >= 10)
        assert client.frames[-1].rate == 8000
    finally:
        await client.close()
        await server.close()


async def test_codec_request_overrides_offer_order(monkeypatch):
    track, client, server, chosen = await pair(monkeypatch, codec="pcma")
    try:
        assert chosen == "pcma" and track.sample_rate == 8000
    finally:
        await client.close()
        await server.close()


async def test_clear_silences_within_a_few_frames(monkeypatch):
    track, client, server, _ = await pair(monkeypatch)
    try:
        track.feed(tone(3.0))
        await client.wait_for(lambda: len(client.loud()) >= 10)
        track.clear()
        cleared = time.time()
        # 20 frames (0.4 s of the call) decoded since: those in flight at the clear come first, in order
        await client.wait_for(lambda: len([f for f in client.frames if f.at >= cleared]) >= 20)
        late_loud = client.loud(cleared)
        # Frames already handed to aiortc (at most one) and the receiver's decoding pipeline still play out.
        assert len(late_loud) <= 3, len(late_loud)
        assert client.frames[-1].rms < SPEECH_RMS
        assert track.jitter.buffered_seconds == 0
    finally:
        await client.close()
        await server.close()


async def test_stall_in_event_loop_is_caught_up(monkeypatch):
    track, client, server, _ = await pair(monkeypatch)
    try:
        start = track._start
        track.feed(tone(2.0))
        await client.wait_for(lambda: len(client.loud()) >= 10)
        sent_before = track.frames_sent
        time.sleep(0.2)  # block the event loop
        await asyncio.sleep(0.1)
        assert track.late_ticks >= 5  # the missed ticks went out in a burst...
        assert track._start == start  # ...on the original clock
        assert track.frames_sent - sent_before >= 14  # 300 ms of wall time were all sent
        track.end_of_utterance()
        await client.wait_for(lambda: not track.jitter.playing and len(client.loud()) >= 95, timeout=5)
        assert track.jitter.underruns == 0
    finally:
        await client.close()
        await server.close()


async def remote_outbound(client: Listener) -> list:
    """The client's view of the stream from the sender's RTCP reports (none before the first has come)."""
    stats = await client.pc.getReceivers()[0].getStats()
    return [s for s in stats.values() if s.type == "remote-outbound-rtp"]


async def test_two_streams_go_out_from_one_pacer_and_rtcp_reports_their_packets(monkeypatch):
    """gateway/webrtc/sender.py: both servers' tracks are sent by the loop's one pacer (not aiortc's task per track),
    on the same ticks, and the receiver's view of each stream from its RTCP sender reports counts what it was sent."""
    from gateway.webrtc.sender import _pacers

    first, second = await pair(monkeypatch), await pair(monkeypatch, codecs=["pcmu"])
    try:
        pacer = _pacers[asyncio.get_running_loop()]
        assert [s.track for s in pacer.streams] == [first[0], second[0]]
        ticks_apart = (first[0]._start - second[0]._start) / 0.02
        assert abs(ticks_apart - round(ticks_apart)) < 1e-6  # on one grid
        heard_at = []
        for track, client, _, _ in (first, second):
            track.feed(tone(0.3, 1000))
            await client.wait_for(lambda: len(client.loud()) >= 10)
            heard_at.append(len(client.frames))
        for (track, client, _, _), frames in zip((first, second), heard_at):
            # aiortc's sender reports go out every 0.5-1.5 s: wait for one sent after the tone was heard
            deadline = time.monotonic() + 30
            while not ((reported := await remote_outbound(client)) and reported[0].packetsSent >= frames):
                assert time.monotonic() < deadline, ("no sender report after the tone", reported)
                await asyncio.sleep(0.1)
            assert 0 < reported[0].packetsSent <= track.frames_sent, reported
            assert len(client.frames) >= reported[0].packetsSent - 5  # what was reported sent was heard
    finally:
        for _, client, server, _ in (first, second):
            await client.close()
            await server.close()
    assert not pacer.streams  # each stream left the pacer as its peer closed
