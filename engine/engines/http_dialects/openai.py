"""``POST /v1/audio/speech`` (OpenAI's speech API): the common denominator of devnen's server, travisvn's
chatterbox-tts-api, Kokoro-FastAPI and openedai-speech. Voices from ``GET /v1/audio/voices`` where it exists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.engines.http_dialects import SpeechRequest, Voice, names_in


@dataclass(frozen=True)
class OpenAI:
    name: str = "openai"
    voices_path: str | None = "/v1/audio/voices"
    upload_path: str | None = None
    pcm_rate: int = 24000  # OpenAI's "pcm" format
    model: str = "tts-1"

    def speech(self, text: str, voice: Voice) -> SpeechRequest:
        return SpeechRequest("/v1/audio/speech", {"model": self.model, "input": text, "voice": voice.id,
                                                  "response_format": "wav"})

    def voice_names(self, payload: Any) -> list[str]:
        return names_in(payload, ("id", "voice_id", "name"))


OPENAI = OpenAI()
