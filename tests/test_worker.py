"""The engine worker process end to end (embedded eSpeak engine, or eSpeak behind a simulated GPU delay), through the
real engine protocol client the gateway uses."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from websockets.asyncio.client import unix_connect

from engine import protocol
from engine.protocol import Chunk, Done, EngineReady, Error, Reading
from gateway.engine_link.client import EngineClient, EngineRequestError
from cbf_tools.say import speak, worker_client
from cbf_tools.peers.polling import until

ROOT = Path(__file__).resolve().parent.parent
STORY = ("Once upon a time there was a small lighthouse on a rocky shore. Every night its keeper climbed the stairs, "
         "lit the lamp, and watched the ships pass safely by. One winter the storms came early, and the keeper "
         "worried that the old lamp would fail. So she spent the autumn repairing every gear, polishing every lens, "
         "and stocking oil for the long dark months ahead. When the first storm arrived, the light held steady.")


@contextlib.contextmanager
def worker_process(tmp_path: Path, *flags: str) -> Iterator[str]:
    """``chatterbox-fast engine`` on a Unix socket; yields its URL once it accepts connections."""
    sock = tmp_path / "engine.sock"
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "engine", "--listen", f"unix:{sock}",
                             "--voices-dir", str(tmp_path), "--log-level", "warning", *flags], cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while not sock.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.02)
        yield f"unix:{sock}"
    finally:
        proc.terminate()
        proc.wait(15)


@pytest.fixture(scope="module")
def espeak_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with worker_process(tmp_path_factory.mktemp("espeak"), "--engine", "espeak") as url:
        yield url


@pytest.fixture(scope="module")
def simulated_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """eSpeak behind a simulated GPU delay: 0.1 s per chunk plus generation at 4.2 times real time (Chatterbox-Turbo
    as measured on an A6000; tests/test_planner_simulation.py runs the planner at slower rates too)."""
    with worker_process(tmp_path_factory.mktemp("sim"), "--engine", "simulated", "--sim-fixed", "0.1",
                        "--sim-rtf", "4.2") as url:
        yield url


def worker(url: str) -> contextlib.AbstractAsyncContextManager[EngineClient]:
    return worker_client([], url, timeout=60)


def pcm_to_float(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768


async def test_chunks_are_watermarked_and_reported(espeak_url: str, espeak_engine, watermarker) -> None:
    async with worker(espeak_url) as client:
        assert client.ready and client.ready.engine == "espeak" and client.ready.watermark is True
        pcm, spoken = await speak(client, STORY)
    assert len(spoken.chunk_texts) >= 2
    assert " ".join(spoken.chunk_texts).split()[-1].startswith("steady")
    audio = pcm_to_float(pcm)
    assert watermarker.detect(audio, 24000) >= 0.5
    # The same speech without the watermark step reads clean: eSpeak straight from the engine, never silence.
    clean = espeak_engine.synthesize(STORY, espeak_engine.default_voice(), threading.Event())
    assert watermarker.detect(clean, 24000) < 0.5


async def test_planner_chunks_grow_behind_a_slow_engine(simulated_url: str) -> None:
    """With a simulated GPU model (fixed cost + real-time factor 4.2), the ratchet makes later chunks longer."""
    async with worker(simulated_url) as client:
        ready = client.ready
        assert ready and ("simulated" in ready.weights or "simulated" in ready.engine + ready.notes)
        _, spoken = await speak(client, STORY)
    sizes = [len(t) for t in spoken.chunk_texts]
    assert len(sizes) >= 3 and sizes[0] < 60
    assert max(sizes[1:]) > 2 * sizes[0]
    assert all(size <= 300 for size in sizes)


async def test_cancel_mid_utterance_and_go_on(simulated_url: str) -> None:
    async with worker(simulated_url) as client:
        utterance = await client.start("default")
        await utterance.text(STORY)
        await utterance.end()
        events = utterance.events()
        assert isinstance(await anext(events), Chunk)
        await utterance.cancel()
        _, spoken = await speak(client, "Still alive.")
        assert spoken.audio_s > 0.3


LEAD_S = 0.5
# the lead limit (engine/planner.py): the longest chunk's generation time (at most the lead), the safety margin, the lead
MOST_AHEAD_S = LEAD_S + 0.3 + LEAD_S


async def test_a_listener_that_takes_nothing_gets_the_lead_and_a_piece_then_the_rest_as_it_takes_it(
        espeak_url: str) -> None:
    """Start.lead with playout reports from the start: a long first chunk (a first-audio budget the whole sentence
    fits) reaches past the lead, so it comes in pieces (engine/slices.py), none starting further than the lead limit
    past what the listener took (nothing); once it takes everything, the rest comes, in order, the audio whole."""
    async with worker(espeak_url) as client:
        client.lead = LEAD_S
        utterance = await client.start("default", Reading(latency=5))
        await utterance.playout(0.0)
        await utterance.text(STORY)
        await utterance.end()
        received: list[Chunk | Done] = []

        async def receiving() -> None:
            async for event in utterance.events():
                received.append(event)

        reader = asyncio.create_task(receiving())
        count = -1
        for _ in range(40):  # until something came and nothing more has for 3 s (a bound on a hang)
            if received and len(received) == count:
                break
            count = len(received)
            await asyncio.sleep(3)
        held = list(received)
        assert all(isinstance(c, Chunk) and c.header.offset <= MOST_AHEAD_S for c in held), held
        assert sum(c.header.duration for c in held) < MOST_AHEAD_S + 2.5  # and one piece

        async def taking_everything() -> None:
            while True:
                await utterance.playout(1e5)  # (held to what was generated)
                await asyncio.sleep(0.1)

        taker = asyncio.create_task(taking_everything())
        try:
            await asyncio.wait_for(reader, 120)  # a bound on a hang, not a speed
        finally:
            taker.cancel()
    chunks, done = received[:-1], received[-1]
    assert isinstance(done, Done) and [c.header.seq for c in chunks] == list(range(done.chunks))
    for before, after in zip(chunks, chunks[1:]):  # one utterance: each piece where the one before it ends
        assert after.header.offset == pytest.approx(before.header.offset + before.header.duration, abs=2e-4)
    assert sum(len(c.pcm) for c in chunks) / 2 / 24000 == pytest.approx(done.audio, abs=1e-3)
    assert any(c.header.gen_time == 0 for c in chunks)  # a chunk sent in pieces
    assert " ".join(c.header.text for c in chunks).split()[-1].startswith("steady")


@pytest.mark.parametrize(
    ("voice", "text", "code"),
    [("default", "", "empty_text"), ("default", "   ", "empty_text"), ("nobody", "Hello there.", "unknown_voice")],
)
async def test_bad_utterances_are_clear_errors(espeak_url: str, voice: str, text: str, code: str) -> None:
    async with worker(espeak_url) as client:
        utterance = await client.start(voice)
        if text:
            await utterance.text(text)
        await utterance.end()
        with pytest.raises(EngineRequestError) as info:
            async for _ in utterance.events():
                pass
        assert info.value.code == code
        assert (await speak(client, "Still alive."))[1].audio_s > 0.3


async def test_text_past_the_workers_limit_is_refused_and_none_of_it_is_spoken(espeak_url: str) -> None:
    """The worker's backstop (20,000 characters an utterance, behind the gateway's own limit): the text frame that
    crosses it ends the utterance at once with that error (none of it spoken), and the connection goes on."""
    async with unix_connect(espeak_url[5:], uri="ws://localhost" + protocol.ENGINE_PATH) as raw:
        assert json.loads(await raw.recv())["type"] == "ready"
        await raw.send(json.dumps({"type": "start", "id": "u1"}))
        await raw.send(json.dumps({"type": "text", "id": "u1", "text": "x " * 10001}))  # 20,002 characters
        refusal = await asyncio.wait_for(raw.recv(), 30)
        assert isinstance(refusal, str), "the text was taken: a chunk of it came back"
        refused = json.loads(refusal)
        assert refused["id"] == "u1" and refused["code"] == "text_too_long" and "20000" in refused["message"]
        await raw.send(json.dumps({"type": "end", "id": "u1"}))
        ended = await asyncio.wait_for(raw.recv(), 30)
        assert isinstance(ended, str), "the text was taken: a chunk of it came back"
        assert json.loads(ended)["code"] == "unknown_utterance"  # it is over
        await raw.send(json.dumps({"type": "start", "id": "u2"}))
        await raw.send(json.dumps({"type": "text", "id": "u2", "text": "Still here."}))
        await raw.send(json.dumps({"type": "end", "id": "u2"}))
        assert isinstance(await asyncio.wait_for(raw.recv(), 30), bytes)  # a chunk: the connection goes on


async def test_bad_voice_uploads_and_protocol_errors(espeak_url: str) -> None:
    async with worker(espeak_url) as client:
        for data, code in ((b"not audio" * 50, "bad_audio"), (bytes(client_short_clip()), "too_short")):
            with pytest.raises(EngineRequestError) as info:
                await client.add_voice("someone", data)
            assert info.value.code == code
        url = client.url[5:]
        async with unix_connect(url, uri="ws://localhost" + protocol.ENGINE_PATH) as raw:
            assert isinstance(protocol.decode_event(await raw.recv()), EngineReady)
            for frame, code in (("{", "bad_message"), ('{"type": "sing"}', "unknown_type"),
                                ('{"type": "text", "id": "nope", "text": "x"}', "unknown_utterance"),
                                (b"\x00\x00\x00\x05{}", "bad_message"),
                                ('{"type": "start", "id": "u1"}', None),
                                ('{"type": "playout", "id": "u1", "played": -1}', "bad_value"),
                                ('{"type": "cancel", "id": "u1"}', None)):
                await raw.send(frame)
                if code is None:
                    continue
                reply = protocol.decode_event(await raw.recv())
                assert isinstance(reply, Error) and reply.code == code and reply.id is None
        assert [v["name"] for v in await client.list_voices()] == ["default"]
        assert (await speak(client, "Still alive."))[1].audio_s > 0.3


def client_short_clip() -> bytes:
    """Two seconds of eSpeak speech as a WAV file: decodable, but under the 5 s minimum for a voice."""
    import io
    import wave

    from engine.engines.espeak import EspeakEngine

    engine = EspeakEngine()
    wav = engine.synthesize("A short clip.", engine.default_voice(), threading.Event())
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(24000)
        out.writeframes((np.clip(wav, -1, 1) * 32767).astype(np.int16).tobytes())
    return buf.getvalue()


def test_say_command_writes_speech_and_prints_timings(tmp_path: Path) -> None:
    out = tmp_path / "out.wav"
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "say", "Hello from the command line.", "--engine", "espeak",
         "--voices-dir", str(tmp_path), "--out", str(out), "--log-level", "warning"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "time to first chunk" in result.stdout and "real-time factor" in result.stdout
    import wave

    with wave.open(str(out)) as wav:
        assert wav.getframerate() == 24000 and wav.getnframes() / 24000 > 1


def test_no_watermark_no_start(tmp_path: Path) -> None:
    """With pkg_resources unimportable, PerTh's implicit watermarker silently becomes None: the worker must refuse."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "pkg_resources.py").write_text("raise ImportError('hidden by the test')\n")
    env = {**os.environ, "PYTHONPATH": f"{shadow}{os.pathsep}{ROOT}"}
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "engine", "--engine", "espeak", "--listen", f"unix:{tmp_path}/s.sock",
         "--voices-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
    )
    assert result.returncode == 3
    assert "refusing to start" in result.stderr and "watermark" in result.stderr.lower()
    assert not (tmp_path / "s.sock").exists()


