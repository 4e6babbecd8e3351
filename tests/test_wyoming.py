"""Home Assistant's Wyoming protocol: the pure framing and rules, then the ``wyoming`` package's own client against a
real gateway on 127.0.0.1 (eSpeak) in Home Assistant's event order, the audio checked for speech and the PerTh
watermark; then silent connections, here and on the ElevenLabs sockets (gateway/guard/silent_sockets.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import httpx
import numpy as np
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from wyoming.audio import AudioChunk, AudioStart
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event as TheirEvent
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice

from cbf_tools.peers.local_server import free_port
from engine.protocol import ProtocolError
from gateway.guard.silent_sockets import IdleClock, WaitingRoom
from gateway.wyoming.server import listen_host
from gateway.wyoming.translate import Cancel, Conversation, Describe as DescribeCmd, Finish, Reply, Say, Start
from gateway.wyoming.wire import MAX_DATA_BYTES, Event, EventReader, encode
from tests.server import KEYED_IDLE_S, KEYED_KEY, KEYED_MAX_UNAUTHENTICATED, running_server

KEY, IDLE_S = KEYED_KEY, KEYED_IDLE_S
TEXT = "Good evening. The kitchen lights are off, and the front door is locked for the night."


# The framing and the rules, without sockets.

def test_events_are_read_whole_from_any_split_and_written_as_the_package_reads_them() -> None:
    wire = encode(Event("synthesize", {"text": "Hi there."})) + encode(Event("audio-chunk", {"rate": 24000}, b"\x01" * 7))
    reader = EventReader()
    events = [e for i in range(0, len(wire), 5) for e in reader.feed(wire[i:i + 5])]
    assert events == [Event("synthesize", {"text": "Hi there."}), Event("audio-chunk", {"rate": 24000}, b"\x01" * 7)]
    header = json.loads(wire.split(b"\n")[0])
    assert header == {"type": "synthesize", "version": "1.10.2", "data_length": len(b'{"text": "Hi there."}')}


@pytest.mark.parametrize(("wire", "words"), [
    (b"not json\n", "not JSON"),
    (b'{"data": {}}\n', "needs a 'type'"),
    (b'{"type": "x", "data_length": -1}\n', "whole number"),
    (b'{"type": "x", "data_length": %d}\n' % (MAX_DATA_BYTES + 1), "over"),
    (b'{"type": "x", "payload_length": 10000000000}\n', "over"),
    (b'{"type": "x", "data_length": 2}\n[]', "JSON object"),
    (b"x" * 70_000, "header line"),
])
def test_malformed_or_oversized_events_are_refused_before_they_are_held(wire: bytes, words: str) -> None:
    with pytest.raises(ProtocolError, match=words):
        EventReader().feed(wire)


def test_home_assistants_streaming_order_speaks_the_text_once() -> None:
    talk = Conversation(max_chars=100)
    assert talk.receive(Event("describe")) == [DescribeCmd()]
    assert talk.receive(Event("synthesize-start", {"voice": {"name": "Narrator"}})) == [Start("Narrator", None)]
    assert talk.receive(Event("synthesize-chunk", {"text": "Hello "})) == [Say("Hello ")]
    assert talk.receive(Event("synthesize-chunk", {"text": "there."})) == [Say("there.")]
    assert talk.receive(Event("synthesize", {"text": "Hello there."})) == []  # for servers that do not stream
    assert talk.receive(Event("synthesize-stop")) == [Finish()]
    assert talk.spoken() == [Reply(Event("synthesize-stopped"))]
    assert talk.receive(Event("synthesize", {"text": "Once more.", "voice": {"language": "en"}})) == [
        Start("default", "Once more.")]
    refused = talk.receive(Event("synthesize", {"text": "Not now."}))  # one at a time on a connection
    assert refused[0].event.type == "error" and "one at a time" in refused[0].event.data["text"]
    assert talk.spoken() == []  # a one-shot synthesis ends with its audio-stop


def test_refusals_are_error_events_and_a_failed_stream_still_ends_with_stopped() -> None:
    talk = Conversation(max_chars=10)
    codes = [c.event.data["code"] for e in (Event("synthesize-chunk", {"text": "x"}), Event("synthesize-stop"),
                                            Event("synthesize", {"text": 5}), Event("synthesize", {"text": " "}),
                                            Event("synthesize", {"text": "x" * 11}), Event("transcribe"))
             for c in talk.receive(e)]
    assert codes == ["bad_event", "bad_event", "bad_event", "bad_event", "text_too_long", "unsupported"]
    talk.receive(Event("synthesize-start"))
    assert talk.receive(Event("synthesize-chunk", {"text": "x" * 8})) == [Say("x" * 8)]
    over = talk.receive(Event("synthesize-chunk", {"text": "xyz"}))
    assert over[0] == Cancel() and over[1].event.data["code"] == "text_too_long"
    assert talk.receive(Event("synthesize-chunk", {"text": "more"})) == []  # dropped until the stop
    assert talk.receive(Event("synthesize-stop")) == [Reply(Event("synthesize-stopped"))]
    talk.receive(Event("synthesize-start"))
    talk.receive(Event("synthesize-stop"))
    assert [c.event.type for c in talk.failed("unknown_voice", "no such voice")] == ["error", "synthesize-stopped"]


def test_silent_socket_pieces_and_where_wyoming_listens() -> None:
    room = WaitingRoom(2)
    first, second = room.enter(), room.enter()
    assert first and second and room.enter() is None and len(room) == 2
    first.leave()
    first.leave()  # any number of times
    assert len(room) == 1 and room.enter() is not None
    now = [100.0]
    clock = IdleClock(20, clock=lambda: now[0])
    now[0] += 19.9
    assert not clock.idle()
    clock.touch()
    now[0] += 19.9
    assert not clock.idle() and clock.idle(now[0] + 0.1)
    working = [True]
    busy = IdleClock(20, clock=lambda: now[0], busy=lambda: working[0])  # a synthesis under way for the client
    now[0] += 60
    assert not busy.idle()
    working[0] = False
    now[0] += 19.9
    assert not busy.idle() and busy.idle(now[0] + 0.1)  # its clock runs from when the work ended
    assert listen_host("0.0.0.0", None, ("k",)) == "127.0.0.1"  # Wyoming has no keys: loopback when HTTP has some
    assert listen_host("0.0.0.0", None, ()) == "0.0.0.0"
    assert listen_host("0.0.0.0", "192.168.1.5", ("k",)) == "192.168.1.5"


# The `wyoming` package's client against a real gateway.

@pytest.fixture
def server(keyed_gateway: tuple[str, int]) -> tuple[str, int]:
    return keyed_gateway


async def read(client: AsyncTcpClient, timeout: float = 30) -> TheirEvent:
    event = await asyncio.wait_for(client.read_event(), timeout)  # a bound on a hang, not a speed
    assert event is not None, "the server closed the connection"
    return event


async def audio_until(client: AsyncTcpClient, last: str) -> tuple[list[str], np.ndarray]:
    """Every event's type until one of type ``last``, and the audio of the chunks among them."""
    kinds, audio = [], bytearray()
    while not kinds or kinds[-1] != last:
        event = await read(client)
        kinds.append(event.type)
        if AudioChunk.is_type(event.type):
            chunk = AudioChunk.from_event(event)
            assert (chunk.rate, chunk.width, chunk.channels) == (24000, 2, 1)
            audio += chunk.audio
        assert not Error.is_type(event.type), event.data
    return kinds, np.frombuffer(bytes(audio), dtype="<i2").astype(np.float32) / 32768


