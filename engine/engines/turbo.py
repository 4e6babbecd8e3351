"""The Chatterbox-Turbo engine: T3 speech tokens (a cancellable sampling loop) then S3Gen meanflow decoding.

Loading follows ``ChatterboxTurboTTS.from_local``'s file layout, built through ``turbo_arch`` so sizes are explicit.
Voice conditionals are per-voice objects owned by the caller; nothing per voice is ever stored on the model.
No watermark is applied here: the worker marks every chunk itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import librosa
import numpy as np
import pyloudnorm
import torch
from chatterbox.models.s3gen.const import S3GEN_SIL, S3GEN_SR
from chatterbox.models.s3tokenizer import S3_SR, SPEECH_VOCAB_SIZE
from chatterbox.models.t3 import T3
from chatterbox.models.t3.modules.cond_enc import T3Cond
from chatterbox.models.voice_encoder import VoiceEncoder
from chatterbox.models.t3.llama_configs import LLAMA_CONFIGS
from chatterbox.tts_turbo import Conditionals
from safetensors.torch import load_file
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from engine.placement import DTYPE_BYTES, Need, estimate
from engine.settings import EngineSettings
from engine.weights import download, find_weights, has_tokenizer, is_complete

from .base import BatchingEngine, EngineError, EngineInfo, GraphCheckFailed
from .graph_check import GraphCheck, SelfCheck
from .prefix_cache import PrefixCache
from .s3gen_batch import MAX_BATCH, VocodeRow, vocode_rows
from .s3gen_graphs import Buckets, GraphedVocoder, cuda_capture
from .t3_batch import BATCH_BUCKETS, BatchDecoder, cache_capacity
from .t3_loop import DecodeLoop
from .t3_sampling import Sampling
from .t3_static import VoicePrefix, voice_prefix
from .turbo_arch import (
    CONDS_FILE,
    S3GEN_FILE,
    T3_FILE,
    VE_FILE,
    WEIGHT_FILES,
    SizedS3Gen,
    TurboArch,
    build_t3,
    llama_config_name,
    write_byte_tokenizer,
)
from .vocode_check import VocodeCheck

RANDOM_WEIGHTS = "random (compute cost only)"
ENC_COND_LEN = 15 * S3_SR  # reference audio the T3 speech prompt sees (as ChatterboxTurboTTS)
DEC_COND_LEN = 10 * S3GEN_SR  # reference audio S3Gen sees
MIN_REFERENCE_S = 5.0
TARGET_LUFS = -27.0
S3GEN_PROMPT_TOKENS = DEC_COND_LEN // S3GEN_SR * 25  # the longest voice prompt S3Gen sees: 250 tokens (25 per s)
PROMPT_CACHE_VOICES = 64  # voices whose prompt K/V stay on the device (~37 MB each in bf16 at full size)
MAX_TEXT_TOKENS = 320  # a chunk is at most ~300 characters (the planner's cap); the KV cache is sized for this
SPEECH_CHARS_PER_S = 14.0  # English read aloud; random weights stop after this much speech, real ones at EOS


@dataclass
class TurboVoice(Conditionals):
    """A voice's conditionals (owned by the voice store, never kept on the model)."""


Vocoder = Callable[[Sequence[VocodeRow]], list[torch.Tensor]]
_QUIET = threading.Lock()
log = logging.getLogger("chatterbox_fast.engine")
CHECK_TEXTS = ("Hello there, thanks for calling.", "Sure.", "Let me check that for you, one moment please.")


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Keep upstream's per-call print and tqdm bar ("S3 Token -> Mel Inference...") out of the server's output.
    Serialised: concurrent redirections of sys.stdout could restore each other's targets in the wrong order."""
    with _QUIET, open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield


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


def _pick_graphs(mode: str, device: torch.device, flag: str = "--decode") -> str:
    """``auto``, ``eager`` or ``graph`` (``--decode`` for T3, ``--vocode`` for S3Gen) resolved on ``device``."""
    if mode == "auto":
        return "graph" if device.type == "cuda" else "eager"
    if mode == "graph" and device.type != "cuda":
        raise EngineError(f"{flag} graph needs a CUDA device", code="bad_config")
    if mode not in ("eager", "graph"):
        raise ValueError(f"{flag.lstrip('-')} must be 'auto', 'eager' or 'graph', not {mode!r}")
    return mode


