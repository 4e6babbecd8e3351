"""Continuous batching of T3 decoding: slots of a static KV cache that join, step together and leave.

A request joins a free slot once its prefill is done (the voice prefix copied in, its own text prefilled, its first
token sampled; requests joining together prefill together) and leaves at its stop token, its token budget, or a
cancel; the others never wait for it. One decode step advances every slot in a batch bucket by one token entirely on
the device: ``step`` has fixed shapes per (batch bucket, attended length) and reads nothing back, so on CUDA it is
captured once per bucket and replayed (``cuda_graphs.GraphedSteps``). The host learns about stop tokens by reading
the ``stopped`` flags every few steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from chatterbox.models.t3 import T3
from chatterbox.models.t3.modules.cond_enc import T3Cond

from .t3_sampling import Sampling, counter_noise, draw_noise, sample_rows, slot_key
from .t3_static import Gpt2Body, SlotKV, VoicePrefix, conditioning_embeds

BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
LENGTH_BUCKET = 256  # attended length is rounded up to this: one graph per (batch bucket, length bucket)

Step = Callable[[int, int], None]


def batch_bucket(rows: int, slots: int) -> int:
    """The smallest bucket holding ``rows`` rows (never more than the cache has slots)."""
    return min(next((b for b in BATCH_BUCKETS if b >= rows), slots), slots)


def length_bucket(length: int, capacity: int) -> int:
    return min(_round_up(length), capacity)


def _round_up(length: int) -> int:
    return -(-length // LENGTH_BUCKET) * LENGTH_BUCKET


def cache_capacity(prompt_len: int, max_text_tokens: int = 512, max_tokens: int = Sampling().max_tokens) -> int:
    """Positions of one slot's K/V: speaker embedding, speech prompt, text, start token, sampled tokens (the last
    one is never fed back), rounded up to a length bucket."""
    return _round_up(1 + prompt_len + max_text_tokens + 1 + max_tokens)


@dataclass(frozen=True)
class Join:
    """A request entering ``slot``: its voice's prefix (None: prefilled again), text tokens, generator, token budget."""

    slot: int
    prefix: VoicePrefix | None
    text_tokens: torch.Tensor
    generator: torch.Generator
    budget: int


@dataclass
class _Slot:
    generator: torch.Generator
    position: int  # where the next input token goes (host mirror of ``BatchDecoder.positions``)
    count: int  # tokens sampled so far
    limit: int  # most tokens this slot may sample


