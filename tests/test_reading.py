"""How text is read, end to end: LLM text (markdown, money, links, emoji) through the real worker's front end on a
real gateway on 127.0.0.1 (eSpeak), streamed token by token or sent whole, every timed word and "what was heard"
pointing into the text the client sent; ``normalize`` off; SSML's breaks and errors; speed (the openai SDK's, and
ElevenLabs' ``voice_settings``) with PerTh on what the listener gets; ElevenLabs' two alignments, and pipecat's
ElevenLabs service hearing the client's own words."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import time
import wave
from typing import Any

import httpx
import numpy as np
import openai
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.server import running_server

LLM_TEXT = "**Note:** it costs $3 million, see [the docs](https://example.com) today 🎉."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with running_server(voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield url


async def spoken_events(ws: ClientConnection, timeout: float = 30) -> tuple[list[dict[str, Any]], bytes]:
    """Events and audio of one utterance, up to its ``done`` (or an ``error``)."""
    events, audio = [], bytearray()
    async with asyncio.timeout(timeout):
        while True:
            frame = await ws.recv()
            if isinstance(frame, bytes):
                audio += frame
                continue
            event = json.loads(frame)
            events.append(event)
            if event["type"] in ("done", "error"):
                return events, bytes(audio)


def pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


async def speak_over_websocket(server: str, parts: list[str], **config: Any) -> tuple[list[dict], dict, bytes]:
    async with connect(server.replace("http://", "ws://") + "/v1/stream") as ws:
        if config:
            await ws.send(json.dumps({"type": "config", **config}))
        for part in parts:
            await ws.send(json.dumps({"type": "text", "text": part}))
        await ws.send(json.dumps({"type": "end"}))
        events, audio = await spoken_events(ws)
    chunks = [e for e in events if e["type"] == "chunk"]
    return chunks, events[-1], audio


@pytest.mark.parametrize("size", [3, 1000], ids=["token-by-token", "whole"])
async def test_llm_text_is_read_as_a_person_would_and_every_word_maps_back(server: str, size: int) -> None:
    chunks, done, audio = await speak_over_websocket(server, pieces(LLM_TEXT, size))
    assert done["type"] == "done", done
    spoken = " ".join(c["text"] for c in chunks)
    assert "three million dollars" in spoken and "the docs" in spoken, spoken
    assert not any(mark in spoken for mark in ("$", "*", "[", "](", "https", "example.com", "🎉")), spoken
    # each chunk says which of the client's characters it speaks for; together, in order, all of the speech
    spans = [c["span"] for c in chunks]
    assert all(LLM_TEXT[a:b] == c["source"] for (a, b), c in zip(spans, chunks))
    assert spans == sorted(spans) and all(a < b for a, b in spans)
    words = [w for c in chunks for w in c["words"]]
    money = next(w for w in words if w["word"] == "$3 million,")  # the client's word, timed as one
    assert money["spoken"] == "three million dollars," and LLM_TEXT[slice(*money["span"])] == "$3 million,"
    link = [w for w in words if w.get("spoken") in ("the", "docs")]  # a link: its text spoken, the URL not
    assert [w["word"] for w in link] == ["[the", "docs](https://example.com)"]  # the words as the client wrote them
    assert all(LLM_TEXT[slice(*w["span"])] == w["word"] for w in words)
    assert all(a["end"] <= b["start"] + 1e-3 for a, b in zip(words, words[1:]))
    # what was heard is the client's text, up to a character offset in it
    assert done["heard_text"] == " ".join(w["word"] for w in words)
    assert LLM_TEXT.index("today") < done["heard_chars"] <= len(LLM_TEXT)
    assert len(audio) / 48000 > 2.0


async def test_normalize_off_reads_the_text_as_sent(server: str) -> None:
    chunks, done, _ = await speak_over_websocket(server, ["It costs $3 million today."], normalize="off")
    assert done["type"] == "done" and "$3 million" in " ".join(c["text"] for c in chunks)
    refused = await speak_over_websocket(server, ["x"], normalize="sometimes")
    assert refused[1]["type"] == "error" and refused[1]["code"] == "bad_normalize"


def pcm_of(audio: bytes) -> np.ndarray:
    return np.frombuffer(audio, dtype="<i2").astype(np.float32) / 32768.0


def longest_silence(wav: np.ndarray, rate: int) -> float:
    """The longest run of 10 ms frames below -50 dBFS inside the speech (its edges excluded), in seconds."""
    frame = rate // 100
    levels = [np.sqrt(np.mean(wav[i:i + frame] ** 2)) for i in range(0, wav.size - frame, frame)]
    loud = [i for i, level in enumerate(levels) if level > 10 ** (-50 / 20)]
    run = best = 0
    for level in levels[loud[0]:loud[-1]]:
        run = run + 1 if level <= 10 ** (-50 / 20) else 0
        best = max(best, run)
    return best / 100


def test_ssml_breaks_are_exact_pauses_and_bad_ssml_is_a_clear_400(server: str, watermarker) -> None:
    ssml = '<speak>Hello <say-as interpret-as="characters">FBI</say-as>.<break time="1200ms"/>Goodbye.</speak>'
    reply = httpx.post(server + "/v1/tts", json={"text": ssml, "format": "ndjson"}, timeout=30)
    assert reply.status_code == 200, reply.text
    lines = [json.loads(line) for line in reply.text.splitlines()]
    chunks = [line for line in lines if line["type"] == "chunk"]
    assert [c["text"] for c in chunks][:1] == ["Hello F B I."] and "Goodbye" in chunks[-1]["text"]
    wav = pcm_of(b"".join(base64.b64decode(line["audio"]) for line in lines if "audio" in line))
    assert 1.2 <= longest_silence(wav, 24000) < 1.6  # the break (and the decay kept after the last sound)
    assert watermarker.detect(wav, 24000) >= 0.5
    hello, fbi = [w for c in chunks for w in c["words"]][:2]
    assert hello["word"] == "Hello" and "FBI" in fbi["word"] and fbi["spoken"].startswith("F B I")  # the element
    for bad, problem in (("<speak>Hello <break time='1s'>", "never closed"), ("<speak>Hi</p></speak>", "</p>"),
                         ('<!DOCTYPE x [<!ENTITY a "b">]><speak>&a;</speak>', "DOCTYPE")):
        refused = httpx.post(server + "/v1/tts", json={"text": bad}, timeout=30)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "bad_ssml", refused.text
        assert problem.lower() in refused.json()["error"]["message"].lower(), refused.text
    assert httpx.post(server + "/v1/tts", json={"text": "Still speaking."}, timeout=30).status_code == 200


def wav_seconds(data: bytes) -> tuple[np.ndarray, float]:
    with wave.open(io.BytesIO(data)) as w:
        frames = w.readframes(w.getnframes())
        return pcm_of(frames), w.getnframes() / w.getframerate()


def test_the_openai_sdk_speed_changes_the_pace_not_the_words(server: str, watermarker) -> None:
    client = openai.OpenAI(base_url=server + "/v1", api_key="unused")
    text = "The quick brown fox jumps over the lazy dog, and then it runs away into the forest."
    took = {}
    for speed in (1.0, 2.0, 0.5):
        audio = client.audio.speech.create(model="tts-1", voice="alloy", input=text, response_format="wav",
                                           speed=speed).read()
        wav, took[speed] = wav_seconds(audio)
        assert watermarker.detect(wav, 24000) >= 0.5  # PerTh on what the listener gets, after the stretch
    assert took[2.0] / took[1.0] == pytest.approx(0.5, abs=0.08)
    assert took[0.5] / took[1.0] == pytest.approx(2.0, abs=0.25)
    with pytest.raises(openai.BadRequestError) as refused:
        client.audio.speech.create(model="tts-1", voice="alloy", input=text, speed=4.5)
    assert "0.25 to 4.0" in str(refused.value)


async def test_elevenlabs_alignment_is_the_text_sent_and_normalized_alignment_the_text_spoken(server: str) -> None:
    url = (server.replace("http://", "ws://") + "/v1/text-to-speech/default/stream-input"
           "?model_id=eleven_flash_v2_5&output_format=pcm_24000")
    replies = []
    async with connect(url) as ws:
        await ws.send(json.dumps({"text": " ", "voice_settings": {"speed": 1.25}}))
        for part in pieces("I paid $5 on 3/4. ", 4):
            await ws.send(json.dumps({"text": part}))
        await ws.send(json.dumps({"text": ""}))
        async with asyncio.timeout(30):
            while not (reply := json.loads(await ws.recv())).get("isFinal"):
                replies.append(reply)
    sent = "".join("".join(r["alignment"]["chars"]) for r in replies if r.get("alignment"))
    said = "".join("".join(r["normalizedAlignment"]["chars"]) for r in replies if r.get("normalizedAlignment"))
    assert sent.split() == ["I", "paid", "$5", "on", "3/4."], sent
    assert "five dollars" in said and "$" not in said, said
    fast = pcm_of(b"".join(base64.b64decode(r["audio"]) for r in replies if r.get("audio")))
    async with connect(url) as ws:  # the same text at speed 1 takes longer
        await ws.send(json.dumps({"text": "I paid $5 on 3/4. "}))
        await ws.send(json.dumps({"text": ""}))
        audio = bytearray()
        async with asyncio.timeout(30):
            while not (reply := json.loads(await ws.recv())).get("isFinal"):
                audio += base64.b64decode(reply.get("audio") or "")
    assert fast.size < 0.9 * len(audio) / 2


async def test_pipecats_elevenlabs_service_times_the_clients_own_words(server: str) -> None:
    """pipecat's real ElevenLabsTTSService builds its words from our ``alignment``: the LLM's words as it wrote them
    ("$20", "50%"), though the voice said "twenty dollars" and "fifty percent"."""
    from pipecat.frames.frames import TTSSpeakFrame, TTSTextFrame
    from pipecat.services.elevenlabs.tts import ElevenLabsTTSService
    from pipecat.tests.utils import run_test

    text = "Your refund of $20 is 50% of the fee."
    tts = ElevenLabsTTSService(api_key="unused", url=server.replace("http://", "ws://"), sample_rate=24000,
                               settings=ElevenLabsTTSService.Settings(voice="default"))
    async with asyncio.timeout(60):  # a bound on a hang, not a speed
        frames, _ = await run_test(tts, frames_to_send=[TTSSpeakFrame(text)], start_timeout=30)
    assert [f.text for f in frames if isinstance(f, TTSTextFrame)] == text.split()


def test_say_dry_run_shows_the_spoken_form_without_audio(capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.cli import build_parser

    args = build_parser().parse_args(["say", "--dry-run", "Meet **Dr. Smith** at 3:30 pm, it costs $4.99."])
    started = time.monotonic()
    assert args.run(args) == 0
    assert time.monotonic() - started < 30  # no worker was started (a bound on a hang, not a speed)
    out = capsys.readouterr().out.splitlines()
    assert "Doctor Smith" in out[0] and "four dollars and ninety-nine cents" in out[0] and "*" not in out[0]
    assert any(line.strip().startswith("'$4.99") for line in out[1:])


def test_bench_text_prints_the_front_ends_cost(capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.cli import build_parser

    args = build_parser().parse_args(["bench", "text", "--repeats", "2", "--json"])
    assert args.run(args) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["texts"] == 5 and figures["repeats"] == 2
    for way in ("whole_text", "per_token", "streamed_text"):
        assert 0 < figures[way]["p50_ms"] <= figures[way]["p95_ms"] <= figures[way]["max_ms"]


PLS = """<?xml version="1.0" encoding="UTF-8"?>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" xml:lang="en-US">
  <lexeme><grapheme>SQL</grapheme><alias>sequel</alias></lexeme>
  <lexeme><grapheme>Nginx</grapheme><phoneme>ˈɛndʒɪn ˈɛks</phoneme></lexeme>