def _stuck_worker():
    """A worker in process on a device that never finishes, so its utterances stay under way until cancelled."""
    from types import SimpleNamespace

    from engine.engines.base import EngineInfo
    from engine.settings import EngineSettings
    from engine.worker import Worker

    class StuckDevice:
        async def run(self, fn, *args, buffered: float = 0.0):
            await asyncio.Event().wait()

    synth = StuckDevice()
    synth.engine = SimpleNamespace(info=EngineInfo("stub", "cpu", "float32", "none"),  # type: ignore[attr-defined]
                                   prompt_cache=lambda: None)  # no device-side voice cache, as Engine's default
    return Worker(synth, SimpleNamespace(conditionals=None), EngineSettings())  # type: ignore[arg-type]


async def test_a_closed_connection_cancels_its_own_utterances_only(tmp_path: Path) -> None:
    """In process, on a device that never finishes: when one gateway goes away, only its utterances end."""
    from engine.worker import serve_worker

    worker = _stuck_worker()
    async def settled(count: int) -> list[str]:
        for _ in range(250):
            if len(worker.utterances) == count:
                break
            await asyncio.sleep(0.02)
        return [uid for _, uid in worker.utterances]  # keyed by (connection, id)

    sock, stop = tmp_path / "w.sock", asyncio.Event()
    server = asyncio.create_task(serve_worker(worker, f"unix:{sock}", stop))
    try:
        async with worker_client([], f"unix:{sock}", timeout=10) as staying:
            kept = await staying.start("default")
            async with worker_client([], f"unix:{sock}", timeout=10) as leaving:
                gone = await leaving.start("default")
                assert sorted(await settled(2)) == sorted([kept.id, gone.id])
            assert await settled(1) == [kept.id]
    finally:
        stop.set()
        await server