class BatchDecoder:
    """The device state of every slot and the two operations on it: ``join`` (prefill) and ``step`` (decode)."""

    def __init__(self, t3: T3, slots: int, sampling: Sampling = Sampling(), max_text_tokens: int = 512) -> None:
        if t3.hp.input_pos_emb is not None:
            raise ValueError("the static decoder follows Turbo's T3 (no learned text/speech position embeddings)")
        param = next(t3.parameters())
        self.t3, self.sampling, self.device = t3, sampling, param.device
        self.body = Gpt2Body(t3)
        self.kv = SlotKV.empty(t3, slots, cache_capacity(t3.hp.speech_cond_prompt_len, max_text_tokens,
                                                         sampling.max_tokens))
        vocab, dev = t3.hp.speech_tokens_dict_size, self.device
        self.start, self.stop = t3.hp.start_speech_token, t3.hp.stop_speech_token
        self.rows = torch.arange(slots, device=dev)
        self.tokens = torch.zeros(slots, dtype=torch.long, device=dev)  # the next input of each slot
        self.positions = torch.zeros(slots, dtype=torch.long, device=dev)
        self.active = torch.zeros(slots, dtype=torch.bool, device=dev)
        self.seen = torch.zeros(slots, vocab, dtype=torch.bool, device=dev)  # the repetition penalty's tokens
        self.noise = torch.ones(slots, vocab, dtype=torch.float32, device=dev)
        # True under CUDA graphs: ``step`` draws its noise itself (``counter_noise``), else ``advance`` fills ``noise``
        self.noise_in_step = False
        self.keys = torch.zeros(slots, dtype=torch.long, device=dev)  # each slot's ``slot_key``
        self.columns = torch.arange(vocab, device=dev)
        self.history = torch.zeros(slots, sampling.max_tokens + 1, dtype=torch.long, device=dev)
        self.counts = torch.zeros(slots, dtype=torch.long, device=dev)
        self.stopped = torch.zeros(slots, dtype=torch.bool, device=dev)
        self.run_step: Step = self.step  # replaced by CUDA graph replays where those are used
        self._slots: list[_Slot | None] = [None] * slots

    # ----- slots -----

    @property
    def slots(self) -> int:
        return len(self._slots)

    @property
    def live(self) -> list[int]:
        return [i for i, s in enumerate(self._slots) if s is not None]

    def free_slot(self, taken: Sequence[int] = ()) -> int | None:
        """The lowest free slot not in ``taken`` (keeping the batch bucket small), or None."""
        return next((i for i, s in enumerate(self._slots) if s is None and i not in taken), None)

    @torch.inference_mode()
    def join(self, slot: int, prefix: VoicePrefix, text_tokens: torch.Tensor, generator: torch.Generator,
             budget: int) -> None:
        """Copy the voice's prefix into ``slot``, prefill only the text and start token, sample the first token."""
        self.join_many([Join(slot, prefix, text_tokens, generator, budget)])

    @torch.inference_mode()
    def join_many(self, joins: Sequence[Join]) -> None:
        """``join`` for several slots in one prefill: each row's text (and start token) padded to the longest. A row's
        padding sits at positions past its own prompt, which none of its queries attend and its decode steps write
        over before reading, so every row prefills, and samples its first token, as it would alone."""
        first_pos = []
        for join in joins:
            assert join.prefix is not None, "a join without a prefix prefills its conditioning: join_without_prefix"
            self.kv.load_prefix(join.slot, join.prefix)
            first_pos.append(join.prefix.length)
        texts = [self._text_embeds(join.text_tokens)[0] for join in joins]
        embeds = torch.nn.utils.rnn.pad_sequence(texts, batch_first=True)
        self._prefill(joins, embeds, [len(t) for t in texts], first_pos)

    @torch.inference_mode()
    def join_without_prefix(self, slot: int, cond: T3Cond, text_tokens: torch.Tensor, generator: torch.Generator,
                            budget: int) -> None:
        """``join`` the way upstream does it: the whole conditioning prefilled again (for comparisons)."""
        embeds = torch.cat([conditioning_embeds(self.t3, cond), self._text_embeds(text_tokens)], dim=1)
        self._prefill([Join(slot, None, text_tokens, generator, budget)], embeds, [embeds.shape[1]], [0])

    def leave(self, slot: int) -> None:
        self.active[slot] = False
        self.positions[slot] = 0
        self.counts[slot] = 0
        self._slots[slot] = None

    def _text_embeds(self, text_tokens: torch.Tensor) -> torch.Tensor:
        start = torch.full((1, 1), self.start, dtype=torch.long, device=self.device)
        return torch.cat([self.t3.text_emb(text_tokens.to(self.device).view(1, -1)), self.t3.speech_emb(start)], 1)

    def _prefill(self, joins: Sequence[Join], embeds: torch.Tensor, sizes: list[int], first_pos: list[int]) -> None:
        """Prefill rows of ``embeds`` [B, L, D] (row i: ``sizes[i]`` positions from ``first_pos[i]``, then padding)."""
        attend = max(first_pos) + embeds.shape[1]
        if attend >= self.kv.capacity:
            raise ValueError(f"prompt of {attend} positions does not fit a cache of {self.kv.capacity}")
        dev, slots = self.device, [join.slot for join in joins]
        lengths = [p + n for p, n in zip(first_pos, sizes)]
        positions = torch.tensor(first_pos, device=dev)[:, None] + torch.arange(embeds.shape[1], device=dev)[None]
        contiguous = slots == list(range(slots[0], slots[0] + len(slots)))
        rows = torch.tensor(slots, device=dev)
        hidden = self.body(embeds, positions, self.kv, first_slot=slots[0], attend=attend,
                           slots=None if contiguous else rows)
        logits = self.t3.speech_head(hidden[torch.arange(len(joins), device=dev), torch.tensor(sizes, device=dev) - 1])
        seen = torch.zeros(len(joins), self.seen.shape[1], dtype=torch.bool, device=dev)
        seen[:, self.start] = True  # inference_turbo penalises the start token for the first draw only
        draw_noise(self.noise, slots, [join.generator for join in joins])
        first = sample_rows(logits, seen, self.noise[rows], self.sampling)
        self.tokens[rows] = first
        self.positions[rows] = torch.tensor(lengths, device=dev)
        self.seen[rows] = False
        self.seen[rows, first] = True
        self.history[rows, 0] = first
        self.counts[rows] = 1
        self.stopped[rows] = first == self.stop
        self.active[rows] = True
        self.keys[rows] = torch.tensor([slot_key(join.generator.initial_seed()) for join in joins], device=dev)
        for join, length in zip(joins, lengths):
            limit = min(join.budget + 1, self.sampling.max_tokens + 1, self.kv.capacity - length)
            self._slots[join.slot] = _Slot(join.generator, length, 1, limit)

    # ----- decoding -----

    @torch.inference_mode()
    def step(self, batch: int, attend: int) -> None:
        """Decode one token for slots ``0..batch-1`` (inactive ones compute and change nothing that is read).

        Fixed shapes for a given (batch, attend), no host read-back: the body of a CUDA graph."""
        rows, act = self.rows[:batch], self.active[:batch]
        tokens, positions = self.tokens[:batch], self.positions[:batch]
        hidden = self.body(self.t3.speech_emb(tokens)[:, None], positions[:, None], self.kv, 0, attend)
        counts = self.counts[:batch]
        noise = counter_noise(self.keys[:batch], counts, self.columns) if self.noise_in_step else self.noise[:batch]
        sampled = sample_rows(self.t3.speech_head(hidden[:, 0]), self.seen[:batch], noise, self.sampling)
        new = torch.where(act, sampled, tokens)
        tokens.copy_(new)
        self.seen[rows, new] = self.seen[rows, new] | act
        self.history[rows, counts] = torch.where(act, new, self.history[rows, counts])
        counts += act
        self.stopped[:batch] |= act & (new == self.stop)
        positions += act

    def snapshot(self) -> list[torch.Tensor]:
        """Copies of everything ``step`` changes apart from the KV cache (which it rewrites with the same values)."""
        return [t.clone() for t in self._bookkeeping()]

    def restore(self, saved: list[torch.Tensor]) -> None:
        for live, copy in zip(self._bookkeeping(), saved):
            live.copy_(copy)

    def _bookkeeping(self) -> list[torch.Tensor]:
        return [self.tokens, self.positions, self.seen, self.history, self.counts, self.stopped]

    def advance(self) -> list[int]:
        """One decode step for every live slot; returns the slots that reached their token limit."""
        live = self.live
        if not live:
            return []
        states = [self._slots[i] for i in live]
        if not self.noise_in_step:
            draw_noise(self.noise, live, [s.generator for s in states])
        attend = length_bucket(max(s.position for s in states) + 1, self.kv.capacity)
        self.run_step(batch_bucket(live[-1] + 1, self.slots), attend)
        for state in states:
            state.position += 1
            state.count += 1
        return [i for i, s in zip(live, states) if s.count >= s.limit]

    def stopped_slots(self) -> list[int]:
        """Live slots that sampled the stop token (one read-back for the whole batch)."""
        live = self.live
        if not live:
            return []
        flags = self.stopped[:live[-1] + 1].tolist()
        return [i for i in live if flags[i]]

    def tokens_of(self, slot: int) -> list[int]:
        """The slot's sampled tokens up to (not including) its first stop token."""
        state = self._slots[slot]
        assert state is not None
        tokens = self.history[slot, :min(state.count, state.limit)].tolist()
        return tokens[:tokens.index(self.stop)] if self.stop in tokens else tokens