</lexicon>""".encode()


def ndjson_text(server: str, **body: Any) -> tuple[int, list[dict[str, Any]]]:
    reply = httpx.post(server + "/v1/tts", json={"format": "ndjson", **body}, timeout=30)
    if reply.status_code != 200:
        return reply.status_code, [reply.json()]
    return 200, [json.loads(line) for line in reply.text.splitlines() if '"chunk"' in line[:20]]


async def test_lexicons_uploaded_then_named_by_a_request_or_applied_as_the_default(server: str) -> None:
    text = "Our SQL server runs nginx."
    bad = httpx.put(server + "/v1/lexicons/tech", content=b"<lexicon><lexeme><grapheme>x", timeout=30)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_lexicon", bad.text
    stored = httpx.put(server + "/v1/lexicons/tech", content=PLS, timeout=30)
    assert stored.status_code == 201 and stored.json()["lexicon"] == {"name": "tech", "rules": 1, "skipped": 1}
    assert [x["name"] for x in httpx.get(server + "/v1/lexicons").json()["lexicons"]] == ["tech"]
    _, plain = ndjson_text(server, text=text)
    assert "S Q L" in plain[0]["text"]  # an acronym, spelled
    _, named = ndjson_text(server, text=text, lexicons=["tech"])
    sql = next(w for c in named for w in c["words"] if w["word"] == "SQL")
    assert "sequel" in named[0]["text"] and sql["spoken"] == "sequel"  # the caller's word, the lexicon's reading
    status, refused = ndjson_text(server, text=text, lexicons=["nobody"])
    assert status == 404 and refused[0]["error"]["code"] == "unknown_lexicon"
    rules = {"rules": [{"type": "alias", "string_to_replace": "nginx", "alias": "engine x", "case_sensitive": False}]}
    assert httpx.put(server + "/v1/lexicons/default", content=json.dumps(rules), timeout=30).status_code == 201
    try:
        _, defaulted = ndjson_text(server, text=text, lexicons=["tech"])  # the request's, then the server's default
        assert "sequel" in defaulted[0]["text"] and "engine x" in " ".join(c["text"] for c in defaulted)
        url = (server.replace("http://", "ws://") + "/v1/text-to-speech/default/stream-input"
               "?model_id=eleven_flash_v2_5&output_format=pcm_24000")
        async with connect(url) as ws:  # ElevenLabs' locators name the lexicons
            await ws.send(json.dumps({"text": " ", "pronunciation_dictionary_locators": [
                {"pronunciation_dictionary_id": "tech", "version_id": "v1"}]}))
            await ws.send(json.dumps({"text": text + " "}))
            await ws.send(json.dumps({"text": ""}))
            said = ""
            async with asyncio.timeout(30):
                while not (reply := json.loads(await ws.recv())).get("isFinal"):
                    said += "".join((reply.get("normalizedAlignment") or {}).get("chars", []))
        assert "sequel" in said and "engine x" in said, said
    finally:
        assert httpx.delete(server + "/v1/lexicons/default", timeout=30).status_code == 204
    assert httpx.delete(server + "/v1/lexicons/tech", timeout=30).status_code == 204
    assert httpx.delete(server + "/v1/lexicons/tech", timeout=30).status_code == 404


async def test_websocket_speed_and_ssml_prosody_rate_set_the_pace(server: str) -> None:
    """A session's ``speed`` and SSML's ``<prosody rate>`` (on top of it) stretch the audio; the words are the same."""
    text = "The quick brown fox jumps over the lazy dog, and then it runs away into the forest."
    seconds = {}
    for name, config, said in (("plain", {}, text), ("fast", {"speed": 1.5}, text),
                               ("faster", {"speed": 1.5}, f'<speak><prosody rate="x-fast">{text}</prosody></speak>')):
        chunks, done, audio = await speak_over_websocket(server, [said], **config)
        assert done["type"] == "done", done
        assert " ".join(c["text"] for c in chunks).split() == text.split()
        seconds[name] = len(audio) / 48000
    assert seconds["fast"] / seconds["plain"] == pytest.approx(1 / 1.5, abs=0.08)
    assert seconds["faster"] / seconds["plain"] == pytest.approx(1 / 2.25, abs=0.08)  # 1.5 x x-fast's 1.5
