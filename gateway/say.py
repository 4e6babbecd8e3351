"""``chatterbox-fast say``: one text into a WAV file, with its timings."""

from __future__ import annotations

import argparse
import wave

from gateway.engine_client import EngineRequestError
from gateway.speak import speak, worker_client


async def say(args: argparse.Namespace, engine_args: list[str]) -> int:
    async with worker_client(engine_args + ["--log-level", args.log_level]) as client:
        try:
            spoken = await speak(client, args.text, args.voice)
            ready = client.ready or {}
        except EngineRequestError as exc:
            print(f"error: {exc.code}: {exc}")
            return 2
    with wave.open(str(args.out), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(24000)
        out.writeframes(bytes(spoken.pcm))
    print(f"engine {ready.get('engine')} on {ready.get('device')}: {len(spoken.chunk_texts)} chunks, "
          f"{spoken.audio_s:.2f} s of audio -> {args.out}")
    print(f"time to first chunk {spoken.first_chunk_s:.3f} s, total {spoken.total_s:.3f} s, "
          f"real-time factor {spoken.rtf:.1f}x")
    return 0
