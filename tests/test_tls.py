"""``serve --tls-cert FILE --tls-key FILE``: https and wss on the one port, WebRTC signalling with them, under
``--processes 2`` (each process gets the certificate through its environment). Real clients that check the
certificate against a test CA (cbf_tools/peers/certificates.py, which ``bench gateway --tls`` uses too): httpx,
websockets with an ``ssl`` context, an aiortc listener whose offer goes over https. A missing file, a file that is not
PEM or a key that is not the certificate's: one sentence, exit 2, before anything starts."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from websockets.asyncio.client import connect

from cbf_tools.peers.certificates import make_certificates, trusting as trusting_ca
from cbf_tools.peers.local_server import local_server
from cbf_tools.peers.rtc_listener import Listener
from tests.cli_run import run_cli


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def trusting(certificates: dict[str, Path]) -> ssl.SSLContext:
    """A client context that trusts the test CA only (and checks the host name)."""
    return trusting_ca(certificates["ca"])


@pytest.fixture(scope="module")
def tls_server(certificates: dict[str, Path], trusting: ssl.SSLContext) -> Iterator[str]:
    flags = ["--engine", "espeak", "--processes", "2", "--tls-cert", str(certificates["cert"]),
             "--tls-key", str(certificates["key"])]
    with local_server(flags, verify=trusting, ready_timeout=120) as (url, _):
        yield url


async def test_https_speaks_and_plain_http_is_not_served(tls_server: str, trusting: ssl.SSLContext) -> None:
    assert tls_server.startswith("https://")
    async with httpx.AsyncClient(verify=trusting, timeout=60) as http:
        assert (await http.get(tls_server + "/health")).json()["status"] == "ok"
        spoken = await http.post(tls_server + "/v1/tts", json={"text": "Spoken over TLS.", "format": "wav"})
        assert spoken.status_code == 200 and spoken.content[:4] == b"RIFF" and len(spoken.content) > 8000
    async with httpx.AsyncClient(timeout=5) as plain:  # the port speaks TLS only
        with pytest.raises(httpx.HTTPError):
            await plain.get(tls_server.replace("https://", "http://") + "/health")
    async with httpx.AsyncClient(timeout=5) as untrusting:  # and the certificate is checked: the system CAs refuse it
        with pytest.raises(httpx.ConnectError):
            await untrusting.get(tls_server + "/health")


async def test_wss_speaks(tls_server: str, trusting: ssl.SSLContext) -> None:
    async with connect(tls_server.replace("https://", "wss://") + "/v1/stream", ssl=trusting) as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
        await ws.send(json.dumps({"type": "speak", "text": "Hello over a secure socket."}))
        audio, done = b"", None
        while done is None:
            frame = await asyncio.wait_for(ws.recv(), 30)
            if isinstance(frame, bytes):
                audio += frame
            elif json.loads(frame)["type"] == "done":
                done = json.loads(frame)
    assert done["audio_seconds"] > 0.5 and len(audio) > 16000


async def test_webrtc_signalling_over_https(tls_server: str, trusting: ssl.SSLContext) -> None:
    listener = Listener.create()
    try:
        async with httpx.AsyncClient(verify=trusting, timeout=30) as http:
            reply = await http.post(tls_server + "/v1/webrtc/offer",
                                    json={"sdp": await listener.offer(), "type": "offer"})
        assert reply.status_code == 200, reply.text
        await listener.accept(reply.json()["sdp"])
        await listener.wait_for(lambda: listener.channel.readyState == "open" and listener.events, timeout=20)
        assert listener.events[0]["type"] == "ready"
        listener.channel.send('{"type": "speak", "text": "And over WebRTC, signalled over https."}')
        await listener.wait_for(lambda: any(e["type"] == "done" for e in listener.events), timeout=30)
        assert listener.loud()
    finally:
        await listener.close()


def _refused(*flags: str) -> str:
    result = run_cli("serve", "--engine", "espeak", "--port", "0", *flags, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_bad_certificate_or_key_is_one_sentence_and_exit_2(certificates: dict[str, Path], tmp_path: Path) -> None:
    cert, key = str(certificates["cert"]), str(certificates["key"])
    line = _refused("--tls-cert", cert, "--tls-key", str(certificates["other_key"]))
    assert line == (f"chatterbox-fast serve: --tls-key (CBF_TLS_KEY) {certificates['other_key']} is not the private "
                    f"key of the certificate in {cert}")
    missing = str(tmp_path / "missing.pem")
    assert _refused("--tls-cert", missing, "--tls-key", key) == (
        f"chatterbox-fast serve: --tls-cert (CBF_TLS_CERT) {missing} cannot be read (No such file or directory)")
    assert "holds no PEM certificate" in _refused("--tls-cert", key, "--tls-key", key)
    assert "holds no PEM private key" in _refused("--tls-cert", cert, "--tls-key", cert)
    assert "--tls-key (CBF_TLS_KEY) is not" in _refused("--tls-cert", cert)
    # the variables, and under --processes: refused by the command itself, before any process starts
    result = run_cli("serve", "--engine", "espeak", "--port", "0", "--processes", "2", timeout=60,
                     env={"CBF_TLS_CERT": cert, "CBF_TLS_KEY": str(certificates["other_key"])})
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "is not the private key" in result.stderr
