"""The Chatterbox-Turbo architecture with its sizes made explicit.

Upstream hard-codes every size (``from_local`` names ``GPT2_medium``; ``S3Gen`` takes no size arguments). Here the
same classes are built from a ``TurboArch``: its defaults are the released model, and a checkpoint directory may carry
an optional ``chatterbox_fast_arch.json`` naming smaller sizes (the tiny test checkpoints do). Nothing upstream is
patched: a custom T3 config is *added* to ``LLAMA_CONFIGS`` under its own content-hash key, never replacing an entry.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import librosa
import torch
from chatterbox.models.s3gen import S3Gen
from chatterbox.models.s3gen.configs import CFM_PARAMS
from chatterbox.models.s3gen.const import S3GEN_SR
from chatterbox.models.s3gen.decoder import ConditionalDecoder
from chatterbox.models.s3gen.f0_predictor import ConvRNNF0Predictor
from chatterbox.models.s3gen.flow import CausalMaskedDiffWithXvec
from chatterbox.models.s3gen.flow_matching import CausalConditionalCFM
from chatterbox.models.s3gen.hifigan import HiFTGenerator
from chatterbox.models.s3gen.transformer.upsample_encoder import (
    UpsampleConformerEncoder,
)
from chatterbox.models.s3gen.utils.mel import mel_spectrogram
from chatterbox.models.s3gen.xvector import CAMPPlus
from chatterbox.models.s3tokenizer import S3_SR
from chatterbox.models.s3tokenizer.s3tokenizer import S3Tokenizer
from chatterbox.models.t3 import T3
from chatterbox.models.t3.llama_configs import LLAMA_CONFIGS
from chatterbox.models.t3.modules.t3_config import T3Config
from s3tokenizer.model_v2 import ModelConfig, S3TokenizerV2

from engine.weights import CONDS_FILE, S3GEN_FILE, T3_FILE, VE_FILE, WEIGHT_FILES  # noqa: F401 (the layout's names)

ARCH_FILE = "chatterbox_fast_arch.json"


@dataclass(frozen=True)
class S3GenSize:
    """Sizes of S3Gen's sub-modules; the defaults are those ``S3Gen(meanflow=True)`` builds."""

    tokenizer_state: int = 1280  # S3 tokenizer width; its attention head size must stay 64
    tokenizer_heads: int = 20
    tokenizer_layers: int = 6
    encoder_heads: int = 8  # the flow encoder's width is fixed at 512 upstream
    encoder_linear_units: int = 2048
    encoder_blocks: int = 6
    decoder_channels: int = 256
    decoder_blocks: int = 4
    decoder_mid_blocks: int = 12
    decoder_heads: int = 8
    vocoder_channels: int = 512
    speaker_channels: int = 128  # CAM++ x-vector encoder (its 192-wide output is fixed)
    speaker_growth: int = 32
    speaker_bottleneck: int = 4


@dataclass(frozen=True)
class TurboArch:
    """Everything that decides tensor shapes. ``llama_config`` is a key of ``LLAMA_CONFIGS`` or a config dict."""

    llama_config: str | dict[str, Any] = "GPT2_medium"
    text_vocab_size: int = 50276
    s3gen: S3GenSize = field(default_factory=S3GenSize)

    @classmethod
    def from_dir(cls, model_dir: Path | None) -> TurboArch:
        """The arch a checkpoint directory declares, or the released model's when it declares none."""
        path = model_dir / ARCH_FILE if model_dir is not None else None
        if path is None or not path.exists():
            return cls()
        raw = json.loads(path.read_text())
        return cls(
            llama_config=raw.get("llama_config", "GPT2_medium"),
            text_vocab_size=int(raw.get("text_vocab_size", 50276)),
            s3gen=S3GenSize(**raw.get("s3gen", {})),
        )

    def write(self, model_dir: Path) -> None:
        """Record this arch in ``model_dir`` (only needed when it differs from the released model)."""
        (model_dir / ARCH_FILE).write_text(json.dumps(asdict(self), indent=2))


def llama_config_name(config: str | dict[str, Any], attn_implementation: str | None = None) -> str:
    """The ``LLAMA_CONFIGS`` key for ``config``: a known key, a JSON file of a config dict, or the dict itself.

    Dicts and attention overrides are registered under a content-hash key, so no existing entry ever changes.
    """
    if isinstance(config, str):
        if config in LLAMA_CONFIGS:
            base = LLAMA_CONFIGS[config]
        elif Path(config).is_file():
            base = json.loads(Path(config).read_text())
        else:
            raise ValueError(f"unknown T3 config {config!r}: neither a LLAMA_CONFIGS key nor a JSON file")
        if attn_implementation is None and config in LLAMA_CONFIGS:
            return config
    else:
        base = config
    merged = dict(base)
    if attn_implementation is not None:
        merged["attn_implementation"] = attn_implementation
    key = "chatterbox-fast-" + hashlib.sha1(json.dumps(merged, sort_keys=True).encode()).hexdigest()[:12]
    LLAMA_CONFIGS.setdefault(key, merged)
    return key


