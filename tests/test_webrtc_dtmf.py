"""DTMF on the WebRTC leg (gateway/webrtc/dtmf.py): RFC 4733 telephone-event/8000 from the peer, each key press told
to the session's controller once as ``{"type": "dtmf", "digit"}``.

The decoder alone (a press's repeated end packets, the same key twice, late packets, long presses, garbage, bounded
state); the answer with and without telephone-event offered; and against a real gateway, a controller hearing the
keys of Chromium's RTCDTMFSender, and of an aiortc peer that sends nonsense telephone-event packets between them.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import random
import time

import httpx
import pytest
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import AudioStreamTrack
from aiortc.rtp import RtpPacket
from websockets.asyncio.client import connect

from gateway.webrtc.dtls import peer_connection
from gateway.webrtc.dtmf import DtmfDecoder, Event, parse_event
from gateway.webrtc.signalling import negotiate, offered_codecs
from gateway.webrtc.track import PacedAudioTrack
from tests.server import next_event

PT = 101


def report(code: int, end: bool = False, duration: int = 800, volume: int = 10) -> bytes:
    return bytes([code, (0x80 if end else 0) | volume]) + duration.to_bytes(2, "big")


def press(code: int, sequence: int, timestamp: int, updates: int = 2) -> list[tuple[int, int, bool, bytes]]:
    """A press as a sender sends it: the first packet with the marker, updates, three end packets (one timestamp)."""
    packets = [(sequence, timestamp, True, report(code, duration=160))]
    packets += [(sequence + 1 + i, timestamp, False, report(code, duration=320 * (i + 1))) for i in range(updates)]
    packets += [(sequence + 1 + updates + i, timestamp, False, report(code, end=True)) for i in range(3)]
    return packets


def keys(decoder: DtmfDecoder, packets: list[tuple[int, int, bool, bytes]]) -> str:
    return "".join(digit for p in packets if (digit := decoder.packet(*p)) is not None)


def test_an_event_report_decodes():
    assert parse_event(bytes([11, 0x80 | 0x40 | 7, 0x03, 0x20])) == Event(code=11, end=True, volume=7, duration=800)
    assert parse_event(bytes([5, 0x3F, 0, 0]) + b"extra") == Event(5, False, 63, 0)
    assert parse_event(b"\x01\x80\x00") is None


def test_a_press_counts_once_despite_its_repeated_end_packets():
    decoder = DtmfDecoder()
    assert keys(decoder, press(5, 100, 8000)) == "5"
    assert decoder.keys == 1 and decoder.dropped == {"short": 0, "not_a_key": 0, "late": 0}


def test_two_presses_of_one_key_count_twice_and_every_key_decodes():
    decoder = DtmfDecoder()
    assert keys(decoder, press(7, 10, 1000) + press(7, 16, 3000)) == "77"
    packets = [p for code in range(16) for p in press(code, 100 + 6 * code, 50_000 + 1000 * code)]
    assert keys(decoder, packets) == "0123456789*#ABCD"


def test_lost_start_and_end_packets_still_count_the_press():
    decoder = DtmfDecoder()
    only_ends = press(1, 0, 0)[3:]  # the start and updates lost
    only_start = press(2, 6, 4000)[:1]  # the end packets lost; the next press is another key
    assert keys(decoder, only_ends + only_start + press(3, 12, 8000)) == "123"


def test_late_and_duplicated_packets_of_a_counted_press_do_not_count_again():
    decoder = DtmfDecoder()
    first, second = press(4, 65530, 4_294_966_000), press(4, 0, 704)  # both counters wrap
    packets = first[:2] + second[:3] + first[2:] + second[3:] + [second[-1], first[0]]
    assert keys(decoder, packets) == "44"
    assert decoder.dropped["late"] == len(first) - 2 + 1


def test_a_long_press_in_segments_is_one_press():
    decoder = DtmfDecoder()
    segment = [(1, 0, True, report(9, duration=0xFFFF))]
    segment += [(2, 0xFFFF, False, report(9, duration=4000)), (3, 0xFFFF, False, report(9, end=True))]
    assert keys(decoder, segment) == "9"


def test_a_new_stream_is_heard_whatever_its_counters():
    decoder = DtmfDecoder()
    restarted = press(6, 39_990, 1_000) + press(6, 39_000, 2_999_000_000)  # one counter just behind, not both
    assert keys(decoder, press(6, 40_000, 3_000_000_000) + restarted) == "666"


def test_nonsense_is_dropped_and_counted_never_raised():
    decoder = DtmfDecoder()
    assert decoder.packet(1, 0, True, b"") is None and decoder.packet(2, 0, True, b"\x05\x80\x00") is None
    assert decoder.packet(3, 0, True, report(16)) is None and decoder.packet(4, 0, True, report(255, end=True)) is None
    assert decoder.dropped == {"short": 2, "not_a_key": 2, "late": 0} and decoder.keys == 0
    rng = random.Random(4733)
    for _ in range(20_000):
        digit = decoder.packet(rng.getrandbits(16), rng.getrandbits(32), rng.random() < 0.5,
                               rng.randbytes(rng.choice((0, 1, 3, 4, 4, 8, 200))))
        assert digit is None or digit in "0123456789*#ABCD"
    assert decoder.dropped["short"] > 0 and decoder.dropped["not_a_key"] > 0


def test_its_state_does_not_grow_with_the_packets():
    decoder = DtmfDecoder()
    keys(decoder, [p for n in range(10) for p in press(n % 16, 6 * n, 1000 * n)])
    small = len(pickle.dumps(decoder))
    keys(decoder, [p for n in range(10, 20_000) for p in press(n % 16, (6 * n) % 0x10000, 1000 * n % 2**32)])
    assert decoder.keys == 20_000
    assert len(pickle.dumps(decoder)) <= small + 16  # a few counters grew digits, nothing else


def with_telephone_event(sdp: str, payload_type: int = PT) -> str:
    """An aiortc offer (aiortc offers no telephone-event) with telephone-event/8000 on ``payload_type``, as a
    browser or a phone bridge offers it."""
    lines = sdp.split("\r\n")
    audio = next(i for i, line in enumerate(lines) if line.startswith("m=audio"))
    rtpmap = next(i for i, line in enumerate(lines) if line.startswith("a=rtpmap:"))
    lines[audio] += f" {payload_type}"
    lines[rtpmap + 1:rtpmap + 1] = [f"a=rtpmap:{payload_type} telephone-event/8000", f"a=fmtp:{payload_type} 0-15"]
    return "\r\n".join(lines)


async def offer(direction: str = "sendrecv") -> tuple[RTCPeerConnection, str]:
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))  # aiortc's default STUN server costs seconds offline
    pc.addTransceiver(AudioStreamTrack() if direction == "sendrecv" else "audio", direction=direction)
    await pc.setLocalDescription(await pc.createOffer())
    return pc, pc.localDescription.sdp


async def answer(offer_sdp: str, codec: str | None = None) -> str:
    pc = peer_connection(RTCConfiguration(iceServers=[]))
    try:
        await negotiate(pc, PacedAudioTrack(), offer_sdp, codec)
        return pc.localDescription.sdp
    finally:
        await pc.close()


async def test_the_answer_takes_telephone_event_from_a_peer_that_sends_it():
    peer, sdp = await offer()
    try:
        for codec in (None, "pcmu", "pcma"):
            answered = await answer(with_telephone_event(sdp), codec)
            assert f"a=rtpmap:{PT} telephone-event/8000" in answered and f"a=fmtp:{PT} 0-15" in answered
            assert offered_codecs(answered)[0] == (codec or "opus")  # the codec the track sends is still first
        plain = await answer(sdp)  # a peer that offers none: the answer it always got
        assert "telephone-event" not in plain and offered_codecs(plain) == ["opus", "pcmu", "pcma"]
        taken = await answer(with_telephone_event(sdp, payload_type=0))  # on PCMU's payload type: refused
        assert "telephone-event" not in taken
    finally:
        await peer.close()


async def test_a_peer_that_only_receives_gets_no_telephone_event():
    peer, sdp = await offer("recvonly")  # WHEP bridges, the page without a microphone
    try:
        answered = await answer(with_telephone_event(sdp))
        assert "telephone-event" not in answered and "a=sendonly" in answered
    finally:
        await peer.close()


@pytest.fixture(scope="module")
def url(plain_server: str) -> str:
    return plain_server  # tests/conftest.py: one server for the files that only speak through it


def ws_url(url: str, session: str) -> str:
    return url.replace("http://", "ws://") + f"/v1/stream?session={session}"


async def dtmf_events(ws, within: float) -> list[str]:
    """The digits of the controller's dtmf events for ``within`` seconds (other events are skipped)."""
    digits, deadline = [], time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        try:
            event = json.loads(await asyncio.wait_for(ws.recv(), left))
        except TimeoutError:
            break
        if event["type"] == "dtmf":
            digits.append(event["digit"])
    return digits


