"""Write a tiny random-weights Chatterbox-Turbo checkpoint in the ``from_local`` file layout (for fast tests).

Files: ve.safetensors, t3_turbo_v1.safetensors, s3gen_meanflow.safetensors, vocab.json + merges.txt +
tokenizer_config.json (a byte-level GPT-2 tokenizer that loads offline), conds.pt, and chatterbox_fast_arch.json
(the small sizes; the released model needs no such file).
"""

from __future__ import annotations

from pathlib import Path

import torch
from chatterbox.models.t3.modules.cond_enc import T3Cond
from chatterbox.models.voice_encoder import VoiceEncoder
from chatterbox.tts_turbo import Conditionals
from safetensors.torch import save_file

from engine.engines.turbo_arch import (
    CONDS_FILE,
    S3GEN_FILE,
    T3_FILE,
    VE_FILE,
    S3GenSize,
    SizedS3Gen,
    TurboArch,
    build_t3,
    write_byte_tokenizer,
)

TINY_GPT2 = {
    "activation_function": "gelu_new",
    "model_type": "gpt2",
    "n_embd": 256,
    "hidden_size": 256,
    "n_head": 4,
    "n_layer": 2,
    "n_ctx": 2048,
    "n_positions": 2048,
    "layer_norm_epsilon": 1e-5,
    "initializer_range": 0.02,
    "vocab_size": 257,
    "bos_token_id": 256,
    "eos_token_id": 256,
}

TINY_ARCH = TurboArch(
    llama_config=TINY_GPT2,
    text_vocab_size=257,  # the byte-level tokenizer: 256 bytes + <|endoftext|>
    s3gen=S3GenSize(
        tokenizer_state=128, tokenizer_heads=2, tokenizer_layers=1,
        encoder_heads=2, encoder_linear_units=256, encoder_blocks=1,
        decoder_channels=64, decoder_blocks=1, decoder_mid_blocks=1, decoder_heads=2,
        vocoder_channels=64, speaker_channels=32, speaker_growth=8, speaker_bottleneck=2,
    ),
)


def _save(module: torch.nn.Module, path: Path) -> None:
    save_file({k: v.detach().contiguous() for k, v in module.state_dict().items()}, str(path))


def builtin_conditionals(seed: int) -> Conditionals:
    """A stand-in conds.pt: the shapes and dtypes of a real built-in voice, random values."""
    gen = torch.Generator().manual_seed(seed)
    n_prompt = 100  # 4 s of reference tokens
    t3 = T3Cond(
        speaker_emb=torch.randn(1, 256, generator=gen),
        cond_prompt_speech_tokens=torch.randint(0, 6561, (1, 375), generator=gen),
        emotion_adv=0.5 * torch.ones(1, 1, 1),
    )
    s3 = {
        "prompt_token": torch.randint(0, 6561, (1, n_prompt), generator=gen),
        "prompt_token_len": torch.tensor([n_prompt]),
        "prompt_feat": torch.randn(1, 2 * n_prompt, 80, generator=gen),
        "prompt_feat_len": None,
        "embedding": torch.randn(1, 192, generator=gen),
    }
    return Conditionals(t3, s3)


def write_tiny_checkpoint(model_dir: Path, seed: int = 0, stop_bias: float = 0.0) -> Path:
    """Fill ``model_dir`` with a tiny seeded checkpoint and return it.

    Random weights almost never sample T3's stop token, so every chunk runs to the 1000-token cap (40 s of audio, and
    minutes on a busy CPU). ``stop_bias`` raises the stop token's logit so that utterances end after a few dozen
    tokens, as a real model's do: for tests that start whole workers (warm-up, calibration, speech). A large negative
    one (-1e4) makes "never" exact, for tests that count a chunk's tokens without a fixed seed.
    """
    model_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    TINY_ARCH.write(model_dir)
    t3 = build_t3(TINY_ARCH)
    with torch.no_grad():
        t3.speech_head.bias[t3.hp.stop_speech_token] += stop_bias
    _save(t3, model_dir / T3_FILE)
    _save(SizedS3Gen(TINY_ARCH.s3gen), model_dir / S3GEN_FILE)
    _save(VoiceEncoder(), model_dir / VE_FILE)
    write_byte_tokenizer(model_dir)
    builtin_conditionals(seed).save(model_dir / CONDS_FILE)
    return model_dir
