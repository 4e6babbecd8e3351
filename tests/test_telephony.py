"""The phone stacks' WebSockets against one real gateway (eSpeak).

Twilio Media Streams (``WS /v1/twilio``), with streamdouble (PyPI), a Twilio Media
Streams simulator, as the phone side: it sends ``connected``/``start``/20 ms of caller audio every 20 ms/``dtmf``/
``stop``, records our ``media``, ``mark`` and ``clear``, and echoes each mark when the audio before it would have
played. The agent is a controller on ``WS /v1/stream?session={callSid}``. Refusals before any audio (signature, key,
no ``start``) are checked on the app in process, where the engine is not needed.

Telnyx media streaming (``WS /v1/telnyx``) and Asterisk 22 chan_websocket (``WS /v1/asterisk``): no Telnyx client
installs from PyPI and Asterisk is on neither PyPI nor Debian 12, so their side is a replica written from each
vendor's documentation (cbf_tools/peers/phone_callers.py: it plays what it is sent at real time, answers marks once their
audio has played, empties its buffer on a clear, sends dtmf and hangs up; Asterisk's also XOFF/XON).

jambonz's streaming custom-TTS vendor API (``WS /v1/jambonz/tts``): no client of it installs from PyPI, so jambonz's
side is a replica written from its documentation (docs.jambonz.org, "Custom TTS providers", streaming WebSocket API):
a Bearer key on the upgrade, voice/language/sampleRate in the query, ``stream``/``flush``/``stop``/``keepalive``."""

from __future__ import annotations

import asyncio
import json
import time

import av
import httpx
import numpy as np
import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from streamdouble.protocol import StreamIdentity
from streamdouble.scenario import Dtmf, Hangup, Scenario, Wait, WaitFor
from streamdouble.session import Session as SimulatedCall
from streamdouble.session import SessionConfig, SessionResult
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from cbf_tools.peers.phone_callers import AsteriskChannel, connect_call
from engine.watermark import Watermarker
from gateway.app import create_app
from gateway.settings import GatewaySettings
from gateway.telephony import asterisk, endpoint, events, telnyx, twilio
from gateway.telephony.outbox import FRAME_S, LEAD_S
from tests.server import PHONE_KEY, next_event
from tests.test_watermark_delivered import check, mulaw_decode

KEY = PHONE_KEY  # phone_server's
GREETING = "Thanks for calling the gateway. Please hold while I find an agent for you."
LONG_TEXT = " ".join(["this sentence keeps the caller listening for a good while without a break"] * 6)


@pytest.fixture(scope="module")
def url(phone_server: str) -> str:
    return phone_server


def simulated(url: str, steps: list, **params: str) -> tuple[SimulatedCall, str]:
    """A call from streamdouble to ``/v1/twilio`` with ``params`` as its <Parameter>s; (the call, its callSid)."""
    identity = StreamIdentity()
    config = SessionConfig(custom_parameters={"key": KEY, **params}, response_timeout_s=30, quiet_period_s=1.5)
    call = SimulatedCall(url.replace("http://", "ws://") + "/v1/twilio", scenario=Scenario("test", steps),
                         config=config, identity=identity)
    return call, identity.call_sid


async def controller(url: str, call_sid: str, codec: str = "pcmu") -> ClientConnection:
    """The agent, attached by callSid (waiting for the call if its stream has not arrived yet)."""
    ws = await connect(url.replace("http://", "ws://") + f"/v1/stream?session={call_sid}&wait=20",
                       additional_headers={"Authorization": f"Bearer {KEY}"})
    ready = json.loads(await ws.recv())
    assert ready["type"] == "ready" and ready["session"] == call_sid and ready["codec"] == codec, ready
    return ws


def echoed_position(result: SessionResult, epoch: int, in_flight: int = 0) -> float:
    """Seconds of utterance ``epoch`` the simulator had echoed marks for (the names are ours: e{epoch}.{bytes});
    ``in_flight``: that many of the last echoed marks left out (sent, perhaps not yet read by the gateway)."""
    positions = sorted(int(name.split(".")[1]) for name in result.marks_echoed if name.startswith(f"e{epoch}."))
    return (positions[-1 - in_flight] if len(positions) > in_flight else 0) / twilio.SAMPLE_RATE


async def sessions(url: str) -> int:
    async with httpx.AsyncClient() as http:
        return (await http.get(url + "/health")).json()["sessions"]


