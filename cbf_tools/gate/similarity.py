"""The gate's cloned-voice criterion: how much each server's clone of a reference clip sounds like the clip.

A speaker encoder that works offline embeds the reference and what each server said with it; the figure is the
cosine between the reference's embedding and the speaker embedding of the outputs (their utterance embeddings
averaged). The encoder is Chatterbox's own voice encoder (``ve.safetensors``) when ``--model-dir`` holds it, else
Resemblyzer's GE2E model (its weights ship inside its wheel). The two encoders' figures are not comparable: the report
names the one used. Per voice the candidate passes within ``margin`` of the baseline, or above a floor without one.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence

import numpy as np

SHIPPED_REFERENCES = Path(__file__).resolve().parent / "references"
REFERENCE_SUFFIXES = (".wav", ".flac", ".ogg", ".mp3")
CHATTERBOX_VE = "ve.safetensors"


@dataclass(frozen=True)
class Reference:
    """A reference clip: ``name`` from its file name, ``data`` the file as uploaded, ``audio`` float mono."""

    name: str
    path: Path
    data: bytes
    audio: np.ndarray
    rate: int


def voice_name(stem: str) -> str:
    """A file stem as a voice name the server accepts (a-z 0-9 - _)."""
    return re.sub(r"[^a-z0-9_-]+", "-", stem.lower()).strip("-_") or "clip"


def load_references(directory: Path) -> list[Reference]:
    """Every audio clip in ``directory``, by name; raises ``ValueError`` for none or an unreadable one."""
    import soundfile as sf

    paths = sorted(p for p in directory.iterdir() if p.suffix.lower() in REFERENCE_SUFFIXES)
    if not paths:
        raise ValueError(f"no reference clips ({', '.join(REFERENCE_SUFFIXES)}) in {directory}")
    references = []
    for path in paths:
        try:
            audio, rate = sf.read(path, dtype="float32", always_2d=True)
        except (sf.LibsndfileError, RuntimeError) as exc:
            raise ValueError(f"cannot read the reference clip {path}: {exc}") from None
        references.append(Reference(voice_name(path.stem), path, path.read_bytes(), audio.mean(axis=1), rate))
    names = [r.name for r in references]
    if len(set(names)) != len(names):
        raise ValueError(f"two reference clips in {directory} share a name: {names}")
    return references


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one thread while an encoder runs: the encoders are tiny, and a thread pool spinning on a shared CPU
    costs ten times the work itself (measured: 0.03 s of CPU per clip on one thread, 0.2 to 1.2 s on two)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class SpeakerEncoder(Protocol):
    name: str

    def embed(self, audio: np.ndarray, rate: int) -> np.ndarray:
        """A unit-length embedding of one stretch of speech."""


class ResemblyzerEncoder:
    """Resemblyzer's GE2E speaker encoder (256 dimensions), its bundled weights, on the CPU."""

    name = "resemblyzer-ge2e"

    def __init__(self) -> None:
        from resemblyzer import VoiceEncoder

        self._encoder = VoiceEncoder("cpu", verbose=False)

    def embed(self, audio: np.ndarray, rate: int) -> np.ndarray:
        from resemblyzer import preprocess_wav

        with one_thread():
            return np.asarray(self._encoder.embed_utterance(preprocess_wav(np.asarray(audio, np.float32), rate)))


class ChatterboxEncoder:
    """Chatterbox's own voice encoder, the one its cloning conditions on, from ``ve.safetensors``."""

    name = "chatterbox-ve"

    def __init__(self, weights: Path) -> None:
        from chatterbox.models.voice_encoder import VoiceEncoder
        from safetensors.torch import load_file

        self._encoder = VoiceEncoder()
        self._encoder.load_state_dict(load_file(str(weights)))
        self._encoder.eval()

    def embed(self, audio: np.ndarray, rate: int) -> np.ndarray:
        with one_thread():
            embeds = self._encoder.embeds_from_wavs([np.asarray(audio, np.float32)], sample_rate=rate, as_spk=True)
        return np.asarray(embeds, dtype=np.float64)


def load_encoder(model_dir: Path | None) -> SpeakerEncoder:
    """Chatterbox's encoder when ``model_dir`` holds its weights, else Resemblyzer's."""
    if model_dir is not None and (model_dir / CHATTERBOX_VE).is_file():
        return ChatterboxEncoder(model_dir / CHATTERBOX_VE)
    return ResemblyzerEncoder()


def unit(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def speaker(embeddings: Sequence[np.ndarray]) -> np.ndarray:
    """A speaker embedding from utterance embeddings: their mean, unit length."""
    return unit(np.mean([unit(e) for e in embeddings], axis=0))


@dataclass
class VoiceResult:
    """One reference clip's clones: cosines of the reference with each server's speaker embedding."""

    voice: str
    candidate: float
    baseline: float | None
    candidate_utterances: list[float]  # each output's own cosine with the reference
    # the candidate's clone against every other reference: a clone should sound most like its own
    other_references: dict[str, float] = field(default_factory=dict)
    failure: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"voice": self.voice, "candidate": self.candidate, "baseline": self.baseline,
                "candidate_utterances": self.candidate_utterances, "other_references": self.other_references,
                "passed": self.failure is None, "failure": self.failure}


def compare(references: dict[str, np.ndarray], candidate: dict[str, list[np.ndarray]],
            baseline: dict[str, list[np.ndarray]] | None, margin: float, floor: float) -> list[VoiceResult]:
    """Per voice: reference embeddings, the candidate's and the baseline's output embeddings, judged."""
    results = []
    for voice, reference in references.items():
        outputs = speaker(candidate[voice])
        result = VoiceResult(
            voice=voice,
            candidate=float(unit(reference) @ outputs),
            baseline=float(unit(reference) @ speaker(baseline[voice])) if baseline is not None else None,
            candidate_utterances=[float(unit(reference) @ unit(e)) for e in candidate[voice]],
            other_references={other: float(unit(ref) @ outputs) for other, ref in references.items()
                              if other != voice},
        )
        if result.baseline is None:
            if not result.candidate >= floor:
                result.failure = f"{voice}: similarity {result.candidate:.3f} below the floor {floor:g} (no baseline)"
        elif not result.candidate >= result.baseline - margin:
            result.failure = (f"{voice}: similarity {result.candidate:.3f}, more than {margin:g} below the "
                              f"baseline's {result.baseline:.3f}")
        results.append(result)
    return results
