"""engine/protocol.py: every message survives its own frame, the wire stays what docs/engine-protocol.md says, and
whatever else arrives is a ProtocolError with a stable code, never another exception."""

from __future__ import annotations

import json
import struct
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import protocol
from engine.protocol import (AddVoice, Cancel, Chunk, ChunkHeader, DeleteVoice, Done, End, EngineReady, Error, Flush,
                             GetLexicon, GetVoice, ListVoices, Playout, ProtocolError, Result, Start, Stored, Text)
from tests.test_messages import json_values

texts = st.text(max_size=12)
numbers = st.floats(allow_nan=False, allow_infinity=False)
objects = st.dictionaries(texts, texts | st.integers() | st.booleans(), max_size=3)
latencies = st.none() | st.sampled_from(protocol.LATENCY_PRESETS) | st.floats(0, protocol.MAX_LATENCY_S)
requests = st.one_of(
    st.builds(Start, texts, texts, latencies), st.builds(Text, texts, texts), st.builds(Flush, texts), st.builds(End, texts),
    st.builds(Cancel, texts), st.builds(Playout, texts, numbers), st.builds(ListVoices, texts),
    st.builds(DeleteVoice, texts, texts), st.builds(AddVoice, texts, texts, st.binary(max_size=32)),
    st.builds(GetVoice, texts, texts), st.builds(GetLexicon, texts, texts),
)
events = st.one_of(
    st.builds(EngineReady, texts, texts, texts, texts, st.booleans(), st.integers(1, 192000), notes=texts,
              decode=st.none() | texts),
    st.builds(Chunk, st.builds(ChunkHeader, texts, st.integers(0, 10**6), texts, numbers, numbers, numbers,
                               st.integers(1, 192000)), st.binary(max_size=32)),
    st.builds(Done, texts, st.integers(0, 10**6), numbers, numbers, st.none() | numbers, latencies,
              st.none() | numbers),
    st.builds(Error, id=st.none() | texts, req=st.none() | texts, code=texts, message=texts),
    st.builds(Result, texts, st.none() | st.lists(objects, max_size=3), st.none() | objects),
    st.builds(Stored, texts, st.binary(max_size=32)),
)
field_values = json_values | st.binary(max_size=8).map(lambda b: b.hex())
request_like = st.fixed_dictionaries(
    {"type": st.sampled_from(["start", "text", "flush", "end", "cancel", "playout", "list_voices", "delete_voice",
                              "add_voice", "get_voice", "get_lexicon", "chunk", "sing"])},
    optional={name: field_values for name in ("id", "text", "voice", "played", "req", "name")},
)
event_like = st.fixed_dictionaries(
    {"type": st.sampled_from(["ready", "chunk", "done", "error", "result", "stored", "start", "sing"])},
    optional={name: field_values for name in ("protocol", "engine", "watermark", "id", "seq", "offset", "chunks",
                                              "audio", "code", "message", "req", "voices", "voice")},
)


@settings(max_examples=300, deadline=None)
@given(requests)
def test_every_request_decodes_to_itself(request: protocol.Request) -> None:
    assert protocol.decode_request(protocol.encode(request)) == request


@settings(max_examples=300, deadline=None)
@given(events)
def test_every_event_decodes_to_itself(event: protocol.Event) -> None:
    assert protocol.decode_event(protocol.encode(event)) == event


def frames(objects: st.SearchStrategy[dict]) -> st.SearchStrategy[str | bytes]:
    """Text frames, binary frames (with any header and payload) and plain garbage."""
    dumped = (objects | json_values).map(json.dumps)
    binary = st.builds(lambda head, payload: struct.pack("!I", len(head.encode())) + head.encode() + payload, dumped,
                       st.binary(max_size=8))
    return st.one_of(st.binary(max_size=64), st.text(max_size=64), dumped, binary)


@pytest.mark.parametrize(("decode", "objects", "kinds"), [(protocol.decode_request, request_like, protocol.Request),
                                                         (protocol.decode_event, event_like, protocol.Event)])
@settings(max_examples=500, deadline=None)
@given(data=st.data())
def test_any_frame_is_a_message_or_a_protocol_error(decode: Callable[[str | bytes], object],
                                                     objects: st.SearchStrategy[dict], kinds: Any,
                                                     data: st.DataObject) -> None:
    """Either end reads whatever arrives as one of its messages, or refuses it with a stable code."""
    try:
        message = decode(data.draw(frames(objects)))
    except ProtocolError as exc:
        assert exc.code in {"bad_message", "unknown_type"} and str(exc)
    else:
        assert isinstance(message, kinds)


def binary(header: str, payload: bytes) -> bytes:
    return struct.pack("!I", len(header.encode())) + header.encode() + payload


