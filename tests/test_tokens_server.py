"""Tokens and the origin list on a real gateway (eSpeak) with a keys file, an --api-key, a known --token-secret and
--cors-origins: httpx and websockets clients mint, use and are refused in each protocol's shape; `serve --processes 2`
shares the generated secret and single use."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from cbf_tools.peers.local_server import free_port, local_server, stop, wait_healthy
from gateway.guard.keys_file import key_digest
from gateway.guard.tokens import TokenRequest, TokenSigner

ROOT = Path(__file__).resolve().parent.parent
SECRET = "token-secret-for-the-tests-0123"
KEYS = {"acme": "acme-secret-key-0123456789", "solo": "solo-secret-key-0123456789"}
OPERATOR = "operator-plain-key-0123"
ALLOWED = "https://app.example"


class Server:
    def __init__(self, url: str, log: Path) -> None:
        self.url, self.log, self.ws = url, log, url.replace("http://", "ws://")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("tokens")
    keys_file, log = folder / "keys.toml", folder / "server.log"
    keys_file.write_text(f'[keys.acme]\nkey = "{KEYS["acme"]}"\n\n[keys.solo]\nkey = "{KEYS["solo"]}"\n'
                         "max_sessions = 1\n")
    port = free_port()
    argv = [sys.executable, "-m", "gateway.cli", "serve", "--host", "127.0.0.1", "--port", str(port), "--engine",
            "espeak", "--keys-file", str(keys_file), "--voices-dir", str(folder / "voices"),
            "--cors-origins", f"{ALLOWED},http://localhost:3000"]
    env = {**os.environ, "CBF_API_KEYS": OPERATOR, "CBF_TOKEN_SECRET": SECRET}
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(proc, url, 90, "the server")
            yield Server(url, log)
        finally:
            stop(proc)


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


def mint(server: Server, key: str = KEYS["acme"], **wanted) -> str:
    answer = httpx.post(server.url + "/v1/tokens", json=wanted, headers=bearer(key))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == {"token", "expires_at"} and body["expires_at"] >= time.time() + wanted.get("ttl_s", 600) - 5
    assert answer.headers["cache-control"] == "no-store"
    return body["token"]


def error_code(answer: httpx.Response) -> tuple[int, str]:
    return answer.status_code, answer.json()["error"]["code"]


async def refused_socket(url: str, **kwargs) -> tuple[int, dict]:
    """The close code of a socket the server refuses once open, and the error event it sent first."""
    async with connect(url, **kwargs) as ws:
        event = json.loads(await asyncio.wait_for(ws.recv(), 10))
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 10)
        return ws.close_code, event


async def test_a_token_is_taken_as_a_key_is_in_each_place_and_counts_for_its_tenant(server: Server) -> None:
    token = mint(server, ttl_s=120)
    async with httpx.AsyncClient(timeout=60) as http:
        spoken = await http.post(server.url + "/v1/tts", json={"text": "Token speech."}, headers=bearer(token))
        assert spoken.status_code == 200 and len(spoken.content) > 1000
        for kwargs in ({"subprotocols": ["cbf.v1", f"cbf.key.{token}"]}, {"additional_headers": bearer(token)}):
            async with connect(server.ws + "/v1/stream", **kwargs) as ws:
                assert json.loads(await ws.recv())["type"] == "ready"
        async with connect(server.ws + f"/v1/stream?token={token}") as ws:
            assert json.loads(await ws.recv())["type"] == "ready"
        usage = (await http.get(server.url + "/v1/usage", headers=bearer(OPERATOR))).json()
        assert usage["tenants"]["acme"]["characters"] >= len("Token speech.")
    log = server.log.read_text()
    assert "token=[redacted]" in log and token not in log and token.split(".")[1] not in log


async def test_a_token_counts_against_its_tenants_session_limit(server: Server) -> None:
    token = mint(server, key=KEYS["solo"])
    async with connect(server.ws + "/v1/stream", subprotocols=["cbf.v1", f"cbf.key.{token}"]) as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
        code, event = await refused_socket(server.ws + "/v1/stream", additional_headers=bearer(KEYS["solo"]))
        assert event["code"] == "tenant_session_limit"


async def test_refusals_in_each_protocols_shape(server: Server) -> None:
    token = mint(server)
    tampered = token[:-3] + ("AAA" if token[-3:] != "AAA" else "BBB")
    signer = TokenSigner(SECRET)
    mark = signer.key_mark(key_digest(KEYS["acme"]))
    expired = signer.mint(TokenRequest(), "acme", mark, time.time() - 700)[0]
    foreign = TokenSigner("another-secret-0123456").mint(TokenRequest(), "acme", mark, time.time())[0]
    async with httpx.AsyncClient(timeout=30) as http:
        for credential, code in ((tampered, "unauthorized"), (expired, "token_expired"), (foreign, "unauthorized"),
                                 (token[:40], "unauthorized")):
            answer = await http.post(server.url + "/v1/tts", json={"text": "x"}, headers=bearer(credential))
            assert error_code(answer) == (401, code) and answer.headers["www-authenticate"] == "Bearer"
            close, event = await refused_socket(server.ws + "/v1/stream",
                                                subprotocols=["cbf.v1", f"cbf.key.{credential}"])
            assert (close, event["type"], event["code"]) == (4401, "error", code)
        # what no token reaches, whatever it names
        for method, path in (("POST", "/v1/tokens"), ("GET", "/v1/usage"), ("POST", "/v1/admin/drain"),
                             ("DELETE", "/v1/voices/default"), ("PUT", "/v1/lexicons/x"), ("GET", "/metrics"),
                             ("GET", "/v1/voices")):
            answer = await http.request(method, server.url + path, headers=bearer(token), json={})
            assert error_code(answer) == (403, "token_scope"), (method, path)
        # a narrower token: /v1/tts in voice default only
        narrow = mint(server, routes=["tts", "voices"], voices=["default"])
        speech = await http.post(server.url + "/v1/tts", headers=bearer(KEYS["acme"]), json={
            "text": "A voice of our own, long enough to be stored as one, spoken twice. " * 2, "format": "wav"})
        stored = await http.post(server.url + "/v1/voices", data={"name": "other"}, headers=bearer(KEYS["acme"]),
                                 files={"file": ("o.wav", speech.content)})
        assert stored.status_code in (201, 409), stored.text
        listed = await http.get(server.url + "/v1/voices", headers=bearer(narrow))
        assert listed.status_code == 200 and [v["name"] for v in listed.json()["voices"]] == ["default"]
        everyone = await http.get(server.url + "/v1/voices", headers=bearer(KEYS["acme"]))
        assert {v["name"] for v in everyone.json()["voices"]} > {"default"}  # the key's list: the stored voice too
        answer = await http.post(server.url + "/v1/tts", json={"text": "x", "voice": "other"}, headers=bearer(narrow))
        assert error_code(answer) == (403, "token_scope")
        close, event = await refused_socket(server.ws + "/v1/stream", subprotocols=["cbf.v1", f"cbf.key.{narrow}"])
        assert (close, event["code"]) == (4403, "token_scope")
        # bad requests for a token
        answer = await http.post(server.url + "/v1/tokens", json={"ttl_s": 5}, headers=bearer(KEYS["acme"]))
        assert error_code(answer) == (400, "bad_request") and "ttl_s" in answer.text
        answer = await http.post(server.url + "/v1/tokens", json={"routes": ["admin"]}, headers=bearer(KEYS["acme"]))
        assert error_code(answer) == (400, "bad_request")
        assert error_code(await http.post(server.url + "/v1/tokens", json={})) == (401, "unauthorized")


async def test_single_use_and_sessions(server: Server) -> None:
    once = mint(server, uses=1)
    async with httpx.AsyncClient(timeout=60) as http:
        assert (await http.post(server.url + "/v1/tts", json={"text": "Once."}, headers=bearer(once))).status_code == 200
        answer = await http.post(server.url + "/v1/tts", json={"text": "Twice."}, headers=bearer(once))
        assert error_code(answer) == (401, "token_used")
    ws_once = mint(server, uses=1)
    async with connect(server.ws + "/v1/stream", subprotocols=["cbf.v1", f"cbf.key.{ws_once}"]) as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
    close, event = await refused_socket(server.ws + "/v1/stream", subprotocols=["cbf.v1", f"cbf.key.{ws_once}"])
    assert (close, event["code"]) == (4401, "token_used")
    one_session = mint(server, sessions=1)
    protocols = ["cbf.v1", f"cbf.key.{one_session}"]
    async with connect(server.ws + "/v1/stream", subprotocols=protocols) as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
        close, event = await refused_socket(server.ws + "/v1/stream", subprotocols=protocols)
        assert (close, event["code"]) == (4429, "token_session_limit")
    deadline = time.monotonic() + 5
    while True:  # the first one's session is let go once its socket is gone
        async with connect(server.ws + "/v1/stream", subprotocols=protocols) as ws:
            if json.loads(await ws.recv())["type"] == "ready":
                break
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)


async def test_origins_exactly_and_websockets_from_others_refused(server: Server) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
        answer = await http.options(server.url + "/v1/tokens", headers={"Origin": ALLOWED, **preflight})
        assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == ALLOWED
        assert "authorization" in answer.headers["access-control-allow-headers"].lower()
        for other in ("https://evil.example", "null", "https://app.example.evil.example"):
            answer = await http.options(server.url + "/v1/tokens", headers={"Origin": other, **preflight})
            assert "access-control-allow-origin" not in answer.headers
            answer = await http.get(server.url + "/health", headers={"Origin": other})
            assert "access-control-allow-origin" not in answer.headers
        answer = await http.get(server.url + "/health", headers={"Origin": "http://localhost:3000"})
        assert answer.headers["access-control-allow-origin"] == "http://localhost:3000"
    token = mint(server)
    protocols = ["cbf.v1", f"cbf.key.{token}"]
    for origin in ("https://evil.example", "null"):
        with pytest.raises(InvalidStatus) as refused:
            await connect(server.ws + "/v1/stream", subprotocols=protocols, origin=origin)
        assert refused.value.response.status_code == 403
        assert json.loads(refused.value.response.body)["error"]["code"] == "origin_forbidden"
    for origin in (ALLOWED, None):  # a listed page, and a server or phone stack with no Origin at all
        async with connect(server.ws + "/v1/stream", subprotocols=protocols, origin=origin) as ws:
            assert json.loads(await ws.recv())["type"] == "ready"


def test_no_origin_list_keeps_every_origin(plain_server: str) -> None:
    answer = httpx.options(plain_server + "/v1/tts", headers={"Origin": "https://anywhere.example",
                                                              "Access-Control-Request-Method": "POST"})
    assert answer.headers["access-control-allow-origin"] == "*"


def test_two_processes_share_the_secret_and_single_use() -> None:
    with local_server(["--processes", "2", "--engine", "espeak", "--api-key", OPERATOR],
                      env={k: v for k, v in os.environ.items() if k != "CBF_TOKEN_SECRET"}) as (url, _):
        deadline = time.monotonic() + 60
        while len((body := httpx.get(url + "/health").json()).get("processes", [])) < 2:
            assert time.monotonic() < deadline, body
            time.sleep(0.2)
        minted = httpx.post(url + "/v1/tokens", json={"routes": ["voices"]}, headers=bearer(OPERATOR)).json()
        pids = set()
        for _ in range(20):  # fresh connections: SO_REUSEPORT spreads them over both processes
            with httpx.Client() as http:
                assert http.get(url + "/v1/voices", headers=bearer(minted["token"])).status_code == 200
                pids.add(http.get(url + "/health").json()["pid"])
        assert len(pids) == 2
        once = httpx.post(url + "/v1/tokens", json={"routes": ["voices"], "uses": 1},
                          headers=bearer(OPERATOR)).json()["token"]
        answers = []
        for _ in range(12):
            with httpx.Client() as http:
                answer = http.get(url + "/v1/voices", headers=bearer(once))
                answers.append(answer.status_code if answer.status_code == 200 else error_code(answer))
        assert answers.count(200) == 1 and answers.count((401, "token_used")) == 11, answers


async def test_the_elevenlabs_socket_takes_a_token_and_refuses_a_used_one_in_its_shape(server: Server) -> None:
    once = mint(server, uses=1, routes=["elevenlabs"])
    url = server.ws + "/v1/text-to-speech/default/stream-input?output_format=pcm_24000&token="
    async with connect(url + once) as ws:
        await ws.send(json.dumps({"text": "Hello there. ", "flush": True}))
        assert "audio" in json.loads(await asyncio.wait_for(ws.recv(), 30))
    async with connect(url + once) as ws:
        assert "token_used" in await asyncio.wait_for(ws.recv(), 10)
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 10)
        assert ws.close_code == 4401
