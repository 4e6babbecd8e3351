"""engine/engines/http_dialects/: what each buffered TTS server is sent and how its reply is read (pure), and the
HTTP engine against replicas of devnen's server and Fish's API (written from their documentation: ``POST /tts`` with
``voice_mode``, ``GET /get_predefined_voices``, ``POST /upload_reference``; ``POST /v1/tts`` with ``reference_id``),
eSpeak speaking behind them."""

from __future__ import annotations

import asyncio
import contextlib
import io
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator

import numpy as np
import pytest
import soundfile as sf
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from engine.engines.base import EngineError
from engine.engines.http import HttpEngine
from engine.engines.http_dialects import Voice, base_url, decode_reply, dialect
from gateway.audio import make_encoder
from tests.server import serving

SECOND = np.sin(2 * np.pi * 220 * np.arange(24000) / 24000).astype(np.float32) * 0.5


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, samples, rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def encoded(fmt: str) -> bytes:
    encoder = make_encoder(fmt)
    return encoder.encode((SECOND * 32767).astype("<i2").tobytes()) + encoder.flush()


def test_each_dialect_asks_for_one_whole_chunk_in_a_voice() -> None:
    speech = dialect("openai").speech("Hello there.", Voice("af_bella"))
    assert speech.path == "/v1/audio/speech"
    assert speech.json == {"model": "tts-1", "input": "Hello there.", "voice": "af_bella", "response_format": "wav"}
    predefined = dialect("devnen").speech("Hi.", Voice("Emily.wav"))
    assert predefined.path == "/tts" and predefined.json["split_text"] is False  # the chunk is ours: never re-split
    assert predefined.json["voice_mode"] == "predefined" and predefined.json["predefined_voice_id"] == "Emily.wav"
    clone = dialect("devnen").speech("Hi.", Voice("cbf-1.wav", "clone")).json
    assert clone["voice_mode"] == "clone" and clone["reference_audio_filename"] == "cbf-1.wav"
    fish = dialect("fish").speech("Hi.", Voice("keeper"))
    assert fish.path == "/v1/tts" and fish.json["reference_id"] == "keeper" and fish.json["streaming"] is False
    assert "reference_id" not in dialect("fish").speech("Hi.", Voice("default")).json
    with pytest.raises(ValueError, match="openai, devnen or fish"):
        dialect("elevenlabs")


@pytest.mark.parametrize(("given", "spoken", "root"), [
    ("http://tts:8880", "openai", "http://tts:8880"),
    ("http://tts:8880/", "openai", "http://tts:8880"),
    ("http://tts:8880/v1", "openai", "http://tts:8880"),  # as OpenAI clients write it
    ("http://tts:8880/v1/", "openai", "http://tts:8880"),
    ("http://tts:8880/v1/audio", "openai", "http://tts:8880"),
    ("https://proxy/kokoro/v1", "openai", "https://proxy/kokoro"),  # a proxy's prefix is kept
    ("http://fish:8080/v1", "fish", "http://fish:8080"),
    ("http://fish:8080/v1/tts/", "fish", "http://fish:8080"),
    ("http://devnen:8004/", "devnen", "http://devnen:8004"),
    ("http://devnen:8004/v1", "devnen", "http://devnen:8004/v1"),  # its paths are /tts...: nothing would double
])
def test_the_base_url_loses_only_the_path_its_dialect_would_double(given: str, spoken: str, root: str) -> None:
    assert base_url(given, dialect(spoken)) == root


def test_voice_listings_in_the_shapes_servers_answer() -> None:
    assert dialect("openai").voice_names({"voices": ["af_bella", "am_adam"]}) == ["af_bella", "am_adam"]
    assert dialect("openai").voice_names({"voices": [{"id": "alloy", "name": "Alloy"}, {"x": 1}]}) == ["alloy"]
    assert dialect("devnen").voice_names([{"display_name": "Emily", "filename": "Emily.wav"}]) == ["Emily.wav"]
    with pytest.raises(EngineError) as refused:
        dialect("openai").voice_names({"voices": "everyone"})
    assert refused.value.code == "bad_backend_reply"


