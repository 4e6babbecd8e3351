"""ElevenLabs-compatible input streaming: the pure rules, then their real SDK and pipecat's real ElevenLabs service
against a real gateway on 127.0.0.1 (eSpeak), the audio checked for speech and the PerTh watermark, the alignment for
words; then the multi-stream socket's barge-in, reused ids and refusals on the wire."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from engine.protocol import ProtocolError
from gateway import messages
from gateway.elevenlabs import translate
from gateway.elevenlabs.endpoint import UNAUTHORIZED
from gateway.elevenlabs.translate import Close, CloseSocket, Contexts, Final, Open, Say
from tests.pipecat_barge_in import check_barge_in
from tests.server import running_server
from tests.tls_front import tls_front

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


def test_a_second_close_of_a_context_still_finishing_cuts_it_off() -> None:
    """pipecat closes each turn's context once its text is flushed, and again when the user barges in."""
    rules = Contexts(multi=True)
    rules.receive(msg(text="A long answer. ", context_id="t", flush=True))
    assert rules.receive(msg(context_id="t", close_context=True)) == [Close("t", finish=True)]
    assert rules.receive(msg(context_id="t", close_context=True)) == [Close("t", finish=False)]  # barge-in
    assert rules.receive(msg(context_id="t", close_context=True)) == [Final("t")]
    rules.receive(msg(text="Another. ", context_id="u", flush=True))
    rules.receive(msg(context_id="u", close_context=True))
    rules.ended("u")  # its isFinal went out: nothing is left to cut
    assert rules.receive(msg(context_id="u", close_context=True)) == [Final("u")]
    rules.receive(msg(text="One. ", context_id="v", flush=True))
    rules.receive(msg(context_id="v", close_context=True))
    rules.receive(msg(text="Two. ", context_id="v", flush=True))  # the id is a new context's now
    assert rules.receive(msg(context_id="v", close_context=True)) == [Close("v", finish=True)]


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


def test_alignment_spells_the_text_between_words_at_their_edges_and_closes_it_with_a_space() -> None:
    spelling = translate.Spelling("## Hi **you**\n\n- 🎉")
    words = [{"word": "Hi", "start": 0.1, "end": 0.3, "span": [3, 5]},
             {"word": "**you**", "start": 0.5, "end": 0.8, "span": [6, 13], "spoken": "you"}]
    [piece] = translate.audio_pieces(words, offset=0.0, duration=1.0, spelling=spelling)
    assert "".join(piece.alignment["chars"]) == "## Hi **you**\n\n" and "".join(piece.normalized["chars"]) == "Hi you "
    assert piece.alignment["charStartTimesMs"][:6] == [100, 100, 100, 100, 200, 300]  # "## " at "Hi"'s start
    assert piece.alignment["charDurationsMs"][5] == 200  # the space after "Hi" lasts to "**you**"
    assert piece.alignment["charStartTimesMs"][-1] + piece.alignment["charDurationsMs"][-1] == 1000
    tail = translate.tail_alignment(spelling)
    assert tail == {"chars": [*"- 🎉", " "], "charStartTimesMs": [0] * 4, "charDurationsMs": [0] * 4}


# A real gateway, behind TLS (their SDK's input streaming always dials wss://).

