"""The caller is heard: a phone call's inbound audio to the controller, barge-in at the edge, on a real gateway.

The phone side is streamdouble (PyPI), a Twilio Media Streams simulator: it streams 20 ms mu-law frames all call
long (near-silence while its caller is quiet), a WAV as the caller's voice, and checks that a correct agent sends a
``clear`` when the caller talks over it. The caller's voice is a clip the deploy gate ships
(cbf_tools/gate/references/high.ogg, synthetic speech), at 8 kHz. The agent is a controller on
``WS /v1/stream?session={callSid}``."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
import wave
from pathlib import Path

import av
import httpx
import numpy as np
import pytest
from streamdouble import audio as sd_audio
from streamdouble.scenario import Expect, Say, Wait, WaitFor
from websockets.exceptions import ConnectionClosed

from tests.server import next_event
from tests.test_telephony import KEY, LONG_TEXT, controller, no_sessions_left, simulated

CLIP = Path(__file__).resolve().parents[1] / "cbf_tools" / "gate" / "references" / "high.ogg"


@pytest.fixture(scope="module")
def url(phone_server: str) -> str:
    return phone_server


@pytest.fixture(scope="module")
def caller_wav(tmp_path_factory) -> Path:
    """Two seconds of the clip as the 8 kHz mono WAV streamdouble plays."""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=8000)
    with av.open(str(CLIP)) as container:
        pcm = np.concatenate([out.to_ndarray().reshape(-1) for frame in container.decode(audio=0)
                              for out in resampler.resample(frame)])
    path = tmp_path_factory.mktemp("caller") / "caller.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1), wav.setsampwidth(2), wav.setframerate(8000)
        wav.writeframes(pcm[:16000].astype("<i2").tobytes())
    return path


def say(path: Path) -> Say:
    return Say(path, sd_audio.wav_to_ulaw_frames(path))


async def events_until(agent, kind: str, timeout: float = 20) -> list[dict]:
    _, seen = await next_event(agent, kind, timeout=timeout)
    return seen


async def test_the_callers_audio_reaches_the_controller_byte_for_byte(url, caller_wav):
    clip = say(caller_wav)
    call, call_sid = simulated(url, [Wait(0.6), clip, Wait(1.0)], barge_in="off")
    running = asyncio.create_task(call.run())
    agent = await controller(url, call_sid)
    await agent.send(json.dumps({"type": "listen"}))
    started = json.loads(await agent.recv())
    assert started == {"type": "caller_audio_start", "encoding": "mulaw", "sample_rate": 8000, "channels": 1}
    frames: list[tuple[float, bytes]] = []
    speech: list[dict] = []
    while not speech or speech[-1]["type"] != "speech_stopped" or frames[-1][0] < speech[-1]["timestamp"] + 300:
        message = json.loads(await asyncio.wait_for(agent.recv(), 20))
        if message["type"] == "caller_audio":
            frames.append((message["timestamp"], base64.b64decode(message["audio"])))
        elif message["type"] in ("speech_started", "speech_stopped"):
            speech.append(message)
    await agent.send(json.dumps({"type": "speak", "text": "I heard you."}))  # the call ends once this has played
    await next_event(agent, "done")
    await running
    received = b"".join(audio for _, audio in frames)
    assert b"".join(clip.frames) in received  # the carrier's own mu-law, not re-encoded
    stamps = [stamp for stamp, _ in frames]
    assert stamps == sorted(stamps) and all(b - a == 20 for a, b in zip(stamps, stamps[1:])), stamps[:10]
    # barge_in off: the controller still hears when the caller spoke, once, within the clip's time.
    kinds = [event["type"] for event in speech]
    assert kinds == ["speech_started", "speech_stopped"], speech
    clip_start = stamps[received.index(b"".join(clip.frames)) // 160]
    assert clip_start - 50 <= speech[0]["timestamp"] <= clip_start + 300, (clip_start, speech)
    await agent.close()
    await no_sessions_left(url)


@pytest.fixture(scope="module")
def batched_url():
    """A gateway that hears its calls' VAD windows in batched runs (``--vad-batch``: gateway/listen/tick.py)."""
    from tests.server import PHONE_KEY, running_server

    with running_server("--api-key", PHONE_KEY, "--max-text-chars", "1000", "--vad-batch", "true") as started:
        yield started


async def test_the_caller_talking_over_the_agent_stops_it_at_once(url, caller_wav):
    await talked_over(url, caller_wav)


async def test_with_batched_vad_runs_the_caller_stops_it_the_same(batched_url, caller_wav):
    await talked_over(batched_url, caller_wav)


