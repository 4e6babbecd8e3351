"""HTTP endpoints against a real server on 127.0.0.1 with the embedded eSpeak engine."""

from __future__ import annotations

import base64
import io
import json
import os
import signal
import struct
import time
import wave
from pathlib import Path

import av
import httpx
import numpy as np
import openai
import pytest
from websockets.asyncio.client import connect

from tests.server import assert_goes_down, health, running_server

SENTENCE = "The quick brown fox jumps over the lazy dog, and then it runs away into the forest."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    # --failover-wait 60: the killed worker's test asks for speech while it restarts, and a restart (1 s back-off, then
    # torch and PerTh loaded) took over the default 10 s on this 2-core machine under the whole suite
    with running_server("--max-text-chars", "600", "--max-upload-bytes", "2000000", "--failover-wait", "60",
                        voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield url


def decode(data: bytes) -> tuple[np.ndarray, int]:
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        frames = [f.to_ndarray().reshape(-1, f.samples).mean(axis=0) for f in container.decode(stream)]
        return np.concatenate(frames).astype(np.float32), stream.rate


def tts(server: str, **body) -> httpx.Response:
    return httpx.post(server + "/v1/tts", json=body, timeout=30)


def test_tts_streams_pcm_as_chunks_arrive(server: str) -> None:
    long_text = " ".join([SENTENCE] * 4)
    pieces = []
    with httpx.stream("POST", server + "/v1/tts", json={"text": long_text, "format": "pcm"}, timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["x-accel-buffering"] == "no" and r.headers["content-type"].startswith("audio/")
        pieces = list(r.iter_raw())
    pcm = np.frombuffer(b"".join(pieces), dtype=np.int16)
    assert len(pieces) > 1  # streamed, not one buffered body
    assert pcm.size / 24000 > 8 and np.sqrt(np.mean(pcm.astype(float) ** 2)) > 500


@pytest.mark.parametrize(("fmt", "rate"), [("wav", 24000), ("opus", 48000), ("mp3", 24000), ("mulaw", 8000)])
def test_tts_formats_decode(server: str, fmt: str, rate: int) -> None:
    r = tts(server, text=SENTENCE, format=fmt)
    assert r.status_code == 200
    if fmt == "mulaw":
        audio, got_rate = r.content, 8000
        assert len(audio) / 8000 > 3
        return
    audio, got_rate = decode(r.content)
    assert got_rate == rate and audio.size / rate > 3 and np.abs(audio).max() > 0.05


def test_tts_as_ndjson_lines_carries_audio_and_word_timings(server: str, watermarker) -> None:
    text = 'She said: "the quick brown fox jumps over the lazy dog" [laugh] twice.'
    with httpx.stream("POST", server + "/v1/tts", json={"text": text, "format": "ndjson", "sample_rate": 16000},
                      timeout=30) as r:
        assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(line) for line in r.iter_lines()]
    chunks, done = [line for line in lines if line["type"] == "chunk"], lines[-1]
    assert done["type"] == "done" and done["chunks"] == len(chunks)
    assert {line["type"] for line in lines[len(chunks):-1]} <= {"audio"}  # the resampler's tail, if any
    audio = np.frombuffer(b"".join(base64.b64decode(line["audio"]) for line in lines[:-1]), dtype="<i2")
    assert audio.size / 16000 == pytest.approx(done["audio_seconds"], abs=0.05)
    assert watermarker.detect(audio.astype(np.float32) / 32768, 16000) >= 0.5
    words = [w for c in chunks for w in c["words"]]
    assert " ".join(w["word"] for w in words) == text.replace(" [laugh]", "")  # the caller's words, tags aside
    assert all(c["timing"] == "exact" for c in chunks)
    assert all(c["offset"] <= w["start"] <= w["end"] <= c["offset"] + c["duration"] + 1e-3
               for c in chunks for w in c["words"])
    # The same through the Accept header, the audio in another format (its lines: a chunk's encoder output).
    r = httpx.post(server + "/v1/tts", json={"text": "Hello there.", "format": "mp3"},
                   headers={"Accept": "application/x-ndjson"}, timeout=30)
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert r.headers["x-audio-type"] == "audio/mpeg" and lines[-1]["type"] == "done"
    mp3, rate = decode(b"".join(base64.b64decode(line["audio"]) for line in lines[:-1]))
    assert rate == 24000 and mp3.size / rate > 0.4 and [w["word"] for w in lines[0]["words"]] == ["Hello", "there."]


def test_openai_client_speech(server: str, tmp_path: Path) -> None:
    client = openai.OpenAI(base_url=server + "/v1", api_key="unused")
    out = tmp_path / "speech.mp3"
    with client.audio.speech.with_streaming_response.create(model="tts-1", voice="alloy", input=SENTENCE) as resp:
        resp.stream_to_file(out)
    audio, rate = decode(out.read_bytes())
    assert audio.size / rate > 3
    pcm = client.audio.speech.create(model="chatterbox-turbo", voice="default", input="Hello.", response_format="pcm")
    assert len(pcm.content) / 2 / 24000 > 0.3


def sse_events(lines: list[str]) -> list[dict]:
    """The JSON events of an SSE body, by its ``data: `` lines (as LiveKit's OpenAI plugin reads them)."""
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ")]


def test_openai_client_streams_sse_events_as_chunks_are_made(server: str, watermarker) -> None:
    """The real ``openai`` SDK with ``stream_format="sse"``: base64 deltas of 24 kHz PCM, then ``done`` with usage."""
    client = openai.OpenAI(base_url=server + "/v1", api_key="unused")
    text = " ".join([SENTENCE] * 3)
    with client.audio.speech.with_streaming_response.create(
            model="gpt-4o-mini-tts", voice="ash", input=text, response_format="pcm", stream_format="sse",
            instructions="Speak in a cheerful tone.") as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        events = sse_events(list(resp.iter_lines()))
    deltas, done = events[:-1], events[-1]
    assert len(deltas) > 1 and {e["type"] for e in deltas} == {"speech.audio.delta"}  # streamed, chunk by chunk
    pcm = np.frombuffer(b"".join(base64.b64decode(e["audio"]) for e in deltas), dtype="<i2")
    audio = pcm.astype(np.float32) / 32768
    assert pcm.size / 24000 > 6 and watermarker.detect(audio, 24000) >= 0.5
    assert done["type"] == "speech.audio.done"
    usage = done["usage"]
    assert usage["input_tokens"] == len(text) and usage["output_tokens"] == round(pcm.size / 24000 * 25)
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


@pytest.mark.parametrize(("fmt", "rate"), [("mp3", 24000), ("opus", 48000), ("aac", 24000), ("flac", 24000),
                                           ("wav", 24000)])
def test_sse_carries_every_response_format_as_encoded_pieces(server: str, fmt: str, rate: int) -> None:
    r = httpx.post(server + "/v1/audio/speech", json={"model": "tts-1-hd", "input": SENTENCE, "voice": "marin",
                                                      "response_format": fmt, "stream_format": "sse"},
                   headers={"Accept": "application/octet-stream"}, timeout=30)  # what the SDK sends either way
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text.splitlines())
    assert events[-1]["type"] == "speech.audio.done" and len(events) > 1
    audio, got_rate = decode(b"".join(base64.b64decode(e["audio"]) for e in events[:-1]))
    assert got_rate == rate and audio.size / rate > 3 and np.abs(audio).max() > 0.05


