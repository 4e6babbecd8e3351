"""ElevenLabs-compatible input streaming: the pure rules, then their real SDK and pipecat's wire protocol against a
real gateway on 127.0.0.1 (eSpeak), the audio checked for speech and the PerTh watermark, the alignment for words."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import ipaddress
import json
import ssl
import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
from websockets.asyncio.client import ClientConnection, connect

from engine.protocol import ProtocolError
from gateway import messages
from gateway.elevenlabs import translate
from gateway.elevenlabs.translate import Close, CloseSocket, Contexts, Final, Open, Say
from tests.server import running_server

KEY = "el-test-key"


# The rules, without sockets.

def msg(**fields: Any) -> translate.ClientMessage:
    return translate.parse(json.dumps(fields))


def test_one_context_opens_on_the_blank_first_message_and_ends_on_empty_text() -> None:
    rules = Contexts(multi=False)
    assert rules.receive(msg(text=" ", voice_settings={"stability": 0.5}, xi_api_key="k")) == [Open(None)]
    assert rules.receive(msg(text="Hello ", try_trigger_generation=True)) == [Say(None, messages.Text("Hello "))]
    assert rules.receive(msg(text="there. ", flush=True)) == [Say(None, messages.Text("there. ")),
                                                             Say(None, messages.Flush())]
    assert rules.receive(msg(text="")) == [Close(None, finish=True)]
    assert msg(text=" ", xi_api_key="k").api_key == "k" and msg(**{"text": " ", "xi-api-key": "j"}).api_key == "j"


def test_contexts_flush_close_keep_alive_and_close_socket() -> None:
    rules = Contexts(multi=True)
    assert rules.receive(msg(text=" ", context_id="a")) == [Open("a")]
    assert rules.receive(msg(text="One. ", context_id="a")) == [Say("a", messages.Text("One. "))]
    assert rules.receive(msg(text="", context_id="a")) == []  # keep-alive
    assert rules.receive(msg(text="")) == []
    assert rules.receive(msg(context_id="a", flush=True)) == [Say("a", messages.Flush())]
    assert rules.receive(msg(context_id="a", close_context=True)) == [Close("a", finish=True)]  # flushed: finish
    assert rules.receive(msg(text="Two ", context_id="b")) == [Open("b"), Say("b", messages.Text("Two "))]
    assert rules.receive(msg(context_id="b", close_context=True)) == [Close("b", finish=False)]  # barge-in: cancel
    assert rules.receive(msg(context_id="c", close_context=True)) == [Final("c")]  # nothing there
    rules.receive(msg(text="Three. ", context_id="d"))
    rules.receive(msg(text=" ", context_id="e"))
    assert rules.receive(msg(close_socket=True)) == [Close("d", finish=False), Final("e"), CloseSocket()]


@pytest.mark.parametrize(("frame", "words"), [
    ('{"text": 5}', "'text' must be a string"),
    ('{"text": "x", "flush": "yes"}', "'flush' must be true or false"),
    ('[1]', "JSON object"),
    ('{"text": "\\ud800"}', "surrogate"),
    ('nope', "not JSON"),
])
def test_bad_messages_say_what_is_wrong(frame: str, words: str) -> None:
    with pytest.raises(ProtocolError, match=words):
        translate.parse(frame)
    with pytest.raises(ProtocolError, match="multi-stream-input"):
        Contexts(multi=False).receive(msg(close_socket=True))


def test_audio_is_cut_between_words_and_each_piece_keeps_the_clock() -> None:
    words = [{"word": "Hi", "start": 10.3, "end": 10.5}, {"word": "you", "start": 10.6, "end": 11.2},
             {"word": "there.", "start": 11.5, "end": 12.1}]
    pieces = translate.audio_pieces(words, offset=10.0, duration=2.3, max_piece_s=1.3)
    assert [(p.start, p.end) for p in pieces] == [(0.0, 1.5), (1.5, 2.3)]
    first, second = (p.alignment for p in pieces)
    assert "".join(first["chars"]) == "Hi you " and "".join(second["chars"]) == "there. "
    assert first["charStartTimesMs"][:3] == [300, 400, 500] and first["charStartTimesMs"][3] == 600
    assert first["charStartTimesMs"][-1] + first["charDurationsMs"][-1] == 1500  # ends where the piece does
    assert second["charStartTimesMs"][0] == 0 and second["charStartTimesMs"][-1] + second["charDurationsMs"][-1] == 800
    assert all(d >= 0 for p in pieces for d in p.alignment["charDurationsMs"])
    assert translate.audio_pieces([], 0.0, 0.4) == [translate.Piece(0.0, 0.4, {"chars": [], "charStartTimesMs": [],
                                                                                "charDurationsMs": []})]


# A real gateway, behind TLS (their SDK's input streaming always dials wss://).

@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server("--api-key", KEY, voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield url


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture(scope="module")
def tls_url(server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``https://127.0.0.1:PORT`` terminating TLS in front of the gateway, as a deployment's proxy does; and the
    certificate a client must trust."""
    cert, key = self_signed(tmp_path_factory.mktemp("tls"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    host, port = server.removeprefix("http://").split(":")
    loop = asyncio.new_event_loop()
    started: list[int] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def relay(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(host, int(port))
        await asyncio.gather(pipe(client_r, server_w), pipe(server_r, client_w))

    async def main() -> None:
        proxy = await asyncio.start_server(relay, "127.0.0.1", 0, ssl=context)
        started.append(proxy.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    def run() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    while not started:
        thread.join(0.02)
    yield f"https://127.0.0.1:{started[0]}", cert
    loop.call_soon_threadsafe(lambda: [task.cancel() for task in asyncio.all_tasks()])
    thread.join(5)


def pcm_of(audio: bytes) -> np.ndarray:
    return np.frombuffer(audio, dtype="<i2").astype(np.float32) / 32768.0


def test_the_elevenlabs_sdk_streams_text_in_and_hears_watermarked_speech(
        tls_url: tuple[str, Path], watermarker, monkeypatch: pytest.MonkeyPatch) -> None:
    from elevenlabs.client import ElevenLabs

    url, cert = tls_url
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the SDK's default TLS context trusts our certificate
    client = ElevenLabs(api_key=KEY, base_url=url)

    def llm_tokens() -> Iterator[str]:
        yield from ["Hello", " there,", " this", " is", " streamed", " text", " from", " a", " model."]

    audio = b"".join(client.text_to_speech.convert_realtime(
        voice_id="default", text=llm_tokens(), model_id="eleven_flash_v2_5", output_format="pcm_16000"))
    wav = pcm_of(audio)
    assert wav.size / 16000 > 1.0 and np.sqrt(np.mean(wav ** 2)) > 0.02  # seconds of speech, not silence
    assert watermarker.detect(wav, 16000) >= 0.5


def test_the_sdk_gets_their_error_for_a_wrong_key(tls_url: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from elevenlabs.client import ElevenLabs
    from elevenlabs.core.api_error import ApiError

    url, cert = tls_url
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    client = ElevenLabs(api_key="wrong", base_url=url)
    with pytest.raises(ApiError) as info:
        b"".join(client.text_to_speech.convert_realtime(voice_id="default", text=iter(["Hi. "]),
                                                        output_format="pcm_16000"))
    assert info.value.status_code == 1008 and info.value.body["error"] == "unauthorized"


# pipecat's ElevenLabsTTSService, as it speaks on the wire (its source, src/pipecat/services/elevenlabs/tts.py):
# the multi-stream-input URL and header it uses, its messages, and how it turns alignment into word times.

def pipecat_url(server: str, voice: str = "default", sample_rate: int = 24000) -> str:
    return (server.replace("http://", "ws://") + f"/v1/text-to-speech/{voice}/multi-stream-input"
            f"?model_id=eleven_turbo_v2_5&output_format=pcm_{sample_rate}&auto_mode=true")


class PipecatListener:
    """What pipecat does with each reply: audio by context, word times from alignment (calculate_word_times, with a
    cumulative clock advanced by each alignment's last character), isFinal ending a context."""

    def __init__(self) -> None:
        self.audio: dict[str, bytearray] = {}
        self.words: dict[str, list[tuple[str, float]]] = {}
        self.finals: list[str] = []
        self.clock: dict[str, float] = {}
        self.partial: dict[str, tuple[str, float]] = {}

    def take(self, reply: dict[str, Any]) -> None:
        ctx = reply.get("contextId")
        if reply.get("isFinal") is True:
            self.finals.append(ctx)
            return
        if reply.get("audio"):
            self.audio.setdefault(ctx, bytearray()).extend(base64.b64decode(reply["audio"]))
        alignment = reply.get("alignment") or reply.get("normalizedAlignment")
        if not alignment:
            return
        word, start = self.partial.get(ctx, ("", 0.0))
        completed = []
        for char, at in zip(alignment["chars"], alignment["charStartTimesMs"]):
            if char == " ":
                if word:
                    completed.append((word, start))
                word = ""
            else:
                if not word:
                    start = self.clock.get(ctx, 0.0) + at / 1000
                word += char
        self.partial[ctx] = (word, start)
        if completed:
            self.words.setdefault(ctx, []).extend(completed)
            self.clock[ctx] = self.clock.get(ctx, 0.0) + (alignment["charStartTimesMs"][-1]
                                                          + alignment["charDurationsMs"][-1]) / 1000


async def pipecat_receive(ws: ClientConnection, listener: PipecatListener, until: str, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while until not in listener.finals:
            listener.take(json.loads(await ws.recv()))


async def test_pipecats_wire_protocol_gets_speech_and_word_times_that_match_the_audio(server: str,
                                                                                     watermarker) -> None:
    listener = PipecatListener()
    text = "Good morning. I can help you book a table for tonight, or tomorrow if you prefer."
    async with connect(pipecat_url(server), max_size=16 * 1024 * 1024, additional_headers={"xi-api-key": KEY}) as ws:
        await ws.send(json.dumps({"text": " ", "context_id": "turn-1",
                                  "voice_settings": {"stability": 0.5, "speed": 1.0}}))
        for sentence in ("Good morning. ", "I can help you book a table for tonight, ",
                         "or tomorrow if you prefer. "):
            await ws.send(json.dumps({"text": sentence, "context_id": "turn-1"}))
        await ws.send(json.dumps({"context_id": "turn-1", "flush": True}))
        await ws.send(json.dumps({"text": ""}))  # its keep-alive
        await ws.send(json.dumps({"context_id": "turn-1", "close_context": True}))
        await pipecat_receive(ws, listener, "turn-1")
        await ws.send(json.dumps({"close_socket": True}))
    wav = pcm_of(bytes(listener.audio["turn-1"]))
    assert watermarker.detect(wav, 24000) >= 0.5
    words = listener.words["turn-1"]
    assert [w for w, _ in words] == text.split()
    starts = [t for _, t in words]
    assert starts == sorted(starts) and starts[-1] < wav.size / 24000
    for _, start in words:  # each word time is where speech is in the audio pipecat received (-40 dBFS or more)
        at = int(start * 24000)
        assert np.sqrt(np.mean(wav[at:at + 2400] ** 2)) > 0.01


async def test_closing_a_context_mid_speech_stops_it_and_another_context_goes_on(server: str) -> None:
    listener = PipecatListener()
    long_text = "This is a long answer that the caller will interrupt. " * 40  # over two minutes of speech
    async with connect(pipecat_url(server, sample_rate=16000), additional_headers={"xi-api-key": KEY}) as ws:
        await ws.send(json.dumps({"text": " ", "context_id": "a"}))
        await ws.send(json.dumps({"text": long_text, "context_id": "a"}))
        async with asyncio.timeout(30):  # first audio of "a"
            while "a" not in listener.audio:
                listener.take(json.loads(await ws.recv()))
        await ws.send(json.dumps({"text": "", "context_id": "a"}))  # keep-alive: nothing changes
        await ws.send(json.dumps({"context_id": "a", "close_context": True}))  # barge-in
        await pipecat_receive(ws, listener, "a")
        heard_a = len(listener.audio["a"])
        await ws.send(json.dumps({"text": "Sorry, go ahead. ", "context_id": "b", "flush": True}))
        await ws.send(json.dumps({"context_id": "b", "close_context": True}))
        await pipecat_receive(ws, listener, "b")
        await ws.send(json.dumps({"close_socket": True}))
        with pytest.raises(Exception):  # the server closes the socket
            async with asyncio.timeout(10):
                while True:
                    await ws.recv()
    assert ws.close_code == 1000
    assert len(listener.audio["a"]) == heard_a  # nothing of "a" after its isFinal
    assert heard_a / 2 / 16000 < 60  # far less than the whole answer
    assert listener.finals == ["a", "b"] and [w for w, _ in listener.words["b"]] == ["Sorry,", "go", "ahead."]


async def test_refusals_are_their_error_messages(server: str) -> None:
    base = server.replace("http://", "ws://") + "/v1/text-to-speech/default"
    async with connect(base + "/stream-input?output_format=wav_1", additional_headers={"xi-api-key": KEY}) as ws:
        reply = json.loads(await ws.recv())
        assert reply["error"] == "invalid_output_format" and "pcm_16000" in reply["message"]
    assert ws.close_code == 1008
    async with connect(base + "/stream-input") as ws:  # no key in the header: the first message may carry it
        await ws.send(json.dumps({"text": " ", "xi_api_key": KEY}))
        await ws.send(json.dumps({"text": "Yes. "}))
        await ws.send(json.dumps({"text": ""}))
        replies = [json.loads(frame) async for frame in ws]
    assert replies[-1] == {"isFinal": True} and any(r.get("audio") for r in replies) and ws.close_code == 1000
    async with connect(base.replace("/default", "/nobody") + "/multi-stream-input",
                       additional_headers={"xi-api-key": KEY}) as ws:
        await ws.send(json.dumps({"text": "Hello. ", "context_id": "x", "flush": True}))
        await ws.send(json.dumps({"text": 7, "context_id": "x"}))
        replies = [json.loads(await ws.recv()) for _ in range(3)]
        await ws.send(json.dumps({"text": "Still here. ", "context_id": "y"}))  # the socket goes on
        await ws.send(json.dumps({"context_id": "y", "close_context": True}))
        more = json.loads(await ws.recv())
    codes = {r.get("error") for r in replies}
    assert {"unknown_voice", "bad_message"} <= codes and {"isFinal": True, "contextId": "x"} in replies
    assert more.get("contextId") == "y"


async def test_a_context_id_used_again_after_its_close_is_a_new_context(server: str) -> None:
    listener = PipecatListener()
    async with connect(pipecat_url(server), additional_headers={"xi-api-key": KEY}) as ws:
        for text in ("First answer. ", "Second answer. "):
            await ws.send(json.dumps({"text": text, "context_id": "turn", "flush": True}))
            await ws.send(json.dumps({"context_id": "turn", "close_context": True}))
        async with asyncio.timeout(30):
            while listener.finals.count("turn") < 2:
                listener.take(json.loads(await ws.recv()))
    # two contexts under one id, each ended by its own isFinal (they may play alongside: their words interleave)
    assert sorted(w for w, _ in listener.words["turn"]) == ["First", "Second", "answer.", "answer."]


async def test_a_socket_gone_mid_speech_leaves_no_session_even_with_an_id_used_again(server: str) -> None:
    import httpx

    long_text = "This keeps the speaker busy for quite a while. " * 30
    async with connect(pipecat_url(server), additional_headers={"xi-api-key": KEY}) as ws:
        await ws.send(json.dumps({"text": long_text, "context_id": "turn", "flush": True}))
        await ws.send(json.dumps({"context_id": "turn", "close_context": True}))  # still finishing...
        await ws.send(json.dumps({"text": long_text, "context_id": "turn", "flush": True}))  # ...when reused
        while "audio" not in json.loads(await ws.recv()):
            pass
    async with httpx.AsyncClient(headers={"xi-api-key": KEY}) as http:
        async with asyncio.timeout(10):  # a bound on a leak, not a speed
            while (await http.get(server + "/health")).json()["sessions"]:
                await asyncio.sleep(0.05)
