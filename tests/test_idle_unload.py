"""Idle unload (engine/residency.py): the worker frees its model after --unload-after seconds with no utterance, or on
POST /v1/admin/unload; the next utterance (or POST /v1/admin/load) loads it again, and its ``done`` says what the
reload cost. Real workers on the CPU: the embedded eSpeak engine, and the Turbo architecture with random weights,
whose resident memory must really fall."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from pathlib import Path

import httpx
import pytest

from cbf_tools.say import speak
from engine.engines.base import GraphCheckFailed
from engine.engines.espeak import EspeakEngine
from engine.protocol import Chunk, Done
from engine.settings import EngineSettings
from engine.voices import VoiceStore
from engine.worker import Synthesizer, Worker, serve_worker
from gateway.engine_link.client import EngineClient, EngineRequestError
from tests.cli_run import run_cli
from tests.server import health, health_when, running_server
from tests.test_worker import worker, worker_process


async def state_becomes(client: EngineClient, state: str, within: float) -> float:
    """Seconds until the worker's latest ``ready`` says ``state``; fails after ``within``."""
    t0 = time.monotonic()
    while client.ready is None or client.ready.state != state:
        assert time.monotonic() - t0 < within, f"the worker did not become {state} (it is {client.ready.state})"
        await asyncio.sleep(0.01)
    return time.monotonic() - t0


async def test_an_idle_espeak_worker_unloads_and_the_next_utterance_reloads_it(tmp_path: Path) -> None:
    with worker_process(tmp_path, "--engine", "espeak", "--unload-after", "0.5") as url:
        async with worker(url) as client:
            assert client.ready is not None and client.ready.state == "loaded"
            pcm, spoken = await speak(client, "Hello there.")
            assert pcm and spoken.done is not None and spoken.done.reload_s is None
            # unloaded about --unload-after after the utterance ended (the deadline is generous: a busy CI host)
            await state_becomes(client, "unloaded", within=10)
            assert client.ready.prompt_cache is None
            pcm, spoken = await speak(client, "And here I am again, loaded once more.")
            assert len(pcm) > 24000  # more than half a second of speech
            assert spoken.done is not None and spoken.done.reload_s is not None and spoken.done.reload_s > 0
            assert client.ready.state == "loaded"
            await state_becomes(client, "unloaded", within=10)  # and again, once idle


@pytest.fixture(scope="module")
def slow_worker(tmp_path_factory: pytest.TempPathFactory):
    """One worker (eSpeak behind a simulated GPU's delay, 0.2 s a chunk and twice real time: an utterance is still
    speaking after its first chunk) for the two tests below, which each leave it loaded and idle: one worker start
    where each had its own (seconds of CPU)."""
    with worker_process(tmp_path_factory.mktemp("slow"), "--engine", "simulated", "--sim-fixed", "0.2",
                        "--sim-rtf", "2") as url:
        yield url


async def test_an_utterance_sent_while_the_model_unloads_waits_and_speaks(slow_worker: str) -> None:
    async with worker(slow_worker) as client:
        assert client.ready.state == "loaded"
        for _ in range(3):  # the race each way: sent as the unload starts
            unloading = asyncio.create_task(client.set_loaded(False))
            while client.ready.state == "loaded":  # (then unloading: it takes ~0.3 s)
                await asyncio.sleep(0.005)
            pcm, spoken = await speak(client, "Nothing is lost.")
            assert await unloading == {"state": "unloaded"}
            assert pcm and spoken.done is not None and spoken.done.reload_s is not None
            assert client.ready.state == "loaded"


async def test_unloading_while_an_utterance_speaks_is_refused_as_busy(slow_worker: str) -> None:
    async with worker(slow_worker) as client:
        assert client.ready.state == "loaded"
        utterance = await client.start("default")
        await utterance.text("A sentence that takes a while to say. And another one after it.")
        await utterance.end()
        events = utterance.events()
        assert isinstance(await anext(events), Chunk)  # speaking now
        with pytest.raises(EngineRequestError) as refused:
            await client.set_loaded(False)
        assert refused.value.code == "busy"
        rest = [event async for event in events]
        assert isinstance(rest[-1], Done) and rest[-1].reload_s is None
        assert await client.set_loaded(False) == {"state": "unloaded"}
        loaded = await client.set_loaded(True)
        assert loaded["state"] == "loaded" and loaded["reload_s"] > 0
        assert await client.set_loaded(True) == {"state": "loaded"}  # loaded already: nothing to do


async def test_a_reload_that_fails_its_self_check_fails_the_utterance_and_the_next_one_loads(
        tmp_path: Path, watermarker) -> None:
    """The reload goes through the engine's ``warmup`` as a cold start does (Turbo's CUDA graphs' self-checks: a
    failure there refuses the load); a failed load leaves the model unloaded, and the next utterance tries again."""
    engine = EspeakEngine()
    failing = threading.Event()
    failing.set()

    class CheckedEspeak(EspeakEngine):
        def warmup(self) -> None:
            if failing.is_set():
                failing.clear()
                raise GraphCheckFailed("replayed steps differ from eager ones")
            super().warmup()

    worker_ = Worker(Synthesizer(engine, watermarker), VoiceStore(tmp_path / "voices", engine), EngineSettings(),
                     load=CheckedEspeak)
    sock = tmp_path / "engine.sock"
    stop = asyncio.Event()
    server = asyncio.create_task(serve_worker(worker_, f"unix:{sock}", stop))
    try:
        while not sock.exists():
            await asyncio.sleep(0.02)
        async with worker(f"unix:{sock}") as client:
            assert await client.set_loaded(False) == {"state": "unloaded"}
            utterance = await client.start("default")
            await utterance.text("Hello.")
            await utterance.end()
            with pytest.raises(EngineRequestError) as failed:
                [event async for event in utterance.events()]
            assert failed.value.code == "load_failed" and "replayed steps differ" in str(failed.value)
            assert client.ready.state == "unloaded"
            pcm, spoken = await speak(client, "Hello again.")
            assert pcm and spoken.done is not None and spoken.done.reload_s is not None
            assert isinstance(worker_.synth.engine, CheckedEspeak)
    finally:
        stop.set()
        await server