async def test_utterances_cancelled_before_they_ran_are_forgotten() -> None:
    """A Cancel right behind its Start (or a connection closing right after one) cancels the utterance's task before
    it ever runs; the worker must forget it all the same, or its table grows for as long as it serves."""
    worker = _stuck_worker()
    sent: list[str | bytes] = []

    async def send(frame: str | bytes) -> None:
        sent.append(frame)

    for i in range(50):
        await worker._dispatch(protocol.encode(protocol.Start(f"u{i}", "default")), send)
        await worker._dispatch(protocol.encode(protocol.Cancel(f"u{i}")), send)
    running = [f"r{i}" for i in range(3)]
    for uid in running:
        await worker._dispatch(protocol.encode(protocol.Start(uid, "default")), send)
    await until(lambda: sorted(uid for _, uid in worker.utterances) == running, 10, worker.utterances)
    for uid in running:
        await worker._dispatch(protocol.encode(protocol.Cancel(uid)), send)
    await until(lambda: worker.utterances == {}, 10, worker.utterances)


async def test_learnt_costs_are_kept_for_a_bounded_number_of_voices() -> None:
    """Clients name voices freely (unknown ones are refused only once the utterance runs): the per-voice cost models
    are bounded, and a voice's model is shared by every spelling of its name."""
    from engine.worker import MAX_COST_MODELS

    worker = _stuck_worker()
    alice = worker.cost_model("Alice")
    assert worker.cost_model(" alice ") is alice
    for i in range(3 * MAX_COST_MODELS):
        worker.cost_model(f"nobody-{i}")
        if i % 10 == 0:
            assert worker.cost_model("alice") is alice  # in use: kept
    assert len(worker._costs) == MAX_COST_MODELS
    assert worker.cost_model("nobody-0") is not None and len(worker._costs) == MAX_COST_MODELS


def test_a_unix_socket_file_appears_only_once_it_accepts(tmp_path: Path) -> None:
    """The file a supervisor or a test waits for is never a bound socket that still refuses (CI met that moment once:
    ConnectionRefusedError on a file that existed); a stale socket file left at the path is replaced."""
    import socket

    from engine.worker import listening_unix_socket

    path = tmp_path / "w.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))  # bound, never listening: what a connect met in that moment
    stale.close()
    with pytest.raises(ConnectionRefusedError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(str(path))
    server = listening_unix_socket(str(path))
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(path))
        assert sorted(p.name for p in tmp_path.iterdir()) == ["w.sock"]  # no temporary name left behind
    finally:
        server.close()
