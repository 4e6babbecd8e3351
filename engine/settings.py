"""Engine worker settings. The CLI (gateway/cli.py) fills them from flags and environment variables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from engine.protocol import LATENCY_PROSODY_S

DEFAULT_VOCODE_WINDOW_S = 0.01  # a batching engine's first stage finishes chunks together: gather them this long

# First audio p50 <= 150 ms on a GPU: the budget bounds the cost model's cautious (upper) estimate of the first chunk's
# generation, joins and watermark (the worker times all three), so its median lands under it; ~25 ms more carry it
# through the engine socket, the gateway and the client's socket (README, "The first-audio budget"). A CPU engine
# makes not even the minimum words in this.
GPU_FIRST_AUDIO_TARGET_S = 0.12


@dataclass
class EngineSettings:
    engine: str = "auto"  # auto | chatterbox-turbo | espeak | simulated | http
    model_dir: Path | None = None
    weights: str = "pretrained"  # pretrained | random (compute cost only)
    device: str = "auto"
    dtype: str = "auto"
    tf32: bool = True
    sdpa: bool = True
    decode: str = "auto"  # chatterbox-turbo: auto (CUDA graphs on CUDA, eager elsewhere) | eager | graph
    vocode: str = "auto"  # chatterbox-turbo S3Gen: auto (CUDA graphs per bucket on CUDA, else eager) | eager | graph
    batch_slots: int = 0  # chatterbox-turbo: chunks decoded together (0: 64 on CUDA, 8 elsewhere)
    vocode_window_s: float = DEFAULT_VOCODE_WINDOW_S  # chatterbox-turbo: longest wait for chunks to vocode together
    prompt_cache_voices: int = 64  # chatterbox-turbo: voices whose prompt keys and values stay on the device
    voices_dir: Path = field(default_factory=lambda: Path("voices"))
    lexicons_dir: Path | None = None  # pronunciation lexicons; None: VOICES_DIR/lexicons
    sim_fixed_s: float = 0.15  # simulated engine: fixed cost per chunk
    sim_rtf: float = 3.0  # simulated engine: real-time factor
    http_url: str | None = None  # http engine: the TTS server's base URL
    http_dialect: str = "openai"  # openai | devnen | fish
    http_key: str | None = None  # sent as "Authorization: Bearer <key>"
    http_concurrency: int = 1  # requests in flight to the server at once
    http_timeout_s: float = 60.0  # one chunk's request, connecting included
    http_voices: tuple[str, ...] = ()  # voice names the server knows (the first is "default")
    first_chunk_words: int = 3
    max_chunk_chars: int = 300
    safety_margin_s: float = 0.3
    first_audio_target_s: float | None = None  # None (auto): 0.12 s on a GPU engine, off elsewhere; 0: off
    shared_chunk_s: float = 1.0  # while utterances share the device: longest estimated generation time of a chunk
    unload_after_s: float | None = None  # the model freed after this long with no utterance (None: never)
    gpu_memory_gib: float | None = None  # chatterbox-turbo: the most of its card it may take (None: no cap)

    def first_audio_budget(self, device: str) -> float:
        """The planner's first-audio target for an engine on ``device``: as set, or (auto) 0.12 s on a GPU, off
        elsewhere (where no unit fits it anyway, and eSpeak would fit a whole paragraph)."""
        if self.first_audio_target_s is not None:
            return self.first_audio_target_s
        return GPU_FIRST_AUDIO_TARGET_S if device.startswith("cuda") else 0.0

    def latency_budget(self, device: str, latency: str | float | None) -> float:
        """The first-audio budget an utterance's latency preference means (engine/protocol.py, LATENCY_PRESETS)."""
        if latency is None or latency == "balanced":
            return self.first_audio_budget(device)
        if latency == "fastest":
            return 0.0
        if latency == "prosody":
            return max(LATENCY_PROSODY_S, self.first_audio_budget(device))
        return float(latency)
