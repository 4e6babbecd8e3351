"""POST /v1/webrtc/offer against a real gateway (eSpeak engine) with a real aiortc listener, plus in-process checks
of the endpoint's error paths."""

import asyncio
import time

import httpx
import pytest

from gateway.app import create_app
from gateway.settings import GatewaySettings
from gateway.webrtc import signalling
from cbf_tools.peers.rtc_listener import SPEECH_RMS, Listener
from tests.rtc_helpers import connect, frames_later, loopback_only
from server import running_server

LONG_TEXT = " ".join(["this sentence keeps the speaker busy for a good while without stopping"] * 6)


@pytest.fixture(scope="module")
def url(plain_server: str) -> str:
    return plain_server


def send(listener: Listener, message: str) -> float:
    listener.channel.send(message)
    return time.time()


def event(listener: Listener, kind: str) -> dict | None:
    return next((e for e in listener.events if e["type"] == kind), None)


def longest_silence_in_speech(listener: Listener) -> int:
    frames = listener.frames
    loud = [i for i, f in enumerate(frames) if f.rms > SPEECH_RMS]
    longest = run = 0
    for f in frames[loud[0]:loud[-1] + 1]:
        run = run + 1 if f.rms <= SPEECH_RMS else 0
        longest = max(longest, run)
    return longest


async def test_speak_over_data_channel(url):
    listener, answer = await connect(url)
    try:
        assert answer["codec"] == "opus" and answer["type"] == "answer"
        send(listener, '{"type": "speak", "text": "Hello there, this is the gateway speaking to you now."}')
        await listener.wait_for(lambda: event(listener, "done") is not None, timeout=30)
        done = event(listener, "done")
        assert done["underruns"] == 0
        assert [e["type"] for e in listener.events].count("chunk") == done["chunks"]
        loud = listener.loud()
        assert len(loud) * 0.02 > 0.5 * done["audio_seconds"]
        assert loud[0].rate == 48000
        # No stutter: the longest quiet stretch inside the speech is a pause between words, not a gap.
        assert longest_silence_in_speech(listener) <= 20
    finally:
        await listener.close()


async def test_pcmu_when_offered_only(url):
    listener, answer = await connect(url, offer_codecs=["pcmu"])
    try:
        assert answer["codec"] == "pcmu"
        send(listener, '{"type": "speak", "text": "Phone bridge."}')
        await listener.wait_for(lambda: event(listener, "done") is not None, timeout=30)
        assert listener.loud() and listener.loud()[0].rate == 8000
    finally:
        await listener.close()


async def test_cancel_stops_audio_fast(url):
    listener, _ = await connect(url)
    try:
        send(listener, '{"type": "speak", "text": "%s"}' % LONG_TEXT)
        await listener.wait_for(lambda: len(listener.loud()) >= 25, timeout=30)
        sent = send(listener, '{"type": "cancel"}')
        await listener.wait_for(lambda: event(listener, "cancelled") is not None)
        await frames_later(listener)  # frames still in flight arrive
        last_loud = listener.loud()[-1].at
        print(f"cancel -> last loud decoded frame: {1000 * (last_loud - sent):.1f} ms")
        assert last_loud - sent < 0.100
        assert event(listener, "done") is None
    finally:
        await listener.close()


async def test_cancel_says_what_was_heard_from_the_frames_the_track_sent(url):
    listener, _ = await connect(url)
    try:
        send(listener, '{"type": "speak", "text": "%s"}' % LONG_TEXT)
        await listener.wait_for(lambda: len(listener.loud()) >= 60, timeout=30)  # over a second of speech heard
        send(listener, '{"type": "cancel"}')
        await listener.wait_for(lambda: event(listener, "cancelled") is not None)
        await frames_later(listener)  # frames still in flight arrive
        cancelled = event(listener, "cancelled")
        frames = listener.frames
        loud = [i for i, f in enumerate(frames) if f.rms > SPEECH_RMS]
        received = (loud[-1] - loud[0] + 1) * 0.02  # the utterance's audio the listener decoded, in 20 ms frames
        assert cancelled["heard_from"] == "track"
        # the track sent a few ms more between reading its position and clearing; its last frames may be quiet
        assert received - 0.1 <= cancelled["heard_s"] <= received + 0.4
        words = [w for e in listener.events if e["type"] == "chunk" for w in e["words"]]
        heard = [w["word"] for w in words if w["end"] <= cancelled["heard_s"] + 1e-3]
        assert cancelled["heard_text"] == " ".join(heard) and LONG_TEXT.startswith(cancelled["heard_text"])
        assert 3 <= len(heard) < len(LONG_TEXT.split())
    finally:
        await listener.close()


