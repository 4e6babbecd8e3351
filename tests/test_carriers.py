"""Plivo, Vonage and Exotel calls (``WS /v1/plivo``, ``/v1/vonage``, ``/v1/exotel``) and SignalWire's on
``/v1/twilio``, against one real gateway (eSpeak, the phone files' shared server).

No carrier ships a simulator: the phone side is a replica written from each one's public documentation
(cbf_tools/peers/phone_callers.py: Plivo's audio-streaming events, Vonage's Voice API WebSockets guide, Exotel's Voicebot
applet page, SignalWire's cXML <Stream>). It plays what it is sent at real time, answers marks (``playedStream``,
``websocket:notify``, ``mark``) once their audio has played, empties its buffer on a clear, sends the caller's audio
all call long, DTMF, and hangs up. pipecat's own serializers for the three (pipecat-ai, installed for the ElevenLabs
tests) are an independent reading of the same wire formats: they read what the replicas send, and what the gateway
sends has the shape they write. The agent is a controller on ``WS /v1/stream?session={call id}``."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import types
import uuid

import httpx
import numpy as np
import pytest
from websockets.asyncio.client import connect

from cbf_tools.peers.phone_callers import STACKS, PlayingStack, connect_call
from cbf_tools.peers.polling import until
from engine.watermark import Watermarker
from gateway.telephony import events, exotel, plivo, vonage
from gateway.telephony.outbox import LEAD_S
from tests.server import next_event
from tests.test_caller_audio import clip_at
from tests.test_telephony import GREETING, KEY, LONG_TEXT, controller, no_sessions_left
from tests.test_watermark_delivered import check, mulaw_decode

CARRIERS = ("plivo", "vonage", "exotel")


@pytest.fixture(scope="module")
def url(phone_server: str) -> str:
    return phone_server


def pcm(data: bytes) -> np.ndarray:
    return np.frombuffer(data, "<i2").astype(np.float32) / 32768


def wire_checked(stack: str, caller: PlayingStack) -> None:
    """Every message the gateway sent was one the carrier takes."""
    if stack == "vonage":  # 20 ms binary frames
        assert {len(frame) for frame in caller.frames} == {640}
    elif stack == "exotel":  # multiples of 320 bytes, 3.2-100 KB
        assert all(len(f) % exotel.CHUNK_UNIT == 0 and 3200 <= len(f) <= 100_000 for f in caller.frames)
    else:  # playAudio in the stream's own format
        assert set(caller.formats) == {("audio/x-l16", 8000)}


def paced(caller: PlayingStack) -> float:
    """How far ahead of real time the audio came, at most (s): what had arrived less what could have played."""
    first, sent, ahead = caller.arrived[0], 0, 0.0
    for at, frame in zip(caller.arrived, caller.frames):
        sent += len(frame)
        ahead = max(ahead, sent / caller.bytes_per_second - (at - first))
    return ahead


@pytest.mark.parametrize("stack", CARRIERS)
async def test_a_call_is_heard_marked_takes_dtmf_and_the_caller_barges_in(url, watermarker: Watermarker, stack):
    call_id = f"{stack}-{uuid.uuid4()}"
    caller = await connect_call(url, stack, call_id, key=KEY)
    rate = caller.bytes_per_second // 2
    agent = await controller(url, call_id, codec=caller.codec)
    await agent.send(json.dumps({"type": "listen"}))
    assert json.loads(await agent.recv()) == {"type": "caller_audio_start", "encoding": "pcm16", "sample_rate": rate,
                                              "channels": 1}
    spoke = time.monotonic()
    await agent.send(json.dumps({"type": "speak", "text": GREETING}))
    done, _ = await next_event(agent, "done")
    print(f"\n{stack}: first audio at the caller {1000 * (caller.arrived[0] - spoke):.0f} ms after speak")
    assert done["heard_from"] == "marks" and abs(done["heard_s"] - done["audio_seconds"]) < 0.1, done
    check(watermarker, f"{stack} l16 {rate}", GREETING, pcm(bytes(caller.audio)), rate)
    assert paced(caller) <= LEAD_S + 0.25  # near real time: the carrier buffers what it is sent

    await caller.dtmf("7")
    assert (await next_event(agent, "dtmf"))[0]["digit"] == "7"

    clip = clip_at(rate).astype("<i2").tobytes()
    step = round(caller.frame_s * rate) * 2
    frames = iter([clip[i:i + step] for i in range(0, len(clip) - step + 1, step)])
    heard_before = len(caller.audio)
    await agent.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
    await until(lambda: len(caller.audio) - heard_before >= 2 * caller.bytes_per_second, 30,  # a second played
                "no two seconds of speech")
    talking = asyncio.get_running_loop().time()
    caller.voice = lambda at: next(frames, None)
    received, seen = b"", []
    while "interrupted" not in [event["type"] for event in seen] or clip[:10 * step] not in received:
        message = json.loads(await asyncio.wait_for(agent.recv(), 10))
        if message["type"] == "caller_audio":
            received += base64.b64decode(message["audio"])  # the carrier's own bytes, as it sent them
        else:
            seen.append(message)
    await caller.cleared()
    kinds = [e["type"] for e in seen if e["type"] != "chunk"]
    assert kinds[:3] == ["speech_started", "cancelled", "interrupted"], kinds
    cut = next(e for e in seen if e["type"] == "cancelled")
    assert cut["heard_from"] == "marks" and cut["heard_s"] > 0.5, cut
    print(f"{stack}: clear sent {1000 * (caller.cleared_at[0] - talking):.0f} ms after the caller began talking")
    assert not [at for at in caller.arrived if at > caller.cleared_at[0] + 0.05]  # nothing after the clear
    wire_checked(stack, caller)
    await caller.hang_up()
    ended, _ = await next_event(agent, "ended", timeout=10)
    assert ("stop" if stack == "exotel" else "dropped") in ended["reason"]
    await agent.close()
    await no_sessions_left(url)


async def test_a_signalwire_stream_on_the_twilio_route(url):
    """SignalWire's <Connect><Stream> speaks Twilio's Media Streams: its start (UUID ids) on ``/v1/twilio``."""
    call_id = str(uuid.uuid4())
    caller = await connect_call(url, "signalwire", call_id, key=KEY, text="You are through to the gateway.")
    agent = await controller(url, call_id)
    done, _ = await next_event(agent, "done")
    assert done["heard_from"] == "marks" and abs(done["heard_s"] - done["audio_seconds"]) < 0.1, done
    assert np.abs(mulaw_decode(bytes(caller.audio))).max() > 0.1
    await caller.dtmf("#")
    assert (await next_event(agent, "dtmf"))[0]["digit"] == "#"
    await caller.hang_up()
    assert "stop" in (await next_event(agent, "ended", timeout=10))[0]["reason"]
    await agent.close()
    await no_sessions_left(url)


@pytest.mark.parametrize("stack", CARRIERS)
async def test_the_key_in_the_dialled_url_or_none_before_any_audio(url, stack):
    """No headers of ours on these stacks' upgrades: ``?key=`` on the URL serves; without a valid key the call is
    closed (4401) before any audio."""
    call_id = f"{stack}-{uuid.uuid4()}"
    caller = await connect_call(url, stack, call_id, query=f"?key={KEY}", text="Hello.")
    agent = await controller(url, call_id, codec=caller.codec)
    await next_event(agent, "done")
    await caller.hang_up()
    await agent.close()
    for params in ({"key": "wrong", "text": "Hello."}, {"text": "Hello."}):
        refused = await connect_call(url, stack, f"{stack}-{uuid.uuid4()}", **params)
        await asyncio.wait_for(refused.closed.wait(), 10)
        assert refused.ws.close_code == 4401 and not refused.frames
        await refused.hang_up()
    await no_sessions_left(url)


# Frames each carrier's socket must refuse: before the start, and in the middle of a call.
MANGLED = {
    "plivo": ([b"\x00\x01", '{"event": "start", "start": {"callId": "x", "streamId": "s", "mediaFormat": '
               '{"encoding": "audio/x-opus", "sampleRate": 48000}}}'], ['{"event": "playedStream"}', "{not json"]),
    "vonage": ([b"\x00" * 640, '{"event": "websocket:connected", "content-type": "audio/l16;rate=16000"}'],
               ['{"event": "websocket:dtmf", "digit": "55"}', "not json"]),
    "exotel": (['{"event": "media", "media": {"payload": "AAA="}}', '{"event": "start", "start": {"call_sid": "c"}}'],
               ['{"event": "mark", "mark": {}}', "[]"]),
}


@pytest.mark.parametrize("stack", CARRIERS)
async def test_mangled_frames_close_the_call_with_4400_and_the_server_goes_on(url, stack):
    ws_url = url.replace("http", "ws", 1) + STACKS[stack].path
    before_start, mid_call = MANGLED[stack]
    for frame in before_start:
        async with connect(ws_url, additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
            await ws.send(frame)
            await asyncio.wait_for(ws.wait_closed(), 10)
            assert ws.close_code == 4400, (frame, ws.close_code, ws.close_reason)
            assert ws.close_reason  # says what was wrong
    for frame in mid_call:
        caller = await connect_call(url, stack, f"{stack}-{uuid.uuid4()}", key=KEY)
        await caller.ws.send(frame)
        await asyncio.wait_for(caller.closed.wait(), 10)
        assert caller.ws.close_code == 4400, (frame, caller.ws.close_code)
        await caller.hang_up()
    async with httpx.AsyncClient() as http:
        assert (await http.get(url + "/health")).json()["status"] == "ok"
    await no_sessions_left(url)


# pipecat's serializers: an independent reading of each wire format (no server).

async def pipecat_reads(serializer, frame: str | bytes):
    await serializer.setup(types.SimpleNamespace(audio_in_sample_rate=serializer._params.sample_rate or 8000))
    return await serializer.deserialize(frame)


async def test_pipecat_reads_what_the_replicas_send_and_writes_what_the_gateway_sends():
    from pipecat.frames.frames import InputAudioRawFrame, InputDTMFFrame, InterruptionFrame, OutputAudioRawFrame
    from pipecat.serializers.exotel import ExotelFrameSerializer
    from pipecat.serializers.plivo import PlivoFrameSerializer
    from pipecat.serializers.vonage import VonageFrameSerializer

    audio = (np.arange(160) * 50).astype("<i2").tobytes()
    fake = types.SimpleNamespace()
    for stack, serializer in (
            ("plivo", PlivoFrameSerializer("s1", params=PlivoFrameSerializer.InputParams(auto_hang_up=False))),
            ("vonage", VonageFrameSerializer(VonageFrameSerializer.InputParams(sample_rate=16000))),
            ("exotel", ExotelFrameSerializer("s1"))):
        replica = STACKS[stack](fake, "call-1")
        dtmf = await pipecat_reads(serializer, replica.dtmf_frame("5"))
        assert isinstance(dtmf, InputDTMFFrame) and dtmf.button.value == "5", stack
        if stack != "plivo":  # pipecat takes Plivo's media as mu-law whatever the start said
            heard = await pipecat_reads(serializer, replica.caller_frame(1, audio))
            assert isinstance(heard, InputAudioRawFrame) and heard.audio == audio, stack
    # What pipecat sends each carrier, beside what the gateway does.
    exotel_out, plivo_out = exotel.Outbound("s1"), plivo.Outbound("s1", "mulaw", 8000)
    ours = {"exotel": (json.loads(exotel_out.media(audio)), json.loads(exotel_out.clear())),
            "plivo": (json.loads(plivo_out.media(b"\xff" * 160)), json.loads(plivo_out.clear())),
            "vonage": (vonage.Outbound(16000).media(bytes(3200)), json.loads(vonage.Outbound().clear()))}
    frame = OutputAudioRawFrame(audio=audio, sample_rate=8000, num_channels=1)
    exotel_ser = ExotelFrameSerializer("s1")
    await exotel_ser.setup(types.SimpleNamespace(audio_in_sample_rate=8000))
    theirs = json.loads(await exotel_ser.serialize(frame))
    assert theirs.keys() == ours["exotel"][0].keys() and theirs["media"].keys() == ours["exotel"][0]["media"].keys()
    assert base64.b64decode(theirs["media"]["payload"]) == base64.b64decode(ours["exotel"][0]["media"]["payload"])
    assert json.loads(await exotel_ser.serialize(InterruptionFrame())) == ours["exotel"][1]
    plivo_ser = PlivoFrameSerializer("s1", params=PlivoFrameSerializer.InputParams(auto_hang_up=False))
    await plivo_ser.setup(types.SimpleNamespace(audio_in_sample_rate=8000))
    theirs = json.loads(await plivo_ser.serialize(frame))
    assert theirs.keys() == ours["plivo"][0].keys() and theirs["media"].keys() == ours["plivo"][0]["media"].keys()
    assert theirs["media"]["contentType"] == ours["plivo"][0]["media"]["contentType"] == "audio/x-mulaw"
    assert json.loads(await plivo_ser.serialize(InterruptionFrame())) == ours["plivo"][1]
    vonage_ser = VonageFrameSerializer()
    assert json.loads(await vonage_ser.serialize(InterruptionFrame())) == ours["vonage"][1]
    assert all(isinstance(m, bytes) and len(m) == 640 for m in ours["vonage"][0])  # raw binary, as pipecat sends


def test_frames_in_and_out():
    start = {"sequenceNumber": 0, "event": "start", "start": {"callId": "c1", "streamId": "s1", "accountId": "MA1",
             "tracks": ["inbound"], "mediaFormat": {"encoding": "audio/x-l16", "sampleRate": 16000}},
             "extra_headers": '{"key": "k", "voice": "v"}'}
    assert plivo.parse(json.dumps(start)) == events.Start("c1", "s1", {"key": "k", "voice": "v"}, "pcm", "l16-16000",
                                                          16000)
    assert plivo.parse(json.dumps({**start, "extra_headers": "key=k,text=Hi"})).parameters == {"key": "k", "text": "Hi"}
    assert plivo.parse(json.dumps({**start, "extra_headers": {"X-PH-key": "k"}})).parameters == {"key": "k"}
    bare = {"event": "start", "start": {"callId": "c1", "streamId": "s1"}}  # Plivo's default format
    assert (plivo.parse(json.dumps(bare)).encoding, plivo.parse(json.dumps(bare)).rate) == ("pcm", 8000)
    assert plivo.parse('{"event": "playedStream", "streamId": "s1", "name": "e1.8"}') == events.MarkPlayed("e1.8")
    assert plivo.parse('{"event": "clearedAudio", "streamId": "s1"}') == events.Ignored("clearedAudio")
    media = {"event": "media", "media": {"track": "inbound", "timestamp": "1733469600000", "payload": "AAA="}}
    assert plivo.parse(json.dumps(media)) == events.CallerMedia(b"\0\0", None)  # Unix ms: the call counts samples
    out = plivo.Outbound("s1", "pcm", 16000)
    assert json.loads(out.mark("e1.8")) == {"event": "checkpoint", "streamId": "s1", "name": "e1.8"}
    assert json.loads(out.media(b"\0\0"))["media"] == {"contentType": "audio/x-l16", "sampleRate": 16000,
                                                       "payload": "AAA="}

    connected = {"event": "websocket:connected", "content-type": "audio/l16;rate=16000", "uuid": "u1", "key": "k"}
    assert vonage.parse(json.dumps(connected)) == events.Start("u1", "u1", {"key": "k"}, "pcm", "l16-16000", 16000,
                                                               3200)
    assert vonage.parse(b"\1\0" * 320) == events.CallerMedia(b"\1\0" * 320)
    assert vonage.parse('{"event": "websocket:notify", "payload": {"name": "e2.640"}}') == events.MarkPlayed("e2.640")
    assert vonage.parse('{"event": "websocket:dtmf", "digit": 5, "duration": 260}') == events.Dtmf("5")
    assert json.loads(vonage.Outbound().mark("e1.8")) == {"action": "notify", "payload": {"name": "e1.8"}}

    exo = {"event": "start", "sequence_number": "1", "stream_sid": "s1", "start": {
        "stream_sid": "s1", "call_sid": "c1", "account_sid": "a", "custom_parameters": {"key": "k"},
        "media_format": {"encoding": "raw/slin", "sample_rate": "16000", "bit_rate": "256kbps"}}}
    assert exotel.parse(json.dumps(exo)) == events.Start("c1", "s1", {"key": "k"}, "pcm", "l16-16000", 16000, 3200)
    assert [exotel.frame_bytes("pcm", rate) for rate in (8000, 16000, 24000)] == [3200, 3200, 4800]
    assert exotel.parse('{"event": "dtmf", "dtmf": {"duration": "1000", "digit": "9"}}') == events.Dtmf("9")
    assert json.loads(exotel.Outbound("s1").mark("e1.8")) == {"event": "mark", "stream_sid": "s1",
                                                              "mark": {"name": "e1.8"}}
    for parse, bad in ((plivo.parse, {**start, "start": {**start["start"], "mediaFormat": {
            "encoding": "audio/x-mulaw", "sampleRate": 16000}}}), (vonage.parse, {**connected, "uuid": ""}),
            (vonage.parse, {**connected, "content-type": "audio/x-mulaw"}),
            (exotel.parse, {**exo, "start": {**exo["start"], "media_format": {"encoding": "raw/slin",
                                                                             "sample_rate": "11025"}}})):
        with pytest.raises(Exception) as refused:
            parse(json.dumps(bad))
        assert getattr(refused.value, "code", None) == "bad_message"
