"""What the S3Gen tests compare against, on the tiny checkpoint: two voices with prompts of different lengths, and
upstream's own ``S3Gen.inference`` run alone."""

from __future__ import annotations

import contextlib
import os

import torch
from turbo_checkpoint import builtin_conditionals

from engine.engines.turbo import TurboEngine, TurboVoice


def two_voices(engine: TurboEngine) -> list[TurboVoice]:
    """The built-in voice (100 prompt tokens) and another of 60 (cut from a second stand-in, as cheap as a clone)."""
    other = builtin_conditionals(seed=5).gen
    short = dict(other, prompt_token=other["prompt_token"][:, :60], prompt_token_len=torch.tensor([60]),
                 prompt_feat=other["prompt_feat"][:, :120])
    return [engine.default_voice(), TurboVoice(engine.default_voice().t3, short)]


def solo(engine: TurboEngine, tokens: torch.Tensor, voice: TurboVoice, seed: int) -> torch.Tensor:
    """Upstream's own call, its noise from torch's global generator."""
    torch.manual_seed(seed)
    with torch.inference_mode(), open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), \
            contextlib.redirect_stderr(sink):
        wav, _ = engine.s3gen.inference(speech_tokens=tokens, ref_dict=dict(voice.gen), n_cfm_timesteps=2)
    return wav[0]