@pytest.mark.parametrize(("body", "content_type"), [
    (wav_bytes(SECOND, 24000), "audio/wav"),
    (wav_bytes(np.interp(np.arange(44100) / 44100, np.arange(24000) / 24000, SECOND), 44100), "audio/wav"),
    ((SECOND * 32767).astype("<i2").tobytes(), "audio/pcm"),
    ((np.interp(np.arange(16000) / 16000, np.arange(24000) / 24000, SECOND) * 32767).astype("<i2").tobytes(),
     "audio/L16; rate=16000"),
    (encoded("mp3"), "audio/mpeg"),
    (encoded("opus"), "audio/ogg"),
    (encoded("opus"), "application/octet-stream"),  # a server that does not say: the bytes do
])
def test_replies_decode_to_one_second_at_24_khz(body: bytes, content_type: str) -> None:
    audio = decode_reply(body, content_type, 24000, 24000)
    assert audio.dtype == np.float32 and abs(audio.size - 24000) < 2400  # codec padding aside
    spectrum = np.abs(np.fft.rfft(audio[:19200]))
    assert abs(np.argmax(spectrum) * 24000 / 19200 - 220) < 5  # the same tone, at the right pitch


@pytest.mark.parametrize(("body", "content_type"), [
    (b'{"detail": "CUDA out of memory"}', "application/json"),
    (b"Internal error", "text/plain"),
    (b"\x00\x01 certainly not audio" * 20, "audio/wav"),
    (b"", "audio/pcm"),
])
def test_a_reply_that_is_not_audio_is_a_bad_backend_reply(body: bytes, content_type: str) -> None:
    with pytest.raises(EngineError) as refused:
        decode_reply(body, content_type, 24000, 24000)
    assert refused.value.code == "bad_backend_reply"


class Replicas:
    """devnen's and Fish's endpoints, speaking with eSpeak; what each request asked for is kept."""

    def __init__(self, espeak: Any) -> None:
        self.espeak = espeak
        self.asked: list[dict[str, Any]] = []
        self.uploads: dict[str, bytes] = {}
        self.auth: str | None = None  # the last request's Authorization header
        self.in_flight = self.most_in_flight = 0
        self.hold_until: int | None = None  # openai: hold requests until this many were in flight at once (or 10 s)
        self._more_in_flight = asyncio.Condition()

    def _speak(self, text: str) -> Response:
        wav = self.espeak.synthesize(text, self.espeak.default_voice(), threading.Event())
        return Response(wav_bytes(wav, self.espeak.sample_rate), media_type="audio/wav")

    async def tts(self, request: Request) -> Response:
        body = await request.json()
        self.asked.append(body)
        if body["voice_mode"] == "clone" and body["reference_audio_filename"] not in self.uploads:
            return JSONResponse({"detail": "reference file not found"}, status_code=404)
        return self._speak(body["text"])

    async def voices(self, request: Request) -> Response:
        return JSONResponse([{"display_name": "Emily", "filename": "Emily.wav"}])

    async def upload(self, request: Request) -> Response:
        form = await request.form()
        upload = form["files"]
        self.uploads[upload.filename] = await upload.read()
        return JSONResponse({"message": "ok", "uploaded_files": [upload.filename]})

    async def fish(self, request: Request) -> Response:
        body = await request.json()
        self.asked.append(body)
        self.auth = request.headers.get("authorization")
        return self._speak(body["text"])

    async def openai(self, request: Request) -> Response:
        """Takes 0.2 s per request, several at once if asked: how many were in flight together is kept."""
        body = await request.json()
        async with self._more_in_flight:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self._more_in_flight.notify_all()
            if self.hold_until is not None:
                with contextlib.suppress(TimeoutError):  # an engine that sends fewer at once is still answered
                    await asyncio.wait_for(self._more_in_flight.wait_for(
                        lambda: self.most_in_flight >= self.hold_until), 10)
        await asyncio.sleep(0.2)  # time for one more than allowed to arrive, if the engine sent it
        async with self._more_in_flight:
            self.in_flight -= 1
        return self._speak(body["input"])

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/tts", self.tts, methods=["POST"]), Route("/get_predefined_voices", self.voices),
                                 Route("/v1/audio/speech", self.openai, methods=["POST"]),
                                 Route("/upload_reference", self.upload, methods=["POST"]),
                                 Route("/v1/tts", self.fish, methods=["POST"])])


@pytest.fixture(scope="module")
def replicas(espeak_engine) -> Iterator[tuple[Replicas, str]]:
    replica = Replicas(espeak_engine)
    with serving(replica.app()) as url:
        yield replica, url