def in_flight(url: str) -> int:
    health = httpx.get(url + "/health").json()
    return sum(engine["in_flight"] for engine in health["engines"]) + health["sessions"]


async def test_describe_lists_the_voice_library_as_one_streaming_tts_program(server: tuple[str, int]) -> None:
    async with AsyncTcpClient("127.0.0.1", server[1]) as client:
        await client.write_event(Describe().event())
        info = Info.from_event(await read(client))
    (program,) = info.tts
    assert program.supports_synthesize_streaming and program.installed and program.version
    assert program.attribution.name and program.attribution.url.startswith("https://")
    assert "default" in [voice.name for voice in program.voices]
    assert all(voice.languages == ["en"] for voice in program.voices)


async def test_synthesize_answers_watermarked_speech_and_the_connection_takes_another(
        server: tuple[str, int], watermarker) -> None:
    async with AsyncTcpClient("127.0.0.1", server[1]) as client:
        await client.write_event(Synthesize(TEXT, voice=SynthesizeVoice("DEFAULT")).event())  # names: any case
        start = AudioStart.from_event(await read(client))
        kinds, audio = await audio_until(client, "audio-stop")
        assert (start.rate, start.width, start.channels) == (24000, 2, 1)
        assert set(kinds[:-1]) == {"audio-chunk"} and len(kinds) > 3
        assert audio.size / 24000 > 3 and watermarker.detect(audio, 24000) >= 0.5
        await client.write_event(Synthesize("Nobody speaks.", voice=SynthesizeVoice("nobody")).event())
        refused = Error.from_event(await read(client))
        assert refused.code == "unknown_voice"
        await client.write_event(Synthesize("Still here.").event())
        assert AudioStart.is_type((await read(client)).type)
        kinds, audio = await audio_until(client, "audio-stop")
        assert audio.size / 24000 > 0.5