def build_t3(arch: TurboArch, attn_implementation: str | None = None) -> T3:
    """T3 with Turbo's hyper-parameters (as in ``ChatterboxTurboTTS.from_local``), random weights."""
    hp = T3Config(text_tokens_dict_size=arch.text_vocab_size)
    hp.llama_config_name = llama_config_name(arch.llama_config, attn_implementation)
    hp.speech_tokens_dict_size = 6563
    hp.input_pos_emb = None
    hp.speech_cond_prompt_len = 375
    hp.use_perceiver_resampler = False
    hp.emotion_adv = False
    return T3(hp)


class _SizedS3Tokenizer(S3Tokenizer):
    """``S3Tokenizer`` with its ``ModelConfig`` honoured (upstream drops the argument)."""

    def __init__(self, config: ModelConfig) -> None:
        S3TokenizerV2.__init__(self, "speech_tokenizer_v2_25hz", config)
        self.n_fft = 400
        mel_filters = librosa.filters.mel(sr=S3_SR, n_fft=self.n_fft, n_mels=config.n_mels)
        self.register_buffer("_mel_filters", torch.FloatTensor(mel_filters))
        self.register_buffer("window", torch.hann_window(self.n_fft))


class SizedS3Gen(S3Gen):
    """``S3Gen(meanflow=True)`` wired from ``S3GenSize`` (same sub-modules, same state-dict keys)."""

    def __init__(self, size: S3GenSize) -> None:
        torch.nn.Module.__init__(self)
        self.tokenizer = _SizedS3Tokenizer(
            ModelConfig(n_audio_state=size.tokenizer_state, n_audio_head=size.tokenizer_heads,
                        n_audio_layer=size.tokenizer_layers)
        )
        self.mel_extractor = mel_spectrogram
        self.speaker_encoder = CAMPPlus(
            init_channels=size.speaker_channels, growth_rate=size.speaker_growth, bn_size=size.speaker_bottleneck,
            memory_efficient=False,  # upstream: activation checkpointing is a training-only option
        )
        self.meanflow = True
        encoder = UpsampleConformerEncoder(
            output_size=512, attention_heads=size.encoder_heads, linear_units=size.encoder_linear_units,
            num_blocks=size.encoder_blocks, dropout_rate=0.1, positional_dropout_rate=0.1,
            attention_dropout_rate=0.1, normalize_before=True, input_layer="linear",
            pos_enc_layer_type="rel_pos_espnet", selfattention_layer_type="rel_selfattn", input_size=512,
            use_cnn_module=False, macaron_style=False,
        )
        estimator = ConditionalDecoder(
            in_channels=320, out_channels=80, causal=True, channels=[size.decoder_channels], dropout=0.0,
            attention_head_dim=64, n_blocks=size.decoder_blocks, num_mid_blocks=size.decoder_mid_blocks,
            num_heads=size.decoder_heads, act_fn="gelu", meanflow=True,
        )
        decoder = CausalConditionalCFM(spk_emb_dim=80, cfm_params=CFM_PARAMS, estimator=estimator)
        self.flow = CausalMaskedDiffWithXvec(encoder=encoder, decoder=decoder)
        self.resamplers = {}
        self.mel2wav = HiFTGenerator(
            sampling_rate=S3GEN_SR, base_channels=size.vocoder_channels, upsample_rates=[8, 5, 3],
            upsample_kernel_sizes=[16, 11, 7], source_resblock_kernel_sizes=[7, 7, 11],
            source_resblock_dilation_sizes=[[1, 3, 5], [1, 3, 5], [1, 3, 5]], f0_predictor=ConvRNNF0Predictor(),
        )
        # upstream keeps HiFT's STFT window on the CPU and copies it to the device on every call (which no CUDA graph
        # capture allows); as a buffer it moves with the model (not in the state dict, as before)
        window = self.mel2wav.stft_window
        del self.mel2wav.stft_window
        self.mel2wav.register_buffer("stft_window", window, persistent=False)
        n_trim = S3GEN_SR // 50  # upstream: silence 20 ms, then fade in, against spill-over from the reference
        trim_fade = torch.zeros(2 * n_trim)
        trim_fade[n_trim:] = (torch.cos(torch.linspace(torch.pi, 0, n_trim)) + 1) / 2
        self.register_buffer("trim_fade", trim_fade, persistent=False)
        self.estimator_dtype = "fp32"


def write_byte_tokenizer(model_dir: Path) -> None:
    """Write GPT-2 tokenizer files whose vocabulary is the 256 byte symbols alone (no merges): one token per byte.

    It loads offline through ``AutoTokenizer`` exactly as the real ``vocab.json``/``merges.txt`` do. It stands in for
    the released tokenizer in tiny test checkpoints and in the random-weights mode when no real tokenizer is at hand.
    """
    from tokenizers.pre_tokenizers import ByteLevel

    vocab = {symbol: i for i, symbol in enumerate(sorted(ByteLevel.alphabet()))}
    vocab["<|endoftext|>"] = len(vocab)
    (model_dir / "vocab.json").write_text(json.dumps(vocab))
    (model_dir / "merges.txt").write_text("#version: 0.2\n")
    config = {"tokenizer_class": "GPT2Tokenizer", "model_max_length": 1024, "bos_token": "<|endoftext|>",
              "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"}
    (model_dir / "tokenizer_config.json").write_text(json.dumps(config))
