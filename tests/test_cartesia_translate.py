"""gateway/vendors/cartesia/translate.py: Cartesia's requests into context commands, and their replies (pure)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from engine.protocol import ChunkHeader, Reading
from gateway import messages
from gateway.vendors.cartesia import translate
from gateway.vendors.cartesia.translate import (AudioFormat, BadRequest, Contexts, Done, Finish, MarkFlush, Open, Say,
                                               Stop)

F32 = {"container": "raw", "encoding": "pcm_f32le", "sample_rate": 44100}


def req(**fields: Any) -> translate.Request:
    if "continue_" in fields:
        fields["continue"] = fields.pop("continue_")
    return translate.parse(json.dumps(fields))


def test_continue_pieces_are_one_utterance_and_the_last_input_finishes_it() -> None:
    rules = Contexts()
    first = req(context_id="a", transcript="Hello, ", continue_=True, voice={"mode": "id", "id": "default"},
                model_id="sonic-3", output_format=F32, add_timestamps=True, language="en")
    assert rules.receive(first) == [Open("a", "default", AudioFormat("raw", "pcm_f32le", 44100), True),
                                    Say("a", messages.Text("Hello, "))]
    assert rules.receive(req(context_id="a", transcript="world.", continue_=True, voice="default")) == [
        Say("a", messages.Text("world."))]
    assert rules.receive(req(context_id="a", transcript="Bye", continue_=True, voice="default", flush=True)) == [
        Say("a", messages.Text(" Bye")), Say("a", messages.Flush()), MarkFlush("a", 1)]  # "world." + "Bye": a space
    assert rules.receive(req(context_id="a", transcript="", continue_=False, voice="default")) == [Finish("a")]
    with pytest.raises(BadRequest, match="last input") as info:  # its input is over until its done
        rules.receive(req(context_id="a", transcript="more", voice="default"))
    assert info.value.context == "a" and info.value.code == "context_ended"
    rules.ended("a")  # done went out: the id is free again
    assert rules.receive(req(context_id="a", transcript="Again.", voice={"id": "v2"}))[0] == Open(
        "a", "v2", translate.DEFAULT_FORMAT, False)


def test_cancel_an_empty_context_and_contexts_side_by_side() -> None:
    rules = Contexts()
    no_more_inputs = req(context_id="x", transcript="", continue_=False, voice="v")  # the SDK's, on a new context
    assert rules.receive(no_more_inputs) == [Done("x")]
    assert rules.receive(req(context_id="x", cancel=True)) == []  # nothing there to stop
    rules.receive(req(context_id="a", transcript="One ", continue_=True, voice="v"))
    rules.receive(req(context_id="b", transcript="Two ", continue_=True, voice="v"))
    assert rules.receive(req(context_id="a", cancel=True)) == [Stop("a")]
    assert rules.receive(req(context_id="a", cancel=True)) == []  # a cancel of a context that ended: nothing
    assert rules.receive(req(context_id="b", transcript="three.", voice="v")) == [Say("b", messages.Text("three.")),
                                                                                 Finish("b")]
    assert rules.receive(req(context_id="b", cancel=True)) == [Stop("b")]  # still speaking: stopped
    assert rules.receive(req(context_id="c", transcript="Fast.", voice="v", speed="fast"))[1] == Say(
        "c", messages.Config(reading=Reading(speed=1.2)))


@pytest.mark.parametrize(("frame", "code", "words"), [
    ('nope', "bad_message", "not JSON"),
    ('[1]', "bad_message", "JSON object"),
    ('{"context_id": 5}', "bad_message", "'context_id' must be a string"),
    ('{"context_id": "a", "transcript": 5}', "bad_message", "'transcript' must be a string"),
    ('{"context_id": "a", "transcript": "x", "model_id": "eleven_turbo"}', "unknown_model", "eleven_turbo"),
    ('{"context_id": "a", "voice": {"mode": "embedding", "embedding": [0.1]}}', "unsupported_voice_mode", "embedding"),
    ('{"context_id": "a", "voice": 3}', "bad_message", "voice id"),
    ('{"context_id": "a", "output_format": {"container": "mp3"}}', "unsupported_output_format", "container"),
    ('{"context_id": "a", "output_format": {"encoding": "pcm_mulaw", "sample_rate": 16000}}',
     "unsupported_output_format", "8000"),
    ('{"context_id": "a", "output_format": {"encoding": "pcm_s16le", "sample_rate": 12345}}',
     "unsupported_output_format", "44100"),
    ('{"context_id": "a", "generation_config": {"speed": 9}}', "bad_speed", "speed"),
    ('{"cancel": true}', "bad_message", "context_id"),
])
def test_bad_requests_say_what_is_wrong_and_name_their_context(frame: str, code: str, words: str) -> None:
    with pytest.raises(BadRequest, match=words) as info:
        translate.parse(frame)
    assert info.value.code == code
    assert info.value.context == ("a" if '"context_id": "a"' in frame else None)


def test_a_context_needs_an_id_and_a_voice() -> None:
    with pytest.raises(BadRequest, match="context_id"):
        Contexts().receive(req(transcript="Hi."))
    with pytest.raises(BadRequest, match="voice") as info:
        Contexts().receive(req(context_id="q", transcript="Hi."))
    assert info.value.context == "q"


def test_flushes_are_done_once_the_audio_reaches_their_text() -> None:
    marks = translate.FlushMarks()
    marks.add(1, 10)
    marks.add(2, 30)
    assert marks.reached(None) == [] and marks.reached([0, 8]) == []
    assert marks.reached([0, 12]) == [1]
    assert marks.rest() == [2] and marks.rest() == []


def test_replies_carry_their_context_and_their_audio_in_pieces() -> None:
    fmt = AudioFormat("raw", "pcm_f32le", 8000)
    audio = bytes(range(256)) * 100  # 25600 bytes: 0.8 s of float32 at 8 kHz
    pieces = translate.pieces(audio, fmt, max_piece_s=0.5)
    assert [len(p) for p in pieces] == [16000, 9600] and b"".join(pieces) == audio
    assert translate.pieces(b"\x00" * 9, AudioFormat("raw", "pcm_mulaw", 8000), 0.001) == [b"\x00" * 8, b"\x00"]
    chunk = translate.chunk_message("a", b"\x01\x02", 12.34)
    assert chunk == {"type": "chunk", "context_id": "a", "data": base64.b64encode(b"\x01\x02").decode(),
                     "done": False, "status_code": 206, "step_time": 12.3}
    words = [{"word": "Hi", "start": 0.1, "end": 0.3}, {"word": "there.", "start": 0.3, "end": 0.71234}]
    assert translate.timestamps_message("a", words)["word_timestamps"] == {
        "words": ["Hi", "there."], "start": [0.1, 0.3], "end": [0.3, 0.712]}
    assert translate.flush_done_message("a", 2)["flush_id"] == 2
    assert translate.done_message("a") == {"type": "done", "context_id": "a", "done": True, "status_code": 200}
    error = translate.error_message("unknown_voice", "no voice 'x'")
    assert error["context_id"] is None and error["type"] == "error" and error["title"] == "unknown_voice"


def test_the_sse_framing_sends_chunks_timestamps_and_done() -> None:
    events = translate.SpeechEvents("Hi there.", AudioFormat(), "c1", timestamps=True)
    header = ChunkHeader(id="u1", seq=0, text="Hi there.", offset=0.0, duration=0.5, gen_time=0.01,
                         words=[{"word": "Hi", "start": 0.0, "end": 0.2, "span": [0, 2]},
                                {"word": "there.", "start": 0.2, "end": 0.5, "span": [3, 9]}])
    body = events.chunk(b"\x00\x01" * 10, header) + events.done(None)  # type: ignore[arg-type]
    lines = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
    assert [e["type"] for e in lines] == ["chunk", "timestamps", "done"]
    assert all(e["context_id"] == "c1" for e in lines) and lines[1]["word_timestamps"]["words"] == ["Hi", "there."]
    failed = events.failed("engine_error", "gone")
    assert failed is not None and json.loads(failed.decode().splitlines()[1][6:])["status_code"] == 500


def test_a_whole_request_for_bytes_or_sse() -> None:
    body = {"model_id": "sonic-2", "transcript": "Hi.", "voice": {"mode": "id", "id": "default"},
            "output_format": {"container": "wav", "encoding": "pcm_alaw", "sample_rate": 8000}}
    generation = translate.parse_body(body)
    assert generation.voice == "default" and generation.format == AudioFormat("wav", "pcm_alaw", 8000)
    with pytest.raises(Exception, match="empty"):
        translate.parse_body({**body, "transcript": "  "})
    with pytest.raises(Exception, match="voice"):
        translate.parse_body({"transcript": "Hi."})