async def test_home_assistants_streamed_order_hears_audio_before_the_text_ends_and_speaks_it_once(
        server: tuple[str, int], watermarker) -> None:
    """synthesize-start, the LLM's text in pieces, the whole text again as synthesize, synthesize-stop: the first
    audio comes while the text still streams, and the audio is the text once, then synthesize-stopped."""
    words = (TEXT + " " + TEXT).split()
    async with AsyncTcpClient("127.0.0.1", server[1]) as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice("default")).event())
        for word in words[:18]:
            await client.write_event(SynthesizeChunk(word + " ").event())
        assert AudioStart.is_type((await read(client)).type)
        first = await read(client)
        assert AudioChunk.is_type(first.type)  # before the rest of the text was sent
        for word in words[18:]:
            await client.write_event(SynthesizeChunk(word + " ").event())
        await client.write_event(Synthesize(" ".join(words)).event())
        await client.write_event(SynthesizeStop().event())
        kinds, audio = await audio_until(client, "synthesize-stopped")
    assert kinds[-2:] == ["audio-stop", "synthesize-stopped"] and set(kinds[:-2]) == {"audio-chunk"}
    audio = np.concatenate([np.frombuffer(AudioChunk.from_event(first).audio, "<i2") / 32768, audio])
    assert watermarker.detect(audio.astype(np.float32), 24000) >= 0.5
    async with AsyncTcpClient("127.0.0.1", server[1]) as client:  # the same words in one piece, for their length
        await client.write_event(Synthesize(" ".join(words)).event())
        _, once = await audio_until(client, "audio-stop")
    assert 0.7 < audio.size / once.size < 1.3  # spoken once, not twice


async def test_a_client_that_disconnects_mid_speech_ends_its_engine_work(server: tuple[str, int]) -> None:
    url, port = server
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Synthesize(" ".join([TEXT] * 20)).event())
        assert AudioStart.is_type((await read(client)).type)
        assert AudioChunk.is_type((await read(client)).type)
    deadline = time.monotonic() + 10  # a bound on a leak, not a speed
    while await asyncio.to_thread(in_flight, url):
        assert time.monotonic() < deadline, "the engine went on for a client that had gone"
        await asyncio.sleep(0.05)



async def until_server_closes(writer: asyncio.StreamWriter, within: float = 10) -> None:
    """Bytes every 50 ms until the server has closed the connection whole (our writes reset), past its linger."""
    async with asyncio.timeout(within):  # a bound on a hang, not a speed
        with contextlib.suppress(ConnectionError):
            while True:
                writer.write(b"\n")
                await writer.drain()
                await asyncio.sleep(0.05)


