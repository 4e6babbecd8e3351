"""T3's GPT-2 body run over a preallocated KV cache with batch slots.

The cache has a fixed address and shape ([layers, slots, heads, capacity, head_dim]), so a decode step over it can be
captured as a CUDA graph. Each row writes its keys and values at its own positions (index tensors, not a shared
counter), and attends to keys ``0..position`` of its own slot only, over a bounded window (``attend``) rather than the
whole capacity. The layers are GPT-2's own modules (their weights, layer norms, projections and MLP); only the cache
and the attention call are ours, so this does not depend on a transformers release's cache classes.

GPT-2 positions are absolute, so the keys and values of a voice's conditioning prefix are the same for every chunk:
``voice_prefix`` computes them once and ``SlotKV.load_prefix`` copies them into a slot.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from chatterbox.models.t3 import T3
from chatterbox.models.t3.modules.cond_enc import T3Cond


@dataclass(frozen=True)
class VoicePrefix:
    """Keys and values of a voice's conditioning prefix, [layers, heads, length, head_dim] each."""

    k: torch.Tensor
    v: torch.Tensor

    @property
    def length(self) -> int:
        return self.k.shape[2]


@dataclass(frozen=True)
class SlotKV:
    """The static cache: keys and values of every layer for every slot, [layers, slots, heads, capacity, head_dim]."""

    k: torch.Tensor
    v: torch.Tensor

    @classmethod
    def empty(cls, t3: T3, slots: int, capacity: int) -> SlotKV:
        cfg = t3.tfmr.config
        param = next(t3.parameters())
        shape = (cfg.n_layer, slots, cfg.n_head, capacity, cfg.n_embd // cfg.n_head)
        return cls(torch.zeros(shape, dtype=param.dtype, device=param.device),
                   torch.zeros(shape, dtype=param.dtype, device=param.device))

    @property
    def capacity(self) -> int:
        return self.k.shape[3]

    def load_prefix(self, slot: int, prefix: VoicePrefix) -> None:
        self.k[:, slot, :, :prefix.length] = prefix.k
        self.v[:, slot, :, :prefix.length] = prefix.v


class Gpt2Body:
    """``GPT2Model.forward`` over a ``SlotKV``: input plus position embeddings, the blocks, the final norm."""

    def __init__(self, t3: T3) -> None:
        tfmr = t3.tfmr
        cfg = tfmr.config
        if getattr(cfg, "add_cross_attention", False) or getattr(cfg, "reorder_and_upcast_attn", False):
            raise ValueError("T3's GPT-2 body has no cross-attention or reordered attention")
        self.blocks = list(tfmr.h)
        self.wpe = tfmr.wpe
        self.ln_f = tfmr.ln_f
        self.heads = cfg.n_head
        head_dim = cfg.n_embd // cfg.n_head
        base = head_dim ** -0.5 if cfg.scale_attn_weights else 1.0
        by_layer = getattr(cfg, "scale_attn_by_inverse_layer_idx", False)
        self.scales = [base / (i + 1) if by_layer else base for i in range(len(self.blocks))]

    def __call__(self, embeds: torch.Tensor, positions: torch.Tensor, kv: SlotKV, first_slot: int,
                 attend: int, slots: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states [B, L, D] for ``embeds`` [B, L, D] at ``positions`` [B, L] (long), rows being slots
        ``first_slot .. first_slot + B - 1`` (or the slots ``slots`` [B] names: their keys are then read as a copy).
        Keys and values are written at ``positions`` before attention reads ``0..attend-1``; a query at position p
        sees keys 0..p of its own slot."""
        b, n, d = embeds.shape
        hd = d // self.heads
        x = embeds + self.wpe(positions)
        keys = torch.arange(attend, device=embeds.device)
        mask = (keys[None, None, None, :] <= positions[:, None, :, None])  # [B, 1, L, attend]
        rows = torch.arange(first_slot, first_slot + b, device=embeds.device) if slots is None else slots
        heads = torch.arange(self.heads, device=embeds.device)[None, :, None]
        where = (rows[:, None, None], heads, positions[:, None, :])  # [B, H, L] indices into a layer's cache
        rows_of = slice(first_slot, first_slot + b) if slots is None else slots
        for layer, block in enumerate(self.blocks):
            attn = block.attn
            q, k, v = attn.c_attn(block.ln_1(x)).split(d, dim=2)
            q, k, v = (t.view(b, n, self.heads, hd).transpose(1, 2) for t in (q, k, v))
            kv.k[layer].index_put_(where, k)
            kv.v[layer].index_put_(where, v)
            out = F.scaled_dot_product_attention(q, kv.k[layer, rows_of, :, :attend], kv.v[layer, rows_of, :, :attend],
                                                 attn_mask=mask, scale=self.scales[layer])
            x = x + attn.c_proj(out.transpose(1, 2).reshape(b, n, d))
            x = x + block.mlp(block.ln_2(x))
        return self.ln_f(x)


def conditioning_embeds(t3: T3, cond: T3Cond) -> torch.Tensor:
    """The voice part of T3's input, [1, P, D], computed on a copy (``prepare_conditioning`` caches on its argument)."""
    param = next(t3.parameters())
    return t3.prepare_conditioning(copy.copy(cond).to(device=param.device, dtype=param.dtype))


@torch.inference_mode()
def voice_prefix(t3: T3, body: Gpt2Body, cond: T3Cond) -> VoicePrefix:
    """Run the conditioning prefix once at positions 0..P-1 and keep its keys and values."""
    embeds = conditioning_embeds(t3, cond)
    length = embeds.shape[1]
    kv = SlotKV.empty(t3, slots=1, capacity=length)
    body(embeds, torch.arange(length, device=embeds.device)[None], kv, first_slot=0, attend=length)
    return VoicePrefix(kv.k[:, 0], kv.v[:, 0])
