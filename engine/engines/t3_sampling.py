"""Upstream Turbo's sampling, one row per slot, on the device, without a host read-back.

``T3.inference_turbo`` applies temperature, top-k, top-p and then the repetition penalty (in that order) and draws with
``torch.multinomial``. For one sample, multinomial is ``argmax(p / q)`` with ``q ~ Exp(1)`` drawn over the whole row
from the generator; drawing ``q`` for each row from that row's own generator therefore gives each slot exactly the
tokens it would get alone, whatever its neighbours do. The functions here mirror transformers' processors operation by
operation so the arithmetic (and so the tokens) is the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Sampling:
    """``ChatterboxTurboTTS.generate``'s sampling defaults, and ``inference_turbo``'s cap on generated tokens."""

    temperature: float = 0.8
    top_k: int = 1000
    top_p: float = 0.95
    repetition_penalty: float = 1.2
    max_tokens: int = 1000


def sample_rows(logits: torch.Tensor, seen: torch.Tensor, noise: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """One token per row of ``logits`` [B, V]; ``seen`` [B, V] marks the tokens the penalty applies to; ``noise``
    [B, V] holds each row's Exp(1) draws. Shapes are fixed and nothing is read back, so this can be graph-captured."""
    scores = logits.float()
    if sampling.temperature > 0 and sampling.temperature != 1.0:  # TemperatureLogitsWarper
        scores = scores / sampling.temperature
    if sampling.top_k > 0:  # TopKLogitsWarper
        kth = torch.topk(scores, min(sampling.top_k, scores.size(-1)))[0][..., -1, None]
        scores = scores.masked_fill(scores < kth, -float("inf"))
    if sampling.top_p < 1.0:  # TopPLogitsWarper (min_tokens_to_keep=1)
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        remove = sorted_logits.softmax(dim=-1).cumsum(dim=-1) <= (1 - sampling.top_p)
        remove[..., -1:] = False
        scores = scores.masked_fill(remove.scatter(1, sorted_indices, remove), -float("inf"))
    if sampling.repetition_penalty != 1.0:  # RepetitionPenaltyLogitsProcessor
        penalised = torch.where(scores < 0, scores * sampling.repetition_penalty, scores / sampling.repetition_penalty)
        scores = torch.where(seen, penalised, scores)
    return torch.argmax(F.softmax(scores, dim=-1) / noise, dim=-1)


def draw_noise(noise: torch.Tensor, rows: Sequence[int], generators: Sequence[torch.Generator]) -> None:
    """Fill ``noise[row]`` with Exp(1) draws from that row's generator (what multinomial draws for one sample)."""
    for row, generator in zip(rows, generators):
        noise[row].exponential_(1, generator=generator)