async def test_session_gone_after_close(url):
    listener, _ = await connect(url)
    async with httpx.AsyncClient() as http:
        assert (await http.get(url + "/health")).json()["sessions"] >= 1
        await listener.close()
        deadline = time.monotonic() + 5
        while (await http.get(url + "/health")).json()["sessions"] != 0:
            assert time.monotonic() < deadline, "session still registered 5 s after the peer closed"
            await asyncio.sleep(0.1)


async def test_malformed_sdp_is_400_and_server_stays_up(url):
    async with httpx.AsyncClient() as http:
        reply = await http.post(url + "/v1/webrtc/offer", json={"sdp": "v=0\r\nnonsense", "type": "offer"})
        assert reply.status_code == 400
        assert reply.json()["error"]["code"] == "bad_sdp"
        assert (await http.get(url + "/health")).status_code == 200


async def test_oversized_offers_are_refused_before_parsing(url):
    listener = Listener.create()
    offer = await listener.offer()
    await listener.close()
    many_sections = offer + "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\n" * 3  # (3000 of them took seconds to parse)
    padded = offer + "a=x-pad:" + "y" * 40_000 + "\r\n"
    async with httpx.AsyncClient() as http:
        for sdp, says in ((many_sections, "media sections"), (padded, "bytes")):
            reply = await http.post(url + "/v1/webrtc/offer", json={"sdp": sdp, "type": "offer"})
            assert reply.status_code == 400 and reply.json()["error"]["code"] == "bad_sdp"
            assert says in reply.json()["error"]["message"]
        assert (await http.get(url + "/health")).json()["sessions"] == 0


async def test_a_peer_that_closes_with_8_queued_utterances_leaves_no_engine_work(url):
    listener, _ = await connect(url)
    for _ in range(8):
        send(listener, '{"type": "speak", "text": "%s"}' % LONG_TEXT)
    await listener.wait_for(lambda: event(listener, "chunk"))
    async with httpx.AsyncClient() as http:
        assert sum(e["in_flight"] for e in (await http.get(url + "/health")).json()["engines"]) == 8
        await listener.close()
        deadline = time.monotonic() + 10
        while (health := (await http.get(url + "/health")).json())["sessions"] or \
                sum(e["in_flight"] for e in health["engines"]):
            assert time.monotonic() < deadline, "engine utterances outlived their WebRTC peer"
            await asyncio.sleep(0.05)


# In-process: the same endpoint on an app whose engine is never started (offers do not need it).

@pytest.fixture
def app():
    return create_app(GatewaySettings(engine_urls=("ws://127.0.0.1:9/unused",), max_sessions=2))


async def post(app, body=None, content=None) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw") as http:
        return await http.post("/v1/webrtc/offer", json=body, content=content)


@pytest.mark.parametrize("body,content", [
    (None, b"not json"),
    ([1, 2], None),
    ({"type": "offer"}, None),
    ({"sdp": 5, "type": "offer"}, None),
    ({"sdp": "v=0", "type": "answer"}, None),
    ({"sdp": "garbage", "type": "offer"}, None),
])
async def test_bad_requests(app, body, content):
    reply = await post(app, body, content)
    assert reply.status_code == 400
    assert set(reply.json()["error"]) == {"code", "message"}
    assert len(app.state.gateway.sessions) == 0


async def test_unoffered_or_unknown_codec(app):
    listener = Listener.create(codecs=["pcmu"])
    try:
        offer = await listener.offer()
        for codec, code in (("opus", "bad_sdp"), ("g729", "bad_request")):
            reply = await post(app, {"sdp": offer, "type": "offer", "codec": codec})
            assert reply.status_code == 400 and reply.json()["error"]["code"] == code
        assert len(app.state.gateway.sessions) == 0 and not app.state.gateway.peers
    finally:
        await listener.close()


