"""CUDA-graph replays of ``BatchDecoder.step``: a thin layer over the very step the CPU tests run eagerly.

One graph per (batch bucket, attended-length bucket), all sharing one memory pool and captured on one side stream, on
the decoder's own device (``torch.cuda.graph`` captures on the *current* device's stream: kernels of a tensor on
another card would run eagerly and leave the graph empty). The engine captures every bucket at warm-up and then seals
the set: a bucket missing while serving is an error, never a capture (a capture while other threads draw random
numbers or launch kernels would disturb them). The step mutates its slots' bookkeeping, so the warm-up run before a
capture is undone with ``snapshot``/``restore``; the keys and values it writes are the ones the replay writes again.
"""

from __future__ import annotations

import torch

from .t3_batch import LENGTH_BUCKET, BatchDecoder


class GraphedSteps:
    def __init__(self, decoder: BatchDecoder) -> None:
        self.decoder = decoder
        self.device = decoder.device
        self.graphs: dict[tuple[int, int], torch.cuda.CUDAGraph] = {}
        self.sealed = False  # set by capture_all: from then on every bucket must exist
        with torch.cuda.device(self.device):
            self.pool = torch.cuda.graph_pool_handle()
            self.side = torch.cuda.Stream(self.device)  # one capture stream (and cuBLAS workspace) for every graph

    def __call__(self, batch: int, attend: int) -> None:
        graph = self.graphs.get((batch, attend))
        if graph is None:
            if self.sealed:
                raise RuntimeError(f"no CUDA graph for batch {batch} over {attend} positions: every bucket is captured "
                                   "at warm-up, never while serving")
            graph = self.graphs[(batch, attend)] = self._capture(batch, attend)
        graph.replay()

    def capture_all(self, batches: tuple[int, ...]) -> None:
        """Capture every (batch, attended length) bucket up front, while no slot is live (startup, not a request);
        then seal the set."""
        assert not self.decoder.live, "capture before serving"
        slots = self.decoder.slots
        for batch in sorted({b for b in batches if b < slots} | {slots}):
            for attend in range(LENGTH_BUCKET, self.decoder.kv.capacity + 1, LENGTH_BUCKET):
                self(batch, attend)
        self.sealed = True

    def _capture(self, batch: int, attend: int) -> torch.cuda.CUDAGraph:
        with torch.cuda.device(self.device):
            saved = self.decoder.snapshot()
            self.side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.side):  # lazy initialisation (kernels, cuBLAS workspaces) stays out of the graph
                self.decoder.step(batch, attend)
            torch.cuda.current_stream().wait_stream(self.side)
            self.decoder.restore(saved)
            graph = torch.cuda.CUDAGraph()
            # thread_local: S3Gen and the watermark keep using the device from their own threads meanwhile
            with torch.cuda.graph(graph, pool=self.pool, stream=self.side, capture_error_mode="thread_local"):
                self.decoder.step(batch, attend)
        return graph
