"""Choosing and loading an engine. Heavy imports happen only for the engine actually chosen."""

from __future__ import annotations

import logging

from engine.engines.base import Engine
from engine.heap import collector_paused
from engine.settings import EngineSettings

log = logging.getLogger("chatterbox_fast.engine")
ENGINES = ("auto", "chatterbox-turbo", "espeak", "simulated", "http")


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def choose_engine(settings: EngineSettings) -> tuple[str, str]:
    """The engine ``auto`` resolves to, and why (logged for the operator)."""
    if settings.engine != "auto":
        return settings.engine, "chosen with --engine"
    from engine.weights import find_weights

    weights = find_weights(settings.model_dir)
    if weights is None:
        return "espeak", "no Chatterbox-Turbo weights found (--model-dir or the HF cache): using the embedded default"
    if not _cuda_available():
        return "espeak", f"Chatterbox-Turbo weights found at {weights} but no GPU: using the embedded default"
    return "chatterbox-turbo", f"Chatterbox-Turbo weights found at {weights} and a GPU"


def load_engine(settings: EngineSettings) -> Engine:
    name, why = choose_engine(settings)
    log.info("engine: %s (%s)", name, why)
    if name == "chatterbox-turbo":
        with collector_paused():
            from engine.engines.turbo import TurboEngine

        return TurboEngine.load(
            settings.model_dir, weights=settings.weights, device=settings.device, dtype=settings.dtype,
            tf32=settings.tf32, sdpa=settings.sdpa, decode=settings.decode, vocode=settings.vocode,
            slots=settings.batch_slots, prompt_cache_voices=settings.prompt_cache_voices,
            memory_cap_gib=settings.gpu_memory_gib,
        )
    if name == "http":
        from engine.engines.http import HttpEngine

        return HttpEngine.from_settings(settings)
    from engine.engines.espeak import EspeakEngine

    if name == "espeak":
        return EspeakEngine()
    if name == "simulated":
        from engine.engines.simulated import SimulatedEngine

        return SimulatedEngine(EspeakEngine(), fixed_s=settings.sim_fixed_s, rtf=settings.sim_rtf)
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
