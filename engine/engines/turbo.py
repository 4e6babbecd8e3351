"""The Chatterbox-Turbo engine: T3 speech tokens (a cancellable sampling loop) then S3Gen meanflow decoding.

Loading follows ``ChatterboxTurboTTS.from_local``'s file layout, built through ``turbo_arch`` so sizes are explicit.
Voice conditionals are per-voice objects owned by the caller; nothing per voice is ever stored on the model.
No watermark is applied here: the worker marks every chunk itself.
"""

from __future__ import annotations

import copy
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import librosa
import numpy as np
import pyloudnorm
import torch
import torch.nn.functional as F
from chatterbox.models.s3gen.const import S3GEN_SIL, S3GEN_SR
from chatterbox.models.s3tokenizer import S3_SR, SPEECH_VOCAB_SIZE
from chatterbox.models.t3 import T3
from chatterbox.models.t3.modules.cond_enc import T3Cond
from chatterbox.models.voice_encoder import VoiceEncoder
from chatterbox.tts_turbo import Conditionals
from safetensors.torch import load_file
from transformers import AutoTokenizer, PreTrainedTokenizerBase
from transformers.generation.logits_process import (
    LogitsProcessorList,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from engine.weights import download, find_weights, has_tokenizer, is_complete

from .base import Cancelled, Engine, EngineError, EngineInfo
from .turbo_arch import (
    CONDS_FILE,
    S3GEN_FILE,
    T3_FILE,
    VE_FILE,
    WEIGHT_FILES,
    SizedS3Gen,
    TurboArch,
    build_t3,
    write_byte_tokenizer,
)

RANDOM_WEIGHTS = "random (compute cost only)"
ENC_COND_LEN = 15 * S3_SR  # reference audio the T3 speech prompt sees (as ChatterboxTurboTTS)
DEC_COND_LEN = 10 * S3GEN_SR  # reference audio S3Gen sees
MIN_REFERENCE_S = 5.0
TARGET_LUFS = -27.0
SPEECH_CHARS_PER_S = 14.0  # English read aloud; random weights stop after this much speech, real ones at EOS


@dataclass(frozen=True)
class Sampling:
    """``ChatterboxTurboTTS.generate``'s sampling defaults, and ``inference_turbo``'s cap on generated tokens."""

    temperature: float = 0.8
    top_k: int = 1000
    top_p: float = 0.95
    repetition_penalty: float = 1.2
    max_tokens: int = 1000

    def processors(self) -> LogitsProcessorList:
        """The processors in ``T3.inference_turbo``'s order."""
        procs = LogitsProcessorList()
        if self.temperature > 0 and self.temperature != 1.0:
            procs.append(TemperatureLogitsWarper(self.temperature))
        if self.top_k > 0:
            procs.append(TopKLogitsWarper(self.top_k))
        if self.top_p < 1.0:
            procs.append(TopPLogitsWarper(self.top_p))
        if self.repetition_penalty != 1.0:
            procs.append(RepetitionPenaltyLogitsProcessor(self.repetition_penalty))
        return procs


@dataclass(frozen=True)
class SynthTiming:
    """Where the time of the last ``synthesize`` call went (read by ``measure_turbo``)."""

    speech_tokens: int
    t3_s: float
    s3gen_s: float


def _pick_device(device: str) -> torch.device:
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    picked = torch.device(device)
    if picked.type == "cuda" and picked.index is None:
        picked = torch.device("cuda", torch.cuda.current_device())
    return picked


def _pick_dtype(dtype: str, device: torch.device) -> torch.dtype:
    if dtype == "auto":
        bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if bf16 else torch.float32
    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[dtype]


def _load_tokenizer(source: Path) -> PreTrainedTokenizerBase:
    tokenizer = AutoTokenizer.from_pretrained(source)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


class TurboEngine(Engine):
    """Chatterbox-Turbo on one device. Build it with ``TurboEngine.load``."""

    sample_rate = S3GEN_SR
    conditionals_suffix = ".turbo.pt"

    def __init__(
        self,
        *,
        t3: T3,
        s3gen: SizedS3Gen,
        ve: VoiceEncoder,
        tokenizer: PreTrainedTokenizerBase,
        builtin: Conditionals | None,
        info: EngineInfo,
        sampling: Sampling = Sampling(),
    ) -> None:
        self.t3 = t3
        self.s3gen = s3gen
        self.ve = ve
        self.tokenizer = tokenizer
        self.info = info
        self.sampling = sampling
        self.device = t3.device
        self.dtype = next(t3.parameters()).dtype
        self.random_weights = info.weights == RANDOM_WEIGHTS
        self.last_timing: SynthTiming | None = None
        self._builtin = builtin

    @classmethod
    def load(
        cls,
        model_dir: Path | None = None,
        weights: Literal["pretrained", "random"] = "pretrained",
        device: str = "auto",
        dtype: str = "auto",
        tf32: bool = True,
        sdpa: bool = True,
        llama_config: str | None = None,
    ) -> TurboEngine:
        """Load weights from ``model_dir``, the HF cache or a download; or random weights of the same shapes.

        ``llama_config`` (a ``LLAMA_CONFIGS`` key or a JSON file) overrides the T3 body the checkpoint declares.
        T3 runs in ``dtype`` (bf16 on CUDA when supported); S3Gen and the voice encoder stay float32.
        """
        dev = _pick_device(device)
        t3_dtype = _pick_dtype(dtype, dev)
        if dev.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
        if weights == "pretrained":
            source = model_dir if model_dir is not None else (find_weights(None) or download())
            if not is_complete(source):
                raise EngineError(f"no Chatterbox-Turbo weights in {source} (need {', '.join(WEIGHT_FILES)})",
                                  code="no_weights")
        elif weights == "random":
            source = model_dir if model_dir is not None else find_weights(None)
        else:
            raise ValueError(f"weights must be 'pretrained' or 'random', not {weights!r}")

        arch = TurboArch.from_dir(source)
        if llama_config is not None:
            arch = TurboArch(llama_config=llama_config, text_vocab_size=arch.text_vocab_size, s3gen=arch.s3gen)
        t3 = build_t3(arch, attn_implementation=None if sdpa else "eager")
        s3gen = SizedS3Gen(arch.s3gen)
        ve = VoiceEncoder()
        builtin = None
        if weights == "pretrained":
            t3.load_state_dict(load_file(source / T3_FILE))
            s3gen.load_state_dict(load_file(source / S3GEN_FILE), strict=True)
            ve.load_state_dict(load_file(source / VE_FILE))
            if (source / CONDS_FILE).exists():
                builtin = Conditionals.load(source / CONDS_FILE, map_location=dev).to(dev)
        del t3.tfmr.wte  # unused: T3 feeds its own embeddings (as from_local)
        t3.to(device=dev, dtype=t3_dtype).eval()
        s3gen.to(dev).eval()
        ve.to(dev).eval()
        tokenizer = cls._tokenizer_for(source)
        if len(tokenizer) > arch.text_vocab_size:
            raise EngineError(f"tokenizer has {len(tokenizer)} tokens, T3 only {arch.text_vocab_size}",
                              code="bad_weights")
        info = EngineInfo(
            name="chatterbox-turbo",
            device=str(dev),
            dtype=str(t3_dtype).removeprefix("torch."),
            weights=RANDOM_WEIGHTS if weights == "random" else str(source),
            notes=f"T3 {t3.hp.llama_config_name} ({t3.tfmr.config._attn_implementation}); S3Gen float32; "
                  f"tf32={'on' if tf32 and dev.type == 'cuda' else 'off'}",
        )
        return cls(t3=t3, s3gen=s3gen, ve=ve, tokenizer=tokenizer, builtin=builtin, info=info)

    @staticmethod
    def _tokenizer_for(source: Path | None) -> PreTrainedTokenizerBase:
        """The checkpoint's tokenizer; for random weights with none at hand, a byte-level stand-in."""
        if source is not None and has_tokenizer(source):
            return _load_tokenizer(source)
        with tempfile.TemporaryDirectory() as tmp:
            write_byte_tokenizer(Path(tmp))
            return _load_tokenizer(Path(tmp))

    # ----- voices -----

    def default_voice(self) -> Conditionals:
        """The checkpoint's built-in voice (conds.pt), else one prepared from a seeded synthetic clip."""
        if self._builtin is None:
            self._builtin = self.prepare_voice(synthetic_reference(), S3GEN_SR)
        return self._builtin

    def prepare_voice(self, wav: np.ndarray, sample_rate: int) -> Conditionals:
        """Conditionals for one voice, as ``ChatterboxTurboTTS.prepare_conditionals`` computes them, returned."""
        wav = np.asarray(wav, dtype=np.float32).reshape(-1)
        if wav.size / sample_rate <= MIN_REFERENCE_S or not np.isfinite(wav).all():
            raise EngineError(f"reference audio must be finite and longer than {MIN_REFERENCE_S:g} s", code="bad_audio")
        ref_24k = librosa.resample(wav, orig_sr=sample_rate, target_sr=S3GEN_SR) if sample_rate != S3GEN_SR else wav
        ref_24k = _norm_loudness(ref_24k)
        ref_16k = librosa.resample(ref_24k, orig_sr=S3GEN_SR, target_sr=S3_SR)
        with torch.inference_mode():
            gen = self.s3gen.embed_ref(ref_24k[:DEC_COND_LEN], S3GEN_SR, device=self.device)
            prompt_tokens, _ = self.s3gen.tokenizer.forward([ref_16k[:ENC_COND_LEN]],
                                                            max_len=self.t3.hp.speech_cond_prompt_len)
            ve_embed = torch.from_numpy(self.ve.embeds_from_wavs([ref_16k], sample_rate=S3_SR))
        t3_cond = T3Cond(
            speaker_emb=ve_embed.mean(dim=0, keepdim=True),
            cond_prompt_speech_tokens=torch.atleast_2d(prompt_tokens),
            emotion_adv=0.5 * torch.ones(1, 1, 1),
        ).to(device=self.device)
        return Conditionals(t3_cond, gen)

    def save_conditionals(self, conds: Conditionals, path: Path) -> None:
        """Write with ``Conditionals.save`` (a torch pickle of tensors)."""
        conds.save(path)

    def load_conditionals(self, path: Path) -> Conditionals:
        """Read with ``Conditionals.load`` onto this engine's device."""
        return Conditionals.load(path, map_location=self.device).to(self.device)

    # ----- synthesis -----

    def warmup(self) -> None:
        """One short synthesis in the default voice."""
        self.synthesize("Warming up.", self.default_voice(), threading.Event())

    def synthesize(self, text: str, voice: Conditionals, cancel: threading.Event) -> np.ndarray:
        """``generate()`` without punc_norm or watermark, with a cancel check every token step."""
        if cancel.is_set():
            raise Cancelled()
        started = time.perf_counter()
        with torch.inference_mode():
            text_tokens = self.tokenizer(text, return_tensors="pt", padding=True, truncation=True).input_ids
            speech = self._speech_tokens(voice.t3, text_tokens.to(self.device), self.token_budget(text), cancel)
            speech = speech[speech < SPEECH_VOCAB_SIZE]  # drop out-of-vocabulary (special) tokens
            silence = torch.full((3,), S3GEN_SIL, dtype=torch.long, device=self.device)
            speech = torch.cat([speech, silence])
            t3_done = self._sync_clock()
            if cancel.is_set():
                raise Cancelled()
            # S3Gen casts ref_dict entries in place: give it a shallow copy so the voice stays untouched.
            wav, _ = self.s3gen.inference(speech_tokens=speech, ref_dict=dict(voice.gen), n_cfm_timesteps=2)
            audio = wav.squeeze(0).float().cpu().numpy()
        self.last_timing = SynthTiming(int(speech.numel()), t3_done - started, self._sync_clock() - t3_done)
        return audio.astype(np.float32, copy=False)

    def token_budget(self, text: str) -> int:
        """Most tokens to sample after the first. Random weights never say EOS: stop them at a real speech length."""
        if not self.random_weights:
            return self.sampling.max_tokens
        return min(self.sampling.max_tokens, max(1, round(len(text) / SPEECH_CHARS_PER_S * 25)))

    def _sync_clock(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def _speech_tokens(
        self, voice_t3: T3Cond, text_tokens: torch.Tensor, budget: int, cancel: threading.Event
    ) -> torch.Tensor:
        """``T3.inference_turbo`` with a cancel check each step: at most ``budget + 1`` tokens, no stop token."""
        t3 = self.t3
        # prepare_conditioning caches an embedding on the T3Cond it is given: hand it a copy cast to T3's dtype.
        cond = copy.copy(voice_t3).to(device=self.device, dtype=self.dtype)
        processors = self.sampling.processors()
        start = t3.hp.start_speech_token * torch.ones_like(text_tokens[:, :1])
        embeds, _ = t3.prepare_input_embeds(t3_cond=cond, text_tokens=text_tokens, speech_tokens=start)
        out = t3.tfmr(inputs_embeds=embeds, use_cache=True)
        token = _sample(processors, start, t3.speech_head(out[0][:, -1:])[:, -1, :])
        generated: list[torch.Tensor] = []
        while token is not None and not bool(torch.all(token == t3.hp.stop_speech_token)):
            generated.append(token)
            if len(generated) > budget:
                break
            if cancel.is_set():
                raise Cancelled()
            out = t3.tfmr(inputs_embeds=t3.speech_emb(token), cache=out.past_key_values, use_cache=True)
            token = _sample(processors, torch.cat(generated, dim=1), t3.speech_head(out[0])[:, -1, :])
        if not generated:
            return torch.empty(0, dtype=torch.long, device=self.device)
        return torch.cat(generated, dim=1)[0]


def _sample(processors: LogitsProcessorList, ids: torch.Tensor, logits: torch.Tensor) -> torch.Tensor | None:
    """One sampled token (shape (1, 1)), or None when the processors ruled every token out."""
    scores = processors(ids, logits.float())
    if bool(torch.all(scores == -float("inf"))):
        return None
    return torch.multinomial(F.softmax(scores, dim=-1), num_samples=1)


def _norm_loudness(wav: np.ndarray, sample_rate: int = S3GEN_SR) -> np.ndarray:
    """Scale to -27 LUFS as upstream does, but in float32 (pyloudnorm's float64 gain breaks S3Gen on numpy 2)."""
    loudness = pyloudnorm.Meter(sample_rate).integrated_loudness(wav)
    gain = 10.0 ** ((TARGET_LUFS - loudness) / 20.0)
    if not np.isfinite(gain) or gain <= 0.0:
        return wav
    return (wav * np.float32(gain)).astype(np.float32)


def synthetic_reference(seconds: float = 15.0, seed: int = 0) -> np.ndarray:
    """A seeded, speech-like clip at 24 kHz (voiced harmonics with a wandering pitch, syllable envelope, noise)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * S3GEN_SR)) / S3GEN_SR
    pitch = 120.0 + 30.0 * np.sin(2 * np.pi * 0.7 * t) + 10.0 * np.sin(2 * np.pi * 3.1 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / S3GEN_SR
    voiced = sum(np.sin(k * phase) / k for k in range(1, 12))
    syllables = 0.5 * (1 + np.sin(2 * np.pi * 4.0 * t + rng.uniform(0, 2 * np.pi)))
    wav = 0.2 * syllables * voiced + 0.01 * rng.standard_normal(t.size)
    return wav.astype(np.float32)


def measure_turbo(engine: TurboEngine, texts: list[str]) -> dict[str, object]:
    """Compute-cost figures: prepare_voice time, and per text the T3 and S3Gen seconds and real-time factor."""
    started = time.perf_counter()
    voice = engine.prepare_voice(synthetic_reference(), S3GEN_SR)
    prepare_s = time.perf_counter() - started
    runs = []
    for text in texts:
        started = time.perf_counter()
        audio = engine.synthesize(text, voice, threading.Event())
        total = time.perf_counter() - started
        timing = engine.last_timing
        assert timing is not None
        audio_s = audio.size / engine.sample_rate
        runs.append({
            "text": text, "speech_tokens": timing.speech_tokens, "audio_s": round(audio_s, 3),
            "t3_s": round(timing.t3_s, 3), "s3gen_s": round(timing.s3gen_s, 3), "total_s": round(total, 3),
            "tokens_per_s": round(timing.speech_tokens / timing.t3_s, 1) if timing.t3_s > 0 else None,
            "rtf": round(audio_s / total, 2) if total > 0 else None,
        })
    return {"engine": engine.info.__dict__, "prepare_voice_s": round(prepare_s, 3), "runs": runs}
