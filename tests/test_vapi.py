"""Vapi's custom voice (gateway/vendors/vapi.py): their webhook as their docs describe it (no client library exists),
sent with httpx to a real gateway on 127.0.0.1 (eSpeak; the one the third-party client tests share): raw s16le at the
asked rate, streamed, watermarked; the refusals (another message type, a rate Vapi does not use, a wrong secret before
any audio), the server going on."""

from __future__ import annotations

import time
from typing import Any

import httpx
import numpy as np
import pytest

from gateway.http.errors import ApiError
from gateway.vendors import vapi
from tests.server import KEYED_KEY

KEY = KEYED_KEY


def voice_request(text: str, rate: int, kind: str = "voice-request") -> dict[str, Any]:
    """A webhook body as Vapi sends it: the message, with the call, assistant and customer beside the text."""
    return {"message": {"type": kind, "timestamp": 1733486400000, "text": text, "sampleRate": rate,
                        "call": {"id": "call-1", "orgId": "org-1", "type": "webCall"},
                        "assistant": {"id": "asst-1", "name": "Receptionist"},
                        "customer": {"number": "+15550100"}}}


@pytest.mark.parametrize(("body", "code"), [
    ({"message": {"type": "assistant-request"}}, "unsupported_message"),
    (voice_request("Hi.", 11025), "unsupported_sample_rate"),
    (voice_request("Hi.", True), "unsupported_sample_rate"),
    ({"message": {"type": "voice-request", "sampleRate": 8000}}, "bad_request"),
    ({"text": "Hi."}, "bad_request"),
])
def test_a_body_that_is_not_a_voice_request_vapi_can_have_is_refused(body: dict[str, Any], code: str) -> None:
    with pytest.raises(ApiError) as info:
        vapi.voice_request(body)
    assert (info.value.status, info.value.code) == (400, code)
    assert vapi.voice_request(voice_request("Hello.", 8000)) == ("Hello.", 8000)


@pytest.fixture(scope="module")
def server(keyed_gateway: tuple[str, int]) -> str:
    """The gateway the third-party client tests share (tests/conftest.py)."""
    return keyed_gateway[0]


def test_a_voice_request_streams_watermarked_pcm_at_its_rate(server: str, watermarker) -> None:
    text = "Thanks for calling. I can book a table for you tonight, or tomorrow if you prefer."
    start = time.monotonic()
    with httpx.stream("POST", server + "/v1/vapi?voice=default", json=voice_request(text, 16000),
                      headers={"X-VAPI-SECRET": KEY}, timeout=60) as reply:
        assert reply.status_code == 200 and reply.headers["content-type"] == "application/octet-stream"
        assert reply.headers.get("transfer-encoding") == "chunked"  # streamed, not sent whole
        pieces = list(reply.iter_raw())
        first_bytes_s = time.monotonic() - start
    audio = b"".join(pieces)
    wav = np.frombuffer(audio, dtype="<i2").astype(np.float32) / 32768.0
    assert len(audio) % 2 == 0 and wav.size / 16000 > 2.0 and np.sqrt(np.mean(wav ** 2)) > 0.02
    assert watermarker.detect(wav, 16000) >= 0.5
    assert first_bytes_s < 30  # (a bound on a hang; the figure is bench's)
    metrics = httpx.get(server + "/metrics", headers={"Authorization": f"Bearer {KEY}"}).text
    assert 'cbf_active_sessions{transport="vapi"}' in metrics


def test_refusals_come_before_any_audio_and_the_server_goes_on(server: str) -> None:
    url = server + "/v1/vapi"
    for headers in ({"X-VAPI-SECRET": "wrong"}, {}):
        reply = httpx.post(url, json=voice_request("Hello.", 24000), headers=headers)
        assert reply.status_code == 401 and reply.json()["error"]["code"] == "unauthorized"
    secret = {"X-VAPI-SECRET": KEY}
    reply = httpx.post(url, json=voice_request("Hello.", 48000), headers=secret)
    assert reply.status_code == 400 and "8000, 16000, 22050, 24000, 44100" in reply.json()["error"]["message"]
    reply = httpx.post(url, json={"message": {"type": "status-update", "status": "in-progress"}}, headers=secret)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "unsupported_message"
    reply = httpx.post(url, content=b"{not json", headers={**secret, "Content-Type": "application/json"})
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "bad_request"
    reply = httpx.post(url + "?voice=nobody", json=voice_request("Hello.", 24000), headers=secret)
    assert reply.status_code == 404 and reply.json()["error"]["code"] == "unknown_voice"
    reply = httpx.post(url, json=voice_request("Still here.", 8000), headers=secret, timeout=60)
    assert reply.status_code == 200 and len(reply.content) > 8000  # > 0.5 s at 8 kHz
