"""The worker serving many Turbo utterances at once through the batched decode loop (tiny checkpoint, in process)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
from num2words import num2words
import pytest

pytest.importorskip("chatterbox.tts_turbo")

from turbo_checkpoint import write_tiny_checkpoint  # noqa: E402

from engine.cost import CostModel  # noqa: E402
from engine.engines.turbo import TurboEngine  # noqa: E402
from engine.protocol import SAMPLE_RATE, Chunk  # noqa: E402
from engine.settings import EngineSettings  # noqa: E402
from engine.voices import VoiceStore  # noqa: E402
from engine.worker import Synthesizer, Worker, serve_worker  # noqa: E402
from gateway.engine_link.client import EngineClient  # noqa: E402

pytestmark = pytest.mark.slow

STREAMS = 8


async def speak_in_two_chunks(client: EngineClient, n: int) -> list[Chunk]:
    utterance = await client.start("default")
    await utterance.text(f"Caller {n} says hello")
    await utterance.flush()
    await utterance.text(" and then goodbye.")
    await utterance.end()
    return [event async for event in utterance.events() if isinstance(event, Chunk)]


async def test_eight_concurrent_utterances_are_decoded_together_and_every_chunk_is_marked(
        tmp_path: Path, watermarker) -> None:
    # Random weights sample the stop token only rarely (about one chunk in 300 here, unseeded: a run of 16 chunks
    # failed the length check below about one time in 20), so the checkpoint's stop logit is pushed out of reach:
    # every chunk runs to its budget, 31 tokens, 1.24 s of audio.
    checkpoint = write_tiny_checkpoint(tmp_path / "tiny", stop_bias=-1e4)
    engine = TurboEngine.load(model_dir=checkpoint, device="cpu", slots=STREAMS)
    engine.max_tokens = 30
    worker = Worker(Synthesizer(engine, watermarker), VoiceStore(tmp_path / "voices", engine), EngineSettings(),
                    CostModel())
    stop = asyncio.Event()
    server = asyncio.create_task(serve_worker(worker, f"unix:{tmp_path / 'engine.sock'}", stop))
    try:
        while not (tmp_path / "engine.sock").exists():
            await asyncio.sleep(0.05)
        client = EngineClient(f"unix:{tmp_path / 'engine.sock'}")
        client.start_background()
        assert await client.wait_ready(30)
        assert client.ready and client.ready.decode == "eager"
        assert "eager decode over 8 batch slots" in client.ready.notes
        spoken = await asyncio.gather(*(speak_in_two_chunks(client, n) for n in range(STREAMS)))
        await client.close()
    finally:
        stop.set()
        await server
        engine.loop.close()
    assert engine.loop.most_live >= STREAMS // 2  # the chunks really shared decode steps
    assert worker.synth.vocoder is not None and max(worker.synth.vocoder.sizes) > 1  # and S3Gen calls
    for n, chunks in enumerate(spoken):
        # (the caller's number read as a word: the worker's text front end)
        assert [c.header.text for c in chunks] == [f"Caller {num2words(n)} says hello.", "And then goodbye."]
        for chunk in chunks:
            audio = np.frombuffer(chunk.pcm, dtype=np.int16).astype(np.float32) / 32768
            assert 1.0 < audio.size / SAMPLE_RATE < 2.0  # 34 tokens of 40 ms, trimmed or padded at the joins
            assert watermarker.detect(audio, SAMPLE_RATE) >= 0.5
