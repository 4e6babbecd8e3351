"""``chatterbox-fast say``: one text into a WAV file, with its timings; and speaking through a worker for any tool
(``bench engine`` too): the same worker, planner and protocol as ``serve``, with timings taken at this client."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
import wave
from typing import AsyncIterator, Callable

from engine.protocol import SAMPLE_RATE, Reading
from gateway.engine_link.client import EngineClient, EngineRequestError
from gateway.engine_link.process import EngineProcess, WorkerRefused
from gateway.utterance_stream import UtteranceStats, chunks


@contextlib.asynccontextmanager
async def worker_client(engine_args: list[str], url: str | None = None, timeout: float = 600,
                        secret: str | None = None,
                        on_stderr: Callable[[str], None] | None = None) -> AsyncIterator[EngineClient]:
    """A connected engine client: to ``url`` if given (presenting ``secret``), else to a worker process started here
    (``WorkerRefused`` at once when that worker cannot start; ``on_stderr``: told each line of its stderr)."""
    refused: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    process = None if url else EngineProcess(engine_args, on_refusal_at_start=refused.set_result, on_stderr=on_stderr)
    if process is not None:
        process.start()
    client = EngineClient(url, secret) if process is None else EngineClient(process.url, process.secret)
    client.start_background()
    ready = asyncio.ensure_future(client.wait_ready(timeout))
    try:
        await asyncio.wait([ready, refused], return_when=asyncio.FIRST_COMPLETED)
        if refused.done():
            raise WorkerRefused(refused.result())
        if not ready.result():
            raise SystemExit(f"the engine worker did not become ready within {timeout:.0f} s")
        yield client
    finally:
        ready.cancel()
        await client.close()
        if process is not None:
            await process.stop()


async def speak(client: EngineClient, text: str, voice: str = "default",
                reading: Reading = Reading()) -> tuple[bytes, UtteranceStats]:
    """One utterance through ``client``: its audio (24 kHz mono s16le) and its figures."""
    stats, pcm = UtteranceStats(time.monotonic()), bytearray()
    utterance = await client.start(voice, reading)
    await utterance.text(text)
    await utterance.end()
    async for chunk in chunks(utterance, stats):
        pcm += chunk.pcm
    return bytes(pcm), stats


async def say(args: argparse.Namespace, engine_args: list[str]) -> int:
    async with worker_client(engine_args + ["--log-level", args.log_level]) as client:
        try:
            pcm, spoken = await speak(client, args.text, args.voice, Reading(normalize=args.normalize))
            ready = client.ready
        except EngineRequestError as exc:
            print(f"error: {exc.code}: {exc}")
            return 2
    with wave.open(str(args.out), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.writeframes(pcm)
    engine = f"{ready.engine} on {ready.device}" if ready else "an engine that went away"
    print(f"engine {engine}: {len(spoken.chunk_texts)} chunks, "
          f"{spoken.audio_s:.2f} s of audio -> {args.out}")
    print(f"time to first chunk {spoken.first_chunk_s:.3f} s, total {spoken.total_s:.3f} s, "
          f"real-time factor {spoken.rtf:.1f}x")
    return 0


def dry_run(text: str, normalize: str | None) -> str:
    """What the engine would speak for ``text`` (read as ``normalize`` says), then each stretch of the text the front
    end rewrote, its class (engine/speech_text/semiotic.py) and what it became."""
    from engine.speech_text.reader import Reader  # the engine's own reader (pure), only for this

    reader = Reader(normalize)
    reader.feed(text)
    reader.flush(final=True)
    lines = [reader.spoken.strip()]
    for piece in reader.pieces:
        if not piece.verbatim and text[piece.start:piece.end].strip():
            kind = f" [{piece.kind}]" if piece.kind else ""
            lines.append(f"  {text[piece.start:piece.end]!r}{kind} -> {piece.text.strip()!r}")
    return "\n".join(lines)
