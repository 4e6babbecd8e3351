"""A stand-in buffered TTS server for tests: eSpeak behind OpenAI's ``POST /v1/audio/speech``, answering nothing
until the whole text is synthesized, like devnen's Chatterbox server (a replica of that behaviour, not of its code).

Each reply takes ``audio seconds / rtf`` of wall time from the request's arrival (eSpeak's own time included), so the
real-time factor is what the test sets: ``rtf`` for the default voice, ``X`` for a voice named ``rtf-X``. One
request is synthesized at a time (later ones queue). It can be made to fail: ``mode`` "garbage" answers 200 with
bytes that are not audio; "dying" cuts the next speech reply's connection mid-body and then answers 503 to
everything, as a crashed server behind a proxy would, until ``mode`` is "ok" again.
"""

from __future__ import annotations

import asyncio
import io
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import soundfile as sf
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from engine.engines.espeak import EspeakEngine


@dataclass
class Received:
    at: float  # monotonic arrival
    text: str
    voice: str
    answered: float | None = None


@dataclass
class BufferedBackend:
    rtf: float = 4.0
    voices: tuple[str, ...] = ("rtf-4", "rtf-2", "rtf-1.6", "rtf-0.8")
    mode: str = "ok"  # ok | garbage | dying
    requests: list[Received] = field(default_factory=list)
    engine: EspeakEngine = field(default_factory=EspeakEngine)

    def __post_init__(self) -> None:
        self._one_at_a_time = asyncio.Lock()

    def rate_of(self, voice: str) -> float:
        return float(voice[4:]) if voice.startswith("rtf-") else self.rtf

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/audio/speech", self.speech, methods=["POST"]),
                                 Route("/v1/audio/voices", self.list_voices)])

    async def list_voices(self, request: Request) -> Response:
        if self.mode != "ok":
            return JSONResponse({"detail": "model crashed"}, status_code=503)
        return JSONResponse({"voices": [{"id": name, "name": name} for name in self.voices]})

    async def speech(self, request: Request) -> Response:
        body: dict[str, Any] = await request.json()
        received = Received(time.monotonic(), body["input"], body.get("voice", "default"))
        self.requests.append(received)
        if self.mode == "dying":
            self.mode = "dead"
            return _CutMidBody()
        if self.mode != "ok":
            if self.mode == "garbage":
                return Response(b"\x00\x01 certainly not audio " * 40, media_type="audio/wav")
            return JSONResponse({"detail": "model crashed"}, status_code=503)
        async with self._one_at_a_time:  # a buffered server: one synthesis at a time, whole
            started = time.monotonic()
            wav = await asyncio.to_thread(self.engine.synthesize, received.text, self.engine.default_voice(),
                                          threading.Event())
            seconds = wav.size / self.engine.sample_rate
            await asyncio.sleep(max(0.0, started + seconds / self.rate_of(received.voice) - time.monotonic()))
        buffer = io.BytesIO()
        sf.write(buffer, wav, self.engine.sample_rate, format="WAV", subtype="PCM_16")  # 22.05 kHz: resampled there
        received.answered = time.monotonic()
        return Response(buffer.getvalue(), media_type="audio/wav")


class _CutMidBody(Response):
    """Starts a WAV reply, then fails: uvicorn drops the connection without finishing the body."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"audio/wav"), (b"content-length", b"100000")]})
        await send({"type": "http.response.body", "body": b"RIFF", "more_body": True})
        raise ConnectionResetError("the stand-in TTS server died mid-reply")


if __name__ == "__main__":  # for `bench engine --engine http`: python -m tests.buffered_backend --rtf 2 --port 8301
    import argparse

    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtf", type=float, default=2.0, help="real-time factor of the default voice")
    parser.add_argument("--port", type=int, default=8301)
    options = parser.parse_args()
    stand_in = BufferedBackend(rtf=options.rtf, voices=())  # lists none: "default" speaks at --rtf
    uvicorn.run(stand_in.app(), host="127.0.0.1", port=options.port, log_level="warning")