async def talked_over(url: str, caller_wav: Path) -> None:
    """The caller says the clip 1.5 s into the agent's long text: speech starts, the utterance is cancelled and
    ``interrupted`` says what was heard; the carrier gets one ``clear`` and nothing of the utterance after it."""
    call, call_sid = simulated(url, [WaitFor("audio", 30), Wait(1.5), say(caller_wav), Expect("clear"),
                                     Wait(0.5)])
    running = asyncio.create_task(call.run())
    agent = await controller(url, call_sid)
    await agent.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
    seen = await events_until(agent, "interrupted", timeout=30)
    interrupted = seen[-1]
    kinds = [event["type"] for event in seen]
    assert kinds.index("speech_started") < kinds.index("cancelled") < kinds.index("interrupted"), kinds
    (cut,) = interrupted["utterances"]
    assert cut["heard_from"] == "marks" and cut["heard_s"] > 1.0 and cut["heard_text"], interrupted
    result = await running
    assert result.clears_received == 1 and not result.failed_expectations and not result.violations
    # Nothing of the utterance was sent after the clear.
    clear_at = result.events_of("clear_received")[0].at
    assert not [e for e in result.events_of("media_received") if e.at > clear_at + 0.05]
    await agent.close()
    await no_sessions_left(url)


async def test_pcm16_at_16_khz_on_request_and_bad_frames_are_counted(url):
    call, call_sid = simulated(url, [Wait(1.0)], barge_in="off")
    running = asyncio.create_task(call.run())
    agent = await controller(url, call_sid)
    await agent.send(json.dumps({"type": "listen", "format": "pcm16"}))
    assert json.loads(await agent.recv())["sample_rate"] == 16000
    pcm = b""
    while len(pcm) < 16000:  # half a second
        message = json.loads(await asyncio.wait_for(agent.recv(), 10))
        if message["type"] == "caller_audio":
            pcm += base64.b64decode(message["audio"])
    assert len(pcm) % 2 == 0
    await agent.send(json.dumps({"type": "listen", "format": "wav"}))
    while (message := json.loads(await asyncio.wait_for(agent.recv(), 10)))["type"] == "caller_audio":
        pass
    assert message["type"] == "error" and message["code"] == "bad_config", message
    await agent.send(json.dumps({"type": "speak", "text": "Okay."}))  # the call ends once this has played
    await next_event(agent, "done")
    await running
    await agent.close()


async def test_garbage_and_floods_are_dropped_and_the_call_goes_on(url):
    """Frames that are not the call's audio, and audio far faster than real time: counted, never heard."""
    from websockets.asyncio.client import connect

    async with httpx.AsyncClient() as http:
        before = (await http.get(url + "/health")).json()["caller_audio"]
    async with connect(url.replace("http://", "ws://") + "/v1/twilio") as phone:
        await phone.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        await phone.send(json.dumps({"event": "start", "streamSid": "MZflood", "start": {
            "callSid": "CAflood", "streamSid": "MZflood", "customParameters": {"key": KEY},
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}}))
        agent = await controller(url, "CAflood")
        frame = base64.b64encode(b"\xff" * 160).decode()
        for payload in ("!!!", "", base64.b64encode(b"\xff" * 9000).decode()):  # not base64, empty, over a second
            await phone.send(json.dumps({"event": "media", "media": {"payload": payload, "timestamp": "0"}}))
        for i in range(250):  # 5 s of audio at once
            await phone.send(json.dumps({"event": "media", "media": {"payload": frame, "timestamp": str(20 * i)}}))
        await agent.send(json.dumps({"type": "speak", "text": "Still here."}))
        done, _ = await next_event(agent, "done", timeout=20)  # this phone echoes no marks: nothing counts as heard
        assert done["audio_seconds"] > 0.3 and json.loads(await phone.recv())["event"] == "media"
        async with httpx.AsyncClient() as http:
            after = (await http.get(url + "/health")).json()["caller_audio"]
        assert after["rejected"] - before["rejected"] == 3
        assert after["flooded"] - before["flooded"] >= 150  # a second of burst is let through, the rest dropped
        assert after["heard"] - before["heard"] <= 100
        await phone.send(json.dumps({"event": "stop", "stop": {}}))
        await agent.close()
        await close_reading(phone)  # (it read one media message of many)
    await no_sessions_left(url)


def clip_48k(seconds: float = 2.0) -> np.ndarray:
    resampler = av.AudioResampler(format="s16", layout="mono", rate=48000)
    with av.open(str(CLIP)) as container:
        pcm = np.concatenate([out.to_ndarray().reshape(-1) for frame in container.decode(audio=0)
                              for out in resampler.resample(frame)])
    return pcm[: int(seconds * 48000)]


