"""The prompt cache on a real gateway (eSpeak): WebSocket, HTTP and WebRTC clients, API keys, cache: false, voice
uploads, the warm-up list, a restart with --cache-dir, and what refuses a start."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
from websockets.asyncio.client import connect

from cbf_tools.peers.local_server import ROOT
from tests.server import health, running_server

KEYS = ("tenant-one", "tenant-two")
WARM = "Thanks for calling the test line."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    """Keys, warm-up prompts, and a --cache-dir it cannot use (under a file): every test on it shows the cache
    working in memory then, as the warning says (a server start saved: each costs a worker's, seconds of CPU)."""
    folder = tmp_path_factory.mktemp("cache")
    (folder / "prompts.txt").write_text(f"# said at start\n{WARM}\n" + '{"text": "Warm and quick.", "speed": 1.2}\n')
    (folder / "a-file").write_text("")
    with running_server("--api-key", ",".join(KEYS), "--prompts", str(folder / "prompts.txt"),
                        "--cache-dir", str(folder / "a-file" / "cache"),
                        voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield url


def cache_health(url: str) -> dict:
    return health(url).json()["prompt_cache"]


async def speak(url: str, text: str, key: str | None = KEYS[0], **fields) -> tuple[dict, list[dict], bytes]:
    """One ``speak`` over a WebSocket (24 kHz PCM): its ``done``, its chunk events and its audio."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with connect(url.replace("http://", "ws://") + "/v1/stream", additional_headers=headers) as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
        await ws.send(json.dumps({"type": "config", "format": "pcm_s16le", "sample_rate": 24000}))
        await ws.send(json.dumps({"type": "speak", "text": text, **fields}))
        chunks, audio = [], bytearray()
        while True:
            frame = await asyncio.wait_for(ws.recv(), 30)
            if isinstance(frame, bytes):
                audio += frame
                continue
            event = json.loads(frame)
            assert event["type"] != "error", event
            if event["type"] == "chunk":
                chunks.append(event)
            if event["type"] == "done":
                return event, chunks, bytes(audio)


async def test_a_repeated_speak_is_served_from_the_cache_watermarked(server: str, watermarker) -> None:
    before = cache_health(server)
    first, first_chunks, first_audio = await speak(server, "Please hold while we connect you.")
    again, again_chunks, again_audio = await speak(server, "  Please hold   while we connect you. ")
    assert "cached" not in first and again["cached"] is True and again["utterance"] != first["utterance"]
    assert again_audio == first_audio and again["audio_seconds"] == first["audio_seconds"]
    assert [c["text"] for c in again_chunks] == [c["text"] for c in first_chunks]
    assert [w["word"] for c in again_chunks for w in c["words"]] == [w["word"] for c in first_chunks
                                                                   for w in c["words"]]
    assert again["heard_text"].split() == first["heard_text"].split()
    samples = np.frombuffer(again_audio, np.int16).astype(np.float32) / 32768
    assert watermarker.detect(samples, 24000) >= 0.5
    after = cache_health(server)
    assert after["hits"] == before["hits"] + 1 and after["misses"] == before["misses"] + 1
    assert after["entries"] >= 1 and after["bytes"] >= len(first_audio)


async def test_another_key_and_cache_false_miss(server: str) -> None:
    text = "Your call is important to us."
    await speak(server, text)
    other, _, _ = await speak(server, text, key=KEYS[1])  # another tenant: never the first one's entry
    assert "cached" not in other
    refused, _, _ = await speak(server, text, cache=False)
    assert "cached" not in refused
    assert (await speak(server, text))[0]["cached"] is True
    assert (await speak(server, text, key=KEYS[1]))[0]["cached"] is True  # its own entry now
    metrics = httpx.get(server + "/metrics", headers={"Authorization": f"Bearer {KEYS[1]}"}, timeout=10).text
    hits = next(line for line in metrics.splitlines()
                if line.startswith('cbf_prompt_cache_lookups_total{outcome="hit"}'))
    assert float(hits.split()[-1]) >= 2 and 'cbf_prompt_cache_bytes{store="memory"}' in metrics


def test_http_and_openai_bodies_hit_and_take_cache_false(server: str) -> None:
    auth = {"Authorization": f"Bearer {KEYS[0]}"}

    def tts(**body) -> httpx.Response:
        r = httpx.post(server + "/v1/tts", json={"text": "Press one for sales.", **body}, headers=auth, timeout=30)
        assert r.status_code == 200
        return r

    first = tts()
    assert first.headers["x-prompt-cache"] == "miss" and tts().headers["x-prompt-cache"] == "hit"
    assert tts(format="wav").headers["x-prompt-cache"] == "hit"  # the format is the transport's: the same entry
    assert tts(cache=False).headers["x-prompt-cache"] == "miss"
    lines = [json.loads(line) for line in tts(format="ndjson").text.splitlines()]
    assert lines[-1]["type"] == "done" and lines[-1]["cached"] is True
    openai = httpx.post(server + "/v1/audio/speech", json={"input": "Press one for sales.", "response_format": "pcm",
                                                           "cache": False}, headers=auth, timeout=30)
    assert openai.status_code == 200 and openai.headers["x-prompt-cache"] == "miss"
    bad = httpx.post(server + "/v1/tts", json={"text": "x", "cache": "yes"}, headers=auth, timeout=10)
    assert bad.status_code == 400 and "cache" in bad.json()["error"]["message"]


async def test_the_warm_up_prompts_hit_on_their_first_request(server: str) -> None:
    async with asyncio.timeout(60):
        while (warm := cache_health(server)["warm_up"])["done"] < 2:
            await asyncio.sleep(0.1)
    assert warm == {"prompts": 2, "done": 2, "failed": 0}
    for key in KEYS:  # the operator's prompts are every tenant's
        assert (await speak(server, WARM, key=key))[0]["cached"] is True
    assert (await speak(server, "Warm and quick.", speed=1.2))[0]["cached"] is True
    assert "cached" not in (await speak(server, "Warm and quick."))[0]  # another speed: another prompt


async def test_a_voice_uploaded_again_drops_its_entries(server: str) -> None:
    auth = {"Authorization": f"Bearer {KEYS[0]}"}
    clip = httpx.post(server + "/v1/tts", json={"text": "A clip of real speech to clone from, long enough to be a "
                                                "voice, said twice over. " * 2, "format": "wav"},
                      headers=auth, timeout=60).content

    def upload() -> None:
        r = httpx.post(server + "/v1/voices", data={"name": "Kiosk"}, files={"file": ("k.wav", clip)},
                       headers=auth, timeout=60)
        assert r.status_code == 201, r.text

    upload()
    await speak(server, "Welcome to the kiosk.", voice="kiosk")
    assert (await speak(server, "Welcome to the kiosk.", voice="kiosk"))[0]["cached"] is True
    assert (await speak(server, "Welcome back."))[0] is not None  # the default voice's entry, kept below
    assert httpx.delete(server + "/v1/voices/kiosk", headers=auth, timeout=30).status_code == 204
    upload()
    assert "cached" not in (await speak(server, "Welcome to the kiosk.", voice="kiosk"))[0]
    assert (await speak(server, "Welcome back."))[0]["cached"] is True  # another voice's: not dropped


async def test_a_cached_prompt_over_webrtc(server: str) -> None:
    from cbf_tools.bench.gateway import WebRTCClient

    text = "All right, thanks for waiting."
    await speak(server, text)  # the same tenant's entry, said once over the WebSocket
    client = WebRTCClient(server, KEYS[0], "default", "opus", cache=True)
    try:
        await client.connect()
        heard = await client.speak(text)
        done = [e for e in client.listener.events if e["type"] == "done"][-1]
    finally:
        await client.close()
    assert done["cached"] is True and heard.cached is True and heard.ttfa_s is not None and heard.audio_s > 0.5


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory):
    """One eSpeak worker outside the gateways: the restart test's two gateways speak through it (the cache is the
    gateway's), and the hit test kills it (the file's last test to use it). Yields (its group, its address): two
    worker starts saved, seconds of CPU each."""
    from cbf_tools.peers.local_server import Workers

    folder = tmp_path_factory.mktemp("worker")
    workers, listen = Workers(), f"unix:{folder}/worker.sock"
    workers.start(listen, "--voices-dir", str(folder / "voices"))
    try:
        workers.wait_listening(listen)
        yield workers, listen
    finally:
        workers.stop()


async def test_entries_outlive_a_restart_with_a_cache_dir(tmp_path: Path, worker, watermarker) -> None:
    flags = ("--cache-dir", str(tmp_path / "cache"), "--engine-url", worker[1])
    with running_server(*flags) as url:
        first, _, audio = await speak(url, "Our opening hours are nine to five.", key=None)
        async with asyncio.timeout(10):
            while cache_health(url)["directory"]["entries"] < 1:  # written in the background
                await asyncio.sleep(0.05)
    with running_server(*flags) as url:
        assert cache_health(url)["directory"]["entries"] == 1
        again, _, again_audio = await speak(url, "Our opening hours are nine to five.", key=None)
        assert again["cached"] is True and again_audio == audio
        assert watermarker.detect(np.frombuffer(again_audio, np.int16).astype(np.float32) / 32768, 24000) >= 0.5


async def test_an_unusable_cache_dir_is_a_warning_and_the_cache_runs_in_memory(server: str) -> None:
    directory = cache_health(server)["directory"]  # the module server's --cache-dir is under a file
    assert directory["usable"] is False and "cannot use it" in directory["problem"]
    await speak(server, "Memory only.")
    assert (await speak(server, "Memory only."))[0]["cached"] is True


def test_a_bad_prompts_file_refuses_the_start_with_its_line_number(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.txt"
    prompts.write_text('Thanks for calling.\n\n{"text": "Please hold.", "speed": "fast"}\n')
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "serve", "--engine", "espeak", "--port", "0",
                           "--prompts", str(prompts)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"--prompts {prompts}: line 3:" in done.stderr and "speed" in done.stderr


async def test_a_hit_needs_no_engine_worker(worker) -> None:
    """The last test on ``worker``: it kills it."""
    workers, listen = worker
    with running_server("--engine-url", listen, "--failover-wait", "0") as url:
        said, _, audio = await speak(url, "We are open until six.", key=None)
        workers.kill(listen)
        async with asyncio.timeout(20):
            while health(url).json()["status"] == "ok":
                await asyncio.sleep(0.05)
        again, _, again_audio = await speak(url, "We are open until six.", key=None)
        assert again["cached"] is True and again_audio == audio
        with pytest.raises(AssertionError, match="engine_unavailable"):  # anything new needs a worker
            await speak(url, "Something never said before.", key=None)