PAGE_PEER = """async (url) => {
  const stream = await navigator.mediaDevices.getUserMedia({audio: true});  // the fake microphone
  const pc = new RTCPeerConnection();
  const sender = pc.addTrack(stream.getAudioTracks()[0], stream);
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((done) => {
    if (pc.iceGatheringState === "complete") done();
    pc.addEventListener("icegatheringstatechange", () => pc.iceGatheringState === "complete" && done());
  });
  const reply = await fetch(url + "/v1/webrtc/offer", {method: "POST", headers: {"content-type": "application/json"},
    body: JSON.stringify({sdp: pc.localDescription.sdp, type: "offer"})});
  const answer = await reply.json();
  await pc.setRemoteDescription({type: "answer", sdp: answer.sdp});
  window.pc = pc;
  window.tones = [];
  sender.dtmf.addEventListener("tonechange", (e) => window.tones.push(e.tone));
  window.dtmf = sender.dtmf;
  return answer;
}"""


@pytest.mark.slow
async def test_chromium_key_presses_reach_the_controller(url):
    from tests.test_page import CHROMIUM, CHROMIUM_ARGS, _sync_playwright

    _sync_playwright()  # fails with the fix when Chromium or playwright is missing
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=False, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            await page.goto(url + "/health")  # the gateway's origin: a secure context, fetch without CORS
            answer = await page.evaluate(PAGE_PEER, url)
            assert "telephone-event/8000" in answer["sdp"], answer["sdp"]
            await page.wait_for_function("pc.connectionState === 'connected' && dtmf.canInsertDTMF", timeout=10_000)
            async with connect(ws_url(url, answer["session"])) as ws:
                assert json.loads(await ws.recv())["type"] == "ready"
                await page.evaluate("dtmf.insertDTMF('1#5', 100, 70)")
                await page.wait_for_function("tones.at(-1) === ''", timeout=5_000)  # the sender has sent them all
                assert await dtmf_events(ws, within=1.0) == ["1", "#", "5"]
        finally:
            await browser.close()


