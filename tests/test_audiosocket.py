"""Asterisk AudioSocket (``serve --audiosocket-port``) against one real gateway (eSpeak): the protocol's framing and
key on their own, then calls from a replica of Asterisk's side (cbf_tools/peers/audiosocket_peer.py, written from
Asterisk's documentation: no simulator of AudioSocket ships) over real TCP, each driven by an agent attached as a
controller by the call's UUID, exactly as a Twilio call is."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid

import numpy as np
import pytest

from cbf_tools.bench import caller_voices as voices
from cbf_tools.peers.audiosocket_peer import AudioSocketCall, connect_audiosocket
from engine.protocol import ProtocolError
from engine.watermark import Watermarker
from gateway.telephony import audiosocket
from gateway.telephony.audiosocket import AUDIO, CallId, FrameReader, Opening, frame
from gateway.telephony.audiosocket_server import listen_refusal
from gateway.telephony.events import Dtmf, Stop
from tests.server import PHONE_AUDIOSOCKET_KEY, next_event
from tests.test_telephony import LONG_TEXT, controller, no_sessions_left
from tests.test_watermark_delivered import check

SLIN16 = 0x12  # 16 kHz audio (the higher-rate kinds)
TEXT = "Thanks for calling. Your table for four is booked for Friday at noon, see you then."


@pytest.fixture(scope="module")
def url(phone_server: str) -> str:
    return phone_server


def keyed() -> str:
    return audiosocket.keyed_uuid(PHONE_AUDIOSOCKET_KEY)


async def call(port: int, kind: int = SLIN16, call_id: str | None = None, source: str | None = None
               ) -> AudioSocketCall:
    return await connect_audiosocket("127.0.0.1", port, call_id or keyed(), kind, source)


async def ended(caller: AudioSocketCall, within: float = 10) -> None:
    await asyncio.wait_for(caller.closed.wait(), within)


# The protocol, pure.

def test_frames_are_read_whole_however_the_bytes_come():
    stream = frame(0x01, uuid.UUID(int=7).bytes) + frame(AUDIO, bytes(320)) + frame(0x03, b"5") + frame(0x00)
    reader = FrameReader()
    got = [f for byte in stream for f in reader.feed(bytes([byte]))]
    assert [kind for kind, _ in got] == [0x01, AUDIO, 0x03, 0x00] and len(got[1][1]) == 320
    assert reader.feed(b"\x10\x01") == [] and reader.feed(b"\x40" + bytes(320)) == [(AUDIO, bytes(320))]
    assert audiosocket.parse(0x01, uuid.UUID(int=7).bytes) == CallId(uuid.UUID(int=7))
    assert audiosocket.parse(0x03, b"#") == Dtmf("#") and audiosocket.parse(0x00, b"") == Stop()
    assert audiosocket.parse(0xFF, b"\x02") == audiosocket.Failed(2)
    assert audiosocket.parse(SLIN16, bytes(640)) == audiosocket.Audio(SLIN16, 16000, bytes(640))
    for kind, payload in ((0x01, bytes(15)), (0x03, b"55"), (0x03, b"x"), (AUDIO, bytes(321)), (0x42, b"")):
        with pytest.raises(ProtocolError) as refused:
            audiosocket.parse(kind, payload)
        assert refused.value.code == "bad_message"
    with pytest.raises(ValueError):
        frame(AUDIO, bytes(0x10000))


def test_a_call_opens_on_its_uuid_and_first_audio():
    opening = Opening()
    assert opening.feed(CallId(uuid.UUID(int=1))) is None and opening.feed(Dtmf("1")) is None
    first = audiosocket.Audio(AUDIO, 8000, bytes(320))
    assert opening.feed(first) == first
    for events in ([audiosocket.Audio(AUDIO, 8000, b"")], [CallId(uuid.UUID(int=1)), CallId(uuid.UUID(int=2))],
                   [CallId(uuid.UUID(int=1)), audiosocket.Audio(0x11, 12000, b"")]):
        with pytest.raises(ProtocolError):
            opening = Opening()
            for event in events:
                opening.feed(event)
    with pytest.raises(EOFError):
        opening = Opening()
        opening.feed(CallId(uuid.UUID(int=1)))
        opening.feed(Stop())


def test_the_key_tags_the_uuid_as_the_dialplan_makes_it():
    now = 1_765_000_000
    minted = audiosocket.keyed_uuid("s3cret", now, "abcdef")
    # The dialplan's own steps (docs/protocols/phone.md), in Python: EPOCH, 6 hex digits, SHA1(key + those 16).
    import hashlib
    head = f"{now}abcdef"
    tag = hashlib.sha1(("s3cret" + head).encode()).hexdigest()[:16]
    assert minted == f"{head[:8]}-{head[8:12]}-{head[12:16]}-{tag[:4]}-{tag[4:16]}"
    assert audiosocket.key_refusal("s3cret", minted, now + 100) is None
    assert "not tagged" in audiosocket.key_refusal("other", minted, now)
    assert "minted more than" in audiosocket.key_refusal("s3cret", minted, now + 301)
    assert "not tagged" in audiosocket.key_refusal("s3cret", str(uuid.uuid4()), now)


def test_who_may_connect():
    networks = audiosocket.parse_networks("10.0.0.5, 192.168.1.0/24,::1")
    assert audiosocket.peer_allowed(networks, "192.168.1.77") and audiosocket.peer_allowed(networks, "::1")
    assert audiosocket.peer_allowed(networks, "::ffff:10.0.0.5") and not audiosocket.peer_allowed(networks, "10.0.0.6")
    with pytest.raises(ValueError, match="expected addresses or networks"):
        audiosocket.parse_networks("10.0.0.5,pbx.example")
    assert listen_refusal("127.0.0.1", None, ()) is None and listen_refusal("0.0.0.0", "k", ()) is None
    assert listen_refusal("0.0.0.0", None, ("10.0.0.5",)) is None
    assert "carries no credentials" in listen_refusal("0.0.0.0", None, ())


def test_outbound_frames_are_the_calls_own_kind():
    out = audiosocket.Outbound(SLIN16)
    assert out.media(b"\x01\x00") == b"\x12\x00\x02\x01\x00" and out.mark("e1.2") is None and out.clear() is None
    assert out.hang_up() == b"\x00\x00\x00"


# Calls on the real server.

async def test_a_call_is_spoken_to_watermarked_and_hears_the_callers_keys_and_audio(url, phone_audiosocket_port,
                                                                                  watermarker: Watermarker):
    caller = await call(phone_audiosocket_port)
    agent = await controller(url, caller.call_id, codec="slin16")
    await agent.send(json.dumps({"type": "listen"}))
    started = json.loads(await agent.recv())
    assert started == {"type": "caller_audio_start", "encoding": "pcm16", "sample_rate": 16000, "channels": 1}, started
    caller.voice = lambda at: (b"\x01\x02" * 320)  # a recognisable frame, every 20 ms
    heard = b""
    while len(heard) < 6400:  # the caller's own bytes reach the agent
        message = json.loads(await asyncio.wait_for(agent.recv(), 10))
        if message["type"] == "caller_audio":
            heard += base64.b64decode(message["audio"])
    assert b"\x01\x02" * 320 in heard
    caller.voice = lambda at: None
    await agent.send(json.dumps({"type": "listen", "format": "off"}))
    spoke = time.monotonic()
    await agent.send(json.dumps({"type": "speak", "text": TEXT}))
    done, _ = await next_event(agent, "done", timeout=30)
    first_audio = caller.arrived[0] - spoke
    print(f"\nfirst audio at the caller {1000 * first_audio:.0f} ms after speak")
    assert done["heard_from"] == "clock" and abs(done["heard_s"] - done["audio_seconds"]) < 0.05, done
    assert all(len(f) == 640 for f in caller.frames)  # 20 ms frames of the call's kind
    # Paced at real time: never more than the lead (and a frame) ahead of what has played. Counted from ``speak``
    # (the pacer's clock starts after it), not from the first frame's arrival: a first frame read late by a busy
    # machine would make every later one look early.
    ahead = max(i * 0.02 - (at - spoke) for i, at in enumerate(caller.arrived))
    assert ahead <= audiosocket.Outbound.lead_s + 0.03, ahead
    audio = np.frombuffer(bytes(caller.audio), "<i2").astype(np.float32) / 32768
    check(watermarker, "AudioSocket slin16", TEXT, audio, 16000)
    await caller.dtmf("5")
    assert (await next_event(agent, "dtmf"))[0] == {"type": "dtmf", "digit": "5"}
    await caller.hang_up()
    ended_event, _ = await next_event(agent, "ended", timeout=10)
    assert "hang-up" in ended_event["reason"] or "dropped" in ended_event["reason"], ended_event
    await agent.close()
    await no_sessions_left(url)


async def test_the_caller_talking_over_the_agent_stops_its_audio(url, phone_audiosocket_port):
    caller = await call(phone_audiosocket_port)
    agent = await controller(url, caller.call_id, codec="slin16")
    await agent.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
    await next_event(agent, "chunk")
    while not caller.arrived or caller.arrived[-1] - caller.arrived[0] < 1.0:
        await asyncio.sleep(0.02)
    speech = voices.Speech(voices.wire_frames(voices.clip_pcm(16000), "slin16"), time.monotonic())
    caller.voice = speech
    seen = (await next_event(agent, "interrupted", timeout=15))[1]
    kinds = [event["type"] for event in seen]
    assert kinds.index("speech_started") < kinds.index("cancelled") < kinds.index("interrupted"), kinds
    (cut,) = seen[-1]["utterances"]
    assert cut["heard_from"] == "clock" and cut["heard_s"] > 0.8 and cut["heard_text"], cut
    await asyncio.sleep(0.3)  # what was in flight arrives (nothing should)
    assert speech.onset is not None
    voiced = [at for at, f in zip(caller.arrived, caller.frames)
              if voices.dbfs(np.frombuffer(f, "<i2")) > -40]
    stop_ms = 1000 * (voiced[-1] - speech.onset)
    print(f"\nthe gateway's last voiced frame reached the caller {stop_ms:.0f} ms after the speech onset")
    # Stopped where it says: the caller was sent no more of the utterance than had played by the gateway's clock
    # when it stopped, and its lead (how soon after the onset is bench barge-in's figure: a loaded machine delays
    # what a test reads, not what the gateway sent).
    sent_s = voices.voiced_span_s(caller.frames, 16000)
    assert sent_s <= cut["heard_s"] + audiosocket.Outbound.lead_s + 0.06, (sent_s, cut)
    await caller.hang_up()
    await agent.close()
    await no_sessions_left(url)


async def read_nothing_then_closed(caller: AudioSocketCall) -> None:
    await ended(caller)
    assert not caller.audio


async def test_refused_without_the_key_or_from_an_address_not_allowed_before_any_audio(url, phone_audiosocket_port):
    now = int(time.time())
    for call_id in (str(uuid.uuid4()), audiosocket.keyed_uuid("another key"),
                    audiosocket.keyed_uuid(PHONE_AUDIOSOCKET_KEY, now - 3600)):
        caller = await call(phone_audiosocket_port, call_id=call_id)
        await read_nothing_then_closed(caller)
        assert caller.hung_up  # Asterisk hangs the channel up
    stranger = await call(phone_audiosocket_port, source="127.0.0.2")  # not in --audiosocket-allow
    await read_nothing_then_closed(stranger)
    assert not stranger.hung_up  # closed before a byte was read
    await no_sessions_left(url)


@pytest.mark.parametrize("mangled", [frame(0x42, b"??"), frame(0x03, b"12"), frame(SLIN16, bytes(641)),
                                     frame(0x01, uuid.uuid4().bytes), frame(AUDIO, bytes(320))],
                         ids=["unknown kind", "dtmf of two bytes", "odd audio", "a second uuid", "another rate"])
async def test_a_mangled_frame_ends_its_call_cleanly_and_the_server_goes_on(url, phone_audiosocket_port, mangled):
    caller = await call(phone_audiosocket_port)
    agent = await controller(url, caller.call_id, codec="slin16")
    await caller.ws.send(mangled)
    ended_event, _ = await next_event(agent, "ended", timeout=10)
    assert ended_event["reason"].startswith("bad frame: "), ended_event
    await ended(caller)
    assert caller.hung_up
    await agent.close()
    await no_sessions_left(url)


async def test_a_uuid_reused_at_once_is_refused_and_the_first_call_goes_on(url, phone_audiosocket_port):
    first = await call(phone_audiosocket_port)
    agent = await controller(url, first.call_id, codec="slin16")
    second = await call(phone_audiosocket_port, call_id=first.call_id)
    await read_nothing_then_closed(second)
    assert second.hung_up
    await agent.send(json.dumps({"type": "speak", "text": "Still with you."}))
    await next_event(agent, "done", timeout=20)
    assert first.audio and not first.closed.is_set()
    await first.hang_up()
    await agent.close()
    await no_sessions_left(url)


async def test_a_half_closed_connection_and_garbage_before_the_uuid_end_cleanly(url, phone_audiosocket_port):
    caller = await call(phone_audiosocket_port)
    agent = await controller(url, caller.call_id, codec="slin16")
    caller.ws.writer.write_eof()  # Asterisk's side half-closed: reading still
    ended_event, _ = await next_event(agent, "ended", timeout=10)
    assert "dropped" in ended_event["reason"], ended_event
    await ended(caller)
    await agent.close()
    for garbage in (frame(0x47), frame(AUDIO, bytes(320)), frame(0x01, bytes(4))):
        reader, writer = await asyncio.open_connection("127.0.0.1", phone_audiosocket_port)
        writer.write(garbage)
        assert await asyncio.wait_for(reader.read(), 10) in (b"", b"\x00\x00\x00")
        writer.close()
    await no_sessions_left(url)