def test_devnen_voices_are_listed_and_a_clone_is_uploaded_then_used(replicas, espeak_engine) -> None:
    replica, url = replicas
    engine = HttpEngine(url, dialect("devnen"))
    engine.warmup()
    assert engine.default_voice() == Voice("Emily.wav") and "emily.wav" in engine.named_voices()
    audio = engine.synthesize("Good morning.", engine.default_voice(), threading.Event())
    assert audio.size > 12000 and replica.asked[-1]["predefined_voice_id"] == "Emily.wav"
    clone = engine.prepare_voice(SECOND.repeat(6), 24000)
    assert clone.mode == "clone" and clone.id in replica.uploads
    engine.synthesize("In my own voice.", clone, threading.Event())
    assert replica.asked[-1]["reference_audio_filename"] == clone.id
    with pytest.raises(EngineError) as refused:  # the server lost it: its refusal, said as such
        engine.synthesize("Gone.", Voice("cbf-missing.wav", "clone"), threading.Event())
    assert refused.value.code == "bad_backend_reply" and "404" in str(refused.value)


def test_fish_speaks_with_a_configured_reference_and_refuses_uploads(replicas) -> None:
    replica, url = replicas
    engine = HttpEngine(url, dialect("fish"), voices=("keeper",), key="secret-key")
    engine.warmup()
    assert engine.default_voice() == Voice("keeper")
    assert engine.synthesize("Hello from Fish.", engine.default_voice(), threading.Event()).size > 12000
    assert replica.asked[-1]["reference_id"] == "keeper" and replica.auth == "Bearer secret-key"
    with pytest.raises(EngineError) as refused:
        engine.prepare_voice(SECOND.repeat(6), 24000)
    assert refused.value.code == "not_supported" and "not supported by this engine" in str(refused.value)


def test_a_server_that_is_not_there_is_engine_unavailable_at_once() -> None:
    engine = HttpEngine("http://127.0.0.1:9", dialect("openai"), timeout_s=5)
    engine.warmup()  # starts anyway: the worker says so, and /health shows it
    with pytest.raises(EngineError) as refused:
        engine.synthesize("Hello?", engine.default_voice(), threading.Event())
    assert refused.value.code == "engine_unavailable" and engine.backend()["state"] == "down"


def test_doctor_checks_the_tts_server(replicas) -> None:
    from cbf_tools.doctor.command import backend_check
    from cbf_tools.peers.local_server import free_port
    from engine.settings import EngineSettings

    _, url = replicas
    up = backend_check(EngineSettings(engine="http", http_url=url, http_dialect="devnen"))
    assert up.status == "ok" and "Emily.wav" in up.detail
    gone = backend_check(EngineSettings(engine="http", http_url=f"http://127.0.0.1:{free_port()}"))
    assert gone.status == "fail" and "unreachable" in gone.detail and "--engine-http-url" in gone.fix
    unset = backend_check(EngineSettings(engine="http"))
    assert unset.status == "fail" and "--engine-http-url" in unset.fix


def test_at_most_the_set_number_of_requests_are_in_flight(replicas) -> None:
    replica, url = replicas
    engine = HttpEngine(url, dialect("openai"), concurrency=2)
    replica.hold_until, replica.most_in_flight = 2, 0  # the first two meet there, however slowly each is sent
    try:
        with ThreadPoolExecutor(5) as callers:  # five chunks of five utterances at once
            list(callers.map(lambda n: engine.synthesize(f"Chunk {n}.", Voice("default"), threading.Event()),
                             range(5)))
    finally:
        replica.hold_until = None
    assert replica.most_in_flight == 2


def test_the_base_url_as_openai_clients_write_it_speaks_and_a_404_names_the_url_tried(replicas) -> None:
    """A new user's ``--engine-http-url http://host:8880/v1`` (what OpenAI clients take) once 404ed on every chunk."""
    from engine.settings import EngineSettings

    _, url = replicas
    for given in (url, f"{url}/", f"{url}/v1", f"{url}/v1/"):
        engine = HttpEngine.from_settings(EngineSettings(engine="http", http_url=given, http_dialect="openai"))
        assert engine.url == url, given
        assert engine.synthesize("Hello there.", Voice("default"), threading.Event()).size > 12000, given
    fish = HttpEngine(f"{url}/v1", dialect("fish"))  # Fish's /v1/tts is not doubled either
    assert fish.synthesize("Hello from Fish.", Voice("default"), threading.Event()).size > 12000
    wrong = HttpEngine(f"{url}/kokoro/v1", dialect("openai"))  # a prefix this server does not have: kept, refused
    with pytest.raises(EngineError) as refused:
        wrong.synthesize("Hello?", Voice("default"), threading.Event())
    assert refused.value.code == "bad_backend_reply"
    assert f"POST {url}/kokoro/v1/audio/speech answered HTTP 404" in str(refused.value)
    assert "--engine-http-url" in str(refused.value) and "--engine-http-dialect openai" in str(refused.value)
