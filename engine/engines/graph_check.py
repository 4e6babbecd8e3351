"""The start-up self-check of CUDA-graph decoding: before a worker says ready, its graphs prove that they compute what
the eager step computes, on the serving device and the decode loop's thread.

What it checks (each failure is one sentence in ``GraphCheck.problems``):
- from one snapshot, K replays equal K eager steps bitwise (tokens, positions, stop flags, counts, history, the keys
  and values written) at the smallest and the largest batch bucket, with 2-3 voices in slots other than 0;
- the replays advanced every live slot by K positions (an empty graph changes nothing);
- the logits of a prefill after a reused voice prefix, and of decode steps, match transformers' own forward of T3
  within the dtype's tolerance; prefix reuse equals a full prefill within it too;
- logits and the K/V written are finite, sampled tokens are in the vocabulary;
- random draws on the device still work after the captures (a failed capture can leave the default generator in
  capture mode), and one S3Gen call runs (``TurboEngine`` adds that);
- on CUDA, a replay is faster than the eager step (else graphs only cost memory).

The comparison logic is plain torch and runs on a CPU with a stand-in replay (tests/test_graph_check.py).
"""

from __future__ import annotations

import copy
import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from chatterbox.models.t3 import T3
from chatterbox.models.t3.modules.cond_enc import T3Cond

from .t3_batch import BATCH_BUCKETS, BatchDecoder, length_bucket
from .t3_sampling import draw_noise
from .t3_static import SlotKV, voice_prefix

Step = Callable[[int, int], None]
STEPS = 4  # replays compared with eager steps per bucket


@dataclass
class GraphCheck:
    problems: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def reason(self) -> str:
        return "; ".join(self.problems)

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "problems": self.problems, **self.figures}


def tolerance(dtype: torch.dtype) -> float:
    """Largest |difference| allowed between two computations of the same logits or K/V, relative to their scale:
    float32 agrees to rounding; bf16/fp16 kernels that order their sums differently drift by a few of its 8 bits."""
    return 1e-4 if dtype == torch.float32 else 5e-2


def close(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype) -> float | None:
    """None when ``got`` is within ``tolerance`` of ``want`` (scaled by ``want``'s largest magnitude, at least 1);
    else the largest difference."""
    diff = float((got.float() - want.float()).abs().max())
    scale = max(1.0, float(want.float().abs().max()))
    return None if diff <= tolerance(dtype) * scale else diff


