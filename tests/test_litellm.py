"""LiteLLM's ``speech()`` and ``aspeech()`` (the real litellm, its OpenAI provider) through the gateway's OpenAI route
with only ``api_base`` set, against a real gateway on 127.0.0.1 (eSpeak; the one the third-party client tests share):
watermarked speech and a wrong key refused (docs/protocols/deepgram.md's example: tests/test_docs_examples.py)."""

from __future__ import annotations

import io
from typing import Any, Iterator

import av
import numpy as np
import pytest

from tests.server import KEYED_KEY

KEY = KEYED_KEY


@pytest.fixture(scope="module")
def server(keyed_gateway: tuple[str, int]) -> str:
    """The gateway the third-party client tests share (tests/conftest.py)."""
    return keyed_gateway[0]


@pytest.fixture(scope="module")
def litellm() -> Any:
    """litellm, offline: its model price map from its own copy (else it fetches one from GitHub at import)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        yield litellm


def decoded(data: bytes) -> tuple[np.ndarray, int]:
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        rate = stream.codec_context.sample_rate
        samples = np.concatenate([f.to_ndarray().reshape(-1) for f in container.decode(stream)]).astype(np.float32)
    return (samples / 32768.0 if np.abs(samples).max() > 1.5 else samples), rate


def assert_speech(data: bytes, watermarker) -> None:
    wav, rate = decoded(data)
    assert wav.size / rate > 1.0 and np.sqrt(np.mean(wav ** 2)) > 0.02
    assert watermarker.detect(wav, rate) >= 0.5


async def test_speech_and_aspeech_speak_through_the_openai_route(server: str, litellm: Any, watermarker) -> None:
    text = "Good morning. I can help you book a table for tonight."
    reply = litellm.speech(model="openai/chatterbox-turbo", voice="default", input=text, api_base=server + "/v1",
                           api_key=KEY, response_format="wav")
    assert_speech(reply.content, watermarker)
    reply = await litellm.aspeech(model="openai/chatterbox-turbo", voice="alloy", input=text,
                                  api_base=server + "/v1", api_key=KEY)  # mp3; an OpenAI voice: the default one
    assert reply.content[:3] == b"ID3" or reply.content[:2] == b"\xff\xfb"
    assert_speech(reply.content, watermarker)


def test_a_wrong_key_is_refused_as_an_authentication_error(server: str, litellm: Any) -> None:
    import openai

    # (litellm's speech() lets its OpenAI client's own error through, unmapped)
    with pytest.raises((litellm.AuthenticationError, openai.AuthenticationError)):
        litellm.speech(model="openai/chatterbox-turbo", voice="default", input="Hello.", api_base=server + "/v1",
                       api_key="wrong", max_retries=0)
