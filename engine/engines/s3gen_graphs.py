"""S3Gen's two static-shape stages (``s3gen_batch``) captured as CUDA graphs, one per bucket, so a call of up to 16
chunks costs 2 graph launches and a little per-row work instead of ~6,000 kernel launches.

Buckets: rows rounded up to 1, 2, 4, 8 or 16; the flow's positions (a voice's prompt tokens plus the chunk's) rounded
up to a multiple of 64; the generated mel frames to twice one of ``CHUNK_TOKEN_BUCKETS``. A call past the largest
bucket (a chunk over ~10 s) runs eagerly: it is arithmetic-bound there, launches no longer matter.

Every input lives in one static buffer per field, sized for the largest bucket; a bucket's inputs are a contiguous
view of its start, so buckets share that memory and a call copies its inputs in before each replay. The graphs share
one memory pool of their own (not T3's: S3Gen replays on another thread while the decode loop replays T3), which is
safe because a call consumes each graph's output before the next replay and calls are serialised. Every bucket is
captured at warm-up, before serving, then the set is sealed, as T3's steps are (``cuda_graphs``); the start-up
self-check (``vocode_check``) compares replays with eager runs before the worker says ready.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from chatterbox.models.s3gen import S3Gen

from .s3gen_batch import (
    MAX_BATCH,
    MEL_PER_TOKEN,
    FlowInputs,
    HiftInputs,
    Prepared,
    Shape,
    VocodeRow,
    exact_shape,
    flow_stage,
    hift_stage,
    prepare,
    run,
    samples_per_frame,
    vocode_rows,
    zero_inputs,
)

BATCH_BUCKETS = (1, 2, 4, 8, MAX_BATCH)  # the largest: the most chunks a call takes (scheduler.Gathered)
CHUNK_TOKEN_BUCKETS = (32, 64, 96, 128, 192, 256)  # a chunk's speech tokens, silence included (25 per second)
POSITION_STEP = 64

Replay = Callable[[], None]
# Runs a stage function once outside any graph, then captures it: its replay and the output tensor each replay rewrites
Capture = Callable[[Callable[[], torch.Tensor]], tuple[Replay, torch.Tensor]]


@dataclass(frozen=True)
class Buckets:
    max_prompt_tokens: int  # the longest voice prompt S3Gen sees (10 s of reference: 250 tokens at full size)
    batches: tuple[int, ...] = BATCH_BUCKETS
    chunk_tokens: tuple[int, ...] = CHUNK_TOKEN_BUCKETS
    position_step: int = POSITION_STEP

    @property
    def positions(self) -> tuple[int, ...]:
        top = self.position_step * math.ceil((self.max_prompt_tokens + max(self.chunk_tokens)) / self.position_step)
        return tuple(range(self.position_step, top + 1, self.position_step))

    @property
    def frames(self) -> tuple[int, ...]:
        return tuple(MEL_PER_TOKEN * n for n in self.chunk_tokens)

    @property
    def largest(self) -> Shape:
        return Shape(max(self.batches), max(self.positions), max(self.frames))

    def holding(self, exact: Shape) -> Shape | None:
        """The smallest bucket holding ``exact``; None past the largest."""
        picks = [next((b for b in sizes if b >= n), None) for sizes, n in
                 ((self.batches, exact.batch), (self.positions, exact.positions), (self.frames, exact.frames))]
        return None if None in picks else Shape(*picks)  # type: ignore[arg-type]

    def all(self) -> list[Shape]:
        return [Shape(b, p, f) for b in self.batches for p in self.positions for f in self.frames]


def _view(buffer: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """A contiguous ``shape`` view of the start of ``buffer``'s storage."""
    return buffer.view(-1)[:math.prod(shape)].view(shape)


def _tensors(inputs: FlowInputs | HiftInputs) -> list[torch.Tensor]:
    return [getattr(inputs, f.name) for f in dataclasses.fields(inputs)]


def _fill(views: Sequence[torch.Tensor], values: Sequence[torch.Tensor]) -> None:
    for view, value in zip(views, values):
        view.copy_(value)