async def no_sessions_left(url: str) -> None:
    deadline = time.monotonic() + 5
    while await sessions(url):
        assert time.monotonic() < deadline, "the call's session outlived its stream"
        await asyncio.sleep(0.05)


async def test_the_greeting_plays_marked_and_a_late_controller_speaks(url, watermarker: Watermarker):
    call, call_sid = simulated(url, [WaitFor("audio", 30), Wait(1.0), WaitFor("quiet", 30)],
                               text=GREETING)
    running = asyncio.create_task(call.run())
    await call._first_audio.wait()  # the greeting has begun: the controller comes late
    agent = await controller(url, call_sid)
    await agent.send(json.dumps({"type": "speak", "text": "An agent is here now."}))
    for text in (GREETING, "An agent is here now."):  # the greeting was under way: its events come first
        done, events = await next_event(agent, "done")
        assert done["heard_from"] == "marks" and abs(done["heard_s"] - done["audio_seconds"]) < 0.1, done
        assert done["heard_text"] == text
    ended, _ = await next_event(agent, "ended", timeout=15)  # the scenario ends: Twilio sends stop
    assert "stop" in ended["reason"]
    result = await running
    assert not result.violations and result.clears_received == 0
    assert result.time_to_first_audio_s is not None and result.time_to_first_audio_s < 5
    assert len(result.marks_echoed) >= result.audio_duration_s / FRAME_S - 2  # a mark every frame, echoed
    audio = mulaw_decode(result.audio_received)
    greeting = audio[: int(echoed_position(result, 1) * twilio.SAMPLE_RATE)]
    check(watermarker, "Twilio mu-law", GREETING, greeting, twilio.SAMPLE_RATE)
    await agent.close()
    await no_sessions_left(url)


async def test_barge_in_clears_at_once_and_says_what_the_marks_heard(url):
    call, call_sid = simulated(url, [WaitFor("clear", 40), Wait(0.5)])
    agent_ready = asyncio.create_task(controller(url, call_sid))  # attached before the stream arrives
    await asyncio.sleep(0.2)
    running = asyncio.create_task(call.run())
    agent = await agent_ready
    await agent.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
    await next_event(agent, "chunk")
    await asyncio.sleep(2.5)
    sent_by_then = len(call._audio_received) / twilio.SAMPLE_RATE
    echoed_by_then = echoed_position(call.result, 1)
    # the last mark echoed may still be on its way to the gateway when the agent's cancel (another socket) arrives
    surely_read = echoed_position(call.result, 1, in_flight=1)
    await agent.send(json.dumps({"type": "cancel"}))
    cancelled, _ = await next_event(agent, "cancelled")
    result = await running
    assert result.clears_received == 1 and not result.violations
    assert cancelled["heard_from"] == "marks"
    # What the marks had said by the cancel (one more may have come back meanwhile), to within a frame.
    assert surely_read - 1e-3 <= cancelled["heard_s"] <= echoed_position(result, 1) + 1e-3, cancelled
    assert cancelled["heard_s"] > 1.0 and cancelled["heard_text"]
    # Never much more than a second ahead of real time: what was sent, less what had played.
    assert sent_by_then - echoed_by_then <= LEAD_S + 2 * FRAME_S + 0.1
    assert result.audio_duration_s - cancelled["heard_s"] <= LEAD_S + 3 * FRAME_S
    await agent.close()
    await no_sessions_left(url)


async def test_dtmf_reaches_the_controller_and_a_hang_up_ends_the_call(url):
    call, call_sid = simulated(url, [WaitFor("audio", 30), Dtmf("5"), Wait(0.3), Hangup()])
    running = asyncio.create_task(call.run())
    agent = await controller(url, call_sid)
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}) as http:  # the agent's HTTP route
        reply = await http.post(f"{url}/v1/sessions/{call_sid}/speak", json={"text": LONG_TEXT})
    assert reply.status_code == 202 and reply.json()["session"] == call_sid, reply.text
    dtmf, _ = await next_event(agent, "dtmf")
    assert dtmf == {"type": "dtmf", "digit": "5"}
    cancelled, _ = await next_event(agent, "cancelled", timeout=10)  # the caller hung up mid-utterance
    assert cancelled["utterance"] and cancelled["heard_from"] == "marks"
    ended, _ = await next_event(agent, "ended", timeout=10)
    assert "dropped" in ended["reason"]
    await asyncio.wait_for(agent.wait_closed(), 5)
    await running
    await no_sessions_left(url)


