"""The gate's intelligibility criterion: an offline recognizer (pocketsphinx, its US English model inside its wheel)
transcribes the baseline's and the candidate's audio of each text; word error rate (jiwer) against the text.

pocketsphinx is a small, old recognizer: even on clean speech it misses many words (the README gives its figures), so
the criterion is relative: the candidate's WER over the whole set may exceed the baseline's by at most
``margin`` of it (and by ``MIN_SLACK`` absolute, so a perfect baseline does not fail a candidate on one word), and
never a ceiling (``max_wer``), which alone applies with no baseline: it catches speech that is not speech (noise,
silence: nothing recognised is a WER of 1), not subtle loss.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from engine.protocol import TAG

RECOGNIZER_RATE = 16000
MIN_SLACK = 0.05
_NOT_WORD = re.compile(r"[^a-z0-9' ]+")


def words(text: str) -> list[str]:
    """The words a listener should hear: tags ([laugh]) dropped, lower case, punctuation gone."""
    spoken = TAG.sub(" ", text).lower().replace("-", " ")
    return [w.strip("'") for w in _NOT_WORD.sub(" ", spoken).split() if w.strip("'")]


@dataclass(frozen=True)
class Transcript:
    name: str
    heard: str
    errors: int  # substitutions + deletions + insertions
    reference_words: int

    @property
    def wer(self) -> float:
        return self.errors / max(self.reference_words, 1)

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "heard": self.heard, "errors": self.errors, "words": self.reference_words,
                "wer": self.wer}


def score(name: str, text: str, heard: str) -> Transcript:
    import jiwer

    reference, hypothesis = words(text), words(heard)
    if not reference:
        return Transcript(name, heard, len(hypothesis), 0)
    out = jiwer.process_words(" ".join(reference), " ".join(hypothesis) or "")
    return Transcript(name, heard, out.substitutions + out.deletions + out.insertions, len(reference))


def set_wer(transcripts: Sequence[Transcript]) -> float:
    """Errors over reference words across the set (long texts weigh more than short ones)."""
    return sum(t.errors for t in transcripts) / max(sum(t.reference_words for t in transcripts), 1)


def judge(candidate: Sequence[Transcript], baseline: Sequence[Transcript] | None, margin: float,
          max_wer: float) -> tuple[float, str | None]:
    """The highest WER the candidate may have and, when it has more, why it fails."""
    wer = set_wer(candidate)
    limit, against = max_wer, f"the ceiling {max_wer:g}"
    if baseline is not None:
        base = set_wer(baseline)
        slack = max(margin * base, MIN_SLACK)
        if base + slack < max_wer:
            limit, against = base + slack, f"the baseline's {base:.3f} + {slack:.3f}"
    if wer > limit:
        return limit, f"word error rate {wer:.3f} over {against}"
    return limit, None


class Recognizer:
    """pocketsphinx with its bundled US English acoustic model, language model and dictionary."""

    def __init__(self) -> None:
        from pocketsphinx import Decoder

        self._decoder = Decoder(samprate=RECOGNIZER_RATE, loglevel="FATAL")

    def transcribe(self, audio: np.ndarray, rate: int) -> str:
        import soxr

        if audio.size == 0:
            return ""
        pcm = np.clip(soxr.resample(np.asarray(audio, dtype=np.float32), rate, RECOGNIZER_RATE), -1.0, 1.0)
        self._decoder.start_utt()
        self._decoder.process_raw((pcm * 32767).astype("<i2").tobytes(), full_utt=True)
        self._decoder.end_utt()
        hyp = self._decoder.hyp()
        return hyp.hypstr if hyp is not None else ""
