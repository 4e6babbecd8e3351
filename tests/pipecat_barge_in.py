"""A caller barging in on a pipecat TTS service's answer, in a real pipecat pipeline: what the ElevenLabs and Cartesia
tests drive their services through (pipecat is imported only when one runs)."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

LONG_ANSWER = "This is a long answer that the caller will interrupt. " * 40  # over two minutes of speech
APOLOGY = "Sorry, go ahead."


async def barge_in(tts: Any) -> list[Any]:
    """``tts`` speaks ``LONG_ANSWER``; at its first audio the caller speaks (pipecat's InterruptionFrame), then the
    service speaks ``APOLOGY`` to its end. Every frame that reached the end of the pipeline, in order."""
    from pipecat.frames.frames import (EndFrame, Frame, InterruptionFrame, TTSAudioRawFrame, TTSSpeakFrame,
                                       TTSStoppedFrame)
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineWorker
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.workers.runner import WorkerRunner

    class Caller(FrameProcessor):
        """The end of the pipeline: what the caller would hear, and waiting for it."""

        def __init__(self) -> None:
            super().__init__()
            self.frames: list[Frame] = []
            self._changed = asyncio.Condition()

        async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
            await super().process_frame(frame, direction)
            self.frames.append(frame)
            async with self._changed:
                self._changed.notify_all()
            await self.push_frame(frame, direction)

        async def first(self, kind: type[Frame], where: Callable[[Frame], bool] = lambda frame: True) -> Frame:
            async with self._changed:
                await self._changed.wait_for(lambda: any(isinstance(f, kind) and where(f) for f in self.frames))
            return next(f for f in self.frames if isinstance(f, kind) and where(f))

    caller = Caller()
    worker = PipelineWorker(Pipeline([tts, caller]), cancel_on_idle_timeout=False)
    runner = WorkerRunner()
    await runner.add_workers(worker)

    async def converse() -> None:
        await worker.queue_frame(TTSSpeakFrame(LONG_ANSWER))
        answer = (await caller.first(TTSAudioRawFrame)).context_id
        await worker.queue_frame(InterruptionFrame())  # what pipecat's turn-taking sends when the user speaks
        await worker.queue_frame(TTSSpeakFrame(APOLOGY))
        await caller.first(TTSStoppedFrame, lambda f: f.context_id not in (None, answer))
        await worker.queue_frame(EndFrame())

    async with asyncio.timeout(60):  # a bound on a hang, not a speed
        await asyncio.gather(runner.run(), converse())
    return caller.frames


async def cancelled_utterances(server: str, key: str, transport: str) -> float:
    """The gateway's count of ``transport``'s utterances cut off before their end (from /metrics)."""
    import httpx

    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
        reply = await http.get(server + "/metrics")
    reply.raise_for_status()
    line = f'cbf_utterances_total{{outcome="cancelled",transport="{transport}"}} '
    return sum(float(row.removeprefix(line)) for row in reply.text.splitlines() if row.startswith(line))


async def check_barge_in(tts: Any, server: str, key: str, transport: str, sample_rate: int) -> None:
    """``barge_in`` on ``tts``, the gateway's ``transport`` at ``server``: the answer is cut off in the gateway (not
    left generating for nobody), the caller heard far less than all of it, and the next turn is heard whole."""
    from pipecat.frames.frames import ErrorFrame, TTSAudioRawFrame, TTSTextFrame

    cancelled_before = await cancelled_utterances(server, key, transport)
    frames = await barge_in(tts)
    assert await cancelled_utterances(server, key, transport) == cancelled_before + 1
    answer = next(f for f in frames if isinstance(f, TTSAudioRawFrame)).context_id
    heard = b"".join(f.audio for f in frames if isinstance(f, TTSAudioRawFrame) and f.context_id == answer)
    assert len(heard) / 2 / sample_rate < 60  # far less than the whole answer
    words = [f.text for f in frames if isinstance(f, TTSTextFrame)]
    assert words[-3:] == APOLOGY.split() and not any(isinstance(f, ErrorFrame) for f in frames)