async def test_full_server_is_503_with_retry_after(app, monkeypatch):
    loopback_only(monkeypatch)
    listeners = [Listener.create() for _ in range(3)]
    try:
        replies = [await post(app, {"sdp": await lst.offer(), "type": "offer"}) for lst in listeners]
        assert [r.status_code for r in replies] == [200, 200, 503]
        assert replies[2].headers["retry-after"] and replies[2].json()["error"]["code"] == "session_limit"
    finally:
        await signalling.close_all_peers(app.state.gateway)
        for lst in listeners:
            await lst.close()
    assert len(app.state.gateway.sessions) == 0 and not app.state.gateway.peers


async def test_unconnected_peer_is_dropped(app, monkeypatch):
    monkeypatch.setattr(app.state.gateway.settings, "webrtc_setup_timeout_s", 0.3)
    listener = Listener.create()
    try:
        reply = await post(app, {"sdp": await listener.offer(), "type": "offer"})  # the answer is never applied
        assert reply.status_code == 200 and len(app.state.gateway.sessions) == 1
        await listener.wait_for(lambda: len(app.state.gateway.sessions) == 0, timeout=5)
        assert not app.state.gateway.peers
    finally:
        await listener.close()


async def test_audio_only_offer_keeps_its_session(app, monkeypatch):
    loopback_only(monkeypatch)
    monkeypatch.setattr(app.state.gateway.settings, "webrtc_setup_timeout_s", 0.5)
    listener = Listener.create(datachannel=False)
    try:
        reply = await post(app, {"sdp": await listener.offer(), "type": "offer"})
        await listener.accept(reply.json()["sdp"])
        await listener.wait_for(lambda: len(listener.frames) >= 5)
        await asyncio.sleep(0.7)
        assert len(app.state.gateway.sessions) == 1  # connected without a channel: not dropped
    finally:
        await listener.close()
        await signalling.close_all_peers(app.state.gateway)
    assert len(app.state.gateway.sessions) == 0


def test_ice_server_urls():
    stun, turn = signalling.ice_servers(["stun:stun.example:3478", "turn:alice:s3cret@turn.example:3478?transport=tcp"])
    assert stun.urls == "stun:stun.example:3478" and stun.username is None
    assert (turn.urls, turn.username, turn.credential) == ("turn:turn.example:3478?transport=tcp", "alice", "s3cret")
    assert signalling.ice_servers([]) == []
    with pytest.raises(ValueError):
        signalling.ice_servers(["http://nope"])


async def test_shutdown_tells_webrtc_sessions_before_closing(tmp_path):
    """SIGTERM: the session hears a `closing` event on its data channel, then the peer connection is closed."""
    import os
    import signal

    with running_server(voices_dir=tmp_path) as base:
        listener, _ = await connect(base)
        try:
            worker_pid = httpx.get(base + "/health").json()["worker"]["pid"]
            with open(f"/proc/{worker_pid}/stat") as stat:  # the gateway is the worker's parent
                os.kill(int(stat.read().rsplit(")", 1)[1].split()[1]), signal.SIGTERM)
            await listener.wait_for(lambda: event(listener, "closing") is not None, timeout=10)
            assert event(listener, "closing")["reason"]
        finally:
            await listener.close()


async def test_offers_that_aiortc_half_accepts_are_400(app):
    """Found by ``bench faults``: an offer whose sections lack a DTLS fingerprint or ICE credentials was answered (and
    aiortc's connect task then failed an assertion), and one whose second section lost its m-line left a half-built
    peer connection whose close() raised: both were 500s."""
    listener = Listener.create()
    offer = await listener.offer()
    await listener.close()
    no_fingerprint = "".join(line for line in offer.splitlines(keepends=True) if "fingerprint" not in line)
    no_ufrag = "".join(line for line in offer.splitlines(keepends=True) if "ice-ufrag" not in line)
    lines = offer.splitlines(keepends=True)
    lost_m_line = "".join(line for line in lines if not line.startswith("m=application"))
    for sdp in (no_fingerprint, no_ufrag, lost_m_line):
        reply = await post(app, {"sdp": sdp, "type": "offer"})
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "bad_sdp", reply.text
    assert len(app.state.gateway.sessions) == 0 and not app.state.gateway.peers
