"""The gate's calls to a server: streamed speech (``POST /v1/tts``, else OpenAI's ``/v1/audio/speech``), cloned
voices through ``/v1/voices``, and ``/v1/tts`` as timed lines (ndjson) for the seam check. Thin: every figure is
worked out elsewhere."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator

import httpx

from engine.protocol import SAMPLE_RATE


class GateError(Exception):
    """The gate could not measure a server (unreachable, an HTTP error, a broken stream)."""


class NoVoiceUpload(GateError):
    """The server has no ``POST /v1/voices`` (an older server: name its voices with ``--baseline-voice``)."""


@dataclass(frozen=True)
class Endpoint:
    """One way of asking a server for streamed 24 kHz PCM."""

    path: str
    openai: bool

    def body(self, text: str, voice: str) -> dict[str, Any]:
        if self.openai:  # OpenAI's "pcm" is 24 kHz s16le mono too
            return {"model": "tts-1", "input": text, "voice": voice, "response_format": "pcm"}
        return {"text": text, "voice": voice, "format": "pcm", "sample_rate": SAMPLE_RATE,
                "cache": False}  # the engine's speed, not the prompt cache's (an older server ignores the field)


NATIVE = Endpoint("/v1/tts", openai=False)
OPENAI = Endpoint("/v1/audio/speech", openai=True)


def choose_endpoint(client: httpx.Client, voice: str) -> Endpoint:
    """Warm the connection (and the server) with one untimed request; pick ``/v1/tts``, else the OpenAI route."""
    for endpoint in (NATIVE, OPENAI):
        with client.stream("POST", endpoint.path, json=endpoint.body("Warming up.", voice)) as response:
            response.read()
            if response.status_code in (404, 405):
                continue
            if response.status_code != 200:
                raise _refused("POST", endpoint.path, response)
            return endpoint
    raise GateError("the server has neither POST /v1/tts nor POST /v1/audio/speech")


def speech(client: httpx.Client, endpoint: Endpoint, text: str, voice: str) -> Iterator[bytes]:
    """The PCM of one utterance, piece by piece as it arrives (httpx errors pass through, for the caller's timing)."""
    with client.stream("POST", endpoint.path, json=endpoint.body(text, voice)) as response:
        if response.status_code != 200:
            response.read()
            raise _refused("POST", endpoint.path, response)
        for data in response.iter_bytes():
            if data:
                yield data


def say(client: httpx.Client, endpoint: Endpoint, text: str, voice: str) -> bytes:
    """The whole PCM of one utterance."""
    try:
        return b"".join(speech(client, endpoint, text, voice))
    except httpx.HTTPError as exc:
        raise GateError(f"POST {endpoint.path}: {type(exc).__name__}: {exc}") from exc


def _refused(method: str, path: str, response: httpx.Response) -> GateError:
    return GateError(f"{method} {path} answered HTTP {response.status_code}: {response.text[:300]}")


def upload_voice(client: httpx.Client, name: str, filename: str, data: bytes) -> None:
    """Add a voice from a reference clip (multipart ``name`` and ``file``, as ``POST /v1/voices`` takes it)."""
    try:
        response = client.post("/v1/voices", data={"name": name}, files={"file": (filename, data)})
    except httpx.HTTPError as exc:
        raise GateError(f"POST /v1/voices: {type(exc).__name__}: {exc}") from exc
    if response.status_code in (404, 405):
        raise NoVoiceUpload(f"{client.base_url} has no POST /v1/voices (HTTP {response.status_code})")
    if response.status_code != 201:
        raise _refused("POST", "/v1/voices", response)


def delete_voice(client: httpx.Client, name: str) -> None:
    """Remove a voice the gate added; a server that already lost it is fine."""
    try:
        response = client.delete(f"/v1/voices/{name}")
    except httpx.HTTPError as exc:
        raise GateError(f"DELETE /v1/voices/{name}: {type(exc).__name__}: {exc}") from exc
    if response.status_code not in (204, 404):
        raise _refused("DELETE", f"/v1/voices/{name}", response)


def speak_timed(client: httpx.Client, text: str, voice: str) -> list[dict[str, Any]]:
    """``POST /v1/tts`` with ``format: ndjson``: every line of the stream as received, in order."""
    body = {"text": text, "voice": voice, "format": "ndjson", "sample_rate": SAMPLE_RATE, "cache": False}
    try:
        with client.stream("POST", "/v1/tts", json=body) as response:
            if response.status_code != 200:
                response.read()
                raise _refused("POST", "/v1/tts (ndjson)", response)
            return [json.loads(line) for line in response.iter_lines() if line.strip()]
    except httpx.HTTPError as exc:
        raise GateError(f"POST /v1/tts (ndjson): {type(exc).__name__}: {exc}") from exc
    except ValueError as exc:
        raise GateError(f"POST /v1/tts (ndjson): a line is not JSON: {exc}") from exc