def garbage(rng: random.Random) -> bytes:
    """A telephone-event payload that is no key press: too short, or an event code of 16 and up, random after."""
    return rng.choice((b"", rng.randbytes(rng.randint(1, 3)),
                       bytes([rng.randint(16, 255)]) + rng.randbytes(rng.choice((3, 7, 300)))))


async def test_nonsense_telephone_events_from_an_aiortc_peer_leave_only_the_real_keys(url):
    """An aiortc peer sending Opus and, on an SSRC of their own (the audio's sequence numbers would be SRTP replays),
    telephone-event packets: hundreds of nonsense ones (random timestamps, markers and payloads) before, between and
    inside two presses of 7 and one of #. The controller hears exactly 7, 7, #, and the session still speaks."""
    rng = random.Random(2833)
    pc, sdp = await offer()
    try:
        async with httpx.AsyncClient() as http:
            reply = await http.post(url + "/v1/webrtc/offer", json={"sdp": with_telephone_event(sdp), "type": "offer"})
        assert reply.status_code == 200, reply.text
        answered = reply.json()
        assert f"a=rtpmap:{PT} telephone-event/8000" in answered["sdp"]
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answered["sdp"], type="answer"))
        deadline = time.monotonic() + 10
        while pc.connectionState != "connected":
            assert time.monotonic() < deadline, pc.connectionState
            await asyncio.sleep(0.05)
        transport = pc.getTransceivers()[0].sender.transport
        ssrc, sequence = rng.getrandbits(32), rng.getrandbits(16)

        async def send(timestamp: int, marker: bool, payload: bytes) -> None:
            nonlocal sequence
            sequence = (sequence + 1) % 0x10000  # in order: SRTP drops what is far behind before the gateway sees it
            packet = RtpPacket(payload_type=PT, marker=int(marker), sequence_number=sequence, timestamp=timestamp,
                               ssrc=ssrc, payload=payload)
            await transport._send_rtp(packet.serialize())

        async def noise(n: int) -> None:
            for _ in range(n):
                await send(rng.getrandbits(32), rng.random() < 0.5, garbage(rng))
            await asyncio.sleep(0.005)

        async with connect(ws_url(url, answered["session"])) as ws:
            assert json.loads(await ws.recv())["type"] == "ready"
            await noise(200)
            for code, timestamp in ((7, 1_000_000), (7, 1_002_000), (11, 1_004_000)):
                for _, timestamp, marker, payload in press(code, 0, timestamp):
                    await send(timestamp, marker, payload)
                    await noise(10)
            await noise(200)
            assert await dtmf_events(ws, within=1.0) == ["7", "7", "#"]
            await ws.send(json.dumps({"type": "speak", "text": "Still here."}))
            done, _ = await next_event(ws, "done", timeout=15)
            assert done["chunks"] >= 1
    finally:
        await pc.close()