def riff_sizes(wav: bytes) -> tuple[int, int]:
    """The RIFF and data sizes of a 16-bit mono PCM WAV with the 44-byte header."""
    assert wav[:4] == b"RIFF" and wav[8:16] == b"WAVEfmt " and wav[36:40] == b"data"
    return struct.unpack_from("<I", wav, 4)[0], struct.unpack_from("<I", wav, 40)[0]


def test_a_whole_wav_download_has_its_true_sizes(server: str) -> None:
    """As curl sends it: no ``model`` (OpenAI requires one; this server has one engine) and a wav that is a file, its
    RIFF and data sizes true, so a player or sox reads its real duration. Asked to stream, the open-ended header."""
    r = httpx.post(server + "/v1/audio/speech", json={"input": SENTENCE, "response_format": "wav"}, timeout=30)
    assert r.status_code == 200 and r.headers["content-type"] == "audio/wav"
    riff, data = riff_sizes(r.content)
    assert (riff, data) == (len(r.content) - 8, len(r.content) - 44)
    with wave.open(io.BytesIO(r.content)) as clip:
        assert clip.getframerate() == 24000 and clip.getnframes() * 2 == data and clip.getnframes() / 24000 > 3
    pcm = np.frombuffer(r.content[44:], dtype=np.int16)
    assert np.sqrt(np.mean(pcm.astype(float) ** 2)) > 500  # speech, not a header on silence

    client = openai.OpenAI(base_url=server + "/v1", api_key="unused")
    resampled = client.audio.speech.create(model="tts-1", voice="alloy", input="Hello.", response_format="wav").content
    assert riff_sizes(resampled)[1] == len(resampled) - 44
    at_16k = tts(server, text="Hello there.", format="wav", sample_rate=16000).content
    assert riff_sizes(at_16k)[1] == len(at_16k) - 44 and wave.open(io.BytesIO(at_16k)).getframerate() == 16000

    with httpx.stream("POST", server + "/v1/tts", json={"text": " ".join([SENTENCE] * 3), "format": "wav",
                                                         "stream": True}, timeout=30) as streamed:
        pieces = list(streamed.iter_raw())
    assert len(pieces) > 1 and riff_sizes(pieces[0]) == (0xFFFFFFFF, 0xFFFFFFFF)


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("/v1/tts", b"{not json", 400, "bad_request"),
        ("/v1/tts", b"[1]", 400, "bad_request"),
        ("/v1/tts", b'{"text": "' + b"x" * (1024 * 1024) + b'"}', 413, "too_large"),
        ("/v1/tts", json.dumps({"voice": "default"}).encode(), 400, "bad_request"),
        ("/v1/tts", json.dumps({"text": "   "}).encode(), 400, "bad_request"),
        ("/v1/tts", json.dumps({"text": "x" * 601}).encode(), 413, "text_too_long"),
        ("/v1/tts", json.dumps({"text": "Hi.", "format": "midi"}).encode(), 400, "bad_request"),
        ("/v1/tts", json.dumps({"text": "Hi.", "format": "mulaw", "sample_rate": 44100}).encode(), 400, "bad_request"),
        ("/v1/tts", json.dumps({"text": "Hi.", "voice": "nobody"}).encode(), 404, "unknown_voice"),
        ("/v1/audio/speech", json.dumps({"model": "tts-1", "input": "Hi.", "speed": 4.5}).encode(), 400, "bad_speed"),
        ("/v1/tts", json.dumps({"text": "Hi.", "normalize": "maybe"}).encode(), 400, "bad_normalize"),
        ("/v1/audio/speech", json.dumps({"model": "tts-1", "input": "Hi.", "stream_format": "ws"}).encode(), 400,
         "bad_request"),
        ("/v1/audio/speech", json.dumps({"model": "tts-1", "input": "Hi.", "instructions": 3}).encode(), 400,
         "bad_request"),
        ("/v1/audio/speech", json.dumps({"model": 1, "input": "Hi."}).encode(), 400, "bad_request"),
        ("/v1/audio/speech", json.dumps({"model": "tts-1"}).encode(), 400, "bad_request"),
        ("/v1/tts", json.dumps({"text": "Hi.", "format": "wav", "stream": "yes"}).encode(), 400, "bad_request"),
    ],
)
def test_bad_requests_are_clear_json_errors(server: str, path: str, body: bytes, status: int, code: str) -> None:
    r = httpx.post(server + path, content=body, headers={"content-type": "application/json"}, timeout=10)
    assert r.status_code == status
    assert r.json()["error"]["code"] == code and r.json()["error"]["message"]
    assert httpx.get(server + "/health").json()["status"] == "ok"