def _load_tokenizer(source: Path) -> PreTrainedTokenizerBase:
    tokenizer = AutoTokenizer.from_pretrained(source)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def estimated_need(settings: EngineSettings, on: str = "cuda") -> Need:
    """What ``TurboEngine.load`` with ``settings`` will take on a CUDA card (engine/placement.py): T3's weights at
    its dtype and S3Gen's and the voice encoder's as float32, sized from the checkpoint's own headers; every batch
    slot's K/V and the prompt cache's, from the T3 body's config."""
    arch = TurboArch.from_dir(settings.model_dir)
    config = LLAMA_CONFIGS[llama_config_name(arch.llama_config)]
    dtype_bytes = DTYPE_BYTES["bfloat16" if settings.dtype == "auto" else settings.dtype]
    folder = settings.model_dir or Path("/nonexistent")
    prompt_len = 375  # Turbo's speech prompt (build_t3)
    return estimate({folder / T3_FILE: dtype_bytes, folder / S3GEN_FILE: 4, folder / VE_FILE: 4},
                    layers=config["n_layer"], width=config["n_embd"], capacity=cache_capacity(prompt_len),
                    slots=settings.batch_slots or 64, dtype_bytes=dtype_bytes,
                    prompt_voices=settings.prompt_cache_voices, prompt_positions=1 + prompt_len)


