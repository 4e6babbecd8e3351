"""Phone bridges: WHEP signalling, and an agent driving the call from its own connection (``WS /v1/stream?session=``,
``POST /v1/sessions/{id}/speak|cancel``), against a real gateway (eSpeak) with real aiortc peers offering what a
bridge offers: PCMU or PCMA only, telephone-event, 20 ms ptime, no data channel."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from websockets.asyncio.client import connect

from cbf_tools.peers import rtc_listener
from cbf_tools.peers.rtc_listener import Listener
from gateway.app import create_app
from gateway.settings import GatewaySettings
from tests.rtc_helpers import bridge_offer, loopback_only, rsa_peer_connection
from tests.server import next_event, running_server, serving

LONG_TEXT = " ".join(["this sentence keeps the caller listening for a good while without a break"] * 6)


@pytest.fixture(scope="module")
def url():
    with running_server("--max-text-chars", "1000") as base:
        yield base


async def bridge(url: str, codec: str = "pcmu", path: str = "/v1/whep", sendrecv: bool = False,
                 **headers: str) -> tuple[Listener, str]:
    """A bridge's call over WHEP: returns the listener (connected) and the session's Location. ``sendrecv``: offered
    as a bridge that would send the caller's audio too."""
    listener = Listener.create(codecs=[codec], datachannel=False)
    offer = bridge_offer(await listener.offer())
    if sendrecv:
        offer = offer.replace("a=recvonly", "a=sendrecv")
    assert "telephone-event/8000" in offer and "a=ptime:20" in offer
    async with httpx.AsyncClient() as http:
        reply = await http.post(url + path, content=offer, headers={"content-type": "application/sdp", **headers})
    assert reply.status_code == 201, reply.text
    assert reply.headers["content-type"].startswith("application/sdp")
    location = reply.headers["location"]
    assert location.startswith("/v1/whep/sessions/")
    await listener.accept(reply.text)
    await listener.wait_for(lambda: len(listener.frames) >= 10, timeout=15)  # the media is up: silence flows
    return listener, location


def ws_url(url: str, session: str) -> str:
    return url.replace("http://", "ws://") + f"/v1/stream?session={session}"


async def fell_silent(listener: Listener) -> None:
    """Until a second of silence (longer than any pause inside the speech)."""
    await listener.wait_for(lambda: len(listener.frames) >= 50 and
                            not [f for f in listener.frames[-50:] if f.rms > rtc_listener.SPEECH_RMS], timeout=15)


async def sessions(url: str) -> int:
    async with httpx.AsyncClient() as http:
        return (await http.get(url + "/health")).json()["sessions"]


async def test_a_late_controller_speaks_into_a_pcmu_bridge_call(url):
    listener, location = await bridge(url)
    session = location.rsplit("/", 1)[1]
    try:
        assert not listener.loud()  # silence until someone speaks
        assert {(f.rate, f.samples) for f in listener.frames} == {(8000, 160)}  # 20 ms G.711 frames
        async with connect(ws_url(url, session)) as ws:
            ready = json.loads(await ws.recv())
            assert ready["type"] == "ready" and ready["session"] == session and ready["codec"] == "pcmu"
            await ws.send(json.dumps({"type": "speak", "text": "Hello caller, this is your agent speaking."}))
            done, events = await next_event(ws, "done")
            chunks = [e for e in events if e["type"] == "chunk"]
            assert chunks and len(chunks) == done["chunks"] and done["underruns"] == 0
            assert {c["utterance"] for c in chunks} == {done["utterance"]}
        loud = listener.loud()
        assert len(loud) * 0.02 > 0.5 * done["audio_seconds"]
        assert {(f.rate, f.samples) for f in listener.frames} == {(8000, 160)}
    finally:
        await listener.close()


async def test_an_undriven_call_plays_silence_and_ends_with_its_peer(url):
    listener, location = await bridge(url, sendrecv=True)
    try:
        await listener.wait_for(lambda: len(listener.frames) >= 50, timeout=15)
        assert not listener.loud() and {(f.rate, f.samples) for f in listener.frames} == {(8000, 160)}
    finally:
        await listener.close()  # no DELETE: the peer just goes
    deadline = time.monotonic() + 5
    while await sessions(url):
        assert time.monotonic() < deadline, "the session outlived its peer"
        await asyncio.sleep(0.1)


async def test_pcma_bridge_and_a_voice_in_the_path(url):
    listener, location = await bridge(url, codec="pcma", path="/v1/whep/default")
    try:
        async with httpx.AsyncClient() as http:
            reply = await http.post(url + location.replace("/v1/whep/sessions/", "/v1/sessions/") + "/speak",
                                    json={"text": "Spoken through HTTP."})
            assert reply.status_code == 202 and reply.json()["session"] == location.rsplit("/", 1)[1]
        await listener.wait_for(lambda: len(listener.loud()) >= 10, timeout=30)
        assert {f.rate for f in listener.frames} == {8000}
    finally:
        await listener.close()


