"""The interface every speech engine implements. The worker only ever talks to engines through it."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


class Cancelled(Exception):
    """Raised by ``synthesize`` when its cancel event was set (checked at least once per token step)."""


class EngineError(Exception):
    """A failure with a stable code the worker reports to the client (for example ``bad_audio``)."""

    def __init__(self, message: str, code: str = "engine_error") -> None:
        super().__init__(message)
        self.code = code


class GraphCheckFailed(Exception):
    """``--decode graph`` (T3) or ``--vocode graph`` (S3Gen) was asked for and those CUDA graphs failed their start-up
    self-check (graph_check.py, vocode_check.py): a start-up refusal (engine/startup_checks.py), where ``auto`` falls
    back to eager."""

    def __init__(self, reason: str, flag: str = "--decode") -> None:
        super().__init__(reason)
        self.flag = flag


@dataclass(frozen=True)
class EngineInfo:
    name: str  # "chatterbox-turbo", "espeak", ...
    device: str  # "cuda:0", "cpu"
    dtype: str  # "bfloat16", "float32"
    weights: str  # where the weights came from; "random (compute cost only)" for the random-weights mode
    notes: str = ""
    decode: str | None = None  # how a batching engine decodes: "eager" or "graph" (CUDA graphs); None for the others
    decode_fallback: str | None = None  # why it decodes eagerly although CUDA graphs were meant (their self-check)
    vocode: str | None = None  # how a batching engine runs S3Gen: "eager" or "graph" (CUDA graphs per bucket)
    vocode_fallback: str | None = None  # why S3Gen runs eagerly although CUDA graphs were meant (their self-check)


class Engine(ABC):
    """A loaded model on one device. ``synthesize`` is called from one worker thread at a time."""

    sample_rate: int  # the native rate of what ``synthesize`` returns
    info: EngineInfo
    conditionals_suffix: str  # file suffix of this engine's cached conditionals, e.g. ".turbo.pt"

    @abstractmethod
    def warmup(self) -> None:
        """Run once after loading so the first real request pays no first-call costs."""

    @abstractmethod
    def default_voice(self) -> Any:
        """Conditionals of the engine's built-in voice (the voice named "default")."""

    @abstractmethod
    def prepare_voice(self, wav: np.ndarray, sample_rate: int) -> Any:
        """Compute a voice's conditionals from a float32 mono reference clip (5-30 s). Called once per voice."""

    @abstractmethod
    def save_conditionals(self, conds: Any, path: Path) -> None:
        """Write conditionals to ``path`` (the caller makes the write atomic)."""

    @abstractmethod
    def load_conditionals(self, path: Path) -> Any:
        """Read conditionals written by ``save_conditionals``."""

    @abstractmethod
    def synthesize(self, text: str, voice: Any, cancel: threading.Event) -> np.ndarray:
        """Speak ``text`` (already normalised, at most one chunk) in ``voice``; float32 mono at ``sample_rate``.

        Raise ``Cancelled`` promptly once ``cancel`` is set. Never keep per-voice state on the shared model.
        """

    def prompt_cache(self) -> dict[str, int] | None:
        """What /health shows of voice prompts kept on the device: ``voices`` held, their ``bytes`` and the ``limit``
        of voices; None for an engine that keeps none."""
        return None

    def close(self) -> None:
        """Stop the engine's own threads: it is being unloaded (engine/residency.py) and is never called again."""

    def conditionals_to(self, conds: Any, device: str) -> Any:
        """A voice's conditionals moved to ``device`` ("cpu" while the model is unloaded: kept in host memory; this
        engine's device once it is loaded again); as they are for an engine whose conditionals live on the host."""
        return conds

    def named_voices(self) -> dict[str, Any]:
        """Voices the engine itself knows by name beside the voice store's files (a TTS server's own voices), by
        lower-case name; none for a model that runs here."""
        return {}

    def synthesize_timed(self, text: str, voice: Any,
                         cancel: threading.Event) -> tuple[np.ndarray, list[tuple[int, float]] | None]:
        """``synthesize``, with where each word starts where the engine knows it: ``(character index in
        engine.text.strip_tags(text), seconds into the returned audio)``; None where it does not."""
        return self.synthesize(text, voice, cancel), None


class RemoteEngine(Engine):
    """An engine whose model runs in another server: ``concurrency`` chunks may be asked of it at once, and its state
    (reachable or not) is reported beside the engine's greeting."""

    concurrency: int

    @abstractmethod
    def probe(self) -> None:
        """Ask the server whether it is there (cheaply), updating ``backend()``; never raises."""

    @abstractmethod
    def backend(self) -> dict[str, Any]:
        """What /health shows: ``url``, ``dialect``, ``state`` (up | down | unknown), ``error`` (the last failure or
        None) and ``since`` (Unix time of the last change)."""

    @property
    @abstractmethod
    def idle_s(self) -> float:
        """Seconds since the server last answered or failed (when a probe is due)."""


class BatchingEngine(Engine):
    """An engine in two stages: tokens, decoded together with other callers' chunks on the engine's own thread (the
    earliest deadline gets a free slot first), then audio from those tokens in the caller's thread."""

    @abstractmethod
    def submit_tokens(self, text: str, voice: Any, cancel: threading.Event, deadline: float) -> Future[Any]:
        """Queue ``text``; the future gets its tokens, or raises ``Cancelled`` within one step of ``cancel``."""

    max_vocode_batch: int = 1  # the most chunks ``vocode_batch`` takes in one call

    @abstractmethod
    def vocode_batch(self, items: Sequence[tuple[Any, Any]]) -> list[np.ndarray]:
        """Audio (float32 mono at ``sample_rate``) for each ``(tokens from submit_tokens, voice)``, in one call;
        each the same as that item vocoded alone."""

    def vocode(self, tokens: Any, voice: Any) -> np.ndarray:
        return self.vocode_batch([(tokens, voice)])[0]

    @property
    @abstractmethod
    def busy_since(self) -> float | None:
        """Monotonic start of the decode step or prefill running now on the engine's own thread; None while it waits
        (watched like the device queue's calls: engine/watchdog.py)."""

    def synthesize(self, text: str, voice: Any, cancel: threading.Event) -> np.ndarray:
        if cancel.is_set():
            raise Cancelled()
        tokens = self.submit_tokens(text, voice, cancel, time.monotonic()).result()
        if cancel.is_set():
            raise Cancelled()
        return self.vocode(tokens, voice)