async def test_a_wrong_or_missing_key_is_closed_before_any_audio(url):
    for params in ({"key": "wrong", "text": GREETING}, {"text": GREETING}):
        call, _ = simulated(url, [WaitFor("audio", 3)])
        call.config.custom_parameters.clear()
        call.config.custom_parameters.update(params)
        result = await call.run()
        assert result.closed_before_audio and result.closed_by == "agent" and not result.audio_received
    assert await sessions(url) == 0


# The refusals, on the app in process: they come before any engine work.

START = {"event": "start", "sequenceNumber": "1", "streamSid": "MZ1",
         "start": {"callSid": "CA1", "streamSid": "MZ1", "accountSid": "AC1", "tracks": ["inbound"],
                   "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
                   "customParameters": {"key": KEY}}}


@pytest.fixture
def app_client(monkeypatch):
    monkeypatch.setattr(endpoint, "START_TIMEOUT_S", 0.3)
    app = create_app(GatewaySettings(api_keys=(KEY,), twilio_auth_token="token-123", engine_urls=("ws://127.0.0.1:9",)))
    return TestClient(app)


def closed_with(client: TestClient, frames: list, headers: dict | None = None) -> int:
    with client.websocket_connect("/v1/twilio", headers=headers) as ws:
        for frame in frames:
            ws.send_text(frame if isinstance(frame, str) else json.dumps(frame))
        with pytest.raises(WebSocketDisconnect) as closed:
            while True:
                ws.receive_text()
    return closed.value.code


def test_refusals_before_any_audio(app_client: TestClient):
    signed = {"x-twilio-signature": twilio.signature("token-123", "wss://testserver/v1/twilio")}
    with pytest.raises(WebSocketDisconnect) as refused:  # no signature: the upgrade is refused
        with app_client.websocket_connect("/v1/twilio"):
            pass
    assert refused.value.code == 1008
    forged = {"x-twilio-signature": twilio.signature("another-token", "wss://testserver/v1/twilio")}
    with pytest.raises(WebSocketDisconnect):
        with app_client.websocket_connect("/v1/twilio", headers=forged):
            pass
    wrong_key = {**START, "start": {**START["start"], "customParameters": {"key": "nope"}}}
    assert closed_with(app_client, [{"event": "connected"}, wrong_key], signed) == endpoint.UNAUTHORIZED_CLOSE_CODE
    assert closed_with(app_client, [{"event": "connected"}], signed) == endpoint.BAD_FRAME_CLOSE_CODE  # no start
    assert closed_with(app_client, ["not json"], signed) == endpoint.BAD_FRAME_CLOSE_CODE
    assert closed_with(app_client, [{"event": "media", "media": {}}], signed) == endpoint.BAD_FRAME_CLOSE_CODE
    # A bad frame mid-call: 4400, not the stalled code (a regression: the cancelled watcher counted as a stall).
    assert closed_with(app_client, [START, "not json"], signed) == endpoint.BAD_FRAME_CLOSE_CODE
    assert closed_with(app_client, [START, {"event": "stop"}], signed) == 1000


def test_the_signature_is_twilios_hmac_of_the_url():
    # Twilio's documented algorithm: base64(HMAC-SHA1(auth token, the URL)); no form body on a WebSocket.
    sig = twilio.signature("12345", "wss://example.com/v1/twilio")
    assert twilio.signature_valid("12345", "ws://example.com/v1/twilio", sig)  # behind a TLS proxy
    assert twilio.signature_valid("12345", "ws://example.com:443/v1/twilio", sig)
    assert not twilio.signature_valid("12345", "ws://example.com/v1/other", sig)
    assert not twilio.signature_valid("54321", "wss://example.com/v1/twilio", sig)
    assert not twilio.signature_valid("12345", "wss://example.com/v1/twilio", None)