async def test_controller_leaving_stops_speech_and_the_call_keeps_its_silence(url):
    listener, location = await bridge(url)
    session = location.rsplit("/", 1)[1]
    try:
        async with connect(ws_url(url, session)) as ws:
            await ws.recv()  # ready
            await ws.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
            await listener.wait_for(lambda: len(listener.loud()) >= 25, timeout=30)
        await fell_silent(listener)  # speech stopped...
        frames_then = len(listener.frames)
        # ...and the call goes on: 2 s of it (100 frames, 50 a second) decoded, however long that takes
        await listener.wait_for(lambda: len(listener.frames) >= frames_then + 100, timeout=30)
        assert not listener.loud(since=listener.frames[frames_then - 1].at)  # ...in silence (the text lasts ~30 s)
        async with httpx.AsyncClient() as http:
            assert (await http.delete(url + location)).status_code == 200  # the session was still there
    finally:
        await listener.close()


async def test_the_bridge_hanging_up_ends_the_controllers_utterances(url):
    listener, location = await bridge(url)
    async with connect(ws_url(url, location.rsplit("/", 1)[1])) as ws:
        await ws.recv()
        await ws.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
        chunk, _ = await next_event(ws, "chunk")
        await listener.close()  # the caller hung up
        cancelled, _ = await next_event(ws, "cancelled", timeout=10)
        assert cancelled["utterance"] == chunk["utterance"]
        ended, _ = await next_event(ws, "ended", timeout=10)
        assert "peer connection" in ended["reason"]
        await asyncio.wait_for(ws.wait_closed(), 5)
        assert ws.close_code == 1000
    deadline = time.monotonic() + 5
    while await sessions(url):
        assert time.monotonic() < deadline, "the session outlived its peer"
        await asyncio.sleep(0.1)


async def test_a_second_controller_takes_over(url):
    listener, location = await bridge(url)
    session = location.rsplit("/", 1)[1]
    try:
        async with connect(ws_url(url, session)) as first, connect(ws_url(url, session)) as second:
            await first.recv()
            ended, _ = await next_event(first, "ended", timeout=10)
            assert "another controller" in ended["reason"]
            await asyncio.wait_for(first.wait_closed(), 5)
            assert first.close_code == 4409
            assert json.loads(await second.recv())["type"] == "ready"
            await second.send(json.dumps({"type": "speak", "text": "The second agent has the call."}))
            await next_event(second, "done")
        assert listener.loud()
    finally:
        await listener.close()


async def test_http_cancel_and_refusals(url):
    listener, location = await bridge(url)
    base = url + location.replace("/v1/whep/sessions/", "/v1/sessions/")
    try:
        async with httpx.AsyncClient() as http:
            assert (await http.post(base + "/speak", json={"text": LONG_TEXT})).status_code == 202
            await listener.wait_for(lambda: len(listener.loud()) >= 10, timeout=30)
            reply = await http.post(base + "/cancel")
            assert reply.status_code == 200 and len(reply.json()["cancelled"]) == 1
            await fell_silent(listener)
            quiet_since = listener.frames[-1].at
            for body, status, code in (({"text": "x" * 1001}, 413, "text_too_long"),
                                       ({"text": "  "}, 400, "bad_message"),
                                       ({"text": 5}, 400, "bad_request")):
                reply = await http.post(base + "/speak", json=body)
                assert (reply.status_code, reply.json()["error"]["code"]) == (status, code), reply.text
            for path in ("/v1/sessions/nosuchsession/speak", "/v1/sessions/nosuchsession/cancel",
                         "/v1/sessions/%C3%A9t%C3%A9/speak"):
                reply = await http.post(url + path, json={"text": "Hi"})
                assert reply.status_code == 404 and reply.json()["error"]["code"] == "unknown_session"
            await asyncio.sleep(1.0)
            assert not listener.loud(since=quiet_since)  # the cancel held (the text lasts ~30 s)
            assert (await http.get(url + "/health")).status_code == 200
    finally:
        await listener.close()


async def test_delete_ends_the_session(url):
    listener, location = await bridge(url)
    try:
        async with connect(ws_url(url, location.rsplit("/", 1)[1])) as ws:
            await ws.recv()
            async with httpx.AsyncClient() as http:
                assert (await http.delete(url + location)).status_code == 200
                assert (await http.delete(url + location)).status_code == 404
            ended, _ = await next_event(ws, "ended", timeout=10)
            assert "DELETE" in ended["reason"]
    finally:
        await listener.close()


