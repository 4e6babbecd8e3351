"""Fish Speech's HTTP API: ``POST /v1/tts`` (JSON ``ServeTTSRequest``) with a ``reference_id`` the Fish server holds
(``references/<id>/`` there); no listing, so the voices are the configured names. Cloning by upload needs the
clip's transcript, which a voice upload here does not carry: not offered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.engines.http_dialects import SpeechRequest, Voice


@dataclass(frozen=True)
class Fish:
    name: str = "fish"
    voices_path: str | None = None
    upload_path: str | None = None
    pcm_rate: int = 44100  # Fish's decoder rate, for a raw "pcm" reply

    def speech(self, text: str, voice: Voice) -> SpeechRequest:
        body: dict[str, Any] = {"text": text, "format": "wav", "streaming": False, "normalize": True,
                                "chunk_length": 300, "references": []}
        if voice.id != "default":
            body["reference_id"] = voice.id
        return SpeechRequest("/v1/tts", body)

    def voice_names(self, payload: Any) -> list[str]:
        return []


FISH = Fish()