def test_frames_in():
    assert twilio.parse(json.dumps(START)) == events.Start("CA1", "MZ1", {"key": KEY})
    assert twilio.parse('{"event": "mark", "streamSid": "MZ1", "mark": {"name": "e1.800"}}') == \
        events.MarkPlayed("e1.800")
    assert twilio.parse('{"event": "dtmf", "dtmf": {"track": "inbound_track", "digit": "#"}}') == events.Dtmf("#")
    assert twilio.parse('{"event": "stop", "stop": {}}') == events.Stop()
    media = {"event": "media", "media": {"track": "inbound", "chunk": "2", "timestamp": "20", "payload": "/3/+"}}
    assert twilio.parse(json.dumps(media)) == events.CallerMedia(b"\xff\x7f\xfe", 20.0)
    assert twilio.parse('{"event": "media", "media": {"track": "outbound", "payload": "/3/+"}}') == \
        events.Ignored("media")  # a fork's other track is not the caller
    for undecodable in ('"not base64!"', "null", '"/3/"'):  # kept as empty audio: the call counts it as rejected
        assert twilio.parse('{"event": "media", "media": {"payload": %s, "timestamp": "x"}}' % undecodable) == \
            events.CallerMedia(b"", None)
    alaw = {**START, "start": {**START["start"], "mediaFormat": {"encoding": "audio/x-alaw", "sampleRate": 8000}}}
    for bad in ("[]", '{"event": 1}', b"\x00", "[" * 20000, '{"event": "mark", "mark": {"name": "\\ud800"}}', '{"event": "dtmf", "dtmf": {"digit": "55"}}', json.dumps(alaw),
                '{"event": "start", "start": {"streamSid": "MZ1"}}'):
        with pytest.raises(Exception) as refused:
            twilio.parse(bad)
        assert getattr(refused.value, "code", None) == "bad_message"


def test_telnyx_frames():
    start = {"event": "start", "stream_id": "S1", "start": {"call_control_id": "v3:abc", "custom_parameters": {"voice":
             "v"}, "media_format": {"encoding": "PCMA", "sample_rate": 8000, "channels": 1}}}
    assert telnyx.parse(json.dumps(start)) == events.Start("v3:abc", "S1", {"voice": "v"}, "alaw", "pcma")
    assert telnyx.parse('{"event": "dtmf", "payload": {"digit": "1"}}') == events.Dtmf("1")
    g722 = {**start, "start": {**start["start"], "media_format": {"encoding": "G722", "sample_rate": 16000}}}
    with pytest.raises(Exception, match="PCMU or PCMA"):
        telnyx.parse(json.dumps(g722))
    out = telnyx.Outbound("S1")
    assert json.loads(out.media(b"\xd5")) == {"event": "media", "media": {"payload": "1Q=="}}
    assert json.loads(out.clear()) == {"event": "clear"}


def test_asterisk_frames():
    start = {"event": "MEDIA_START", "connection_id": "c1", "channel_id": "1761245643.1", "format": "ulaw",
             "optimal_frame_size": 160, "ptime": 20, "channel_variables": {"CBF_VOICE": "v", "OTHER": "x"}}
    assert asterisk.parse(json.dumps(start)) == events.Start("1761245643.1", "c1", {"voice": "v"}, "mulaw", "ulaw",
                                                             8000, 800)
    assert asterisk.parse(b"\x00" * 160) == events.CallerMedia(b"\x00" * 160)  # the caller, without timestamps
    assert asterisk.parse('{"event": "MEDIA_XOFF"}') == events.Pause(True)
    for bad in ("MEDIA_START connection_id:c1 format:ulaw", json.dumps({**start, "format": "opus"}),
                json.dumps({**start, "format": {"a": 1}}), json.dumps({**start, "ptime": True}),
                json.dumps({**start, "optimal_frame_size": "160"})):
        with pytest.raises(Exception) as refused:
            asterisk.parse(bad)
        assert getattr(refused.value, "code", None) == "bad_message"
    out = asterisk.Outbound("c1")
    assert out.media(b"\x01") == b"\x01" and json.loads(out.clear()) == {"command": "FLUSH_MEDIA"}
    assert json.loads(out.mark("e1.8")) == {"command": "MARK_MEDIA", "correlation_id": "e1.8"}


def test_frames_out():
    out = twilio.Outbound("MZ9")
    media = json.loads(out.media(b"\xff\x7f"))
    assert media == {"event": "media", "streamSid": "MZ9", "media": {"payload": "/38="}}
    assert json.loads(out.mark("e1.800")) == {"event": "mark", "streamSid": "MZ9", "mark": {"name": "e1.800"}}
    assert json.loads(out.clear()) == {"event": "clear", "streamSid": "MZ9"}


# Telnyx: a replica of Telnyx's side, from its documentation.

def alaw_decode(data: bytes) -> np.ndarray:
    decoder = av.CodecContext.create("pcm_alaw", "r")
    decoder.sample_rate, decoder.layout = 8000, "mono"
    return np.concatenate([f.to_ndarray().reshape(-1) for f in decoder.decode(av.Packet(data))])