def check_slots(batch: int) -> list[int]:
    """Slots the check fills in a batch of ``batch`` rows: 2-3 of them, avoiding slot 0 where there is room."""
    chosen = sorted({1, batch // 2, batch - 1} - {0})
    return chosen if len(chosen) >= 2 else sorted({0, *chosen})


def check_buckets(slots: int) -> list[int]:
    """The smallest bucket with room for two slots, and the largest (the whole cache)."""
    smallest = next(b for b in BATCH_BUCKETS if b >= min(2, slots))
    return sorted({min(smallest, slots), slots})


def transformers_logits(t3: T3, cond: T3Cond, text_tokens: torch.Tensor, forced: Sequence[int]) -> list[torch.Tensor]:
    """Speech logits of transformers' own GPT-2 forward (a dynamic cache): after the prefill of conditioning, text and
    start token, then after each of ``forced`` fed back. The cache's name differs between releases (5.17:
    ``past_key_values``; 5.24: ``cache``, warning about the old name), hence the keyword looked up and ``out[1]``."""
    param = next(t3.parameters())
    device = param.device
    cache_kw = "cache" if "cache" in inspect.signature(t3.tfmr.forward).parameters else "past_key_values"
    start = torch.tensor([[t3.hp.start_speech_token]], device=device)
    embeds, _ = t3.prepare_input_embeds(t3_cond=copy.copy(cond).to(device=device, dtype=param.dtype),
                                        text_tokens=text_tokens.to(device),
                                        speech_tokens=start)
    out = t3.tfmr(inputs_embeds=embeds, use_cache=True)
    logits = [t3.speech_head(out[0][:, -1])]
    for token in forced:
        step = t3.speech_emb(torch.tensor([[token]], device=device))
        out = t3.tfmr(inputs_embeds=step, use_cache=True, **{cache_kw: out[1]})
        logits.append(t3.speech_head(out[0][:, -1]))
    return logits


def slot_logits(t3: T3, decoder: BatchDecoder, cond: T3Cond, text_tokens: torch.Tensor, forced: Sequence[int],
                slot: int) -> list[torch.Tensor]:
    """The same logits from our body over a ``SlotKV``: the voice prefix reused in ``slot`` of a small cache, the text
    prefilled after it, then ``forced`` one position at a time."""
    body, device = decoder.body, decoder.device
    prefix = voice_prefix(t3, body, cond)
    start = torch.tensor([[t3.hp.start_speech_token]], device=device)
    suffix = torch.cat([t3.text_emb(text_tokens.to(device)), t3.speech_emb(start)], dim=1)
    capacity = length_bucket(prefix.length + suffix.shape[1] + len(forced) + 1, decoder.kv.capacity)
    kv = SlotKV.empty(t3, slots=slot + 1, capacity=capacity)
    kv.load_prefix(slot, prefix)
    pos = prefix.length + suffix.shape[1]
    hidden = body(suffix, torch.arange(prefix.length, pos, device=device)[None], kv, first_slot=slot, attend=pos)
    logits = [t3.speech_head(hidden[:, -1])]
    for token in forced:
        step = t3.speech_emb(torch.tensor([[token]], device=device))
        hidden = body(step, torch.tensor([[pos]], device=device), kv, first_slot=slot, attend=capacity)
        logits.append(t3.speech_head(hidden[:, -1]))
        pos += 1
    return logits


class SelfCheck:
    """Runs the checks on ``decoder`` (no slot live) with ``replay`` as its graphed step; leaves it as found."""

    def __init__(self, t3: T3, decoder: BatchDecoder, replay: Step, conds: Sequence[T3Cond],
                 texts: Sequence[torch.Tensor], timing: bool) -> None:
        self.t3, self.decoder, self.replay = t3, decoder, replay
        self.conds, self.texts, self.timing = list(conds), list(texts), timing
        self.dtype = next(t3.parameters()).dtype
        self.result = GraphCheck()

    def run(self) -> GraphCheck:
        assert not self.decoder.live, "the self-check runs before serving"
        started = time.perf_counter()
        with torch.inference_mode():
            prefixes = [voice_prefix(self.t3, self.decoder.body, cond) for cond in self.conds]
            for batch in check_buckets(self.decoder.slots):
                self._replays_equal_eager(batch, prefixes)
            self._logits_match_transformers()
            self._prefix_reuse_equals_full_prefill(prefixes[0])
            self._draws_work()
        self.result.figures["check_s"] = round(time.perf_counter() - started, 2)
        return self.result

    def problem(self, text: str) -> None:
        self.result.problems.append(text)

    # ----- replays against eager steps -----

    def _replays_equal_eager(self, batch: int, prefixes: list) -> None:
        decoder, slots = self.decoder, check_slots(batch)
        try:
            for i, slot in enumerate(slots):
                generator = torch.Generator(decoder.device).manual_seed(1000 + slot)
                decoder.join(slot, prefixes[i % len(prefixes)], self.texts[i % len(self.texts)], generator, 10**6)
            draw_noise(decoder.noise, slots, [torch.Generator(decoder.device).manual_seed(slot) for slot in slots])
            attend = length_bucket(int(decoder.positions[slots].max()) + STEPS + 1, decoder.kv.capacity)
            before = self._state(slots, attend)
            eager_s = self._run(decoder.step, batch, attend)
            eager = self._state(slots, attend)
            self._restore(before, slots, attend)
            replay_s = self._run(self.replay, batch, attend)
            replayed = self._state(slots, attend)
            self._restore(before, slots, attend)
        finally:
            for slot in slots:
                decoder.leave(slot)
        where = f"at batch {batch} (slots {', '.join(map(str, slots))})"
        moved = (replayed["positions"] - before["positions"]).tolist()
        if moved != [STEPS] * len(slots):
            self.problem(f"{STEPS} replays {where} moved the slots by {moved} positions, not {STEPS} (an empty graph?)")
        differ = [name for name in eager if not torch.equal(eager[name], replayed[name])]
        if differ:
            self.problem(f"{STEPS} replays {where} differ from {STEPS} eager steps in {', '.join(differ)}")
        if not (torch.isfinite(replayed["k"]).all() and torch.isfinite(replayed["v"]).all()):
            self.problem(f"the keys and values written by the replays {where} are not all finite")
        vocab = self.t3.hp.speech_tokens_dict_size
        if not bool(((replayed["history"] >= 0) & (replayed["history"] < vocab)).all()):
            self.problem(f"the replays {where} sampled tokens outside the vocabulary of {vocab}")
        self.result.figures[f"b{batch}_eager_step_ms"] = round(1000 * eager_s / STEPS, 3)
        self.result.figures[f"b{batch}_replay_ms"] = round(1000 * replay_s / STEPS, 3)
        if self.timing and replay_s >= eager_s:
            self.problem(f"a replay {where} took {1000 * replay_s / STEPS:.2f} ms, not less than the eager step's "
                         f"{1000 * eager_s / STEPS:.2f} ms")

    def _run(self, step: Step, batch: int, attend: int) -> float:
        synchronize(self.decoder.device)
        started = time.perf_counter()
        for _ in range(STEPS):
            step(batch, attend)
        synchronize(self.decoder.device)
        return time.perf_counter() - started

    def _state(self, slots: list[int], attend: int) -> dict[str, torch.Tensor]:
        """Copies of what a step may change in ``slots`` (the K/V over the attended window included)."""
        d, rows = self.decoder, torch.tensor(slots, device=self.decoder.device)
        return {"tokens": d.tokens[rows].clone(), "positions": d.positions[rows].clone(),
                "stop flags": d.stopped[rows].clone(), "counts": d.counts[rows].clone(),
                "history": d.history[rows].clone(), "repetition marks": d.seen[rows].clone(),
                "k": d.kv.k[:, rows, :, :attend].clone(), "v": d.kv.v[:, rows, :, :attend].clone()}

    def _restore(self, state: dict[str, torch.Tensor], slots: list[int], attend: int) -> None:
        d, rows = self.decoder, torch.tensor(slots, device=self.decoder.device)
        d.tokens[rows], d.positions[rows], d.stopped[rows] = state["tokens"], state["positions"], state["stop flags"]
        d.counts[rows], d.history[rows], d.seen[rows] = state["counts"], state["history"], state["repetition marks"]
        d.kv.k[:, rows, :, :attend], d.kv.v[:, rows, :, :attend] = state["k"], state["v"]

    # ----- numerics against transformers and a full prefill -----

    def _logits_match_transformers(self) -> None:
        forced = [17, 3000, 6000, 42, 5]
        want = transformers_logits(self.t3, self.conds[0], self.texts[0], forced)
        got = slot_logits(self.t3, self.decoder, self.conds[0], self.texts[0], forced, slot=1)
        worst = 0.0
        for i, (g, w) in enumerate(zip(got, want)):
            if not torch.isfinite(g).all():
                self.problem(f"{'prefill' if i == 0 else f'decode step {i}'} logits are not finite")
                return
            worst = max(worst, float((g.float() - w.float()).abs().max()))
            diff = close(g, w, self.dtype)
            if diff is not None:
                self.problem(f"{'prefill' if i == 0 else f'decode step {i}'} logits differ from transformers' "
                             f"forward by {diff:.3g} ({self.dtype} tolerance {tolerance(self.dtype):g})")
                return
        self.result.figures["logits_max_diff"] = round(worst, 6)

    def _prefix_reuse_equals_full_prefill(self, prefix: Any) -> None:
        decoder, slot, text = self.decoder, 0, self.texts[0]
        try:
            decoder.join(slot, prefix, text, torch.Generator(decoder.device).manual_seed(7), 1)
            length = int(decoder.positions[slot])
            reused = decoder.kv.k[:, slot, :, :length].clone(), decoder.kv.v[:, slot, :, :length].clone()
            decoder.leave(slot)
            decoder.join_without_prefix(slot, self.conds[0], text, torch.Generator(decoder.device).manual_seed(7), 1)
            full = decoder.kv.k[:, slot, :, :length], decoder.kv.v[:, slot, :, :length]
            diffs = [close(a, b, self.dtype) for a, b in zip(reused, full)]
        finally:
            decoder.leave(slot)
        if any(d is not None for d in diffs):
            self.problem(f"prefix reuse differs from a full prefill by {max(d or 0 for d in diffs):.3g} in the K/V")

    def _draws_work(self) -> None:
        device = self.decoder.device
        try:
            draws = [torch.randn(64, device=device),
                     torch.empty(64, device=device).exponential_(1, generator=torch.Generator(device).manual_seed(0))]
            finite = all(bool(torch.isfinite(d).all()) for d in draws)
        except RuntimeError as exc:
            self.problem(f"random draws on {device} fail after the captures: {exc}")
            return
        if not finite:
            self.problem(f"random draws on {device} are not finite after the captures")


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
