"""No client of one gateway can reach into another's utterances: the engine port needs the gateway's secret, and an
utterance id means something only on the connection that started it. Real workers, real gateways, on 127.0.0.1."""

from __future__ import annotations

import asyncio
from typing import Iterator

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, unix_connect
from websockets.exceptions import InvalidStatus

from engine import protocol
from engine.protocol import Cancel, Chunk, Done, End, EngineReady, ListVoices, Result, Start, Text
from tests.server import running_server
from tests.test_worker import STORY, worker_process

SECRET = "a-shared-secret-for-tests"


@pytest.fixture(scope="module")
def worker_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with worker_process(tmp_path_factory.mktemp("secret"), "--engine", "espeak", "--engine-secret", SECRET) as url:
        yield url


def raw(url: str, secret: str | None) -> "asyncio.Future[ClientConnection]":
    headers = {"Authorization": f"Bearer {secret}"} if secret is not None else {}
    return unix_connect(url[5:], uri="ws://localhost" + protocol.ENGINE_PATH, additional_headers=headers)


async def test_a_connection_without_the_secret_is_refused(worker_url: str) -> None:
    for secret in (None, "wrong", SECRET + "x", ""):
        with pytest.raises(InvalidStatus) as refused:
            await raw(worker_url, secret)
        assert refused.value.response.status_code == 401
    async with raw(worker_url, SECRET) as ws:
        assert isinstance(protocol.decode_event(await ws.recv()), EngineReady)


async def test_an_utterance_id_belongs_to_its_connection(worker_url: str) -> None:
    async with raw(worker_url, SECRET) as first, raw(worker_url, SECRET) as second:
        await first.recv(), await second.recv()
        for message in (Start("u1"), Text("u1", STORY), End("u1")):
            await first.send(protocol.encode(message))
        # The same id on another connection is another utterance (no duplicate_id); its text and cancel stay there.
        for message in (Start("u1"), Text("u1", "Injected words."), Cancel("u1"), ListVoices("r")):
            await second.send(protocol.encode(message))
        answer = protocol.decode_event(await asyncio.wait_for(second.recv(), 10))  # an error would come first
        assert isinstance(answer, Result) and answer.req == "r"
        texts = []
        while not isinstance(event := protocol.decode_event(await asyncio.wait_for(first.recv(), 30)), Done):
            assert isinstance(event, Chunk), event
            texts.append(event.header.text)
        assert event.id == "u1" and "Injected" not in " ".join(texts) and "light held steady" in texts[-1]


def test_a_gateway_presents_the_secret_from_its_environment(worker_url: str) -> None:
    with running_server("--engine-url", worker_url, env={"CBF_ENGINE_SECRET": SECRET}) as url:
        reply = httpx.post(url + "/v1/tts", json={"text": "Through an authenticated link."}, timeout=30)
        assert reply.status_code == 200 and len(reply.content) > 24000


async def test_the_embedded_worker_needs_the_secret_its_gateway_generated(plain_server: str) -> None:
    engine_url = httpx.get(plain_server + "/health").json()["engines"][0]["url"]
    with pytest.raises(InvalidStatus):
        await raw(engine_url, None)
    reply = httpx.post(plain_server + "/v1/tts", json={"text": "Only my gateway gets in."}, timeout=30)
    assert reply.status_code == 200 and len(reply.content) > 24000


def test_help_never_shows_the_secrets() -> None:
    from tests.cli_run import run_cli

    env = {"CBF_ENGINE_SECRET": SECRET, "CBF_API_KEYS": "key-from-env"}
    for command in (("serve", "--help"), ("engine", "--help")):
        shown = run_cli(*command, env=env, timeout=60).stdout
        assert "--engine-secret" in shown and SECRET not in shown and "key-from-env" not in shown
        assert "CBF_ENGINE_SECRET; default set" in " ".join(shown.split())
