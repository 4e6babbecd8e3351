"""Engine worker settings. The CLI (gateway/cli.py) fills them from flags and environment variables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


GPU_FIRST_AUDIO_TARGET_S = 0.25  # a GPU engine makes a whole clause in this; a CPU one not even the minimum words


@dataclass
class EngineSettings:
    engine: str = "auto"  # auto | chatterbox-turbo | espeak | simulated
    model_dir: Path | None = None
    weights: str = "pretrained"  # pretrained | random (compute cost only)
    device: str = "auto"
    dtype: str = "auto"
    tf32: bool = True
    sdpa: bool = True
    decode: str = "auto"  # chatterbox-turbo: auto (CUDA graphs on CUDA, eager elsewhere) | eager | graph
    batch_slots: int = 0  # chatterbox-turbo: chunks decoded together (0: 64 on CUDA, 8 elsewhere)
    prompt_cache_voices: int = 64  # chatterbox-turbo: voices whose prompt keys and values stay on the device
    voices_dir: Path = field(default_factory=lambda: Path("voices"))
    sim_fixed_s: float = 0.15  # simulated engine: fixed cost per chunk
    sim_rtf: float = 3.0  # simulated engine: real-time factor
    first_chunk_words: int = 3
    max_chunk_chars: int = 300
    safety_margin_s: float = 0.3
    first_audio_target_s: float | None = None  # None (auto): 0.25 s on a GPU engine, off elsewhere; 0: off
    shared_chunk_s: float = 1.0  # while utterances share the device: longest estimated generation time of a chunk

    def first_audio_budget(self, device: str) -> float:
        """The planner's first-audio target for an engine on ``device``: as set, or (auto) 0.25 s on a GPU, off
        elsewhere (where no unit fits it anyway, and eSpeak would fit a whole paragraph)."""
        if self.first_audio_target_s is not None:
            return self.first_audio_target_s
        return GPU_FIRST_AUDIO_TARGET_S if device.startswith("cuda") else 0.0