async def test_a_telnyx_pcma_call_greets_takes_dtmf_clears_on_barge_in_and_stops(url):
    call_id = "v3:MdI91X4lWFEs7IgbBEOT9M4AigoY08M0WWZFISt1Yw2axZ_IiE4pqg"
    caller = await connect_call(url, "telnyx", call_id, key=KEY,
                                text="Hello from the gateway, you are through to the booking line.")
    agent = await controller(url, call_id, codec="pcma")
    done, _ = await next_event(agent, "done")  # the greeting, heard to its end by the echoed marks
    assert done["heard_from"] == "marks" and abs(done["heard_s"] - done["audio_seconds"]) < 0.1, done
    assert np.abs(alaw_decode(bytes(caller.audio))).max() > 3000  # speech, in A-law
    await caller.dtmf("7")
    assert (await next_event(agent, "dtmf"))[0]["digit"] == "7"
    await agent.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
    await next_event(agent, "chunk")
    first_chunk = time.monotonic()
    await asyncio.sleep(1.5)
    playing = time.monotonic() - first_chunk  # 1.5 s, or longer on a busy machine: no more can have been heard
    await agent.send(json.dumps({"type": "cancel"}))
    cancelled, _ = await next_event(agent, "cancelled")
    assert cancelled["heard_from"] == "marks" and 0.5 < cancelled["heard_s"] <= playing + 0.1, (cancelled, playing)
    await caller.cleared()
    await caller.hang_up()  # stop
    ended, _ = await next_event(agent, "ended", timeout=10)
    assert "stop" in ended["reason"]
    await no_sessions_left(url)


# Asterisk: a replica of chan_websocket, from its documentation.

async def test_an_asterisk_channel_greets_honours_xoff_flushes_on_barge_in_and_hangs_up(url):
    channel_id = "pbx1-1761245643.1"
    channel = await connect_call(url, "asterisk", channel_id, key=KEY,  # CBF_KEY, CBF_TEXT channel variables
                                 text="You are through to the gateway on an Asterisk channel.")
    assert isinstance(channel, AsteriskChannel) and channel.ws.subprotocol == "media"
    agent = await controller(url, channel_id, codec="slin16")
    done, _ = await next_event(agent, "done")
    assert done["heard_from"] == "marks" and abs(done["heard_s"] - done["audio_seconds"]) < 0.1, done
    assert channel.frames and all(len(f) % channel.FRAME == 0 and len(f) <= 65500 for f in channel.frames)
    assert np.abs(np.frombuffer(bytes(channel.audio), "<i2")).max() > 3000  # speech, 16-bit linear at 16 kHz
    await channel.dtmf("#")
    assert (await next_event(agent, "dtmf"))[0]["digit"] == "#"
    await channel.ws.send(channel.flow(off=True))
    await agent.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
    await next_event(agent, "chunk")
    frames_then = len(channel.frames)
    await asyncio.sleep(1.0)
    assert len(channel.frames) == frames_then  # nothing sent while Asterisk's queue is full
    await channel.ws.send(channel.flow(off=False))
    flowing = time.monotonic()
    while len(channel.frames) == frames_then:  # sending again once the queue has room
        assert time.monotonic() < flowing + 10, "nothing sent after Asterisk's queue drained"
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.5)
    playing = time.monotonic() - flowing  # about 1.5 s, longer on a busy machine: no more can have been heard
    await agent.send(json.dumps({"type": "cancel"}))
    cancelled, _ = await next_event(agent, "cancelled")
    assert cancelled["heard_from"] == "marks" and 0.5 < cancelled["heard_s"] <= playing + 0.1, (cancelled, playing)
    await channel.cleared()
    await channel.hang_up()  # Asterisk closes the socket
    ended, _ = await next_event(agent, "ended", timeout=10)
    assert "dropped" in ended["reason"]
    await no_sessions_left(url)


# jambonz: a replica of jambonz's side, from its documentation.

async def jambonz(url: str, rate: int = 8000, key: str = KEY) -> ClientConnection:
    ws = await connect(url.replace("http://", "ws://") + f"/v1/jambonz/tts?voice=default&language=en-US&sampleRate={rate}",
                       additional_headers={"Authorization": f"Bearer {key}"})
    assert json.loads(await ws.recv()) == {"type": "connect", "data": {"sample_rate": rate, "base64_encoding": False}}
    return ws