async def test_unknown_session_on_the_socket(url):
    async with connect(ws_url(url, "0" * 32)) as ws:
        error = json.loads(await ws.recv())
        assert error["type"] == "error" and error["code"] == "unknown_session"
        await asyncio.wait_for(ws.wait_closed(), 5)
        assert ws.close_code == 4404


async def test_an_rsa_bridge_hears_speech(url, monkeypatch):
    """A peer whose DTLS certificate is RSA (as GStreamer's webrtcbin's is): the gateway, the DTLS client, offers
    ECDHE-RSA suites too (gateway/webrtc/dtls.py)."""
    monkeypatch.setattr(rtc_listener, "RTCPeerConnection", rsa_peer_connection)
    listener, location = await bridge(url)
    try:
        async with httpx.AsyncClient() as http:
            reply = await http.post(url + location.replace("/v1/whep/sessions/", "/v1/sessions/") + "/speak",
                                    json={"text": "Your certificate is RSA and you can hear me."})
            assert reply.status_code == 202
        await listener.wait_for(lambda: len(listener.loud()) >= 10, timeout=30)
    finally:
        await listener.close()


# In-process: the endpoints' HTTP surface on an app whose engine is never started (offers do not need it).

@pytest.fixture
def app():
    return create_app(GatewaySettings(engine_urls=("ws://127.0.0.1:9/unused",), api_keys=("sesame",)))


async def test_whep_http_surface(app, monkeypatch):
    loopback_only(monkeypatch)
    listener = Listener.create(codecs=["pcmu"], datachannel=False)
    key = {"authorization": "Bearer sesame"}
    sdp = {"content-type": "application/sdp"}
    try:
        offer = await listener.offer()
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw") as http:
            assert (await http.post("/v1/whep", content=offer, headers=sdp)).status_code == 401
            reply = await http.post("/v1/whep", content=offer, headers={**key, "content-type": "application/json"})
            assert reply.status_code == 415 and reply.json()["error"]["code"] == "unsupported_media_type"
            reply = await http.post("/v1/whep", content="v=0\r\nnonsense", headers={**key, **sdp})
            assert reply.status_code == 400 and reply.json()["error"]["code"] == "bad_sdp"
            reply = await http.post("/v1/whep?codec=g729", content=offer, headers={**key, **sdp})
            assert reply.status_code == 400 and reply.json()["error"]["code"] == "bad_request"
            reply = await http.post("/v1/whep", content=offer, headers={**key, **sdp})
            assert reply.status_code == 201
            location = reply.headers["location"]
            assert len(location.rsplit("/", 1)[1]) == 32  # 128-bit hex ids: not guessable
            reply = await http.patch(location, content="a=end-of-candidates", headers={**key, "content-type":
                                                                                    "application/trickle-ice-sdpfrag"})
            assert reply.status_code == 405 and "DELETE" in reply.headers["allow"]
            options = await http.options("/v1/whep")
            assert options.status_code == 204 and options.headers["accept-post"] == "application/sdp"
            preflight = await http.options("/v1/whep", headers={"origin": "https://agent.example",
                                                                "access-control-request-method": "POST",
                                                                "access-control-request-headers": "content-type"})
            assert preflight.status_code == 200
            cors = await http.post("/v1/whep", content="v=0", headers={**key, **sdp, "origin": "https://a.example"})
            assert "location" in cors.headers["access-control-expose-headers"].lower()
            assert (await http.delete(location)).status_code == 401
            assert (await http.delete(location, headers=key)).status_code == 200
            assert len(app.state.gateway.sessions) == 0
    finally:
        await listener.close()


async def test_the_control_socket_needs_a_key(app):
    with serving(app) as base:
        async with connect(ws_url(base, "0" * 32)) as ws:
            assert json.loads(await ws.recv())["code"] == "unauthorized"
            await asyncio.wait_for(ws.wait_closed(), 5)
            assert ws.close_code == 4401
        async with connect(ws_url(base, "0" * 32), additional_headers={"authorization": "Bearer sesame"}) as ws:
            assert json.loads(await ws.recv())["code"] == "unknown_session"


async def test_a_controller_that_reads_nothing_never_holds_up_the_call():
    """Events are queued for a controller, never awaited by the session: past the cap it is let go."""
    from gateway.webrtc.control import MAX_QUEUED_EVENTS, SocketController

    class NotReading:  # a socket whose sends never complete (a client that stopped reading)
        async def send_json(self, event: dict) -> None:
            await asyncio.Event().wait()

        async def close(self, code: int, reason: str) -> None:
            raise AssertionError("unreachable: the send before it never completes")

    controller = SocketController(NotReading())
    for seq in range(MAX_QUEUED_EVENTS + 10):
        controller.send({"type": "chunk", "seq": seq})  # returns at once, every time
    assert controller._ended
    await asyncio.wait_for(controller.stop(), 5)