@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server("--api-key", KEY, voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield url


@pytest.fixture(scope="module")
def tls_url(server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``https://127.0.0.1:PORT`` terminating TLS in front of the gateway, as a deployment's proxy does; and the
    certificate a client must trust."""
    with tls_front(server, tmp_path_factory.mktemp("tls")) as front:
        yield front


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
    # the SDK raises our error message, or the close frame's reason if its send saw the close first: both say why
    body = info.value.body
    assert info.value.status_code == 1008
    assert (body["error"] if isinstance(body, dict) else body) in ("unauthorized", f"unauthorized: {UNAUTHORIZED}")


async def test_pipecats_elevenlabs_service_hears_watermarked_speech_and_times_its_words_on_it(
        server: str, watermarker) -> None:
    """pipecat's real ElevenLabsTTSService in a pipecat pipeline (its own test harness), pointed at the gateway: its
    audio frames are speech, and the word times it derives from our alignment fall on that speech."""
    from pipecat.frames.frames import TTSAudioRawFrame, TTSSpeakFrame, TTSTextFrame
    from pipecat.services.elevenlabs.tts import ElevenLabsTTSService
    from pipecat.tests.utils import run_test

    class WordTimesHeard(ElevenLabsTTSService):
        """The service as it is, keeping the word times it reports (seconds from the start of its audio)."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.word_times: list[tuple[str, float]] = []

        async def add_word_timestamps(self, word_times: list[tuple[str, float]], *args: Any, **kwargs: Any) -> None:
            self.word_times += word_times
            await super().add_word_timestamps(word_times, *args, **kwargs)

    text = "Good morning. I can help you book a table for tonight, or tomorrow if you prefer."
    tts = WordTimesHeard(api_key=KEY, url=server.replace("http://", "ws://"), sample_rate=24000,
                         settings=ElevenLabsTTSService.Settings(voice="default"))
    async with asyncio.timeout(60):  # a bound on a hang, not a speed
        frames, _ = await run_test(tts, frames_to_send=[TTSSpeakFrame(text)], start_timeout=30)
    wav = pcm_of(b"".join(f.audio for f in frames if isinstance(f, TTSAudioRawFrame)))
    assert wav.size / 24000 > 2.0 and np.sqrt(np.mean(wav ** 2)) > 0.02  # seconds of speech, not silence
    assert watermarker.detect(wav, 24000) >= 0.5

    spoken = [f for f in frames if isinstance(f, TTSTextFrame)]
    assert [f.text for f in spoken] == [w for w, _ in tts.word_times] == text.split()
    starts = [t for _, t in tts.word_times]
    assert starts == sorted(starts) and starts[-1] < wav.size / 24000
    # the frames' presentation times are those word times on pipecat's clock, from the start of the audio
    assert [f.pts for f in spoken] == sorted(f.pts for f in spoken)
    assert all(abs((f.pts - spoken[0].pts) - (t - starts[0]) * 1e9) < 1e3 for f, t in zip(spoken, starts))
    for start in starts:  # each word time is where speech is in the audio pipecat received (-40 dBFS or more)
        at = int(start * 24000)
        assert np.sqrt(np.mean(wav[at:at + 2400] ** 2)) > 0.01


async def test_pipecat_barging_in_cuts_the_answer_off_and_its_next_turn_is_heard(server: str) -> None:
    """pipecat closes each turn's context once its text is sent, and again on an interruption: the second close
    cuts the answer off in the gateway (not left generating for nobody), and the next turn speaks on that socket."""
    from pipecat.services.elevenlabs.tts import ElevenLabsTTSService

    tts = ElevenLabsTTSService(api_key=KEY, url=server.replace("http://", "ws://"), sample_rate=16000,
                               settings=ElevenLabsTTSService.Settings(voice="default"))
    await check_barge_in(tts, server, KEY, "elevenlabs", 16000)


LLM_MARKDOWN = ["## Summary\n\n", "Here is **bold", "** news:\n\n- The first", " item 🎉\n- The second item.", "\n\n",
                "---\n\nThat's all,", " folks! 👋 "]


async def test_alignment_gives_back_every_character_of_llm_markdown_sent_piece_by_piece(server: str) -> None:
    """A client rebuilds its transcript from ``alignment``: the heading's marks, a list item's dash, a rule, bold marks
    and emoji, spoken as nothing, come back too, in order, on a clock that never goes backwards. (The text ends with
    a space, as their docs ask; one that does not gets one after it: ``tail_alignment``.)"""
    parts = LLM_MARKDOWN
    url = server.replace("http://", "ws://") + "/v1/text-to-speech/default/stream-input?output_format=pcm_24000"
    replies = []
    async with connect(url, additional_headers={"xi-api-key": KEY}) as ws:
        await ws.send(json.dumps({"text": " "}))
        for i, part in enumerate(parts):
            await ws.send(json.dumps({"text": part, "try_trigger_generation": True, "flush": i == 2}))
        await ws.send(json.dumps({"text": ""}))
        async with asyncio.timeout(30):
            while not (reply := json.loads(await ws.recv())).get("isFinal"):
                replies.append(reply)
    aligned = [r["alignment"] for r in replies if r.get("alignment")]
    assert "".join(c for a in aligned for c in a["chars"]) == "".join(parts)
    clock, times = 0, []  # each reply's times are from the start of its own audio, as their clients add them up
    for a in aligned:
        times += [clock + t for t in a["charStartTimesMs"]]
        assert all(d >= 0 for d in a["charDurationsMs"])
        clock += a["charStartTimesMs"][-1] + a["charDurationsMs"][-1] if a["chars"] else 0
    assert times == sorted(times)
    said = "".join(c for r in replies if r.get("normalizedAlignment") for c in r["normalizedAlignment"]["chars"])
    assert "Summary" in said and not {"#", "*", "🎉", "👋"} & set(said), said


# The multi-stream-input socket's own behaviours (barge-in, reused ids, a socket gone), as pipecat uses it.

def multi_url(server: str, voice: str = "default", sample_rate: int = 24000) -> str:
    return (server.replace("http://", "ws://") + f"/v1/text-to-speech/{voice}/multi-stream-input"
            f"?model_id=eleven_turbo_v2_5&output_format=pcm_{sample_rate}&auto_mode=true")


class Replies:
    """Each context's audio, the words of its alignment, and the contexts ended by their isFinal."""

    def __init__(self) -> None:
        self.audio: dict[str, bytearray] = {}
        self.chars: dict[str, str] = {}
        self.finals: list[str] = []

    def take(self, reply: dict[str, Any]) -> None:
        ctx = reply.get("contextId")
        if reply.get("isFinal") is True:
            self.finals.append(ctx)
            return
        if reply.get("audio"):
            self.audio.setdefault(ctx, bytearray()).extend(base64.b64decode(reply["audio"]))
        if reply.get("alignment"):
            self.chars[ctx] = self.chars.get(ctx, "") + "".join(reply["alignment"]["chars"])

    def words(self, ctx: str) -> list[str]:
        return self.chars.get(ctx, "").split()


async def receive_until_final(ws: ClientConnection, replies: Replies, ctx: str, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while ctx not in replies.finals:
            replies.take(json.loads(await ws.recv()))


async def test_closing_a_context_mid_speech_stops_it_and_another_context_goes_on(server: str) -> None:
    replies = Replies()
    long_text = "This is a long answer that the caller will interrupt. " * 40  # over two minutes of speech
    async with connect(multi_url(server, sample_rate=16000), additional_headers={"xi-api-key": KEY}) as ws:
        await ws.send(json.dumps({"text": " ", "context_id": "a"}))
        await ws.send(json.dumps({"text": long_text, "context_id": "a"}))
        async with asyncio.timeout(30):  # first audio of "a"
            while "a" not in replies.audio:
                replies.take(json.loads(await ws.recv()))
        await ws.send(json.dumps({"text": "", "context_id": "a"}))  # keep-alive: nothing changes
        await ws.send(json.dumps({"context_id": "a", "close_context": True}))  # barge-in
        await receive_until_final(ws, replies, "a")
        heard_a = len(replies.audio["a"])
        await ws.send(json.dumps({"text": "Sorry, go ahead. ", "context_id": "b", "flush": True}))
        await ws.send(json.dumps({"context_id": "b", "close_context": True}))
        await receive_until_final(ws, replies, "b")
        await ws.send(json.dumps({"close_socket": True}))
        with pytest.raises(Exception):  # the server closes the socket
            async with asyncio.timeout(10):
                while True:
                    await ws.recv()
    assert ws.close_code == 1000
    assert len(replies.audio["a"]) == heard_a  # nothing of "a" after its isFinal
    assert heard_a / 2 / 16000 < 60  # far less than the whole answer
    assert replies.finals == ["a", "b"] and replies.words("b") == ["Sorry,", "go", "ahead."]


async def test_each_contexts_alignment_gives_back_every_character_of_its_llm_markdown(server: str) -> None:
    """The multi-stream-input socket (pipecat's) gives back a context's markdown, emoji and blank lines too."""
    replies = Replies()
    async with connect(multi_url(server), additional_headers={"xi-api-key": KEY}) as ws:
        await ws.send(json.dumps({"text": " ", "context_id": "m"}))
        for i, part in enumerate(LLM_MARKDOWN):
            await ws.send(json.dumps({"text": part, "context_id": "m", "flush": i in (2, len(LLM_MARKDOWN) - 1)}))
        await ws.send(json.dumps({"context_id": "m", "close_context": True}))  # all flushed: it finishes its speech
        await receive_until_final(ws, replies, "m")
    assert replies.chars["m"] == "".join(LLM_MARKDOWN)


async def test_refusals_are_their_error_messages(server: str) -> None:
    base = server.replace("http://", "ws://") + "/v1/text-to-speech/default"
    async with connect(base + "/stream-input?output_format=wav_1", additional_headers={"xi-api-key": KEY}) as ws:
        reply = json.loads(await ws.recv())
        assert reply["error"] == "invalid_output_format" and "pcm_16000" in reply["message"]
    assert ws.close_code == 1008 and ws.close_reason.startswith("invalid_output_format: output_format must be one of")
    async with connect(base + "/stream-input") as ws:  # a wrong key in the first message
        await ws.send(json.dumps({"text": " ", "xi_api_key": "wrong"}))
        assert json.loads(await ws.recv())["error"] == "unauthorized"
        with pytest.raises(ConnectionClosed):
            await ws.recv()
    assert ws.close_code == 1008 and ws.close_reason == f"unauthorized: {UNAUTHORIZED}"
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
    replies = Replies()
    async with connect(multi_url(server), additional_headers={"xi-api-key": KEY}) as ws:
        for text in ("First answer. ", "Second answer. "):
            await ws.send(json.dumps({"text": text, "context_id": "turn", "flush": True}))
            await ws.send(json.dumps({"context_id": "turn", "close_context": True}))
        async with asyncio.timeout(30):
            while replies.finals.count("turn") < 2:
                replies.take(json.loads(await ws.recv()))
    # two contexts under one id, each ended by its own isFinal (they may play alongside: their words interleave)
    assert sorted(replies.words("turn")) == ["First", "Second", "answer.", "answer."]


async def test_a_socket_gone_mid_speech_leaves_no_session_even_with_an_id_used_again(server: str) -> None:
    import httpx

    long_text = "This keeps the speaker busy for quite a while. " * 30
    async with connect(multi_url(server), additional_headers={"xi-api-key": KEY}) as ws:
        await ws.send(json.dumps({"text": long_text, "context_id": "turn", "flush": True}))
        await ws.send(json.dumps({"context_id": "turn", "close_context": True}))  # still finishing...
        await ws.send(json.dumps({"text": long_text, "context_id": "turn", "flush": True}))  # ...when reused
        while "audio" not in json.loads(await ws.recv()):
            pass
    async with httpx.AsyncClient(headers={"xi-api-key": KEY}) as http:
        async with asyncio.timeout(10):  # a bound on a leak, not a speed
            while (await http.get(server + "/health")).json()["sessions"]:
                await asyncio.sleep(0.05)
