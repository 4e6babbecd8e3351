"""FreeSWITCH mod_audio_stream (``WS /v1/freeswitch?call=``) against one real gateway (eSpeak): calls from a replica of
the module's side (cbf_tools/peers/phone_callers.py ``FreeSwitchStream``, written from mod_audio_stream's README: no
simulator of it ships), driven by an agent attached as a controller by the call's id, exactly as a Twilio call is."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid

import numpy as np
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from cbf_tools.bench import caller_voices as voices
from cbf_tools.peers.phone_callers import FreeSwitchStream, connect_call
from engine.protocol import ProtocolError
from engine.watermark import Watermarker
from gateway.telephony import endpoint, events, freeswitch
from tests.server import next_event
from tests.test_telephony import KEY, LONG_TEXT, controller, no_sessions_left
from tests.test_watermark_delivered import check

TEXT = "Thanks for calling. Your table for four is booked for Friday at noon, see you then."


@pytest.fixture(scope="module")
def url(phone_server: str) -> str:
    return phone_server


def test_the_call_comes_from_the_url():
    assert freeswitch.opening({"call": "c1", "rate": "16k", "key": "k", "voice": "v", "other": "x"}) == events.Start(
        "c1", "16000", {"key": "k", "voice": "v"}, "pcm", "slin16", 16000)
    assert freeswitch.opening({"call": "c1", "api_key": "k"}).parameters == {"key": "k"}
    assert freeswitch.opening({"call": "c1"}).rate == 8000
    for query in ({}, {"call": ""}, {"call": "c1", "rate": "44k"}, {"call": "x" * 129}, {"call": "a\nb"}):
        with pytest.raises(ProtocolError):
            freeswitch.opening(query)
    assert freeswitch.parse(b"\x00\x01") == events.CallerMedia(b"\x00\x01")
    assert freeswitch.parse('{"some": "metadata"}') == events.Ignored("metadata")
    out = freeswitch.Outbound("8000")
    assert json.loads(out.media(b"\x01\x00")) == {"type": "streamAudio", "data": {
        "audioDataType": "raw", "sampleRate": 8000, "audioData": "AQA="}}
    assert out.mark("e1.2") is None and out.clear() is None


async def test_a_call_is_spoken_to_in_short_paced_pieces_watermarked(url, watermarker: Watermarker):
    call_id = str(uuid.uuid4())
    stream = await connect_call(url, "freeswitch16", call_id, key=KEY)
    agent = await controller(url, call_id, codec="slin16")
    spoke = time.monotonic()
    await agent.send(json.dumps({"type": "speak", "text": TEXT}))
    done, _ = await next_event(agent, "done", timeout=30)
    print(f"\nfirst audio at FreeSWITCH {1000 * (stream.arrived[0] - spoke):.0f} ms after speak")
    assert done["heard_from"] == "clock" and abs(done["heard_s"] - done["audio_seconds"]) < 0.05, done
    assert all(len(piece) <= 3200 for piece in stream.frames)  # 100 ms pieces at most
    ahead = max(sum(len(f) for f in stream.frames[:i]) / 32000 - (at - stream.arrived[0])
                for i, at in enumerate(stream.arrived))
    assert ahead <= freeswitch.Outbound.lead_s + 0.05, ahead  # paced: never much more than the lead ahead
    audio = np.frombuffer(bytes(stream.audio), "<i2").astype(np.float32) / 32768
    check(watermarker, "FreeSWITCH L16 16 kHz", TEXT, audio, 16000)
    await stream.hang_up()
    ended, _ = await next_event(agent, "ended", timeout=10)
    assert "dropped" in ended["reason"]
    await agent.close()
    await no_sessions_left(url)


async def test_the_callers_audio_reaches_the_agent_and_talking_over_it_stops_it(url):
    call_id = str(uuid.uuid4())
    stream = await connect_call(url, "freeswitch", call_id, key=KEY, text=LONG_TEXT)  # a greeting, at 8 kHz
    agent = await controller(url, call_id, codec="slin")
    await agent.send(json.dumps({"type": "listen"}))
    await next_event(agent, "caller_audio_start")  # (after the greeting's events so far)
    stream.voice = lambda at: b"\x03\x04" * 160
    heard = b""
    while b"\x03\x04" * 160 not in heard:
        message = json.loads(await asyncio.wait_for(agent.recv(), 10))
        if message["type"] == "caller_audio":
            heard += base64.b64decode(message["audio"])
    stream.voice = lambda at: None
    await agent.send(json.dumps({"type": "listen", "format": "off"}))
    while not stream.arrived or time.monotonic() - stream.arrived[0] < 1.5:
        await asyncio.sleep(0.02)
    speech = voices.Speech(voices.wire_frames(voices.clip_pcm(8000), "slin"), time.monotonic())
    stream.voice = speech
    seen = (await next_event(agent, "interrupted", timeout=15))[1]
    (cut,) = seen[-1]["utterances"]
    assert cut["heard_from"] == "clock" and cut["heard_s"] > 1.0, cut
    await asyncio.sleep(0.3)
    assert speech.onset is not None
    voiced = [at for at, f in zip(stream.arrived, stream.frames) if voices.dbfs(np.frombuffer(f, "<i2")) > -40]
    stop_ms = 1000 * (voiced[-1] - speech.onset)
    playing_ms = 1000 * (stream._plays_until - speech.onset)  # what was sent had played by then
    print(f"\nlast voiced piece sent {stop_ms:.0f} ms after the onset; the caller hears it until {playing_ms:.0f} ms")
    # Stopped where it says: the caller was sent no more of the utterance than had played by the gateway's clock
    # when it stopped (counted in whole pieces of 100 ms), the piece playing and its lead (how soon after the onset is
    # bench barge-in's figure: a loaded machine delays what a test reads, not what the gateway sent).
    sent_s = voices.voiced_span_s(stream.frames, 8000)
    assert sent_s <= cut["heard_s"] + 0.1 + freeswitch.Outbound.lead_s + 0.1 + 0.02, (sent_s, cut)
    await stream.hang_up()
    await agent.close()
    await no_sessions_left(url)


async def closed_code(path: str, url: str) -> int | None:
    """The close code of a mod_audio_stream connection to ``path``, before any audio (raises if audio came)."""
    try:
        async with connect(url.replace("http://", "ws://") + path) as ws:
            await ws.send(bytes(320))
            frame = await asyncio.wait_for(ws.recv(), 10)
            raise AssertionError(f"sent {frame[:100]!r} to a refused stream")
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None


async def test_refused_without_the_key_a_call_or_a_known_rate_and_a_live_call_id(url):
    call_id = str(uuid.uuid4())
    assert await closed_code(f"/v1/freeswitch?call={call_id}", url) == endpoint.UNAUTHORIZED_CLOSE_CODE
    assert await closed_code(f"/v1/freeswitch?call={call_id}&key=wrong", url) == endpoint.UNAUTHORIZED_CLOSE_CODE
    assert await closed_code(f"/v1/freeswitch?key={KEY}", url) == endpoint.BAD_FRAME_CLOSE_CODE
    assert await closed_code(f"/v1/freeswitch?call={call_id}&rate=11025&key={KEY}", url) == \
        endpoint.BAD_FRAME_CLOSE_CODE
    live = await connect_call(url, "freeswitch", call_id, key=KEY)
    assert await closed_code(f"/v1/freeswitch?call={call_id}&key={KEY}", url) == 4409  # reused at once
    agent = await controller(url, call_id, codec="slin")
    await agent.send(json.dumps({"type": "speak", "text": "Still with you."}))
    await next_event(agent, "done", timeout=20)
    assert live.audio
    await live.ws.send(b"\x01")  # an odd-sized frame: not audio, counted and dropped; the call goes on
    await live.ws.send("metadata as text")
    await agent.send(json.dumps({"type": "speak", "text": "Still here."}))
    await next_event(agent, "done", timeout=20)
    await live.hang_up()
    await agent.close()
    await no_sessions_left(url)


def test_the_key_in_the_url_is_not_logged():
    from gateway.guard.operator_safety import RedactKeys
    import logging

    record = logging.LogRecord("uvicorn.error", logging.INFO, "", 0, '%s - "WebSocket %s" [accepted]',
                               ("127.0.0.1", "/v1/freeswitch?call=c1&key=s3cret&rate=8k"), None)
    RedactKeys().filter(record)
    assert "s3cret" not in record.getMessage() and "call=c1" in record.getMessage()
    assert FreeSwitchStream.target("c1", {"key": "k"}) == "/v1/freeswitch?call=c1&rate=8k&key=k"
