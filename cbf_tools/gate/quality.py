"""The gate's quality criteria, driven against the two running servers: cloned-voice similarity, intelligibility and
seams (each judged in its own module; this one asks the servers and hands the audio over), and the pairs for the
blind listening page. Each criterion returns a ``Verdict``: its figures for the report and why it failed, if it did.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Sequence

import httpx
import numpy as np

from cbf_tools.gate import intelligibility as gate_intelligibility
from cbf_tools.gate import seams as gate_seams
from cbf_tools.gate import similarity as gate_similarity
from cbf_tools.gate.http import NATIVE, Endpoint, GateError, NoVoiceUpload, delete_voice, say, speak_timed, upload_voice
from cbf_tools.gate.listening import Pair
from engine.protocol import SAMPLE_RATE

CLONE_TEXTS = 2  # each clone says the set's first texts (the built-in set's short and medium: 9 s of speech)
MIN_EMBED_S = 0.3  # shorter output than this has no voice to embed: similarity 0


@dataclass
class Side:
    """One server as the gate drives it."""

    role: str  # "candidate" or "baseline"
    url: str
    client: httpx.Client
    endpoint: Endpoint
    voice: str  # the predefined voice the texts are spoken in
    clones: dict[str, str] = field(default_factory=dict)  # reference name -> a voice the server already has


@dataclass
class Verdict:
    criterion: str
    figures: dict[str, Any]
    failures: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"passed": not self.failures, **self.figures, "failures": self.failures}


def pcm_audio(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float32) / 32768.0


def clone_outputs(side: Side, references: Sequence[gate_similarity.Reference],
                  texts: Sequence[str]) -> dict[str, list[bytes]]:
    """Each reference's clone on ``side`` saying ``texts``: uploaded under a fresh name and deleted afterwards,
    or the voice ``side.clones`` names (a baseline without voice upload)."""
    uploaded: list[str] = []
    outputs: dict[str, list[bytes]] = {}
    try:
        for ref in references:
            voice = side.clones.get(ref.name)
            if voice is None:
                voice = f"gate-{ref.name}-{secrets.token_hex(3)}"
                try:
                    upload_voice(side.client, voice, ref.path.name, ref.data)
                except NoVoiceUpload as exc:
                    names = ",".join(f"{r.name}=NAME" for r in references)
                    raise GateError(f"{exc}: upload the reference clips to the {side.role} yourself and name its "
                                    f"voices with --baseline-voice {names}") from None
                uploaded.append(voice)
            outputs[ref.name] = [say(side.client, side.endpoint, text, voice) for text in texts]
    finally:
        for voice in uploaded:
            delete_voice(side.client, voice)
    return outputs


def similarity(candidate: Side, baseline: Side | None, references: Sequence[gate_similarity.Reference],
               encoder: gate_similarity.SpeakerEncoder, margin: float, floor: float,
               texts: Sequence[str]) -> tuple[Verdict, list[Pair]]:
    """Clone every reference on both servers, embed, judge; the clones' pairs for the listening page."""
    spoken = {side.role: clone_outputs(side, references, texts) for side in (candidate, baseline) if side}
    reference_embeddings = {ref.name: encoder.embed(ref.audio, ref.rate) for ref in references}
    size = next(iter(reference_embeddings.values())).shape

    def embed(pcm: bytes) -> np.ndarray:
        audio = pcm_audio(pcm)
        return encoder.embed(audio, SAMPLE_RATE) if audio.size >= MIN_EMBED_S * SAMPLE_RATE else np.zeros(size)

    embedded = {role: {name: [embed(pcm) for pcm in pcms] for name, pcms in outputs.items()}
                for role, outputs in spoken.items()}
    results = gate_similarity.compare(reference_embeddings, embedded["candidate"], embedded.get("baseline"),
                                      margin, floor)
    verdict = Verdict("similarity", {
        "encoder": encoder.name, "margin": margin, "floor": None if baseline else floor,
        "references": {ref.name: str(ref.path) for ref in references}, "texts": list(texts),
        "voices": [r.to_json() for r in results],
    }, [r.failure for r in results if r.failure])
    pairs = [Pair(f"clone {name} {i + 1}", text, spoken["baseline"][name][i], spoken["candidate"][name][i])
             for name in spoken["candidate"] for i, text in enumerate(texts)] if baseline else []
    return verdict, pairs


def intelligibility(texts: Sequence[tuple[str, str]], candidate: Sequence[bytes], baseline: Sequence[bytes] | None,
                    margin: float, max_wer: float) -> Verdict:
    """Transcribe both servers' audio of the texts; judge the candidate's word error rate against the baseline's."""
    recognizer = gate_intelligibility.Recognizer()

    def transcripts(pcms: Sequence[bytes]) -> list[gate_intelligibility.Transcript]:
        return [gate_intelligibility.score(name, text, recognizer.transcribe(pcm_audio(pcm), SAMPLE_RATE))
                for (name, text), pcm in zip(texts, pcms)]

    ours = transcripts(candidate)
    theirs = transcripts(baseline) if baseline is not None else None
    limit, failure = gate_intelligibility.judge(ours, theirs, margin, max_wer)
    return Verdict("intelligibility", {
        "recognizer": "pocketsphinx en-us", "margin": margin, "limit": limit,
        "candidate_wer": gate_intelligibility.set_wer(ours),
        "baseline_wer": gate_intelligibility.set_wer(theirs) if theirs is not None else None,
        "candidate": [t.to_json() for t in ours], "baseline": [t.to_json() for t in theirs] if theirs else None,
    }, [failure] if failure else [])


def seams(candidate: Side, texts: Sequence[tuple[str, str]], baseline: Sequence[bytes] | None) -> Verdict:
    """Every join of the candidate's timed stream of each text; the baseline's whole utterance as the level."""
    if candidate.endpoint != NATIVE:
        raise GateError(f"{candidate.url} has no POST /v1/tts, so no timed stream to find its joins in")
    utterances, failures = [], []
    for i, (name, text) in enumerate(texts):
        try:
            heard = gate_seams.received(speak_timed(candidate.client, text, candidate.voice), SAMPLE_RATE)
        except gate_seams.BadStream as exc:
            raise GateError(f"POST /v1/tts (ndjson) for {name!r}: {exc}") from None
        found = gate_seams.joins(heard, SAMPLE_RATE, pcm_audio(baseline[i]) if baseline is not None else None)
        utterances.append({"name": name, "chunks": len(heard.chunk_samples), "offset_error_s": heard.offset_error_s,
                           "joins": [j.to_json() for j in found]})
        clicks = [j.word for j in found if j.click]
        if clicks:
            failures.append(f"{name}: {len(clicks)} join(s) click, after {', '.join(map(repr, clicks))}")
        off = [f"{j.word!r} ({j.after}, {j.pause_s * 1000:.0f} ms)" for j in found if not j.pause_fits]
        if off:
            failures.append(f"{name}: pauses that disagree with the punctuation after {', '.join(off)}")
        if heard.offset_error_s > gate_seams.OFFSET_TOLERANCE_S:
            failures.append(f"{name}: a chunk's offset is {heard.offset_error_s * 1000:.1f} ms off the audio "
                            "received before it")
    count = sum(len(u["joins"]) for u in utterances)
    if count == 0:
        failures.append("no joins to check: every text came as one chunk (give longer --texts)")
    return Verdict("seams", {"joins": count, "clicks": sum(j["click"] for u in utterances for j in u["joins"]),
                             "pauses_off": sum(not j["pause_fits"] for u in utterances for j in u["joins"]),
                             "utterances": utterances}, failures)
