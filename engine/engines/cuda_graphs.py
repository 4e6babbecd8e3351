"""CUDA-graph replays of ``BatchDecoder.step``: a thin layer over the very step the CPU tests run eagerly.

One graph per (batch bucket, attended-length bucket), captured at warm-up or on first use, all sharing one memory
pool. The step mutates its slots' bookkeeping, so the warm-up run before a capture is undone with
``snapshot``/``restore``; the keys and values it writes are the ones the replay writes again (same inputs, same
values).
"""

from __future__ import annotations

import torch

from .t3_batch import LENGTH_BUCKET, BatchDecoder


class GraphedSteps:
    def __init__(self, decoder: BatchDecoder) -> None:
        self.decoder = decoder
        self.graphs: dict[tuple[int, int], torch.cuda.CUDAGraph] = {}
        self.pool = torch.cuda.graph_pool_handle()

    def __call__(self, batch: int, attend: int) -> None:
        graph = self.graphs.get((batch, attend))
        if graph is None:
            graph = self.graphs[(batch, attend)] = self._capture(batch, attend)
        graph.replay()

    def capture_all(self, batches: tuple[int, ...]) -> None:
        """Capture every (batch, attended length) bucket up front, while no slot is live (startup, not a request)."""
        assert not self.decoder.live, "capture before serving"
        slots = self.decoder.slots
        for batch in sorted({b for b in batches if b < slots} | {slots}):
            for attend in range(LENGTH_BUCKET, self.decoder.kv.capacity + 1, LENGTH_BUCKET):
                self(batch, attend)

    def _capture(self, batch: int, attend: int) -> torch.cuda.CUDAGraph:
        saved = self.decoder.snapshot()
        side = torch.cuda.Stream(self.decoder.device)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # lazy initialisation (kernels, cuBLAS workspaces) stays out of the graph
            self.decoder.step(batch, attend)
        torch.cuda.current_stream().wait_stream(side)
        self.decoder.restore(saved)
        graph = torch.cuda.CUDAGraph()
        # thread_local: S3Gen and the watermark keep using the device from their own threads meanwhile
        with torch.cuda.graph(graph, pool=self.pool, capture_error_mode="thread_local"):
            self.decoder.step(batch, attend)
        return graph