async def test_a_webrtc_peer_that_talks_over_the_gateway_silences_it_from_the_next_frame(url, monkeypatch):
    """A real aiortc peer sends its microphone (Opus) on the session's connection; a controller listens as PCM16."""
    from cbf_tools.peers.rtc_listener import SPEECH_RMS, PacedSource
    from tests.rtc_helpers import connect, frames_later, loopback_only

    loopback_only(monkeypatch)
    microphone = PacedSource()
    listener, answer = await connect(url, microphone=microphone, key=KEY)
    agent = await controller(url, answer["session"], codec="opus")
    try:
        await agent.send(json.dumps({"type": "listen"}))
        assert json.loads(await agent.recv())["encoding"] == "pcm16"  # WebRTC: PCM16 at 16 kHz
        listener.channel.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
        await listener.wait_for(lambda: len(listener.loud()) >= 50, timeout=30)  # a second of the gateway
        microphone.play(clip_48k().astype("<i2").tobytes())
        await listener.wait_for(lambda: any(e["type"] == "interrupted" for e in listener.events), timeout=10)
        await frames_later(listener)  # what was in flight arrives
        kinds = [e["type"] for e in listener.events]
        assert kinds.index("speech_started") < kinds.index("cancelled") < kinds.index("interrupted"), kinds
        interrupted = next(e for e in listener.events if e["type"] == "interrupted")
        assert interrupted["utterances"][0]["heard_from"] == "track" and interrupted["reaction_ms"] >= 0
        # Silent from the next frame: the peer heard no more of the utterance than the gateway says it had played when
        # it stopped (frames come in order, 20 ms each; the gateway's heard_s is to a tenth), and only silence after.
        # How soon after the caller's onset is a figure (reaction_ms; `bench barge-in`), not asserted: a loaded
        # machine delays the path back (CI, load 10: the last loud frame 0.96 s after the peer began, reaction 212 ms).
        loud = [n for n, frame in enumerate(listener.frames) if frame.rms > SPEECH_RMS]
        played_s = (loud[-1] - loud[0] + 1) * 0.02
        assert played_s <= interrupted["utterances"][0]["heard_s"] + 0.06, (played_s, interrupted)
        assert len(listener.frames) - 1 - loud[-1] >= 20  # and silence after it, 0.4 s and more
        loudest = 0
        while loudest < 1000:  # the controller hears the peer's voice itself as PCM16, not only silence
            message = json.loads(await asyncio.wait_for(agent.recv(), 10))
            if message["type"] == "caller_audio":
                loudest = max(loudest, int(np.abs(np.frombuffer(base64.b64decode(message["audio"]), "<i2")).max()))
    finally:
        await listener.close()
        await close_reading(agent)


async def close_reading(agent) -> None:
    """Close a controller socket whose caller audio may still be coming: read while closing (a client that has
    stopped reading, its queue full, would not see the server's close frame and waits out its close timeout)."""
    async def drain() -> None:
        with contextlib.suppress(ConnectionClosed):
            async for _ in agent:
                pass

    reading = asyncio.create_task(drain())
    await agent.close()
    await reading


async def test_pause_mode_pauses_on_a_short_sound_and_goes_on_where_it_stopped(url, caller_wav, tmp_path):
    """``barge_in: pause``: a "mm-hm" under the cancel minimum pauses the speech (the stack's buffer cleared) and it
    resumes from what the marks say was heard; the utterance still ends in ``done``, whole."""
    with wave.open(str(caller_wav)) as wav:
        blip = wav.readframes(wav.getnframes())[: 2 * 2400]  # 0.3 s of the clip's speech
    short = tmp_path / "mm-hm.wav"
    with wave.open(str(short), "wb") as wav:
        wav.setnchannels(1), wav.setsampwidth(2), wav.setframerate(8000)
        wav.writeframes(blip)
    call, call_sid = simulated(url, [WaitFor("audio", 30), Wait(1.5), say(short), Wait(1.0), WaitFor("quiet", 30)],
                               barge_in="pause")
    running = asyncio.create_task(call.run())
    agent = await controller(url, call_sid)
    text = "This sentence runs on for a while so that the caller can murmur over the middle of it and be ignored."
    await agent.send(json.dumps({"type": "speak", "text": text}))
    done, seen = await next_event(agent, "done", timeout=40)
    kinds = [event["type"] for event in seen]
    assert "paused" in kinds and kinds.index("paused") < kinds.index("resumed"), kinds
    assert "cancelled" not in kinds and "interrupted" not in kinds
    assert done["heard_text"] == text and done["heard_from"] == "marks"
    result = await running
    assert result.clears_received == 1 and not result.violations
    await agent.close()


