"""gateway/webrtc/jitter.py: exact frames, conservation of samples, underrun counting, barge-in."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.webrtc.jitter import JitterBuffer

FRAME = 160

chunks = st.lists(st.integers(min_value=0, max_value=2000), min_size=1, max_size=30)


def samples(n: int, value: int = 1000) -> bytes:
    return value.to_bytes(2, "little", signed=True) * n


def drain(jb: JitterBuffer) -> list[bytes]:
    out = []
    while (frame := jb.pop()) is not None:
        out.append(frame)
    return out


@settings(deadline=None)  # pure logic: hypothesis' 200 ms per example is the machine's load, not the buffer's
@given(chunks)
def test_exact_frames_and_conservation(sizes):
    jb = JitterBuffer(8000, FRAME)
    out = []
    for n in sizes:
        jb.push(samples(n))
        out += drain(jb)
    jb.mark_end()
    out += drain(jb)
    assert all(len(f) == FRAME * 2 for f in out)
    total = sum(sizes)
    assert len(out) * FRAME == total + jb.samples_padded
    assert jb.samples_padded < FRAME
    assert b"".join(out)[: total * 2] == samples(total)
    assert jb.buffered_seconds == 0
    assert jb.write_position == jb.read_position == len(out) * FRAME


@settings(deadline=None)
@given(chunks, st.integers(min_value=0, max_value=3))
def test_no_underrun_when_data_keeps_up(sizes, lead_frames):
    """A producer that always stays ahead of playout never causes an underrun, however ragged its chunks."""
    jb = JitterBuffer(8000, FRAME)
    jb.push(samples(FRAME * (lead_frames + 1)))
    for n in sizes:
        jb.push(samples(n))
        while jb.buffered_seconds * 8000 >= FRAME * (lead_frames + 1):
            assert jb.pop() is not None
    jb.mark_end()
    drain(jb)
    assert jb.pop() is None and jb.pop() is None  # idle after the end: not an underrun
    assert jb.underruns == 0


def test_underrun_counted_once_per_dry_spell():
    jb = JitterBuffer(8000, FRAME)
    assert jb.pop() is None  # idle before any audio: not an underrun
    jb.push(samples(FRAME + 10))
    assert jb.pop() is not None
    assert jb.pop() is None and jb.pop() is None
    assert jb.underruns == 1
    jb.push(samples(FRAME))
    assert jb.pop() is not None
    assert jb.pop() is None
    assert jb.underruns == 2
    jb.mark_end()
    assert jb.pop() is not None  # the padded tail
    assert jb.pop() is None
    assert jb.underruns == 2


@settings(deadline=None)
@given(chunks, st.integers(min_value=0, max_value=5))
def test_clear_empties_at_once(sizes, popped):
    jb = JitterBuffer(48000, 960)
    for n in sizes:
        jb.push(samples(n))
    for _ in range(popped):
        jb.pop()
    before = jb.underruns
    jb.clear()
    assert jb.buffered_seconds == 0
    assert jb.pop() is None
    assert jb.underruns == before  # silence after a barge-in is not an underrun
    assert not jb.playing
    assert jb.samples_in == jb.frames_out * 960 + jb.samples_dropped


def test_an_utterance_plays_from_its_first_frame_to_its_marked_end():
    jb = JitterBuffer(8000, FRAME)
    jb.push(samples(FRAME * 2))
    assert not jb.playing  # buffered, not yet played
    jb.mark_end()
    jb.pop()
    assert jb.playing
    jb.pop()
    assert not jb.playing  # its end was reached
    assert jb.pop() is None and jb.underruns == 0
    jb.push(samples(FRAME))  # next utterance, not yet marked
    jb.pop()
    assert jb.playing
    assert jb.pop() is None and jb.underruns == 1  # ran dry before its end
    assert jb.underruns_preparing == 0


def test_an_underrun_with_audio_being_prepared_is_counted_apart():
    jb = JitterBuffer(8000, FRAME)
    jb.push(samples(FRAME))
    jb.pop()
    assert jb.pop(preparing=True) is None and (jb.underruns, jb.underruns_preparing) == (1, 1)
    assert jb.pop(preparing=True) is None and (jb.underruns, jb.underruns_preparing) == (1, 1)  # one per dry spell
    jb.push(samples(FRAME))
    jb.pop()
    assert jb.pop() is None and (jb.underruns, jb.underruns_preparing) == (2, 1)


def test_queued_utterances_play_back_to_back():
    jb = JitterBuffer(8000, FRAME)
    jb.push(samples(FRAME + 1, 1))
    jb.mark_end()
    jb.push(samples(FRAME, 2))
    jb.mark_end()
    frames = drain(jb)
    assert frames == [samples(FRAME, 1), samples(1, 1) + bytes((FRAME - 1) * 2), samples(FRAME, 2)]
    assert jb.underruns == 0


def test_odd_bytes_rejected():
    jb = JitterBuffer(8000, FRAME)
    with pytest.raises(ValueError):
        jb.push(b"\x00")
