"""What each buffered HTTP TTS server expects and answers (pure: no sockets). ``engine/engines/http.py`` sends.

A dialect turns one chunk's text and a voice into a request, and a backend's voice listing into names; the reply
(a whole audio file, or raw PCM) is decoded here, the same for every dialect, and resampled once to 24 kHz.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from engine.engines.base import EngineError

BAD_REPLY = "bad_backend_reply"
_CONTAINERS = (b"RIFF", b"OggS", b"ID3", b"fLaC", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2", b"\x1aE\xdf\xa3")
_RAW_TYPES = ("audio/pcm", "audio/l16", "audio/raw", "audio/x-raw")


@dataclass(frozen=True)
class Voice:
    """A backend voice: a name the backend knows (``predefined``), or a reference clip uploaded to it (``clone``)."""

    id: str
    mode: str = "predefined"


@dataclass(frozen=True)
class SpeechRequest:
    path: str
    json: dict[str, Any]


class Dialect(Protocol):
    name: str
    voices_path: str | None  # GET it for the backend's voice names; None: the backend cannot list them
    upload_path: str | None  # POST a reference clip here (multipart ``files``); None: no cloning
    pcm_rate: int  # the rate of a raw PCM reply (a file reply says its own)

    def speech(self, text: str, voice: Voice) -> SpeechRequest: ...

    def voice_names(self, payload: Any) -> list[str]: ...


def names_in(payload: Any, keys: tuple[str, ...]) -> list[str]:
    """Voice names in a listing: a list (or ``{"voices": [...]}``) of strings or of objects with one of ``keys``."""
    items = payload.get("voices", payload.get("data")) if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise EngineError(f"the backend's voice listing is not a list: {str(payload)[:80]!r}", BAD_REPLY)
    names = []
    for item in items:
        name = item if isinstance(item, str) else next(
            (item[k] for k in keys if isinstance(item, dict) and isinstance(item.get(k), str)), None)
        if name:
            names.append(name)
    return names


def decode_reply(body: bytes, content_type: str, pcm_rate: int, rate: int) -> np.ndarray:
    """A reply's audio as float32 mono at ``rate``: a file (WAV, MP3, Ogg/Opus, FLAC: PyAV), or raw s16le PCM at
    ``pcm_rate`` (or the ``rate=`` its content type names). Anything else is a ``bad_backend_reply``."""
    kind = content_type.split(";")[0].strip().lower()
    if kind.startswith(("application/json", "text/")):
        raise EngineError(f"the backend answered {kind} instead of audio: {body[:120]!r}", BAD_REPLY)
    if kind in _RAW_TYPES and not body.startswith(_CONTAINERS):
        if len(body) < 2:
            raise EngineError("the backend answered no audio", BAD_REPLY)
        found = re.search(r"rate=(\d+)", content_type)
        native = int(found.group(1)) if found else pcm_rate
        samples = np.frombuffer(body[: len(body) // 2 * 2], dtype="<i2").astype(np.float32) / 32768.0
    else:
        from engine.audio_decode import decode_audio

        try:
            samples, native = decode_audio(body, max_seconds=120.0)
        except EngineError as exc:
            raise EngineError(f"the backend's reply is not audio ({exc})", BAD_REPLY) from None
    return resample(samples, native, rate)


def resample(samples: np.ndarray, native: int, rate: int) -> np.ndarray:
    if native == rate:
        return samples.astype(np.float32, copy=False)
    import soxr

    return soxr.resample(samples, native, rate, quality="HQ").astype(np.float32, copy=False)


def paths(spoken: Dialect) -> list[str]:
    """Every path a dialect sends to (its speech request's, its listing's, its upload's)."""
    return [path for path in (spoken.speech("", Voice("default")).path, spoken.voices_path, spoken.upload_path)
            if path]


def base_url(url: str, spoken: Dialect) -> str:
    """The server's root from the URL an operator gave: ``http://host:8880``, with a trailing slash, or as OpenAI
    clients write it, ``http://host:8880/v1``. The URL's trailing path segments that begin every one of the dialect's
    paths are dropped (they would be doubled: ``/v1/v1/audio/speech``); any other path (a proxy's prefix) is kept.
    devnen's paths share no first segment, so its URL keeps its path."""
    scheme, sep, rest = url.strip().partition("://")
    host, _, path = rest.partition("/")
    given = [part for part in path.split("/") if part]
    leading = [[part for part in sent.split("/") if part] for sent in paths(spoken)]
    for size in range(len(given), 0, -1):
        tail = given[-size:]
        if leading and all(sent[:size] == tail for sent in leading):
            given = given[:-size]
            break
    return f"{scheme}{sep}{host}" + "".join(f"/{part}" for part in given)


def dialect(name: str) -> Dialect:
    from engine.engines.http_dialects import devnen, fish, openai

    found = {d.name: d for d in (openai.OPENAI, devnen.DEVNEN, fish.FISH)}.get(name)
    if found is None:
        raise ValueError(f"unknown HTTP dialect {name!r}; choose openai, devnen or fish")
    return found