async def jambonz_utterances(url: str, outcome: str = "done") -> float:
    """The gateway's count of jambonz utterances that ended so (``cbf_utterances_total``): ``done`` is counted once the
    engine's last chunk has been sent on the socket, ``cancelled`` once a ``stop`` was taken (nothing is sent after)."""
    async with httpx.AsyncClient() as http:
        reply = await http.get(url + "/metrics", headers={"Authorization": f"Bearer {KEY}"})
    assert reply.status_code == 200, reply.text
    text = reply.text
    sample = f'cbf_utterances_total{{outcome="{outcome}",transport="jambonz"}} '
    return sum(float(line.removeprefix(sample)) for line in text.splitlines() if line.startswith(sample))


async def pcm_until(url: str, ws: ClientConnection, outcome: str, before: float, timeout: float = 30) -> bytes:
    """The binary audio sent on ``ws`` until the gateway counts one more jambonz utterance ended as ``outcome`` than
    ``before``. jambonz's protocol has no end-of-audio message (the gateway sends it nothing but ``connect``, PCM and
    errors), so the end is the gateway's own count, and then a frame it refuses fences the socket: its ``error`` comes
    after every frame sent before it. Text frames other than that ``error`` must not come."""
    audio = bytearray()

    async def read_to_the_fence() -> None:
        while isinstance(frame := await ws.recv(), bytes):
            audio.extend(frame)
        assert json.loads(frame)["type"] == "error", frame

    reading = asyncio.create_task(read_to_the_fence())
    try:
        deadline = time.monotonic() + timeout
        while await jambonz_utterances(url, outcome) <= before:
            assert not reading.done(), reading.result()  # a text frame came, or the socket closed
            assert time.monotonic() < deadline, f"no jambonz utterance {outcome} within {timeout} s"
            await asyncio.sleep(0.05)
        await ws.send("not json")
        await asyncio.wait_for(reading, timeout)
    finally:
        reading.cancel()
    return bytes(audio)


async def test_jambonz_streams_text_in_and_marked_pcm_out(url, watermarker: Watermarker):
    ws = await jambonz(url)
    done = await jambonz_utterances(url)
    for piece in ("Thanks for calling. ", "Your table for four is booked ", "for Friday at noon, see you then."):
        await ws.send(json.dumps({"type": "stream", "text": piece}))
        await ws.send(json.dumps({"type": "keepalive"}))
    await ws.send(json.dumps({"type": "flush"}))
    audio = np.frombuffer(await pcm_until(url, ws, "done", done), "<i2").astype(np.float32) / 32768
    check(watermarker, "jambonz pcm 8000", "Thanks for calling", audio, 8000)
    await ws.send("not json")
    assert json.loads(await ws.recv())["type"] == "error"  # refused, and the socket goes on
    await ws.send(json.dumps({"type": "stream", "text": "Still here."}))
    await ws.send(json.dumps({"type": "flush"}))
    assert len(await pcm_until(url, ws, "done", done + 1)) > 0.3 * 8000 * 2
    await ws.close()
    await no_sessions_left(url)


async def test_jambonz_stop_ends_the_utterance_at_once(url):
    ws = await jambonz(url, rate=16000)
    done, cancelled = await jambonz_utterances(url), await jambonz_utterances(url, "cancelled")
    await ws.send(json.dumps({"type": "stream", "text": LONG_TEXT}))
    await ws.send(json.dumps({"type": "flush"}))
    first = await asyncio.wait_for(ws.recv(), 30)
    assert isinstance(first, bytes)
    await ws.send(json.dumps({"type": "stop"}))
    sent = len(first) + len(await pcm_until(url, ws, "cancelled", cancelled))  # all it sent before taking the stop
    with pytest.raises(TimeoutError):  # and nothing after it
        await asyncio.wait_for(ws.recv(), 1.0)
    print(f"sent before the stop: {sent / (16000 * 2):.2f} s")
    assert sent / (16000 * 2) < 10  # the text lasts ~27 s: it stopped part-way, not at its end
    assert await jambonz_utterances(url) == done  # ...and was not counted as finished
    await ws.send(json.dumps({"type": "stream", "text": "A new answer."}))  # the socket serves the next one
    await ws.send(json.dumps({"type": "flush"}))
    assert len(await pcm_until(url, ws, "done", done)) > 0.3 * 16000 * 2
    await ws.close()


async def test_jambonz_without_the_key_is_refused(url):
    for key in ("wrong", ""):
        with pytest.raises(InvalidStatus) as refused:
            await jambonz(url, key=key)
        assert refused.value.response.status_code == 403