def test_voice_upload_speak_delete(server: str) -> None:
    clip = tts(server, text=" ".join([SENTENCE] * 2), format="wav").content  # real speech, > 5 s
    r = httpx.post(server + "/v1/voices", data={"name": "Narrator"}, files={"file": ("n.wav", clip)}, timeout=30)
    assert r.status_code == 201 and r.json()["voice"]["name"] == "narrator"  # names are case-insensitive
    names = [v["name"] for v in httpx.get(server + "/v1/voices").json()["voices"]]
    assert names == sorted(names) and "narrator" in names and "default" in names
    assert tts(server, text="Speaking as the narrator.", voice="NARRATOR").status_code == 200
    again = httpx.post(server + "/v1/voices", data={"name": "narrator"}, files={"file": ("n.wav", clip)}, timeout=30)
    assert again.status_code == 409 and again.json()["error"]["code"] == "exists"
    assert httpx.delete(server + "/v1/voices/Narrator").status_code == 204
    assert httpx.delete(server + "/v1/voices/narrator").json()["error"]["code"] == "unknown_voice"


async def test_openai_voice_names_are_the_library_voice_of_that_name_else_the_default() -> None:
    """The mapping alone (the engine's voice list given): eSpeak's audio is not deterministic enough to tell voices
    apart by their bytes."""
    from types import SimpleNamespace

    from gateway.http.speech import _openai_voice

    async def list_voices() -> list[dict]:
        return [{"name": "default"}, {"name": "coral"}, {"name": "narrator"}]

    state = SimpleNamespace(engine=SimpleNamespace(list_voices=list_voices))
    assert await _openai_voice(state, "coral") == "coral"  # a library voice of that name
    assert await _openai_voice(state, "cedar") == "default"  # none: the default voice
    assert await _openai_voice(state, "narrator") == "narrator"  # not one of OpenAI's names: as it is
    assert await _openai_voice(state, "nobody") == "nobody"  # (the engine refuses it: unknown_voice)