class GraphedVocoder:
    """``vocode_rows`` with the stages replayed from graphs (``s3gen_batch.Stages``); eager past the largest bucket."""

    def __init__(self, s3gen: S3Gen, buckets: Buckets, capture: Capture) -> None:
        self.s3gen, self.buckets, self.capture = s3gen, buckets, capture
        self.samples_per_frame = samples_per_frame(s3gen.mel2wav)
        top = buckets.largest
        dev, dtype = s3gen.device, s3gen.dtype
        self._flow, self._hift = zero_inputs(s3gen, top)
        self._mel = torch.zeros(top.batch, 80, top.frames, dtype=dtype, device=dev)
        self.flows: dict[tuple[int, int], tuple[Replay, torch.Tensor]] = {}
        self.hifts: dict[tuple[int, int], tuple[Replay, torch.Tensor]] = {}
        self.eager_calls = 0  # calls past the largest bucket
        self._lock = threading.Lock()  # one call at a time: the buffers and the pool are shared

    @property
    def captured(self) -> int:
        return len(self.flows) + len(self.hifts)

    def __call__(self, rows: Sequence[VocodeRow]) -> list[torch.Tensor]:
        shape = self.buckets.holding(exact_shape(rows))
        if shape is None:
            self.eager_calls += 1
            return vocode_rows(self.s3gen, rows)
        return self.run(prepare(self.s3gen, rows, shape))

    def run(self, call: Prepared) -> list[torch.Tensor]:
        """The rows' audio, copied out of the graph's output before the next call can overwrite it."""
        with self._lock:
            return [wav.clone() for wav in run(self.s3gen, call, self)]

    def capture_all(self) -> None:
        """Every bucket's graphs, before serving (``Buckets.all``)."""
        for shape in self.buckets.all():
            self.capture_bucket(shape)

    def capture_bucket(self, shape: Shape) -> None:
        """The graphs a call of bucket ``shape`` replays, those not captured yet."""
        with torch.inference_mode():
            if (shape.batch, shape.positions) not in self.flows:
                self._flow_graph(shape.batch, shape.positions)
            if (shape.batch, shape.frames) not in self.hifts:
                self._hift_graph(shape.batch, shape.frames)

    # ----- s3gen_batch.Stages -----

    def flow(self, shape: Shape, inputs: FlowInputs) -> torch.Tensor:
        replay, out = self.flows[shape.batch, shape.positions]
        _fill(_tensors(self._flow_views(shape.batch, shape.positions)), _tensors(inputs))
        replay()
        return out

    def hift(self, shape: Shape, mel: torch.Tensor, inputs: HiftInputs) -> torch.Tensor:
        replay, out = self.hifts[shape.batch, shape.frames]
        mel_view, views = self._hift_views(shape.batch, shape.frames)
        _fill([mel_view, *_tensors(views)], [mel, *_tensors(inputs)])
        replay()
        return out

    # ----- captures -----

    def _flow_views(self, b: int, p: int) -> FlowInputs:
        f = self._flow
        mels = (b, 80, MEL_PER_TOKEN * p)
        return FlowInputs(_view(f.token, (b, p)), _view(f.token_len, (b,)),
                          _view(f.embedding, (b, f.embedding.shape[1])), _view(f.cond, mels), _view(f.z, mels))

    def _hift_views(self, b: int, frames: int) -> tuple[torch.Tensor, HiftInputs]:
        h = self._hift
        harmonics = h.phase.shape[1]
        return _view(self._mel, (b, 80, frames)), HiftInputs(
            _view(h.starts, (b,)), _view(h.frames, (b,)), _view(h.phase, (b, harmonics, 1)),
            _view(h.draws, (b, harmonics, frames * self.samples_per_frame)))

    def _flow_graph(self, b: int, p: int) -> None:
        inputs = self._flow_views(b, p)
        inputs.token_len.fill_(p)  # a capture runs on any valid input: the graph keeps the addresses, not the values
        self.flows[b, p] = self.capture(lambda: flow_stage(self.s3gen, inputs))

    def _hift_graph(self, b: int, frames: int) -> None:
        mel, inputs = self._hift_views(b, frames)
        inputs.frames.fill_(frames)
        self.hifts[b, frames] = self.capture(lambda: hift_stage(self.s3gen, mel, inputs))


def cuda_capture(device: torch.device) -> Capture:
    """Captures on one side stream of ``device`` into one memory pool of their own."""
    with torch.cuda.device(device):
        pool = torch.cuda.graph_pool_handle()
        side = torch.cuda.Stream(device)

    def capture(stage: Callable[[], torch.Tensor]) -> tuple[Replay, torch.Tensor]:
        with torch.cuda.device(device):
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # lazy initialisation (kernels, cuDNN plans) stays out of the graph
                stage()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            # thread_local: the decode loop keeps replaying T3 from its own thread meanwhile
            with torch.cuda.graph(graph, pool=pool, stream=side, capture_error_mode="thread_local"):
                out = stage()
        return graph.replay, out

    return capture

