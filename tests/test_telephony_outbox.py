"""gateway/telephony/outbox.py: pacing a call's audio, marks, what was heard (pure, on a clock of our own)."""

from __future__ import annotations

import pytest

from gateway.telephony.outbox import Mark, Media, Outbox

RATE = 8000  # bytes a second: G.711


def test_frames_each_with_a_mark_and_never_more_than_the_lead_ahead() -> None:
    box = Outbox(RATE)
    box.begin()
    box.push(bytes(3 * RATE))  # a first chunk of 3 s
    out, wait = box.due(100.0)
    media = [item for item in out if isinstance(item, Media)]
    assert len(media) == 10 and {len(m.payload) for m in media} == {800}  # 1 s of 100 ms frames
    assert [item for item in out if isinstance(item, Mark)][:2] == [Mark("e1.800"), Mark("e1.1600")]
    assert all(isinstance(a, Media) and isinstance(b, Mark) for a, b in zip(out[::2], out[1::2]))
    assert wait == pytest.approx(0.001)
    assert box.due(100.0) == ([], pytest.approx(0.001))  # nothing more until real time moves on
    out, _ = box.due(100.35)
    assert len([item for item in out if isinstance(item, Media)]) == 4  # 0.35 s played: 0.4 s more may go


def test_heard_comes_from_the_echoed_marks_of_this_utterance_only() -> None:
    box = Outbox(RATE)
    box.begin()
    box.push(bytes(RATE))
    box.due(0.0)
    assert box.heard_s == 0.0
    box.echoed("e1.1600")
    assert box.heard_s == 0.2
    box.echoed("someone-else's")
    box.echoed("e1.99999999")  # a forged mark: never more than was sent
    assert box.heard_s == 1.0
    box.clear(0.5)
    assert box.heard_s == 0.0 and box.idle
    box.echoed("e1.8000")  # Twilio sends a cleared stream's marks back at once: they were not heard
    assert box.heard_s == 0.0
    box.begin()
    assert box.epoch == 3


def test_the_end_sends_the_rest_then_a_last_mark() -> None:
    box = Outbox(RATE)
    box.begin()
    box.push(bytes(1000))
    box.end()
    out, wait = box.due(0.0)
    assert out == [Media(bytes(800)), Mark("e1.800"), Media(bytes(200)), Mark("e1.1000"), Mark("e1.1000.end")]
    assert wait is None and box.idle and not box.final_heard
    assert box.echoed("e1.1000.end") and box.final_heard and box.heard_s == 0.125


def test_exact_frames_wait_for_a_whole_frame_and_the_last_is_padded() -> None:
    box = Outbox(RATE, frame_bytes=160, silence=b"\xff")
    box.begin()
    box.push(bytes(200))
    out, _ = box.due(0.0)
    assert out == [Media(bytes(160)), Mark("e1.160")]
    box.end()
    out, _ = box.due(0.0)
    assert out == [Media(bytes(40) + b"\xff" * 120), Mark("e1.320"), Mark("e1.320.end")]


def test_a_stall_in_the_audio_does_not_bank_lead() -> None:
    box = Outbox(RATE)
    box.begin()
    box.push(bytes(800))
    box.due(0.0)
    box.push(bytes(20 * 800))
    out, _ = box.due(10.0)  # the engine was slow: nothing played for 10 s, and the clock is not 10 s behind
    assert len([item for item in out if isinstance(item, Media)]) == 10