@pytest.mark.parametrize(
    ("name", "data", "status", "code"),
    [
        ("short", "short", 400, "too_short"),
        ("junk", b"this is not audio at all" * 100, 400, "bad_audio"),
        ("../escape", "short", 400, "bad_name"),
        ("big", b"\x00" * 2_100_000, 413, "too_large"),
    ],
)
def test_bad_uploads(server: str, name: str, data: bytes | str, status: int, code: str) -> None:
    if data == "short":
        data = tts(server, text="Too short.", format="wav").content
    r = httpx.post(server + "/v1/voices", data={"name": name}, files={"file": ("x.wav", data)}, timeout=30)
    assert r.status_code == status and r.json()["error"]["code"] == code


def test_disconnect_mid_stream_releases_the_stream(server: str) -> None:
    with httpx.stream("POST", server + "/v1/tts", json={"text": " ".join([SENTENCE] * 6)}, timeout=30) as r:
        next(r.iter_raw())
    deadline = time.monotonic() + 10
    while health(server).json()["sessions"] != 0:
        assert time.monotonic() < deadline, "the stream was not released after the client went away"
        time.sleep(0.1)


def test_metrics(server: str) -> None:
    tts(server, text="Counting this one.")
    text = httpx.get(server + "/metrics").text
    count = [line for line in text.splitlines()
             if line.startswith('cbf_time_to_first_audio_seconds_count{transport="http"}')]
    assert count and float(count[0].split()[-1]) >= 1
    assert "cbf_underruns_total" in text and "cbf_underruns_in_gateway_total" in text
    assert "cbf_active_sessions" in text and "cbf_real_time_factor" in text