def test_the_wire_format_is_the_documented_one() -> None:
    """Byte for byte what protocol v1 sent before the messages were typed (key order included)."""
    assert protocol.encode(Start("u1", "amy")) == '{"type":"start","id":"u1","voice":"amy"}'
    assert protocol.encode(Start("u1", "amy", "fastest")) == (
        '{"type":"start","id":"u1","voice":"amy","latency":"fastest"}')
    assert protocol.encode(Text("u1", "Héllo")) == '{"type":"text","id":"u1","text":"Héllo"}'
    assert protocol.encode(Playout("u1", 1.5)) == '{"type":"playout","id":"u1","played":1.5}'
    assert protocol.encode(Cancel("u1")) == '{"type":"cancel","id":"u1"}'
    assert protocol.encode(ListVoices("0")) == '{"type":"list_voices","req":"0"}'
    assert protocol.encode(DeleteVoice("amy", "2")) == '{"type":"delete_voice","name":"amy","req":"2"}'
    assert protocol.encode(AddVoice("amy", "1", b"RIFF")) == binary('{"type":"add_voice","name":"amy","req":"1"}',
                                                                     b"RIFF")
    assert protocol.encode(EngineReady("espeak", "cpu", "float32", "embedded", True)) == (
        '{"type":"ready","engine":"espeak","device":"cpu","dtype":"float32","weights":"embedded","watermark":true,'
        '"sample_rate":24000,"protocol":1,"notes":""}')
    assert protocol.encode(EngineReady("chatterbox-turbo", "cuda:0", "bfloat16", "/w", True, decode="graph")) == (
        '{"type":"ready","engine":"chatterbox-turbo","device":"cuda:0","dtype":"bfloat16","weights":"/w",'
        '"watermark":true,"sample_rate":24000,"protocol":1,"notes":"","decode":"graph"}')
    cached = EngineReady("chatterbox-turbo", "cuda:0", "bfloat16", "/w", True,
                         prompt_cache={"voices": 2, "bytes": 74_000_000, "limit": 64})
    assert protocol.encode(cached).endswith(',"prompt_cache":{"voices":2,"bytes":74000000,"limit":64}}')
    assert protocol.decode_event(protocol.encode(cached)) == cached
    assert protocol.encode(Chunk(ChunkHeader("u1", 0, "Hi.", 0.0, 0.5, 0.12), b"\x01\x00")) == binary(
        '{"type":"chunk","id":"u1","seq":0,"text":"Hi.","offset":0.0,"duration":0.5,"gen_time":0.12,'
        '"sample_rate":24000}', b"\x01\x00")
    timed = ChunkHeader("u1", 1, "Hi there.", 0.5, 0.6, 0.1, words=[{"word": "Hi", "start": 0.52, "end": 0.7}],
                        timing="exact")
    assert protocol.encode(Chunk(timed, b"")) == binary(
        '{"type":"chunk","id":"u1","seq":1,"text":"Hi there.","offset":0.5,"duration":0.6,"gen_time":0.1,'
        '"sample_rate":24000,"words":[{"word":"Hi","start":0.52,"end":0.7}],"timing":"exact"}', b"")
    assert protocol.decode_event(protocol.encode(Chunk(timed, b""))) == Chunk(timed, b"")
    assert protocol.encode(Done("u1", 2, 1.25, 0.3, 0.2)) == (
        '{"type":"done","id":"u1","chunks":2,"audio":1.25,"gen_time":0.3,"first_chunk":0.2}')
    assert protocol.encode(Done("u1", 2, 1.25, 0.3, 0.2, 0.4, 0.4)) == (
        '{"type":"done","id":"u1","chunks":2,"audio":1.25,"gen_time":0.3,"first_chunk":0.2,"latency":0.4,'
        '"first_audio_s":0.4}')
    assert protocol.encode(Error(id="u1", code="unknown_voice", message="no")) == (
        '{"type":"error","id":"u1","code":"unknown_voice","message":"no"}')
    assert protocol.encode(Error(req="3", code="exists", message="no")) == (
        '{"type":"error","req":"3","code":"exists","message":"no"}')
    assert protocol.encode(Error(code="bad_message", message="no")) == (
        '{"type":"error","code":"bad_message","message":"no"}')
    assert protocol.encode(Result("0", voices=[{"name": "default"}])) == (
        '{"type":"result","req":"0","voices":[{"name":"default"}]}')
    assert protocol.encode(Result("2")) == '{"type":"result","req":"2"}'


def test_stored_files_are_fetched_as_binary_answers() -> None:
    """How a gateway copies a voice or a lexicon to a worker that lacks it: a text request, a binary answer whose
    payload is the file as kept."""
    assert protocol.encode(GetVoice("amy", "4")) == '{"type":"get_voice","name":"amy","req":"4"}'
    assert protocol.encode(GetLexicon("names", "5")) == '{"type":"get_lexicon","name":"names","req":"5"}'
    assert protocol.decode_request(protocol.encode(GetVoice("amy", "4"))) == GetVoice("amy", "4")
    assert protocol.encode(Stored("4", b"RIFF\x00")) == binary('{"type":"stored","req":"4"}', b"RIFF\x00")
    assert protocol.decode_event(binary('{"type":"stored","req":"4"}', b"RIFF\x00")) == Stored("4", b"RIFF\x00")
    with pytest.raises(ProtocolError, match="must be sent as a binary frame"):
        protocol.decode_event('{"type": "stored", "req": "4"}')
    with pytest.raises(ProtocolError, match="needs field 'req'"):
        protocol.decode_event(binary('{"type":"stored"}', b""))
    with pytest.raises(ProtocolError, match="must be sent as a text frame"):
        protocol.decode_request(binary('{"type":"get_voice","name":"amy","req":"4"}', b""))


