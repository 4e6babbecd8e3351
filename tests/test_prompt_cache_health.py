"""/health shows how many voice prompts a Turbo worker keeps on the device, and their bytes: the worker's ``ready``
carries them, and it sends a new one once a voice not cached was spoken. A real worker (the tiny checkpoint, on the
CPU, in this process) behind a real gateway (``serve --engine-url``), asked over HTTP."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("chatterbox.tts_turbo")

from engine.cost import CostModel  # noqa: E402
from engine.engines.turbo import TurboEngine  # noqa: E402
from engine.settings import EngineSettings  # noqa: E402
from engine.voices import VoiceStore  # noqa: E402
from engine.worker import Synthesizer, Worker, serve_worker  # noqa: E402
from tests.server import health_when, running_server  # noqa: E402

LIMIT = 3


def worker_in_thread(worker: Worker, listen: str) -> Iterator[None]:
    """Serve ``worker`` on its own event loop in a thread until the generator is closed."""
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    thread = threading.Thread(target=loop.run_until_complete, args=(serve_worker(worker, listen, stop),), daemon=True)
    thread.start()
    try:
        yield
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


def test_health_shows_the_prompt_cache_and_follows_it(tiny_checkpoint: Path, tmp_path: Path, watermarker) -> None:
    engine = TurboEngine.load(model_dir=tiny_checkpoint, device="cpu", slots=2, prompt_cache_voices=LIMIT)
    worker = Worker(Synthesizer(engine, watermarker), VoiceStore(tmp_path / "voices", engine), EngineSettings(),
                    CostModel())  # not calibrated: no voice has been spoken, the cache is empty
    sock = tmp_path / "engine.sock"
    serving = worker_in_thread(worker, f"unix:{sock}")
    next(serving)
    try:
        with running_server("--engine-url", f"unix:{sock}") as url:
            health = httpx.get(url + "/health").json()
            assert health["engines"][0]["prompt_cache"] == {"voices": 0, "bytes": 0, "limit": LIMIT}
            assert health["engine"]["prompt_cache"] == {"voices": 0, "bytes": 0, "limit": LIMIT}
            reply = httpx.post(url + "/v1/tts", json={"text": "Hello there.", "format": "pcm"}, timeout=60)
            assert reply.status_code == 200 and reply.content
            health = health_when(url, lambda h: h["engines"][0]["prompt_cache"]["voices"] == 1,
                                 "the worker's new ready with the default voice cached", within=10)
            figures = health["engines"][0]["prompt_cache"]
            assert figures == engine.prompt_cache() and figures["bytes"] > 0 and figures["limit"] == LIMIT
            assert health["engine"]["prompt_cache"] == figures
    finally:
        serving.close()
        engine.loop.close()