def test_health_reports_the_engine_and_its_decode(server: str) -> None:
    """eSpeak has no decode mode and no prompt cache (null, and none in its engines entry); a batching engine's
    ``decode`` from its ready message is shown as it came."""
    from types import SimpleNamespace

    from engine.protocol import EngineReady
    from gateway.guard.tenancy import Tenancy
    from gateway.host.drain import Drain
    from gateway.host.draining import Draining
    from gateway.http.health import health_body
    from gateway.metrics import Metrics
    from gateway.prompt_cache.cache import PromptCache
    from gateway.prompt_cache.store import CacheSettings
    from gateway.settings import GatewaySettings

    health = httpx.get(server + "/health").json()
    engine = health["engine"]
    assert engine["engine"] == "espeak" and engine["decode"] is None and engine["prompt_cache"] is None
    assert "prompt_cache" not in health["engines"][0]
    ready = EngineReady("chatterbox-turbo", "cuda:0", "bfloat16", "/weights", True, decode="graph")
    engine = SimpleNamespace(ready=ready, engines=[], failovers={"moved": 0, "given_up": 0})
    metrics = Metrics()
    state = SimpleNamespace(engine=engine, workers=None, sessions={}, settings=GatewaySettings(), metrics=metrics,
                            drain=Draining(Drain(30)), prompts=PromptCache(CacheSettings(), engine, lambda: False, metrics),
                            tenancy=Tenancy(None, (), metrics))
    body = health_body(state)  # type: ignore[arg-type]
    assert body["status"] == "ok" and body["engine"]["decode"] == "graph"
    assert body["engine"]["device"] == "cuda:0" and body["watermark"] is True


def test_api_keys_and_session_limit() -> None:
    with running_server("--api-key", "k1,k2", "--max-sessions", "1") as url:
        assert httpx.get(url + "/health").status_code == 200
        assert httpx.get(url + "/v1/voices").status_code == 401
        assert httpx.get(url + "/v1/voices", headers={"authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(url + "/v1/voices", headers={"authorization": "Bearer k2"}).status_code == 200
        assert httpx.get(url + "/v1/voices?api_key=k1").status_code == 200
        assert httpx.get(url + "/metrics").status_code == 401

        async def check_ws() -> None:
            ws_url = url.replace("http://", "ws://") + "/v1/stream"
            async with connect(ws_url) as ws:
                event = json.loads(await ws.recv())
                assert event["type"] == "error" and event["code"] == "unauthorized"
            async with connect(ws_url, subprotocols=["cbf.v1", "cbf.key.k2"]) as ws:  # the page's way
                assert ws.subprotocol == "cbf.v1" and json.loads(await ws.recv())["type"] == "ready"
            async with connect(ws_url, subprotocols=["cbf.v1", "cbf.key.wrong"]) as ws:
                assert json.loads(await ws.recv())["code"] == "unauthorized"
            async with connect(ws_url + "?api_key=k1") as ws:
                assert json.loads(await ws.recv())["type"] == "ready"
                full = httpx.post(url + "/v1/tts?api_key=k1", json={"text": "Hello."})
                assert full.status_code == 503 and full.headers["retry-after"]
                assert full.json()["error"]["code"] == "session_limit"
                async with connect(ws_url + "?api_key=k1") as second:
                    assert json.loads(await second.recv())["code"] == "session_limit"

        import asyncio

        asyncio.run(check_ws())


def test_a_killed_worker_is_reported_and_restarted(server: str) -> None:
    """On the module's server (the other tests find its worker back, restarted, when this one has run)."""
    before = httpx.get(server + "/health").json()["worker"]
    os.kill(before["pid"], signal.SIGKILL)
    assert_goes_down(server, within=5, what="the dead worker", speech=200)  # held until the restart (--failover-wait)
    deadline = time.monotonic() + 60
    while (h := health(server)).status_code != 200:
        assert time.monotonic() < deadline, "the worker was not restarted"
        time.sleep(0.05)
    assert h.json()["worker"]["restarts"] == before["restarts"] + 1 and h.json()["worker"]["pid"] != before["pid"]
    assert tts(server, text="Back again.").status_code == 200