class TurboEngine(BatchingEngine):
    """Chatterbox-Turbo on one device. Build it with ``TurboEngine.load``.

    T3 decodes on a ``DecodeLoop`` thread that batches every caller's chunks token by token over a static KV cache
    (``decode="graph"``: each step replayed as a CUDA graph); S3Gen then runs in the caller's thread, on as many
    chunks at once as the caller hands it (``vocode_batch``)."""

    sample_rate = S3GEN_SR
    conditionals_suffix = ".turbo.pt"
    max_vocode_batch = MAX_BATCH

    def __init__(
        self,
        *,
        t3: T3,
        s3gen: SizedS3Gen,
        ve: VoiceEncoder,
        tokenizer: PreTrainedTokenizerBase,
        builtin: TurboVoice | None,
        info: EngineInfo,
        sampling: Sampling = Sampling(),
        slots: int = 8,
        decode_asked: str = "auto",
        vocode_asked: str = "auto",
        prompt_cache_voices: int = PROMPT_CACHE_VOICES,
    ) -> None:
        self.t3 = t3
        self.s3gen = s3gen
        self.ve = ve
        self.tokenizer = tokenizer
        self.info = info
        self.device = t3.device
        self.dtype = next(t3.parameters()).dtype
        self.random_weights = info.weights == RANDOM_WEIGHTS
        self.max_tokens = sampling.max_tokens  # per-chunk cap; may be lowered after loading
        self._builtin = builtin
        self.decode_asked = decode_asked  # "graph" asked explicitly: a failed self-check refuses to start
        self.graph_check: dict | None = None  # the self-check's result once it ran (GraphCheck.as_json)
        self.vocode_asked = vocode_asked  # the same for S3Gen's graphs
        self.vocode_check: dict | None = None
        self.decoder = BatchDecoder(t3, slots, sampling, max_text_tokens=MAX_TEXT_TOKENS)
        self.graphs = None
        if info.decode == "graph":
            from .cuda_graphs import GraphedSteps

            self.graphs = GraphedSteps(self.decoder)
            self.decoder.run_step = self.graphs
            self.decoder.noise_in_step = True  # drawn inside the replay: one launch per step
        self.prompts = PrefixCache(prompt_cache_voices,
                                   lambda voice: voice_prefix(self.t3, self.decoder.body, voice.t3))
        self.loop = DecodeLoop(self.decoder, self.prompts.get)
        # S3Gen on a stream of its own, so its kernels do not queue in front of the decode loop's steps
        self._s3gen_stream = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None
        self.vocoder: Vocoder = functools.partial(vocode_rows, s3gen)  # S3Gen's calls: eager until graphs pass
        prompt = builtin.gen["prompt_token"].shape[-1] if builtin is not None else 0
        self.vocode_buckets = Buckets(max(S3GEN_PROMPT_TOKENS, prompt))
        self.vocoder_graphs: GraphedVocoder | None = None
        if info.vocode == "graph":
            self.vocoder_graphs = GraphedVocoder(s3gen, self.vocode_buckets, cuda_capture(self.device))

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
        decode: str = "auto",
        slots: int = 0,
        prompt_cache_voices: int = PROMPT_CACHE_VOICES,
        vocode: str = "auto",
        memory_cap_gib: float | None = None,
    ) -> TurboEngine:
        """Load weights from ``model_dir``, the HF cache or a download; or random weights of the same shapes.

        ``llama_config`` (a ``LLAMA_CONFIGS`` key or a JSON file) overrides the T3 body the checkpoint declares.
        T3 runs in ``dtype`` (bf16 on CUDA when supported); S3Gen and the voice encoder stay float32.
        ``decode``: auto (CUDA graphs on CUDA, eager elsewhere), eager or graph; ``vocode``: the same for S3Gen;
        ``slots``: the most chunks decoded together (0: 64 on CUDA, 8 elsewhere); ``memory_cap_gib``: on CUDA, torch's
        allocator is capped at that much of the card (``--gpu-memory``: past it, an out-of-memory).
        """
        dev = _pick_device(device)
        if memory_cap_gib is not None and dev.type == "cuda":
            total = torch.cuda.get_device_properties(dev).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, memory_cap_gib * 2 ** 30 / total), dev)
        asked, decode = decode, _pick_graphs(decode, dev)
        vocode_asked, vocode = vocode, _pick_graphs(vocode, dev, "--vocode")
        slots = slots or (64 if dev.type == "cuda" else 8)
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
                builtin = TurboVoice.load(source / CONDS_FILE, map_location=dev).to(dev)
        del t3.tfmr.wte  # unused: T3 feeds its own embeddings (as from_local)
        t3.to(device=dev, dtype=t3_dtype).eval()
        with _quiet():
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
            notes=f"T3 {t3.hp.llama_config_name}, {decode} decode over {slots} batch slots; S3Gen float32, "
                  f"{vocode}; tf32={'on' if tf32 and dev.type == 'cuda' else 'off'}",
            decode=decode,
            vocode=vocode,
        )
        return cls(t3=t3, s3gen=s3gen, ve=ve, tokenizer=tokenizer, builtin=builtin, info=info, slots=slots,
                   decode_asked=asked, vocode_asked=vocode_asked, prompt_cache_voices=prompt_cache_voices)

    @staticmethod
    def _tokenizer_for(source: Path | None) -> PreTrainedTokenizerBase:
        """The checkpoint's tokenizer; for random weights with none at hand, a byte-level stand-in."""
        if source is not None and has_tokenizer(source):
            return _load_tokenizer(source)
        with tempfile.TemporaryDirectory() as tmp:
            write_byte_tokenizer(Path(tmp))
            return _load_tokenizer(Path(tmp))

    # ----- voices -----

    def default_voice(self) -> TurboVoice:
        """The checkpoint's built-in voice (conds.pt), else one prepared from a seeded synthetic clip."""
        if self._builtin is None:
            self._builtin = self.prepare_voice(synthetic_reference(), S3GEN_SR)
        return self._builtin

    def prepare_voice(self, wav: np.ndarray, sample_rate: int) -> TurboVoice:
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
            ve_embed = torch.from_numpy(self.ve.embeds_from_wavs([trim_silence(ref_16k)], sample_rate=S3_SR,
                                                                 trim_top_db=None))
        t3_cond = T3Cond(
            speaker_emb=ve_embed.mean(dim=0, keepdim=True),
            cond_prompt_speech_tokens=torch.atleast_2d(prompt_tokens),
            emotion_adv=0.5 * torch.ones(1, 1, 1),
        ).to(device=self.device)
        if self.device.type == "cuda":  # its tensors are read on the decode loop's and S3Gen's own streams next
            torch.cuda.current_stream(self.device).synchronize()
        return TurboVoice(t3_cond, gen)

    def save_conditionals(self, conds: Conditionals, path: Path) -> None:
        """Write with ``Conditionals.save`` (a torch pickle of tensors)."""
        conds.save(path)

    def load_conditionals(self, path: Path) -> TurboVoice:
        """Read with ``Conditionals.load`` onto this engine's device."""
        return TurboVoice.load(path, map_location=self.device).to(self.device)

    def conditionals_to(self, conds: TurboVoice, device: str) -> TurboVoice:
        """Moved whole (T3's and S3Gen's tensors): to the host while unloaded, back to this device after."""
        if not isinstance(conds, Conditionals) or torch.device(device) == conds.t3.speaker_emb.device:
            return conds
        return conds.to(torch.device(device))

    def close(self) -> None:
        """The decode loop's thread ends; the prompt cache's keys and values go with the engine."""
        self.loop.close()
        self.prompts = PrefixCache(1, self.prompts._compute)  # an empty one: the old one's K/V freed

    def _prefix(self, voice: TurboVoice) -> VoicePrefix:
        """The voice's prefix keys and values on this engine's device (computed once while it stays in the cache)."""
        return self.prompts.get(voice)

    # ----- synthesis -----

    def prompt_cache(self) -> dict[str, int]:
        figures = self.prompts.figures()
        return {k: figures[k] for k in ("voices", "bytes", "limit")}

    def warmup(self) -> None:
        """One short synthesis in the default voice; with CUDA graphs, first every bucket captured and the start-up
        self-checks: T3's on the decode loop's thread (engine/engines/graph_check.py), then S3Gen's on its stream
        (vocode_check.py). A failed check falls back to eager (``info.decode_fallback``, ``info.vocode_fallback`` say
        why), or raises ``GraphCheckFailed`` if those graphs were asked for."""
        if self.graphs is not None and self.graph_check is None:
            check = self.loop.call(self._capture_and_check).result()
            if check.ok:
                self._vocode_runs(check)
            self.graph_check = check.as_json()
            if not check.ok:
                self._fall_back(check.reason())
        if self.vocoder_graphs is not None and self.vocode_check is None:
            check = self._capture_and_check_vocoder(self.vocoder_graphs)
            self.vocode_check = check.as_json()
            if check.ok:
                self.vocoder = self.vocoder_graphs
            else:
                self._vocoder_fall_back(check.reason())
        self.synthesize("Warming up.", self.default_voice(), threading.Event())

    def _capture_and_check_vocoder(self, graphs: GraphedVocoder) -> GraphCheck:
        """On S3Gen's stream: capture every bucket, then compare replayed calls with eager ones."""
        stream = torch.cuda.stream(self._s3gen_stream) if self._s3gen_stream else contextlib.nullcontext()
        with stream:
            started = time.perf_counter()
            try:
                graphs.capture_all()
            except Exception as exc:
                return GraphCheck([f"capturing S3Gen failed: {type(exc).__name__}: {exc}"])
            captured = {"graphs": graphs.captured, "capture_s": round(time.perf_counter() - started, 2)}
            try:
                check = VocodeCheck(graphs, self.default_voice().gen, timing=self.device.type == "cuda").run()
            except Exception as exc:
                check = GraphCheck([f"S3Gen's self-check itself failed: {type(exc).__name__}: {exc}"])
        check.figures.update(captured)
        return check

    def _vocoder_fall_back(self, reason: str) -> None:
        if self.vocode_asked == "graph":
            raise GraphCheckFailed(reason, flag="--vocode")
        log.warning("S3Gen's CUDA graphs failed their start-up self-check, vocoding eagerly instead: %s", reason)
        self.vocoder_graphs = None
        self.info = dataclasses.replace(self.info, vocode="eager", vocode_fallback=reason,
                                        notes=self.info.notes.replace("S3Gen float32, graph", "S3Gen float32, eager "
                                                                      "(graphs failed their self-check)"))

    def _capture_and_check(self) -> GraphCheck:
        """On the decode loop's thread: capture every bucket, then compare replays with eager steps."""
        assert self.graphs is not None
        try:
            self.graphs.capture_all(BATCH_BUCKETS)
        except Exception as exc:
            return GraphCheck([f"capturing the decode step failed: {type(exc).__name__}: {exc}"])
        texts = [self.tokenizer(text, return_tensors="pt").input_ids for text in CHECK_TEXTS]
        conds = check_voices(self.default_voice().t3)
        try:
            return SelfCheck(self.t3, self.decoder, self.graphs, conds, texts,
                             timing=self.device.type == "cuda").run()
        except Exception as exc:
            return GraphCheck([f"the self-check itself failed: {type(exc).__name__}: {exc}"])

    def _vocode_runs(self, check: GraphCheck) -> None:
        try:
            wav = self.vocode(list(range(25)), self.default_voice())
        except Exception as exc:
            check.problems.append(f"S3Gen fails after the captures: {type(exc).__name__}: {exc}")
            return
        if wav.size == 0 or not np.isfinite(wav).all():
            check.problems.append("S3Gen's audio after the captures is empty or not finite")

    def _fall_back(self, reason: str) -> None:
        if self.decode_asked == "graph":
            raise GraphCheckFailed(reason)
        log.warning("CUDA graphs failed their start-up self-check, decoding eagerly instead: %s", reason)
        self.graphs = None
        self.decoder.run_step = self.decoder.step
        self.decoder.noise_in_step = False  # eager: each slot's generator again, one draw per row
        self.info = dataclasses.replace(self.info, decode="eager", decode_fallback=reason,
                                        notes=self.info.notes.replace("graph decode", "eager decode (graphs failed "
                                                                      "their self-check)"))

    def submit_tokens(self, text: str, voice: TurboVoice, cancel: threading.Event, deadline: float,
                      seed: int | None = None) -> Future[list[int]]:
        """Queue ``text`` for T3 on the decode loop (``punc_norm`` is the caller's job). Without a seed, one is drawn
        from torch's global generator, so ``torch.manual_seed`` makes a run reproducible."""
        tokens = self.tokenizer(text, return_tensors="pt", padding=True, truncation=True).input_ids
        if tokens.shape[1] > MAX_TEXT_TOKENS:
            raise EngineError(f"a chunk may have at most {MAX_TEXT_TOKENS} text tokens", code="text_too_long")
        seed = _seed() if seed is None else seed
        return self.loop.submit(voice, tokens, self.token_budget(text), seed, cancel, deadline)

    def vocode_batch(self, items: Sequence[tuple[list[int], TurboVoice]]) -> list[np.ndarray]:
        """S3Gen on T3's tokens, every item in one batched call (``s3gen_batch``)."""
        stream = torch.cuda.stream(self._s3gen_stream) if self._s3gen_stream else contextlib.nullcontext()
        with torch.inference_mode(), stream:
            wavs = self.vocoder(self.vocode_inputs(items))
            return [wav.float().cpu().numpy().astype(np.float32, copy=False) for wav in wavs]

    def vocode_inputs(self, items: Sequence[tuple[list[int], TurboVoice]]) -> list[VocodeRow]:
        """S3Gen's rows for T3's tokens: special tokens dropped, three silence tokens appended (as ``generate``). Each
        row's noise comes from a generator of its own, seeded from torch's global one, so ``torch.manual_seed`` still
        makes a run reproducible and no row depends on its neighbours."""
        return [VocodeRow(torch.tensor([t for t in tokens if t < SPEECH_VOCAB_SIZE] + [S3GEN_SIL] * 3), voice.gen,
                          torch.Generator(self.device).manual_seed(_seed())) for tokens, voice in items]

    @property
    def busy_since(self) -> float | None:
        return self.loop.busy_since

    def token_budget(self, text: str) -> int:
        """Most tokens to sample after the first. Random weights never say EOS: stop them at a real speech length."""
        if not self.random_weights:
            return self.max_tokens
        return min(self.max_tokens, max(1, round(len(text) / SPEECH_CHARS_PER_S * 25)))

    def _sync_clock(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()


def _seed() -> int:
    return int(torch.randint(0, 2**62, ()).item())


def check_voices(cond: T3Cond, count: int = 3) -> list[T3Cond]:
    """``count`` distinct voices for the self-check, made from one: its speaker embedding scaled and its prompt
    tokens rotated (their conditioning prefixes differ, which is all the check needs)."""
    return [dataclasses.replace(cond, speaker_emb=cond.speaker_emb * (1 - 0.2 * i), cond_prompt_speech_emb=None,
                                cond_prompt_speech_tokens=torch.roll(cond.cond_prompt_speech_tokens, 7 * i, dims=-1))
            for i in range(count)]


def trim_silence(wav: np.ndarray, top_db: float = 20.0, frame_length: int = 2048, hop_length: int = 512) -> np.ndarray:
    """``librosa.effects.trim(wav, top_db=20)``, which ``VoiceEncoder.embeds_from_wavs`` applies, computed here the
    same way: importing ``librosa.effects`` imports scikit-learn (through ``librosa.decompose``), which the GPU
    measurement host does not have and its wheels would not fit beside the others."""
    rms = librosa.feature.rms(y=wav, frame_length=frame_length, hop_length=hop_length)
    loud = np.flatnonzero(librosa.amplitude_to_db(rms[0], ref=np.max, top_db=None) > -top_db)
    if loud.size == 0:
        return wav[:0]
    start = int(librosa.frames_to_samples(loud[0], hop_length=hop_length))
    end = min(wav.shape[-1], int(librosa.frames_to_samples(loud[-1] + 1, hop_length=hop_length)))
    return wav[start:end]


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
