"""The start-up self-check of S3Gen's CUDA graphs (``s3gen_graphs``): before a worker says ready, replays prove that
they compute what the eager stages compute, on the serving device and stream.

What it checks (each failure is one sentence in ``GraphCheck.problems``):
- at the smallest bucket (one row) and the largest (a full batch: two voices, mixed lengths up to the longest chunk
  bucket), the replayed call equals the eager call at the same shapes, every row, within float32 tolerance;
- every row of the bucketed call equals that row vocoded alone at its exact sizes within ``AUDIO_TOLERANCE``
  (padding to a bucket sums in another order; TF32 convolutions make that drift larger than float32 rounding);
- the audio is finite and not silent;
- on CUDA, the full batch replayed is faster than eagerly (else the graphs only cost memory).

Plain torch: it runs on a CPU with stand-in captures (tests/test_s3gen_graphs.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .graph_check import GraphCheck, close, synchronize
from .s3gen_batch import (
    MEL_PER_TOKEN,
    EagerStages,
    VocodeRow,
    exact_shape,
    prepare,
    run,
    vocode_rows,
)
from .s3gen_graphs import GraphedVocoder

AUDIO_TOLERANCE = 1e-3  # -60 dB of full scale: far below hearing, far above float32 or TF32 rounding
SHORT_CHUNK = 20  # tokens of the one-row case (under a second: a first chunk)


def shorter_prompt(ref: dict[str, Any], fraction: float = 0.6) -> dict[str, Any]:
    """A second voice for the check: ``ref`` with its prompt cut to ``fraction`` (another prompt length)."""
    keep = max(1, int(ref["prompt_token"].shape[-1] * fraction))
    return dict(ref, prompt_token=ref["prompt_token"][..., :keep],
                prompt_token_len=torch.tensor([keep], device=ref["prompt_token"].device),
                prompt_feat=ref["prompt_feat"][:, :MEL_PER_TOKEN * keep])


class VocodeCheck:
    def __init__(self, vocoder: GraphedVocoder, ref: dict[str, Any], timing: bool) -> None:
        self.vocoder, self.timing = vocoder, timing
        self.refs = [ref, shorter_prompt(ref)]
        self.result = GraphCheck()

    def run(self) -> GraphCheck:
        started = time.perf_counter()
        longest = max(self.vocoder.buckets.chunk_tokens)
        lengths = [SHORT_CHUNK, longest // 2, longest, longest // 4 + 3]
        top = self.vocoder.buckets.largest.batch
        self._case("one row", [self._row(SHORT_CHUNK, 0, 0)], timed=False)
        self._case(f"{top} rows", [self._row(lengths[i % 4], i % 2, i) for i in range(top)], timed=self.timing)
        self.result.figures["check_s"] = round(time.perf_counter() - started, 2)
        return self.result

    def _row(self, tokens: int, voice: int, seed: int) -> VocodeRow:
        chunk = torch.randint(0, 6561, (tokens,), generator=torch.Generator().manual_seed(seed))
        return VocodeRow(chunk, self.refs[voice], torch.Generator(self.vocoder.s3gen.device).manual_seed(seed))

    def _case(self, name: str, rows: list[VocodeRow], timed: bool) -> None:
        s3gen, buckets = self.vocoder.s3gen, self.vocoder.buckets
        shape = buckets.holding(exact_shape(rows))
        if shape is None:
            self.result.problems.append(f"the check's {name} fit no bucket")
            return
        calls = {"eager": lambda: run(s3gen, prepare(s3gen, _fresh(rows), shape), EagerStages(s3gen)),
                 "replayed": lambda: self.vocoder.run(prepare(s3gen, _fresh(rows), shape))}
        seconds, wavs = {}, {}
        for kind, call in calls.items():
            seconds[kind], wavs[kind] = _timed(s3gen.device, call)
        where = f"{name} at bucket {shape.batch}x{shape.positions}x{shape.frames}"
        worst = self._compare(wavs["replayed"], wavs["eager"], where, "the eager call at the same shapes",
                              lambda got, want: close(got, want, torch.float32))
        alone = [vocode_rows(s3gen, [row])[0] for row in _fresh(rows)]
        padded = self._compare(wavs["replayed"], alone, where, f"each row alone (tolerance {AUDIO_TOLERANCE:g})",
                               _within_audio_tolerance)
        key = "b1" if len(rows) == 1 else f"b{len(rows)}"
        self.result.figures[f"{key}_vs_eager_max_diff"] = worst
        self.result.figures[f"{key}_vs_alone_max_diff"] = padded
        self.result.figures[f"{key}_eager_ms"] = round(1000 * seconds["eager"], 2)
        self.result.figures[f"{key}_replayed_ms"] = round(1000 * seconds["replayed"], 2)
        if timed and seconds["replayed"] >= seconds["eager"]:
            self.result.problems.append(f"{where} replayed took {1000 * seconds['replayed']:.1f} ms, not less than "
                                        f"eagerly ({1000 * seconds['eager']:.1f} ms)")

    def _compare(self, got: Sequence[torch.Tensor], want: Sequence[torch.Tensor], where: str, against: str,
                 differs: Callable[[torch.Tensor, torch.Tensor], float | None]) -> float:
        worst = 0.0
        for i, (g, w) in enumerate(zip(got, want)):
            if g.shape != w.shape:
                self.result.problems.append(f"row {i} of {where} has {g.numel()} samples, not {w.numel()}")
                return float("inf")
            if not torch.isfinite(g).all():
                self.result.problems.append(f"row {i} of {where} is not finite")
                return float("inf")
            if float(w.abs().max()) == 0.0:
                self.result.problems.append(f"row {i} of {where} is silent")
                return float("inf")
            worst = max(worst, float((g - w).abs().max()))
            diff = differs(g, w)
            if diff is not None:
                self.result.problems.append(f"row {i} of {where} replayed differs from {against} by {diff:.3g}")
                return worst
        return round(worst, 9)


def _within_audio_tolerance(got: torch.Tensor, want: torch.Tensor) -> float | None:
    diff = float((got - want).abs().max())
    return None if diff <= AUDIO_TOLERANCE else diff


def _fresh(rows: Sequence[VocodeRow]) -> list[VocodeRow]:
    """The rows with generators in their starting state again (each call draws the same noise)."""
    return [VocodeRow(r.tokens, r.ref, torch.Generator(r.generator.device).set_state(r.generator.get_state()))
            for r in rows]


def _timed(device: torch.device, call: Callable[[], list[torch.Tensor]]) -> tuple[float, list[torch.Tensor]]:
    synchronize(device)
    started = time.perf_counter()
    wavs = call()
    synchronize(device)
    return time.perf_counter() - started, wavs
