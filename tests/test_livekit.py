"""LiveKit Agents' own TTS plugins (livekit-plugins-elevenlabs and livekit-plugins-openai) pointed at a real gateway
on 127.0.0.1 (eSpeak), standalone: no LiveKit server, an aiohttp session of the test's own. Every reply is checked
for speech and the PerTh watermark. The ElevenLabs plugin re-arms a 10 s timer (APIConnectOptions.timeout) after
each audio message and retries on its expiry: a reply that passes here had first audio and isFinal within it."""

from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator

import aiohttp
import httpx
import numpy as np
import pytest

from tests.server import KEYED_KEY

REPLY = ["Sure, ", "I can help with that. ", "Your table for two ", "is booked for eight o'clock tonight, ",
         "and I have sent the details to your phone."]


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def speech_of(frames: list) -> tuple[np.ndarray, int]:
    """The plugin's audio frames as float32 mono and their rate."""
    assert frames, "no audio"
    rate = frames[0].sample_rate
    assert all(f.sample_rate == rate and f.num_channels == 1 for f in frames)
    pcm = np.concatenate([np.frombuffer(f.data, dtype=np.int16) for f in frames])
    return pcm.astype(np.float32) / 32768, rate


def assert_watermarked_speech(frames: list, watermarker, seconds: float) -> None:
    audio, rate = speech_of(frames)
    assert audio.size / rate > seconds and np.sqrt(np.mean(audio ** 2)) > 0.02  # speech, not silence
    assert watermarker.detect(audio, rate) >= 0.5


def elevenlabs_tts(url: str, http: aiohttp.ClientSession):
    from livekit.plugins import elevenlabs

    return elevenlabs.TTS(base_url=url + "/v1", api_key=KEYED_KEY, voice_id="default", model="eleven_flash_v2_5",
                          encoding="pcm_24000", http_session=http)


async def streamed_reply(tts, pieces: list[str]) -> list:
    """An agent's reply: text pushed in pieces as an LLM makes it, then end_input; every frame heard."""
    stream = tts.stream()
    async with stream:
        for piece in pieces:
            stream.push_text(piece)
            await asyncio.sleep(0.02)
        stream.end_input()
        async with asyncio.timeout(60):  # a bound on a hang, not a speed
            return [event.frame async for event in stream]


async def test_the_elevenlabs_plugin_streams_two_replies_on_one_instance(
        keyed_gateway: tuple[str, int], http: aiohttp.ClientSession, watermarker) -> None:
    tts = elevenlabs_tts(keyed_gateway[0], http)
    try:
        assert_watermarked_speech(await streamed_reply(tts, REPLY), watermarker, 3.0)
        assert_watermarked_speech(await streamed_reply(tts, ["Anything else? ", "I'm here to help."]), watermarker,
                                  1.0)
    finally:
        await tts.aclose()


async def engine_work(url: str) -> int:
    async with httpx.AsyncClient() as client:
        health = (await client.get(url + "/health")).json()
    return sum(engine["in_flight"] for engine in health["engines"]) + health["sessions"]


async def until_no_engine_work(url: str, within: float) -> None:
    deadline = time.monotonic() + within  # a bound on a leak, not a speed
    while await engine_work(url):
        assert time.monotonic() < deadline, "the engine went on with an interrupted reply"
        await asyncio.sleep(0.05)


async def test_an_interrupted_elevenlabs_reply_and_the_next_one_on_the_same_instance(
        keyed_gateway: tuple[str, int], http: aiohttp.ClientSession, watermarker) -> None:
    """The agent closes the stream mid-reply (the user spoke) and speaks again. This plugin tells the server nothing
    when it drops a reply whose text it has already ended (`{"text": "", "flush": true}`, then close_context): the
    gateway speaks that context to its end, as ElevenLabs does, and the plugin drops its audio. So the engine's work
    for it ends with its text, not at once (the OpenAI plugin's interruption, below, stops it at once)."""
    url = keyed_gateway[0]
    tts = elevenlabs_tts(url, http)
    try:
        stream = tts.stream()
        stream.push_text("This is a long answer that the caller will interrupt. " * 8)
        stream.end_input()
        async with asyncio.timeout(30):
            await anext(aiter(stream))  # its first audio
        await stream.aclose()
        assert_watermarked_speech(await streamed_reply(tts, ["Sorry, go ahead."]), watermarker, 0.5)
        await until_no_engine_work(url, 60)
    finally:
        await tts.aclose()


async def test_an_interrupted_openai_plugin_reply_stops_in_the_engine_at_once(keyed_gateway: tuple[str, int]) -> None:
    from livekit.plugins import openai

    url = keyed_gateway[0]
    tts = openai.TTS(base_url=url + "/v1", api_key=KEYED_KEY, response_format="pcm")
    try:
        stream = tts.synthesize("This is a long answer that the caller will interrupt. " * 30)
        async with asyncio.timeout(30):
            await anext(aiter(stream))  # its first audio
        await stream.aclose()
        await until_no_engine_work(url, 10)
    finally:
        await tts.aclose()


@pytest.mark.parametrize("model", ["gpt-4o-mini-tts", "tts-1"])
async def test_the_openai_plugin_with_its_defaults_and_with_tts_1(
        keyed_gateway: tuple[str, int], watermarker, model: str) -> None:
    """Its defaults: gpt-4o-mini-tts (so SSE), voice "ash", mp3; tts-1: the plain streamed body."""
    from livekit.plugins import openai

    tts = openai.TTS(base_url=keyed_gateway[0] + "/v1", api_key=KEYED_KEY, model=model)
    try:
        async with asyncio.timeout(60):
            frames = [event.frame async for event in tts.synthesize("".join(REPLY))]
    finally:
        await tts.aclose()
    assert_watermarked_speech(frames, watermarker, 3.0)
    assert frames[0].sample_rate == 24000