async def test_connections_ended_mid_utterance_stop_their_audio_without_a_traceback(
        capfd: pytest.CaptureFixture[str]) -> None:
    """A stream the server cannot read on mid-utterance: the synthesis stops before the error event and the end of
    our side, and nothing is written after that end (asyncio's writer raised RuntimeError, a traceback in the log);
    a half-close the same. The server goes on: the engine work ends, another connection speaks. Its own server, so
    that its log is this test's to read."""
    port = free_port()
    with running_server("--wyoming-port", str(port), "--wyoming-host", "127.0.0.1") as url:
        for ending in ("garbage, kept open", "half-close"):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(encode(Event("synthesize", {"text": " ".join([TEXT] * 3)})))
            await writer.drain()
            await asyncio.sleep(0.05)  # the synthesis under way before the rest comes
            writer.write(b"not json\n") if ending.startswith("garbage") else writer.write_eof()
            await writer.drain()
            seen, events = [], EventReader()
            while data := await asyncio.wait_for(reader.read(65536), 30):
                seen += [event.type for event in events.feed(data)]
            if ending.startswith("garbage"):
                assert seen[-1] == "error" and "audio-stop" not in seen  # the error last: no audio after it
                await until_server_closes(writer)  # the engine's audio came while the server lingered
            writer.close()
            deadline = time.monotonic() + 10  # a bound on a leak, not a speed
            while await asyncio.to_thread(in_flight, url):
                assert time.monotonic() < deadline, f"the engine went on after a {ending}"
                await asyncio.sleep(0.05)
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Synthesize("Still here.").event())
            assert AudioStart.is_type((await read(client)).type)
            _, audio = await audio_until(client, "audio-stop")
        assert audio.size / 24000 > 0.5
    logged = capfd.readouterr().err
    assert "wyoming tts on tcp://" in logged  # its server's log
    assert "Traceback" not in logged and "RuntimeError" not in logged, logged
    assert "wyoming connection closed: an event's header" in logged  # one readable line instead


# Silent connections: closed after their timeout; only so many at once before they show a key (or an event).

async def closed_by_server(reader: asyncio.StreamReader, within: float) -> bytes:
    return await asyncio.wait_for(reader.read(), within)


async def test_silent_connections_are_closed_and_capped(server: tuple[str, int]) -> None:
    url, port = server
    ws_base = url.replace("http://", "ws://") + "/v1/text-to-speech/default/multi-stream-input"
    started = time.monotonic()
    silent = [await asyncio.open_connection("127.0.0.1", port) for _ in range(KEYED_MAX_UNAUTHENTICATED - 1)]
    async with connect(ws_base + "?inactivity_timeout=3") as quiet:  # the third: an ElevenLabs socket, no key yet
        extra_reader, extra_writer = await asyncio.open_connection("127.0.0.1", port)
        refused = await closed_by_server(extra_reader, 10)
        assert json.loads(refused.split(b"\n", 1)[1])["code"] == "too_many_unauthenticated"
        extra_writer.close()
        async with connect(ws_base, additional_headers={}) as over:
            assert json.loads(await over.recv())["error"] == "too_many_unauthenticated"
        assert over.close_code == 1013
        async with connect(url.replace("http://", "ws://") + "/v1/twilio") as phone:  # its key would come in start
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(phone.recv(), 10)
        assert phone.close_code == 1013
        with pytest.raises(Exception):
            async with asyncio.timeout(10):
                await quiet.recv()
        assert quiet.close_code == 1008 and "3 s" in quiet.close_reason  # their inactivity_timeout
    for reader, writer in silent:
        assert await closed_by_server(reader, 10) == b""  # closed, nothing said
        writer.close()
    assert time.monotonic() - started >= IDLE_S
    async with connect(ws_base, additional_headers={"xi-api-key": KEY}) as keyed:  # room again; keyed never waits
        await keyed.send(json.dumps({"text": "Hello. ", "context_id": "a", "flush": True}))
        assert "audio" in json.loads(await keyed.recv())
    async with connect(ws_base + "?inactivity_timeout=500") as bad:
        assert json.loads(await bad.recv())["error"] == "invalid_inactivity_timeout"
