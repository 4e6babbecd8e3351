"""Vapi's custom voice: ``POST /v1/vapi``, the webhook a Vapi assistant with ``"provider": "custom-voice"`` calls for
each piece of its speech.

Vapi sends ``{"message": {"type": "voice-request", "text", "sampleRate", ...}}`` with the assistant's secret in
``X-VAPI-SECRET`` (the gateway's API key: gateway/guard/auth.py); the answer is raw s16le mono at ``sampleRate``,
streamed as the engine makes it (gateway/http/speech.py). The voice is the URL's ``voice`` query parameter.
docs/protocols/vapi.md has the assistant JSON.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.http.body import json_body
from gateway.http.errors import ApiError
from gateway.http.speech import checked_text, speech_stream
from gateway.http.stream import AudioBytes
from gateway.shared_state import GatewayState

TRANSPORT = "vapi"  # the metrics' and the session registry's label
SAMPLE_RATES = (8000, 16000, 22050, 24000, 44100)  # what Vapi asks for (theirs)


class RawAudio(AudioBytes):
    """The PCM as it is, as Vapi's docs answer it: ``application/octet-stream``."""

    media_type = "application/octet-stream"


def voice_request(body: dict[str, Any]) -> tuple[str, int]:
    """A webhook body's text and sample rate; ``ApiError`` 400 for another message type or a rate not taken."""
    message = body.get("message")
    if not isinstance(message, dict):
        raise ApiError(400, "bad_request", "the body needs a 'message' object")
    if message.get("type") != "voice-request":
        raise ApiError(400, "unsupported_message", f"message type {message.get('type')!r} is not taken here: "
                       "only 'voice-request'")
    text, rate = message.get("text"), message.get("sampleRate")
    if not isinstance(text, str):
        raise ApiError(400, "bad_request", "'message.text' must be a string")
    if not isinstance(rate, int) or isinstance(rate, bool) or rate not in SAMPLE_RATES:
        raise ApiError(400, "unsupported_sample_rate",
                       f"'message.sampleRate' must be one of {', '.join(map(str, SAMPLE_RATES))}")
    return text, rate


async def webhook(request: Request) -> Response:
    state: GatewayState = request.app.state.gateway
    text, rate = voice_request(await json_body(request))
    return await speech_stream(state, request, {}, checked_text(state, text), request.query_params.get("voice",
                               "default"), "pcm", rate, RawAudio(), transport=TRANSPORT)