def clip_at(rate: int, seconds: float = 2.0) -> np.ndarray:
    resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
    with av.open(str(CLIP)) as container:
        pcm = np.concatenate([out.to_ndarray().reshape(-1) for frame in container.decode(audio=0)
                              for out in resampler.resample(frame)])
    return pcm[: int(seconds * rate)]


@pytest.mark.parametrize(("stack", "encoding", "rate"), [("telnyx", "alaw", 8000), ("asterisk", "pcm16", 16000)])
async def test_telnyx_and_asterisk_callers_are_heard_and_barge_in(url, stack, encoding, rate):
    """The stacks' replicas (cbf_tools/peers/phone_callers.py: no client of either installs from PyPI or Debian) speak over
    the agent: PCMA base64 on Telnyx, binary slin16 on Asterisk. The controller gets the very bytes, and the clear
    (Telnyx ``clear``, Asterisk ``FLUSH_MEDIA``) comes."""
    from cbf_tools.peers.phone_callers import connect_call
    from gateway.audio import g711_encode

    pcm = clip_at(rate)
    wire = g711_encode(pcm.astype("<i2").tobytes(), "pcm_alaw") if encoding == "alaw" else pcm.astype("<i2").tobytes()
    frame = len(wire) // 100  # 20 ms
    frames = iter([wire[i * frame:(i + 1) * frame] for i in range(100)])
    call_id = f"{stack}-barge"
    caller = await connect_call(url, stack, call_id, key=KEY)
    agent = await controller(url, call_id, codec=caller.codec)
    await agent.send(json.dumps({"type": "listen", "aec": False}))  # the bytes as sent, the canceller on or off
    assert json.loads(await agent.recv()) == {"type": "caller_audio_start", "encoding": encoding, "sample_rate": rate,
                                              "channels": 1}
    await agent.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
    deadline = time.monotonic() + 60  # a bound on a hang (caller audio keeps coming whether or not it barges in)
    while len(caller.audio) < caller.bytes_per_second:  # a second of the agent reached the caller
        assert time.monotonic() < deadline, "the agent's audio never reached the caller"
        await asyncio.sleep(0.05)
    caller.voice = lambda at: next(frames, None)
    received = b""
    seen = []
    while "interrupted" not in [event["type"] for event in seen]:
        assert time.monotonic() < deadline, ("the caller talking over the agent never interrupted it", seen)
        message = json.loads(await asyncio.wait_for(agent.recv(), 10))
        if message["type"] == "caller_audio":
            received += base64.b64decode(message["audio"])
        else:
            seen.append(message)
    await caller.cleared()
    assert [e["type"] for e in seen if e["type"] != "chunk"][:3] == ["speech_started", "cancelled", "interrupted"]
    while wire[: 20 * frame] not in received:  # the stack's own bytes, as it sent them
        assert time.monotonic() < deadline, "the controller never got the stack's own bytes"
        message = json.loads(await asyncio.wait_for(agent.recv(), 5))
        received += base64.b64decode(message["audio"]) if message["type"] == "caller_audio" else b""
    await caller.hang_up()
    await agent.close()
    await no_sessions_left(url)


@pytest.fixture(scope="module")
def level_rule_url():
    """A gateway with the echo canceller off (``--echo-canceller false``): the level rule alone guards."""
    from tests.server import PHONE_KEY, running_server

    with running_server("--api-key", PHONE_KEY, "--echo-canceller", "false") as started:
        yield started


async def test_the_canceller_off_a_webrtc_peers_loudspeaker_echo_is_set_aside_by_the_level_rule(level_rule_url,
                                                                                                  monkeypatch):
    """``--echo-canceller false``: a peer whose loudspeaker echoes the gateway (-12 dB, 150 ms after it played,
    band-passed, clipped; cbf_tools/peers/loudspeaker.py) does not stop it (the level rule takes that for the
    gateway's own voice), and a caller as loud as the gateway does."""
    from cbf_tools.bench import caller_voices as voices
    from cbf_tools.bench import line
    from tests.rtc_helpers import speaking_to_a_loudspeaker

    echo = line.LineModel("a loudspeaker", -12, 150, None)
    peer = await speaking_to_a_loudspeaker(level_rule_url, monkeypatch, echo, KEY)
    try:
        played = peer.speaker.loud_seconds()
        assert await peer.wait_for(lambda: peer.speaker.loud_seconds() >= played + 2.5, 30)
        assert not peer.of("interrupted") and not peer.of("cancelled"), peer.events
        peer.speaker.talk(voices.clip_pcm(), 0)
        assert await peer.wait_for(lambda: bool(peer.of("interrupted")), 30), ("the caller was not heard", peer.events)
        kinds = [e["type"] for e in peer.events]
        assert kinds.index("cancelled") < kinds.index("interrupted"), kinds
    finally:
        await peer.close()
    await no_sessions_left(level_rule_url)
