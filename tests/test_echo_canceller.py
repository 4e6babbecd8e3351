"""The echo canceller (gateway/listen/aec.py) on real recorded speech through the bench's line models
(cbf_tools/bench/line.py): the deploy gate's two recordings, one as the gateway's voice, the other as the caller's.
Offline and deterministic: the far end is sent as the outbox sends it, the near end arrives 20 ms at a time. Last,
one server with the canceller on, and Twilio calls on such a line."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from cbf_tools.bench import cancellers, line
from cbf_tools.peers.loudspeaker import SpeakerPeer
from cbf_tools.peers.polling import until
from gateway.listen.aec import REACH_S, TAIL_S, EchoCanceller
from gateway.listen.apm import WebRtcApm
from tests.server import PHONE_KEY as KEY
from tests.server import running_server
from tests.test_telephony import no_sessions_left

RATE = line.RATE
FRAME = cancellers.FRAME


@pytest.fixture(scope="module")
def recordings() -> tuple[np.ndarray, np.ndarray]:
    return cancellers.recordings()


def model(name: str) -> line.LineModel:
    return next(m for m in line.MODELS if m.name == name)


def test_the_echo_on_a_line_is_taken_out(recordings):
    """-12 dB, 150 ms late, band-passed and clipped: once the canceller has had 3 s, >= 25 dB less, and Silero hears
    no speech in what is left."""
    gateway, caller = recordings
    near, _, cleaned, _ = cancellers.run_line(WebRtcApm, model(line.TARGET_ECHO_MODEL), gateway, caller, 0)
    settled = 3 * RATE
    assert cancellers._db(near[settled:], cleaned[settled:]) >= 25
    assert cancellers.voiced_share(near) > 0.8 and cancellers.voiced_share(cleaned) <= 0.05


def test_double_talk_keeps_the_caller(recordings):
    """The caller 10 dB below the gateway from its first 200 ms, over echo at -12 dB: Silero hears the caller in
    the canceller's output nearly as often as in the caller's own clean voice."""
    gateway, caller = recordings
    _, voice, cleaned, _ = cancellers.run_line(WebRtcApm, model(line.DOUBLE_TALK_MODEL), gateway, caller, 0.2)
    talk = slice(round(0.2 * RATE), round(0.2 * RATE) + caller.size)
    assert cancellers.voiced_share(cleaned[talk]) >= 0.75 * cancellers.voiced_share(voice[talk])


def test_the_modules_fast_path_gives_what_livekits_own_calls_give(recordings):
    """gateway/listen/apm.py sends its requests through livekit's library without the binding's wrapping: block for
    block, sample for sample, what the binding's public AudioProcessingModule makes of the same line and delay (a
    livekit upgrade that changes its messages fails here)."""
    from livekit import rtc

    gateway, caller = recordings
    echo_line = model(line.DOUBLE_TALK_MODEL)
    far = line.to_s16(gateway)
    voice = np.zeros(gateway.size)  # the caller from 1 s: echo alone, then double talk
    said = line.caller_at(caller, echo_line, line.active_dbfs(gateway))[:gateway.size - RATE]
    voice[RATE:RATE + said.size] = said
    near = line.to_s16(line.echo_of(gateway, echo_line) + voice)
    block, delay_ms = RATE // 100, 150
    fast, public = WebRtcApm(RATE), rtc.AudioProcessingModule(echo_cancellation=True, high_pass_filter=True)
    public.set_stream_delay_ms(delay_ms)
    for start in range(0, min(far.size, near.size, 4 * RATE) - block + 1, block):
        ours = fast.process(far[start:start + block], near[start:start + block], delay_ms)
        public.process_reverse_stream(rtc.AudioFrame(far[start:start + block].tobytes(), RATE, 1, block))
        theirs = rtc.AudioFrame(near[start:start + block].tobytes(), RATE, 1, block)
        public.process_stream(theirs)
        np.testing.assert_array_equal(ours, np.frombuffer(theirs.data, "<i2"), err_msg=f"block at {start}")


def test_with_no_far_end_the_caller_passes_unchanged_and_costs_no_module():
    made = []
    canceller = EchoCanceller(RATE, lambda rate: made.append(rate) or WebRtcApm(rate))
    rng = np.random.default_rng(1)
    for i in range(50):
        pcm = rng.integers(-3000, 3000, 160).astype(np.int16)
        at, out = canceller.process(pcm, i * 0.02, 10.0 + (i + 1) * 0.02)
        assert at == pytest.approx(i * 0.02) and np.array_equal(out, pcm) and canceller.passed
    assert not made and canceller.counts == {"late_far": 0, "realigned": 0, "resets": 0, "delay_measures": 0,
                                             "leaks": 0, "followed": 0}


def test_a_far_end_that_starts_mid_call_late_pieces_and_jumps_are_counted_never_stalling(recordings):
    gateway, _ = recordings
    canceller = EchoCanceller(RATE)
    silence = np.zeros(160, dtype=np.int16)
    for i in range(100):  # two seconds of a caller and no far end
        canceller.process(silence, i * 0.02, 100.0 + (i + 1) * 0.02)
    canceller.played(100.0 + 2.02, gateway[:RATE])  # the gateway starts speaking
    canceller.played(100.0 + 1.0, gateway[:800])  # a piece whose time was read already: not cancelled, counted
    assert canceller.counts["late_far"] == 800
    echo = line.to_s16(line.echo_of(gateway[:RATE], model(line.TARGET_ECHO_MODEL)))
    outs = [canceller.process(echo[i:i + 160], 2.0 + i / RATE, 102.0 + (i + 160) / RATE)[1]
            for i in range(0, RATE, 160)]
    assert not canceller.passed and sum(o.size for o in outs) == RATE
    canceller.process(silence, 60.0, 103.1)  # the stream's clock jumps a minute: tied afresh, counted
    assert canceller.counts["realigned"] == 1


def test_garbage_does_not_stall_it_and_a_diverging_module_is_replaced(recordings):
    """Full-scale noise on both ends, and a module whose output grows past its input: every frame comes back, the
    module is replaced (counted)."""
    rng = np.random.default_rng(2)

    class Diverging:
        def process(self, far, near, delay_ms):
            return np.full_like(near, 30000)

    canceller = EchoCanceller(RATE, lambda rate: Diverging())
    for i in range(100):
        canceller.played(100.0 + i * 0.02, rng.integers(-32768, 32767, 160).astype(np.int16))
        _, out = canceller.process(np.full(160, 50, np.int16), i * 0.02, 100.0 + (i + 1) * 0.02)
        assert out.size == 160
    assert canceller.counts["resets"] >= 1
    real = EchoCanceller(RATE)
    for i in range(100):
        real.played(100.0 + i * 0.02, rng.integers(-32768, 32767, 160).astype(np.int16))
        _, out = real.process(rng.integers(-32768, 32767, 160).astype(np.int16), i * 0.02, 100.0 + (i + 1) * 0.02)
        assert out.size == 160 and out.dtype == np.int16


def test_the_line_delay_is_measured_and_told_to_the_next_module(recordings):
    gateway, caller = recordings
    echo_model = model(line.TARGET_ECHO_MODEL)
    canceller = EchoCanceller(RATE)
    near = line.to_s16(line.echo_of(gateway[:3 * RATE], echo_model))
    sent = 0
    for i in range(0, near.size - 159, 160):
        while sent < i + RATE:
            canceller.played(100.0 + sent / RATE, gateway[sent:sent + 800])
            sent += 800
        canceller.process(near[i:i + 160], i / RATE, 100.0 + (i + 160) / RATE)
    assert canceller.delay_ms is not None and abs(canceller.delay_ms - echo_model.delay_ms) <= 25
    assert canceller.delay_ms < REACH_S * 1000
    assert not canceller.settled  # its module found the delay alone: the next one, after a pause, is told it
    for i in range(0, 2 * RATE, 160):  # the gateway falls silent: past the echo's reach the module goes
        canceller.process(np.zeros(160, np.int16), 3.0 + i / RATE, 103.0 + (i + 160) / RATE)
    assert canceller.settled


def test_while_nothing_loud_plays_within_the_echos_reach_the_module_rests_and_then_goes_on_converged(recordings):
    """The gateway speaks, pauses, speaks, pauses while the caller talks (-10 dB, over no echo), speaks again, on the
    target line. Once the line's delay and its tail have passed after each stretch, the caller's audio comes back as
    it came and the module is not run; from the second stretch on the module is the one told the line's delay, kept
    through the caller's turn, and cancels the third stretch's echo from its first second as well as it did the
    second's last."""
    gateway, caller = recordings
    echo_model = model(line.TARGET_ECHO_MODEL)
    stretches = [(0.0, 4.0), (6.0, 10.0), (12.0, 15.0)]  # (from, to) s: the gateway speaking
    far = np.zeros(15 * RATE, dtype=np.int16)
    for start, end in stretches:
        far[round(start * RATE):round(end * RATE)] = gateway[:round((end - start) * RATE)]
    voice = np.zeros(far.size)
    said = line.caller_at(caller, line.LineModel("caller", -12, 150, -10), line.active_dbfs(gateway))
    voice[round(10.2 * RATE):round(11.7 * RATE)] = said[:round(1.5 * RATE)]
    near = line.to_s16(line.echo_of(far, echo_model) + voice)
    made, calls = [], [0]

    def counted(rate: int) -> WebRtcApm:
        module = WebRtcApm(rate)
        process = module.process
        module.process = lambda *args: calls.__setitem__(0, calls[0] + 1) or process(*args)
        made.append(module)
        return module

    canceller = EchoCanceller(RATE, counted)
    frames: dict[int, tuple[bool, int, int]] = {}  # sample -> (passed, module calls so far, modules so far)
    cleaned, _ = cancellers.stream(canceller, far, near, lambda i: frames.__setitem__(
        i, (canceller.passed, calls[0], len(made))))
    assert canceller.delay_ms is not None and abs(canceller.delay_ms - echo_model.delay_ms) <= 25
    rest_from = (canceller.delay_ms / 1000 + TAIL_S + 0.05) * RATE  # after a stretch's end: the module rests
    for (_, end), (resume, _) in zip(stretches, stretches[1:]):
        resting = [i for i in frames if end * RATE + rest_from <= i < resume * RATE - FRAME]
        assert all(frames[i][0] for i in resting) and frames[resting[-1]][1:] == frames[resting[0]][1:]
        assert np.array_equal(cleaned[resting[0]:resting[-1] + FRAME], near[resting[0]:resting[-1] + FRAME])
        assert not frames[round(resume * RATE)][0]  # resumed as what plays is loud again
    assert len(made) == 2 and frames[round(6 * RATE)][2] == 2  # the second, told the delay, from the second stretch

    def erle(start: float, end: float) -> float:
        span = slice(round((start + 0.15) * RATE), round((end + 0.15) * RATE))
        return cancellers._db(near[span], cleaned[span])

    assert erle(12.0, 13.0) >= 20 and erle(12.0, 13.0) >= erle(9.0, 10.0) - 6