@pytest.mark.parametrize(("frame", "code", "words"), [
    ('{"type": "text", "id": "u1"}', "bad_message", "needs field 'text'"),
    ('{"type": "text", "id": 7, "text": "x"}', "bad_message", "'id' of 'text' must be a string"),
    ('{"type": "playout", "id": "u1", "played": "1"}', "bad_message", "must be a number"),
    ('{"type": "playout", "id": "u1", "played": true}', "bad_message", "must be a number"),
    ('{"type": "start", "id": "u1", "voice": 3}', "bad_message", "'voice' of 'start' must be a string"),
    ('{"type": "add_voice", "req": "1", "name": "x"}', "bad_message", "must be sent as a binary frame"),
    ('{"type": "start", "id": "u1", "latency": "slow"}', "bad_latency", "'fastest', 'balanced', 'prosody'"),
    ('{"type": "start", "id": "u1", "latency": 9}', "bad_latency", "from 0 to 5"),
    ('{"type": "start", "id": "u1", "latency": [1]}', "bad_message", "must be a string or a number"),
    (binary('{"type": "start", "id": "u1"}', b""), "bad_message", "must be sent as a text frame"),
    (binary('{"type": "sing"}', b""), "unknown_type", "'sing'"),
    ('{"type": "chunk", "id": "u1"}', "unknown_type", "'chunk'"),  # a worker's message is no request
    ("[1, 2]", "bad_message", "JSON object"),
])
def test_malformed_requests_say_what_is_wrong(frame: str | bytes, code: str, words: str) -> None:
    with pytest.raises(ProtocolError) as info:
        protocol.decode_request(frame)
    assert info.value.code == code and words in str(info.value)


def test_malformed_events_say_what_is_wrong() -> None:
    ready = json.loads(protocol.encode(EngineReady("espeak", "cpu", "float32", "embedded", True)))
    for bad, words in (({**ready, "protocol": 2}, "protocol 2"), ({k: v for k, v in ready.items() if k != "protocol"},
                                                                   "protocol None"),
                       ({**ready, "watermark": "yes"}, "'watermark' of 'ready' must be true or false"),
                       ({**ready, "decode": {"graphs": True}}, "'decode' of 'ready' must be a string"),
                       ({"type": "done", "id": "u1", "chunks": 1.5, "audio": 1, "gen_time": 1}, "must be an integer"),
                       ({"type": "result", "req": "0", "voices": ["default"]}, "must be a list of objects"),
                       ({"type": "error", "id": "u1", "code": "x"}, "needs field 'message'")):
        with pytest.raises(ProtocolError, match=words):
            protocol.decode_event(json.dumps(bad))
    with pytest.raises(ProtocolError, match="binary"):
        protocol.decode_event(json.dumps({"type": "chunk", "id": "u1", "seq": 0, "text": "", "offset": 0,
                                          "duration": 0, "gen_time": 0}))


def test_unknown_fields_are_ignored_and_optional_ones_take_their_defaults() -> None:
    """So a worker may announce a new optional field (with a default) without a new protocol version."""
    ready = {"type": "ready", "protocol": 1, "engine": "turbo", "device": "cuda", "dtype": "bf16",
             "weights": "hf-cache", "watermark": True, "kv_cache": {"static": True}}
    assert protocol.decode_event(json.dumps(ready)) == EngineReady("turbo", "cuda", "bf16", "hf-cache", True)
    assert protocol.decode_request('{"type": "start", "id": "u1", "voice": null, "extra": 1}') == Start("u1")
    assert protocol.decode_request('{"type": "playout", "id": "u1", "played": 2}') == Playout("u1", 2.0)
    assert protocol.decode_event('{"type": "done", "id": "u1", "chunks": 1, "audio": 1, "gen_time": 0.5}') == Done(
        "u1", 1, 1.0, 0.5, None)


def test_every_field_of_every_message_has_a_type_check() -> None:
    """A field added with an annotation the decoder has no check for would fail every decode with a KeyError."""
    from dataclasses import fields

    messages = (Start, Text, Flush, End, Cancel, Playout, ListVoices, DeleteVoice, AddVoice, GetVoice, GetLexicon,
                EngineReady, ChunkHeader, Done, Error, Result, Stored)
    unchecked = [(cls.__name__, f.name, f.type) for cls in messages for f in fields(cls)
                 if f.type != "bytes" and f.type.removesuffix(" | None") not in protocol._CHECKS]
    assert unchecked == []
