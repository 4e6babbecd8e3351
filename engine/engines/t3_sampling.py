"""Upstream Turbo's sampling, one row per slot, on the device, without a host read-back.

``T3.inference_turbo`` applies temperature, top-k, top-p and then the repetition penalty (in that order) and draws with
``torch.multinomial``. For one sample, multinomial is ``argmax(p / q)`` with ``q ~ Exp(1)`` drawn over the whole row
from the generator; drawing ``q`` for each row from that row's own generator therefore gives each slot exactly the
tokens it would get alone, whatever its neighbours do. The functions here mirror transformers' processors operation by
operation so the arithmetic (and so the tokens) is the same.

Under CUDA graphs the noise is drawn inside the captured step instead (``counter_noise``): a pure function of the
slot's key (from its request's seed), its step counter and the column, so a step is one replay and not 1 + B launches
of ``exponential_``. Those draws are Exp(1) and per slot too, but not the generator's: tokens differ from the eager
path's for the same seed (the self-check compares replays with eager steps drawing the same way).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

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


MASK32 = 0xFFFFFFFF
Word = TypeVar("Word", int, torch.Tensor)  # a Python int or an int64 tensor of values below 2**32


def _mul32(h: Word, c: int) -> Word:
    """``h * c mod 2**32`` in two 16-bit halves, so no int64 product overflows."""
    return (h * (c & 0xFFFF) + (((h * (c >> 16)) & 0xFFFF) << 16)) & MASK32


def _fmix32(h: Word) -> Word:
    """MurmurHash3's 32-bit finaliser: a bijection whose output bits each depend on every input bit."""
    h = h & MASK32
    h = h ^ (h >> 16)
    h = _mul32(h, 0x85EBCA6B)
    h = h ^ (h >> 13)
    h = _mul32(h, 0xC2B2AE35)
    return h ^ (h >> 16)


def slot_key(seed: int) -> int:
    """The 32-bit key ``counter_noise`` draws from for a request seeded with ``seed`` (all 64 bits count)."""
    return _fmix32(_fmix32(seed >> 32) ^ (seed & MASK32))


def counter_noise(keys: torch.Tensor, counters: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
    """Exp(1) draws [B, V] for rows with ``keys`` [B] at step ``counters`` [B] over ``columns`` [V] (int64): row i
    depends on ``keys[i]`` and ``counters[i]`` only. Fixed shapes, no generator, nothing read back: graph-capturable."""
    index = counters[:, None] * columns.numel() + columns[None]
    key = keys[:, None]
    h = _fmix32(_fmix32(index ^ key) + key)
    uniform = ((h >> 8).float() + 0.5) * 2.0 ** -24  # 24 bits, in (0, 1): exact in float32
    return -torch.log(uniform)
