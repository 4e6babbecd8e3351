"""The caller's side, piece by piece (gateway/listen/): the detector's onsets and ends, the echo guard, barge-in's
modes, the bounded feed, the flood guard, the controller's messages, and the whole CallerSide on real speech through
the real Silero model (the clip the deploy gate ships, cbf_tools/gate/references/high.ogg)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import av
import numpy as np
import pytest

from engine.protocol import ProtocolError
from gateway.audio import g711_decode, g711_encode
from gateway.listen import messages
from gateway.listen.barge_in import Act, BargeIn
from gateway.listen.caller import BURST_S, CallerSide, FloodGuard
from gateway.listen.detector import SpeechDetector, SpeechStarted, SpeechStopped, VadConfig
from gateway.listen.echo import EchoReference, rms
from gateway.listen.feed import CallerAudioFeed
from gateway.telephony.outbox import Mark, Media, Outbox

CLIP = Path(__file__).resolve().parents[1] / "cbf_tools" / "gate" / "references" / "high.ogg"


def clip_8k() -> np.ndarray:
    """The clip as s16 at 8 kHz."""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=8000)
    with av.open(str(CLIP)) as container:
        return np.concatenate([out.to_ndarray().reshape(-1) for frame in container.decode(audio=0)
                               for out in resampler.resample(frame)])


def run(detector: SpeechDetector, probabilities: list[float], level: float = 0.1, echo: float = 0.0) -> list:
    return [(i * 32, e) for i, p in enumerate(probabilities)
            if (e := detector.window(i * 32, 32, p, level, echo)) is not None]


def test_speech_starts_after_its_minimum_and_stops_after_its_silence():
    detector = SpeechDetector(VadConfig(threshold=0.5, min_speech_ms=96, min_silence_ms=128))
    events = run(detector, [0.1, 0.9, 0.2, 0.9, 0.9, 0.9, 0.4, 0.9, 0.3, 0.3, 0.3, 0.3, 0.1])
    # a lone voiced window is no onset; three in a row are (onset at the first); 0.4 dips but holds (release); four
    # unvoiced windows (128 ms) end it, dated from the first of them.
    assert events == [(160, SpeechStarted(96, 192)), (352, SpeechStopped(256, 160))]
    assert not detector.speaking


def test_a_window_under_one_step_of_s16_is_never_voiced_whatever_the_model_says():
    detector = SpeechDetector(VadConfig(min_speech_ms=96))
    assert run(detector, [0.97] * 8, level=0.4 / 32768) == []  # what AEC3's suppressor leaves of the echo
    assert run(detector, [0.97] * 4, level=2 / 32768)[0][1] == SpeechStarted(0, 96)


def test_where_the_canceller_works_a_run_must_come_within_its_margin_of_the_gateways_level_to_start_speech():
    detector = SpeechDetector(VadConfig(min_speech_ms=96))
    quiet = [detector.window(i * 32, 32, 0.9, 10 ** (-66 / 20), residue_level=10 ** (-19 / 20)) for i in range(6)]
    assert quiet == [None] * 6  # the echo's residue, 47 dB under the gateway
    assert detector.window(192, 32, 0.9, 10 ** (-45 / 20), residue_level=10 ** (-19 / 20)) == SpeechStarted(0, 224)


def test_the_echo_guard_sets_aside_speech_quieter_than_the_gateways_own_by_the_margin():
    detector = SpeechDetector(VadConfig(min_speech_ms=64, echo_margin_db=10))
    assert run(detector, [0.9] * 5, level=0.02, echo=0.2) == []  # -20 dB under what the gateway sent: its echo
    assert detector.echo_rejected == 5
    assert run(detector, [0.9] * 3, level=0.1, echo=0.2)[0][1] == SpeechStarted(0, 64)  # -6 dB: the caller


def test_the_echo_reference_is_the_loudest_that_played_within_reach():
    echo = EchoReference(reach_s=0.5)
    echo.played(10.0, 0.1, 0.3)
    echo.played(10.1, 0.1, 0.1)
    echo.played(11.0, 0.1, 0.2)  # sent ahead: plays later
    assert echo.level(9.9) == 0.0 and echo.level(10.15) == 0.3 and echo.level(10.65) == 0.1
    assert echo.level(10.9) == 0.0 and echo.level(11.05) == 0.2
    echo.played(12.0, 1.0, 0.5)
    echo.clear(12.2)  # a barge-in dropped what had not played
    assert echo.level(12.1) == 0.5 and echo.level(12.65) == 0.5 and echo.level(12.75) == 0.0


def test_barge_in_modes():
    assert BargeIn("vad").started(0, 120, gateway_speaking=True) is Act.INTERRUPT
    assert BargeIn("vad").started(0, 120, gateway_speaking=False) is None
    assert BargeIn("off").started(0, 120, gateway_speaking=True) is None
    pause = BargeIn("pause", cancel_after_ms=500)
    assert pause.started(1000, 1120, True) is Act.PAUSE and pause.paused
    assert pause.speaking(1400) is None and pause.speaking(1500) is Act.INTERRUPT and not pause.paused
    assert pause.stopped() is None  # cancelled already: nothing to resume
    assert pause.started(3000, 3120, True) is Act.PAUSE
    assert pause.stopped() is Act.RESUME  # a cough: the speech goes on
    assert pause.started(5000, 5120, True) is Act.PAUSE and pause.set_mode("off") is Act.RESUME
    with pytest.raises(ValueError):
        BargeIn("shout")


def test_the_feed_is_bounded_and_says_what_it_dropped():
    feed = CallerAudioFeed("mulaw", 8000, max_frames=3)
    assert feed.start() == {"type": "caller_audio_start", "encoding": "mulaw", "sample_rate": 8000, "channels": 1}
    dropped = [feed.push(20.0 * i, bytes([i])) for i in range(5)]
    assert dropped == [0, 0, 0, 1, 1] and len(feed) == 3
    assert feed.take() == {"type": "caller_audio_dropped", "frames": 2, "total": 2}
    assert [base64.b64decode(m["audio"]) for m in iter(feed.take, None)] == [b"\x02", b"\x03", b"\x04"]


def test_the_flood_guard_lets_real_time_through_and_a_burst_of_a_second():
    guard = FloodGuard()
    assert all(guard.admit(0.02, 100 + 0.02 * i) for i in range(500))  # 10 s at real time
    burst = [guard.admit(0.02, 200.0) for _ in range(100)]  # 2 s at once
    assert sum(burst) == round(BURST_S / 0.02)


def test_the_controllers_messages():
    assert messages.parse({"type": "listen"}) == messages.Listen("native")
    assert messages.parse({"type": "barge_in", "mode": "pause", "threshold": 0.6}) == messages.SetBargeIn(
        "pause", {"threshold": 0.6})
    for bad in ({"type": "listen", "format": "flac"}, {"type": "barge_in", "mode": "loud"},
                {"type": "barge_in", "min_speech_ms": "fast"}, {"type": "barge_in", "threshold": True}):
        with pytest.raises(ProtocolError) as refused:
            messages.parse(bad)
        assert refused.value.code == "bad_config"
    with pytest.raises(ProtocolError):
        messages.configured(VadConfig(), {"threshold": 2.0})


def test_a_rewind_takes_back_what_was_not_heard_as_a_new_epoch():
    outbox = Outbox(8000, lead_s=1.0)
    outbox.begin()
    outbox.push(bytes(range(200)) * 8)  # 1600 bytes: 0.2 s
    outbox.end()
    sent, _ = outbox.due(0.0)
    assert [m.name for m in sent if isinstance(m, Mark)] == ["e1.800", "e1.1600", "e1.1600.end"]
    outbox.echoed("e1.800")
    outbox.rewind(0.1)
    assert outbox.echoed("e1.1600.end") is False  # the stack's echo of what it dropped counts for nothing
    again, _ = outbox.due(0.1)
    media = [m for m in again if isinstance(m, Media)]
    assert b"".join(m.payload for m in media) == (bytes(range(200)) * 8)[800:]
    assert [m.name for m in again if isinstance(m, Mark)] == ["e2.1600", "e2.1600.end"]
    assert media[0].plays_at == 0.1


def caller(mode: str = "vad", speaking: bool = True, cancel_echo: bool = True, **vad) -> tuple[CallerSide, list]:
    tallies: list = []
    side = CallerSide("mulaw", 8000, VadConfig(**vad), mode, lambda: speaking,
                      lambda outcome, n: tallies.append((outcome, n)), clock=lambda: 0.0, cancel_echo=cancel_echo)
    return side, tallies


def frames(pcm: np.ndarray) -> list[bytes]:
    data = g711_encode(pcm.astype("<i2").tobytes(), "pcm_mulaw")
    return [data[i:i + 160] for i in range(0, len(data) - 159, 160)]


def hear_all(side: CallerSide, payloads: list[bytes]) -> list:
    out = []
    for i, payload in enumerate(payloads):
        side._clock = lambda i=i: (i + 1) * 0.02  # real time: a frame arrives once it has been spoken
        out += side.hear(payload, 20.0 * i)
    return out


def test_real_speech_through_silero_starts_speech_and_barges_in():
    speech = clip_8k()
    silence = np.zeros(8000, dtype=np.int16)
    side, tallies = caller()
    out = hear_all(side, frames(np.concatenate([silence, speech[:16000], silence])))
    started = [o for o in out if isinstance(o, dict) and o["type"] == "speech_started"]
    assert len(started) == 1 and 1000 <= started[0]["timestamp"] <= 1250, out
    assert out[out.index(started[0]) + 1] is Act.INTERRUPT
    assert [o["type"] for o in out if isinstance(o, dict)] == ["speech_started", "speech_stopped"]
    assert ("heard", 1) in tallies and not [t for t in tallies if t[0] != "heard" and t[1]]


def test_the_level_rule_sets_the_gateways_own_voice_at_minus_20_db_aside():
    """The echo canceller off (its own tests: tests/test_echo_canceller.py): the level rule guards."""
    speech = clip_8k()[:16000]
    side, _ = caller(cancel_echo=False)
    for i in range(100):  # the gateway is sending this speech at full level, 2 s of it, 20 ms at a time
        side.played(i * 0.02, speech[i * 160:(i + 1) * 160], 8000)
    echoed = np.concatenate([np.zeros(800), speech * 0.1])[:speech.size].astype(np.int16)  # 20 dB down, 100 ms late
    out = hear_all(side, frames(echoed))
    assert not [o for o in out if o is Act.INTERRUPT], out
    assert side.detector.echo_rejected > 0


def test_listen_native_passes_the_bytes_and_pcm16_resamples():
    side, _ = caller(mode="off")
    assert side.listen("native")["encoding"] == "mulaw"
    payload = bytes(range(96, 256))
    side.hear(payload, 0.0)
    assert base64.b64decode(side.feed.take()["audio"]) == payload
    assert side.listen("pcm16") == {"type": "caller_audio_start", "encoding": "pcm16", "sample_rate": 16000,
                                    "channels": 1}
    for i in range(10):
        side.hear(payload, 20.0 * (i + 1))
    pcm = b"".join(base64.b64decode(m["audio"]) for m in iter(side.feed.take, None))
    assert abs(len(pcm) - 10 * 640) <= 64  # 16 kHz s16: 640 bytes per 20 ms, less the resampler's delay
    assert side.listen("off") is None and side.feed is None


def test_frames_that_are_not_the_calls_audio_are_rejected_and_counted():
    side, tallies = caller()
    for bad in (b"", b"\xff" * 8001):
        assert side.hear(bad, 0.0) == []
    pcm_side = CallerSide("pcm", 16000, VadConfig(), "vad", lambda: False, lambda o, n: tallies.append((o, n)))
    assert pcm_side.hear(b"\0" * 641, 0.0) == []
    assert [t for t in tallies if t[0] == "rejected"] == [("rejected", 1)] * 3


def test_g711_decode_inverts_the_encoder():
    pcm = (np.sin(np.arange(800) / 7) * 12000).astype(np.int16)
    decoded = g711_decode(g711_encode(pcm.tobytes(), "pcm_mulaw"), "pcm_mulaw")
    assert np.max(np.abs(decoded.astype(int) - pcm)) < 12000 * 0.04
    assert json.dumps(int(decoded[0]))  # plain int16 samples


def test_the_pregate_spares_the_model_on_silence_and_keeps_the_onset():
    """webrtcvad gates Silero: a silent line costs no model call, and speech starts where the model alone says it
    does, to within a window."""
    silence = np.zeros(8000, dtype=np.int16)  # a second
    payloads = frames(np.concatenate([silence, silence, clip_8k()[:16000], silence]))
    onsets, calls = [], []
    for gated in (True, False):
        side, _ = caller(mode="off")
        if not gated:
            side._pregate.is_speech = lambda *args: True
        model, windows = side._vad.probability, []

        def counted(window, model=model, windows=windows):
            windows.append(side._samples)
            return model(window)

        side._vad.probability = counted
        out = hear_all(side, payloads)
        onsets.append(next(o["timestamp"] for o in out if isinstance(o, dict) and o["type"] == "speech_started"))
        calls.append((sum(1 for heard in windows if heard <= 8000), len(windows)))
    assert calls[0][0] == 0 and calls[1][0] >= 8000 // 256  # the first silent second: no model call behind the gate
    assert calls[0][1] < calls[1][1]
    assert abs(onsets[0] - onsets[1]) <= 32, onsets  # within a window: the model's state differs a little
