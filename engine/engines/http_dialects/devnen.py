"""devnen's Chatterbox-TTS-Server: ``POST /tts`` with a predefined voice file or an uploaded reference clip
(``voice_mode`` predefined | clone), voices from ``GET /get_predefined_voices``, uploads to ``POST /upload_reference``.
Its own text splitting is turned off: each request is one of our chunks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.engines.http_dialects import SpeechRequest, Voice, names_in


@dataclass(frozen=True)
class Devnen:
    name: str = "devnen"
    voices_path: str | None = "/get_predefined_voices"
    upload_path: str | None = "/upload_reference"
    pcm_rate: int = 24000

    def speech(self, text: str, voice: Voice) -> SpeechRequest:
        body: dict[str, Any] = {"text": text, "output_format": "wav", "split_text": False, "voice_mode": voice.mode}
        body["reference_audio_filename" if voice.mode == "clone" else "predefined_voice_id"] = voice.id
        return SpeechRequest("/tts", body)

    def voice_names(self, payload: Any) -> list[str]:
        return names_in(payload, ("filename", "display_name", "name"))


DEVNEN = Devnen()