def test_a_webrtc_peers_echo_delay_that_shortens_mid_speech_is_followed_and_what_leaks_meanwhile_is_silenced(
        recordings):
    """A WebRTC peer's jitter buffer shortens the echo's path by 80 ms 6 s into the gateway's speech (400 -> 320 ms,
    -12 dB, as Chromium's NetEq did under tests/test_page_echo.py), and a caller 17 dB below the gateway talks from 9 s.
    The canceller as phone lines run it never finds the echo again in the 2.3 s after the step (5.5 dB taken out,
    Silero hears speech in a third of its output) and holds half the caller back; a WebRTC peer's
    (``guard_leaks``) follows the step (a module told 320 ms), silences what leaked meanwhile, and keeps the
    caller."""
    gateway, caller = recordings
    far, step, talk = gateway[:12 * RATE], 6 * RATE, 9 * RATE
    before, after = line.LineModel("before", -12, 400, None), line.LineModel("after", -12, 320, None)
    echo = np.concatenate([line.echo_of(far, before)[:step], line.echo_of(far, after)[step:]])
    voice = np.zeros(far.size)
    said = line.caller_at(caller, line.LineModel("caller", -12, 320, -17), line.active_dbfs(gateway))
    voice[talk:] = said[:far.size - talk]
    near = line.to_s16(echo + voice)
    after_step, talking = slice(step + RATE // 5, step + 5 * RATE // 2), slice(talk, talk + 2 * RATE)
    heard = cancellers.voiced_share(line.to_s16(voice[talking]))
    phone, _ = cancellers.stream(EchoCanceller(RATE), far, near)
    assert cancellers.voiced_share(phone[after_step]) >= 0.2
    assert cancellers._db(near[after_step], phone[after_step]) < 10
    assert cancellers.voiced_share(phone[talking]) < 0.6 * heard
    canceller = EchoCanceller(RATE, guard_leaks=True)
    webrtc, _ = cancellers.stream(canceller, far, near)
    assert canceller.counts["followed"] >= 1 and canceller.counts["leaks"] > 0 and canceller.counts["late_far"] == 0
    assert canceller.delay_ms is not None and abs(canceller.delay_ms - after.delay_ms) <= 15
    assert cancellers.voiced_share(webrtc[after_step]) <= 0.05
    assert cancellers._db(near[after_step], webrtc[after_step]) >= 20
    assert cancellers.voiced_share(webrtc[talking]) >= 0.85 * heard


@pytest.fixture(scope="module")
def aec_url():
    """A server of this file's own (the canceller on, as by default): the shared phone server's files run as one unit
    on one test process (tests/conftest.py), and this file's live calls would lengthen it."""
    with running_server("--api-key", KEY, "--max-text-chars", "1000") as url:
        yield url


async def test_on_a_line_that_echoes_a_quiet_caller_is_heard_and_the_echo_alone_is_not(aec_url):
    """The bench's phone line (cbf_tools/bench/line.py) on a Twilio call: the gateway's own voice comes back 12 dB
    down, 150 ms late, band-passed and softly clipped. The echo canceller takes it out: alone, for 4 s of the
    gateway's speech, it stops nothing; a caller 10 dB below the gateway's speech level, talking over it, is
    cleared."""
    url = aec_url
    from cbf_tools.bench import barge_in as bench
    from cbf_tools.bench import caller_voices as voices
    from cbf_tools.bench import line

    echo_model = line.LineModel("echo alone", -12, 150, None)
    call = await bench.place_call(url, KEY, lambda stack: voices.LineVoice(stack, echo_model))
    try:
        await call.speak()
        await call.first_audio()
        played = len(call.stack.frames)
        await until(lambda: len(call.stack.frames) >= played + 40, 20, "four seconds of speech")
        assert not call.stack.cleared_at and not call.of("interrupted") and not call.of("speech_started")
    finally:
        await call.hang_up()

    quiet = line.LineModel("caller -10 dB", -12, 150, -10)
    speech = line.to_s16(line.caller_at(voices.clip_pcm(), quiet, line.active_dbfs(voices.clip_pcm(
        path=voices.CLIP.with_name("low.ogg")))))  # the gateway's level: a recording of a voice like its own
    made: list[voices.LineVoice] = []
    call = await bench.place_call(url, KEY, lambda stack: made.append(voices.LineVoice(stack, quiet, speech))
                                  or made[-1])
    try:
        await call.speak()
        made[0].starts_at = await call.first_audio() + 1.5
        await until(lambda: bool(call.of("interrupted")), 15, "the caller was not heard")
        assert call.stack.cleared_at and made[0].onset is not None and call.stack.cleared_at[0] > made[0].onset
    finally:
        await call.hang_up()
    await no_sessions_left(url)


def test_the_offline_onset_bench_hears_a_caller_over_a_hot_echo_where_the_level_rule_is_tripped_by_it():
    """``python -m cbf_tools.bench.aec_onsets``, two onsets on the hot line (echo -6 dB, 250 ms late): the level rule
    stops the gateway on its own echo before the caller speaks (-1); the canceller hears the caller."""
    from cbf_tools.bench import aec_onsets

    hot = model("caller -10 dB, echo -6 dB 250 ms")
    figures = aec_onsets.measure((hot,), (1.0, 2.0))[hot.name]
    assert figures["level rule"] == [-1, -1]
    assert all(ms is not None and ms > 0 for ms in figures["canceller"] + figures["canceller told the delay"])
    assert hot.name in aec_onsets.render({hot.name: figures}, (1.0, 2.0))


def test_until_the_canceller_is_sure_of_the_lines_delay_a_caller_over_the_gateways_first_second_is_heard():
    """A fresh call, the canceller on: until the line's delay is measured with confidence, AEC3 has not converged and
    its suppressor held a caller talking over the gateway's first 200 ms back (not heard at all, 2.7 s on). Meanwhile
    the VAD hears the caller's audio as it came, by the level rule: the caller is heard; the echo alone, on every
    line (a hot one's too: it correlates with what the gateway sent), still stops nothing."""
    from cbf_tools.bench import aec_onsets

    for name in ("loud caller, echo -20 dB 150 ms", "caller -10 dB, echo -6 dB 250 ms"):
        for at in (0.2, 0.6):
            ms = aec_onsets.onset_to_interrupt(model(name), at, True)
            assert ms is not None and ms > 0, (name, at, ms)
    for name in ("echo alone -20 dB 50 ms", "echo alone -12 dB 150 ms", "echo alone -6 dB 250 ms"):
        assert aec_onsets.onset_to_interrupt(model(name), 3.0, True) is None, name


def test_once_the_canceller_is_sure_a_loud_caller_is_heard_as_soon_as_the_level_rule_hears_them():
    """A loud caller (echo -20 dB) 1.75-2.75 s into the gateway's speech, the line's delay sure by then: AEC3's
    suppressor took 9-21 dB off the caller's first 64 ms where it overlapped the echo (double talk), and Silero heard
    the cleaned onset two windows late (onset to interrupt 240-270 ms against the level rule's 170-200). Once sure,
    the VAD hears the caller's audio as it came where it is within ``SURE_MARGIN_DB`` of what the gateway sent and
    does not correlate with it: within 40 ms of the level rule (170-210 ms). The echo alone, 10.5 s of it on every
    line (the hot one's is that loud and is told by its correlation), still stops nothing."""
    from cbf_tools.bench import aec_onsets

    loud = model("loud caller, echo -20 dB 150 ms")
    for at in (1.75, 2.0, 2.5, 2.75):
        ms = aec_onsets.onset_to_interrupt(loud, at, True)
        rule = aec_onsets.onset_to_interrupt(loud, at, False)
        assert ms is not None and rule is not None and 0 < ms <= min(rule + 40, 220), (at, ms, rule)
    for name in ("echo alone -20 dB 50 ms", "echo alone -12 dB 150 ms", "echo alone -6 dB 250 ms"):
        for start in (0.0, 2.6):
            assert aec_onsets.onset_to_interrupt(model(name), aec_onsets.ECHO_ALONE_S, True,
                                                 far_from_s=start) is None, (name, start)


def test_the_hot_lines_echo_that_the_canceller_leaves_before_it_is_sure_stops_nothing():
    """Echo alone on the hot line (-6 dB, 250 ms late), the gateway's voice from 1.95 s into its clip, the canceller on
    (the VAD heard its output: the audio as it came correlated 0.65-1.0 with what the gateway sent). A fresh module
    let the echo's first 60 ms through (-57 to -40 dBFS; Silero 0.40, 0.87), then its suppressor zeroed it (+-1 step,
    -98 dBFS) and Silero, its state primed, said 0.94-0.98 on those windows: the gateway stopped on its own echo 480 ms
    into the call (``detector.SILENCE``). Past that, 1 s in, AEC3 left the echo at -64 to -72 dBFS, 45-50 dB under what
    the gateway sent, and Silero said 0.55-0.95 on four windows of it (``detector.RESIDUE_DB``)."""
    from cbf_tools.bench import aec_onsets

    hot = model("echo alone -6 dB 250 ms")
    assert aec_onsets.onset_to_interrupt(hot, aec_onsets.ECHO_ALONE_S, True, far_from_s=1.95) is None


def test_a_carrier_that_sends_nothing_until_the_caller_speaks_has_an_echo_free_line():
    """Silence suppressed: no frame comes while the gateway speaks, the first when the caller talks over it, 1.5 and
    2 s in. Nothing came back while the gateway spoke more than ``NO_ECHO_S`` past the echo's reach: the line has no
    echo, the canceller rests, and the caller is heard as the level rule hears them (AEC3 run on it: 360, 420 ms)."""
    from cbf_tools.bench import aec_onsets

    no_echo = line.LineModel("loud caller, silence suppressed, no echo", -200, 150, 0)
    for at in (1.5, 2.0):
        assert 0 < aec_onsets.onset_to_interrupt(no_echo, at, True, suppressed=True) <= 300


def test_a_line_that_sends_nothing_back_is_echo_free_and_a_loud_caller_on_it_is_heard(recordings):
    """No echo at all (a carrier that cancels its own, a headset): once the gateway has spoken 0.6 s and nothing came
    back, the canceller rests for the call, and a caller talking over the gateway is heard as the level rule hears
    them (AEC3, never having seen an echo, held such a caller back: None at 1.25 s). On the target line it never is."""
    from cbf_tools.bench import aec_onsets

    silent_line = line.LineModel("loud caller, no echo", -200, 150, 0)
    figures = aec_onsets.measure((silent_line,), (1.0, 1.25))[silent_line.name]
    assert all(ms is not None and 0 < ms <= 600 for ms in figures["canceller"])
    gateway, caller = recordings
    for echoing, free in ((silent_line, True), (model(line.TARGET_MODEL), False)):
        canceller = EchoCanceller(RATE)
        far = gateway[:2 * RATE]
        voice = np.zeros(far.size)
        voice[RATE:] = line.caller_at(caller, echoing, line.active_dbfs(gateway))[:RATE]
        cancellers.stream(canceller, far, line.to_s16(line.echo_of(far, echoing) + voice))
        assert canceller.echo_free is free


# WebRTC peers: an aiortc peer on a loudspeaker (cbf_tools/peers/loudspeaker.py), its own echo cancelling off, plays
# what the gateway sends and its microphone sends it back through the line (-12 dB, 150 ms after it played, band-passed,
# softly clipped): with the transport's buffers on top, the gateway measures the line at 300-350 ms.
WEBRTC_ECHO = line.LineModel("a loudspeaker", -12, 150, None)


async def speaking_to_a_loudspeaker(url: str, monkeypatch) -> SpeakerPeer:
    from tests.rtc_helpers import speaking_to_a_loudspeaker

    return await speaking_to_a_loudspeaker(url, monkeypatch, WEBRTC_ECHO, KEY)


async def caller_audio_dbfs(agent, seconds: float) -> float:
    """The level of ``seconds`` of the caller's audio (PCM16 at 16 kHz) the controller gets from now on."""
    import base64
    import json

    from cbf_tools.bench.caller_voices import dbfs

    pcm = b""
    while len(pcm) < seconds * 32000:
        message = json.loads(await asyncio.wait_for(agent.recv(), 20))
        if message["type"] == "caller_audio":
            pcm += base64.b64decode(message["audio"])
    return dbfs(np.frombuffer(pcm, "<i2"))


async def test_a_webrtc_peers_loudspeaker_echo_alone_stops_nothing_and_listen_gets_it_cancelled(aec_url,
                                                                                                   monkeypatch):
    """The canceller on: the gateway's own voice back from the peer's loudspeaker, for 4 s of its speech, stops
    nothing; the controller's ``listen`` gets it cancelled (``aec`` true, the default), and as it came with ``aec``
    false."""
    import json

    from tests.test_caller_audio import close_reading
    from tests.test_telephony import controller

    peer = await speaking_to_a_loudspeaker(aec_url, monkeypatch)
    agent = await controller(aec_url, peer.session, codec="opus")
    try:
        await agent.send(json.dumps({"type": "listen", "format": "pcm16"}))
        cleaned = await caller_audio_dbfs(agent, 2.0)
        await agent.send(json.dumps({"type": "listen", "format": "pcm16", "aec": False}))
        raw = await caller_audio_dbfs(agent, 1.0)
        played = peer.speaker.loud_seconds()
        assert await peer.wait_for(lambda: peer.speaker.loud_seconds() >= played + 1.0, 30), peer.events
        assert not peer.of("speech_started") and not peer.of("interrupted") and not peer.of("cancelled"), peer.events
        assert raw > -45 and cleaned <= raw - 15, (raw, cleaned)  # the echo came, and the canceller took it out
    finally:
        await peer.close()
        await close_reading(agent)
    await no_sessions_left(aec_url)


async def test_a_webrtc_peer_talking_over_its_loudspeaker_echo_stops_the_gateway(aec_url, monkeypatch):
    """The canceller on: a caller 17 dB below the gateway's speech level as it played, over that echo, is heard and
    cuts the gateway off (the peer hears it go quiet)."""
    from cbf_tools.bench import caller_voices as voices

    peer = await speaking_to_a_loudspeaker(aec_url, monkeypatch)
    try:
        peer.speaker.talk(voices.clip_pcm(), 17)
        assert await peer.wait_for(lambda: bool(peer.of("interrupted")), 30), ("the caller was not heard", peer.events)
        kinds = [e["type"] for e in peer.events]
        assert kinds.index("speech_started") < kinds.index("cancelled") < kinds.index("interrupted"), kinds
        assert peer.event_times[kinds.index("speech_started")] > (peer.speaker.onset or 0)  # the caller's, not echo
        played = peer.speaker.loud_seconds()
        await asyncio.sleep(1.0)
        assert peer.speaker.loud_seconds() - played <= 0.5  # what was in flight, then silence
    finally:
        await peer.close()
    await no_sessions_left(aec_url)