def test_admin_unload_and_load_and_health_states(tmp_path: Path) -> None:
    key = {"Authorization": "Bearer operator-key"}
    with running_server("--api-key", "operator-key", "--unload-after", "1", voices_dir=tmp_path) as url:
        body = health(url).json()
        assert body["engine"]["state"] == "loaded" and body["engines"][0]["state"] == "loaded"
        assert httpx.post(url + "/v1/admin/unload", timeout=30).status_code == 401
        answer = httpx.post(url + "/v1/admin/unload", headers=key, timeout=30)
        assert answer.status_code == 200, answer.text
        assert [e["state"] for e in answer.json()["engines"]] == ["unloaded"]
        body = health_when(url, lambda b: b["engine"]["state"] == "unloaded", "health did not say unloaded", 10)
        assert body["status"] == "ok" and body["engines"][0]["state"] == "unloaded"
        answer = httpx.post(url + "/v1/admin/load", headers=key, timeout=60)
        assert answer.status_code == 200, answer.text
        (engine,) = answer.json()["engines"]
        assert engine["state"] == "loaded" and engine["reload_s"] > 0
        # idle again: --unload-after frees it, /health says so, and speech loads it again
        health_when(url, lambda b: b["engine"]["state"] == "unloaded", "it did not unload when idle", 15)
        lines = httpx.post(url + "/v1/tts", headers=key, timeout=60,
                           json={"text": "Loaded again for this.", "format": "ndjson"})
        assert lines.status_code == 200, lines.text[:200]
        assert '"reload_s"' in lines.text
        assert health(url).json()["engine"]["state"] in ("loaded", "unloading", "unloaded")


@pytest.mark.parametrize("command", ["engine", "serve"])
@pytest.mark.parametrize("value", ["0", "-3"])
def test_unload_after_of_zero_or_less_is_one_sentence_and_exit_2(command: str, value: str) -> None:
    for result in (run_cli(command, "--unload-after", value, timeout=60),
                   run_cli(command, env={"CBF_UNLOAD_AFTER": value}, timeout=60)):
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "unload" in lines[0].lower() and "expected seconds > 0" in lines[0], lines


@pytest.mark.slow
@pytest.mark.long  # `bench engine --engine chatterbox-turbo --unload-after S` prints the same fall
async def test_a_random_weights_turbo_worker_gives_its_memory_back_when_unloaded(tmp_path: Path) -> None:
    """The real Turbo loading code (safetensors files, the architecture built, warmed) on the CPU with a random
    checkpoint whose T3 is sized so that the model dominates the process, as the released one (~1.5 GB of weights
    beside ~1 GB of libraries) does: unloaded, the worker's resident memory falls by at least 40 %, and by at least
    as much as its weight files; loaded again by the next utterance, which speaks."""
    psutil = pytest.importorskip("psutil")
    pytest.importorskip("chatterbox.tts_turbo")
    import turbo_checkpoint

    sized = dataclasses.replace(turbo_checkpoint.TINY_ARCH, llama_config={
        **turbo_checkpoint.TINY_GPT2, "n_embd": 1024, "hidden_size": 1024, "n_layer": 8, "n_head": 8})
    original = turbo_checkpoint.TINY_ARCH
    turbo_checkpoint.TINY_ARCH = sized
    try:
        checkpoint = turbo_checkpoint.write_tiny_checkpoint(tmp_path / "sized", stop_bias=4.0)
    finally:
        turbo_checkpoint.TINY_ARCH = original
    weights = sum(f.stat().st_size for f in checkpoint.glob("*.safetensors"))
    mib = 2 ** 20
    with worker_process(tmp_path, "--engine", "chatterbox-turbo", "--model-dir", str(checkpoint), "--device", "cpu",
                        "--unload-after", "2") as url:
        async with worker(url) as client:
            process = psutil.Process(_worker_pid(psutil, url))
            pcm, _ = await speak(client, "Hello there.")
            assert pcm
            loaded = process.memory_info().rss
            await state_becomes(client, "unloaded", within=30)
            unloaded = process.memory_info().rss
            fall = loaded - unloaded
            print(f"turbo (random, {weights / mib:.0f} MiB of weights): RSS {loaded / mib:.0f} MiB loaded, "
                  f"{unloaded / mib:.0f} MiB unloaded ({fall / loaded:.0%} less)")
            assert fall >= 0.4 * loaded, (loaded / mib, unloaded / mib)
            assert fall >= weights, (fall / mib, weights / mib)
            pcm, spoken = await speak(client, "Hello again, after a reload.")
            assert pcm and spoken.done is not None and spoken.done.reload_s is not None
            print(f"turbo reload before first audio: {spoken.done.reload_s:.2f} s, "
                  f"RSS {process.memory_info().rss / mib:.0f} MiB loaded again")


def _worker_pid(psutil, url: str) -> int:
    """The worker process this test started (the child of this one listening on ``url``: the module's slow worker is
    a child too)."""
    children = [p for p in psutil.Process().children() if "engine" in p.cmdline() and url in p.cmdline()]
    assert len(children) == 1, children
    return children[0].pid
