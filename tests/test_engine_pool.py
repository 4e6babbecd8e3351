"""One gateway, two real eSpeak engine workers (``--engine-url unix:A,unix:B``): health, spreading utterances over
both, voices with separate and with shared voices directories, and one worker dying."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import httpx
import pytest
from websockets.asyncio.client import connect

from engine.protocol import EngineReady, Reading
from gateway.engine_link.client import EngineRequestError, EngineUnavailable
from gateway.engine_link.failover import FailoverPolicy
from gateway.engine_link.pool import EnginePool
from cbf_tools.peers.local_server import Workers
from tests.server import assert_goes_down, health, health_when, running_server

ROOT = Path(__file__).resolve().parent.parent
SENTENCE = "The quick brown fox jumps over the lazy dog, and then it runs away into the forest."


@contextlib.contextmanager
def workers(base: Path, *, shared_voices: bool) -> Iterator[list[subprocess.Popen]]:
    """Two ``chatterbox-fast engine --engine espeak`` workers on ``base/a.sock`` and ``base/b.sock``."""
    group = Workers()
    try:
        for name in ("a", "b"):
            group.start(f"unix:{base / name}.sock", "--voices-dir",
                        str(base / ("voices" if shared_voices else f"voices-{name}")))
        for listen in group.procs:
            group.wait_listening(listen)
        yield list(group.procs.values())
    finally:
        group.stop()


@contextlib.contextmanager
def pool_gateway(base: Path, *flags: str, shared_voices: bool) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    with workers(base, shared_voices=shared_voices) as procs:
        with running_server("--engine-url", f"unix:{base / 'a.sock'},unix:{base / 'b.sock'}", *flags) as url:
            # /health is ok with one worker; wait for both
            health_when(url, lambda h: all(e["available"] for e in h["engines"]),
                        "the gateway did not connect to both workers", 60)
            yield url, procs


@pytest.fixture(scope="module")
def separate_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """The gateway over two workers with voices directories of their own, and the workers. --failover-wait 1: the
    file's last test kills both, and its last request is held that long for a worker that never comes back."""
    with pool_gateway(tmp_path_factory.mktemp("separate"), "--failover-wait", "1", shared_voices=False) as pool:
        yield pool


@pytest.fixture(scope="module")
def separate(separate_pool: tuple[str, list[subprocess.Popen]]) -> str:
    return separate_pool[0]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with pool_gateway(tmp_path_factory.mktemp("shared"), shared_voices=True) as (url, _):
        yield url


def tts(url: str, **body) -> httpx.Response:
    return httpx.post(url + "/v1/tts", json=body, timeout=30)


def in_flight(url: str) -> list[int]:
    return [e["in_flight"] for e in httpx.get(url + "/health").json()["engines"]]


def started(url: str) -> list[int]:
    return [e["started"] for e in httpx.get(url + "/health").json()["engines"]]


async def speak_at_once(url: str, sessions: int, voice: str = "default") -> tuple[list[int], list[dict]]:
    """Open ``sessions`` WebSocket sessions, each with an utterance left open (no ``end``) so all are in flight
    together; note how the gateway spread them, then end them all. Returns (in flight per engine, last events)."""
    stream = url.replace("http://", "ws://") + "/v1/stream"
    async with contextlib.AsyncExitStack() as stack:
        sockets = [await stack.enter_async_context(connect(stream)) for _ in range(sessions)]
        for ws in sockets:
            assert json.loads(await ws.recv())["type"] == "ready"
            await ws.send(json.dumps({"type": "config", "voice": voice}))
            await ws.send(json.dumps({"type": "text", "text": SENTENCE}))
        deadline = time.monotonic() + 20
        while sum(spread := await asyncio.to_thread(in_flight, url)) < sessions:
            assert time.monotonic() < deadline, f"the utterances did not all start: {spread}"
            await asyncio.sleep(0.05)
        for ws in sockets:
            await ws.send(json.dumps({"type": "end"}))
        finals = [await last_event(ws) for ws in sockets]
    return spread, finals


async def last_event(ws) -> dict:
    """The utterance's ``done`` (with the audio bytes received counted in) or its ``error``."""
    audio = 0
    while True:
        frame = await asyncio.wait_for(ws.recv(), 30)
        if isinstance(frame, bytes):
            audio += len(frame)
            continue
        event = json.loads(frame)
        if event["type"] in ("done", "error"):
            return {**event, "audio_bytes": audio}


def upload(url: str, name: str) -> httpx.Response:
    clip = tts(url, text=" ".join([SENTENCE] * 2), format="wav").content  # real speech, > 5 s
    return httpx.post(url + "/v1/voices", data={"name": name}, files={"file": ("v.wav", clip)}, timeout=60)


def test_health_lists_both_engines(separate: str) -> None:
    health = httpx.get(separate + "/health").json()
    assert health["status"] == "ok" and health["engine"]["engine"] == "espeak"
    assert [e["url"].rsplit("/", 1)[-1] for e in health["engines"]] == ["a.sock", "b.sock"]
    assert all(e["available"] and e["engine"] == "espeak" and e["device"] for e in health["engines"])
    assert "worker" not in health  # no embedded worker


def test_concurrent_utterances_are_spread_over_both_engines(separate: str) -> None:
    spread, finals = asyncio.run(speak_at_once(separate, 4))
    assert spread == [2, 2]
    assert all(f["type"] == "done" and f["audio_bytes"] > 0 for f in finals), finals
    assert in_flight(separate) == [0, 0]


@pytest.mark.parametrize("group", ["separate", "shared"])
def test_uploaded_voice_works_on_both_engines_and_is_deleted(group: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(group)
    r = upload(url, "narrator")
    assert r.status_code == 201 and r.json()["voice"]["name"] == "narrator", r.text
    names = [v["name"] for v in httpx.get(url + "/v1/voices").json()["voices"]]
    assert names == ["default", "narrator"]
    again = upload(url, "narrator")
    assert again.status_code == 409 and again.json()["error"]["code"] == "exists"
    for _ in range(2):
        spread, finals = asyncio.run(speak_at_once(url, 2, voice="narrator"))
        assert spread == [1, 1]
        assert all(f["type"] == "done" and f["audio_bytes"] > 0 for f in finals), finals
    assert tts(url, text="Speaking as the narrator.", voice="narrator").status_code == 200
    assert httpx.delete(url + "/v1/voices/narrator").status_code == 204
    assert [v["name"] for v in httpx.get(url + "/v1/voices").json()["voices"]] == ["default"]
    assert httpx.delete(url + "/v1/voices/narrator").json()["error"]["code"] == "unknown_voice"
    r = tts(url, text="Still here?", voice="narrator")
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_voice"
    assert asyncio.run(unknown_on_both_engines(url, "narrator"))


async def unknown_on_both_engines(url: str, voice: str) -> bool:
    """Speak with ``voice`` until each engine has been asked (/health counts the utterances started on each; equally
    idle engines take turns); True when every one refused it as an unknown voice."""
    stream = url.replace("http://", "ws://") + "/v1/stream"

    async def refused() -> bool:
        async with connect(stream) as ws:
            assert json.loads(await ws.recv())["type"] == "ready"
            await ws.send(json.dumps({"type": "config", "voice": voice}))
            await ws.send(json.dumps({"type": "text", "text": SENTENCE}))
            await ws.send(json.dumps({"type": "end"}))
            return (await last_event(ws)).get("code") == "unknown_voice"

    asked: set[int] = set()
    for _ in range(8):
        before = started(url)
        if not await refused():
            return False
        asked |= {i for i, (a, b) in enumerate(zip(before, started(url))) if b > a}
        if asked == {0, 1}:
            return True
    return False


def test_speech_goes_on_through_the_other_engine_when_one_dies(separate_pool) -> None:
    """``separate``'s last test (the file's tests run in order): it leaves both its workers dead, where a pool of its
    own cost two worker starts and a gateway's. The last request is held --failover-wait (1 s) for a worker that
    never comes back, then refused."""
    url, procs = separate_pool
    assert in_flight(url) == [0, 0] and all(e["available"] for e in health(url).json()["engines"])
    procs[0].kill()
    procs[0].wait(15)
    deadline = time.monotonic() + 10
    while (engines := health(url).json()["engines"])[0]["available"]:
        assert time.monotonic() < deadline, "the dead worker was not noticed"
        time.sleep(0.05)
    one_left = health(url)
    assert one_left.status_code == 200 and one_left.json()["status"] == "ok"
    assert [e["available"] for e in engines] == [False, True]
    for _ in range(3):
        r = tts(url, text=SENTENCE, format="wav")
        assert r.status_code == 200 and len(r.content) > 1000
    spread, finals = asyncio.run(speak_at_once(url, 2))
    assert spread == [0, 2] and all(f["type"] == "done" for f in finals)
    procs[1].kill()
    procs[1].wait(15)
    assert_goes_down(url, within=10, what="the second dead worker")


class FakeClient:
    """Stands in for one EngineClient: answers voice requests from a script, counts utterances in flight."""

    lost, last_error, retry_in, joining = 0, None, None, False  # what /health shows of its connection

    def __init__(self, url: str, *, available: bool = True, in_flight: int = 0, add=None, delete=None,
                 voices=(), engine: str = "espeak") -> None:
        self.url, self.available, self.reachable, self.in_flight = url, available, available, in_flight
        self.ready = EngineReady(engine, "cpu", "float32", "embedded", True, notes=url) if available else None
        self.engine_kind = (engine, "embedded") if available else None
        self._add, self._delete, self._voices = add, delete, list(voices)
        self.started = 0

    async def start(self, voice: str, reading: Reading = Reading(), traceparent: str | None = None) -> SimpleNamespace:
        """An utterance handle named after this client."""
        self.started += 1
        self.in_flight += 1
        return SimpleNamespace(id=self.url, engine_kind=self.engine_kind, worker=self.url)

    async def list_voices(self) -> list[dict]:
        return self._voices

    async def add_voice(self, name: str, data: bytes) -> dict:
        if isinstance(self._add, Exception):
            raise self._add
        return {"name": name, "from": self.url}

    async def delete_voice(self, name: str) -> None:
        if isinstance(self._delete, Exception):
            raise self._delete


def pool_of(*clients: FakeClient, failover: FailoverPolicy = FailoverPolicy()) -> EnginePool:
    pool = EnginePool([c.url for c in clients], failover=failover)
    pool.clients = list(clients)  # type: ignore[assignment]
    return pool


def test_pool_start_picks_the_least_busy_available_engine() -> None:
    a, b, c = FakeClient("a", in_flight=1), FakeClient("b", available=False), FakeClient("c")
    pool = pool_of(a, b, c)
    assert [asyncio.run(pool.start("default")).id for _ in range(3)] == ["c", "a", "c"]
    d, e = FakeClient("d"), FakeClient("e")  # equally busy: the one that has started fewer utterances
    d.started = 5
    assert asyncio.run(pool_of(d, e).start("default")).id == "e"
    assert pool.ready == a.ready and pool.available
    assert [(e["url"], e["available"], e["in_flight"]) for e in pool.engines] == [("a", True, 2), ("b", False, 0),
                                                                                  ("c", True, 2)]
    down = pool_of(FakeClient("x", available=False), failover=FailoverPolicy(wait_s=0.2))
    assert down.ready is None and not down.available
    with pytest.raises(EngineUnavailable):
        asyncio.run(down.list_voices())

    async def first_event(pool: EnginePool) -> object:
        return await anext((await pool.start("default")).events())

    # no worker within the wait: taken, then the error as its events are read (tests/test_failover.py: one that
    # connects within it says it); with failover off, refused at once
    with pytest.raises(EngineRequestError, match="no engine worker connected within 0.2 s") as failed:
        asyncio.run(first_event(down))
    assert failed.value.code == "engine_unavailable"
    with pytest.raises(EngineUnavailable):
        asyncio.run(pool_of(FakeClient("x", available=False), failover=FailoverPolicy(wait_s=0)).start("default"))


def test_an_utterance_moves_only_to_a_worker_of_its_engine_and_weights() -> None:
    """The next worker for an utterance whose own went away (EnginePool.start's start_one): one of another engine
    (another voice) is passed over; with none of its kind, none."""
    simulated, espeak = FakeClient("a", engine="simulated"), FakeClient("b")
    pool = pool_of(simulated, espeak)
    kind = ("simulated", "embedded")
    assert asyncio.run(pool._start_one("default", Reading(), kind)).id == "a"
    simulated.available = False
    with pytest.raises(EngineUnavailable, match="no engine worker to go to"):
        asyncio.run(pool._start_one("default", Reading(), kind))
    assert asyncio.run(pool._start_one("default", Reading())).id == "b"  # a new utterance takes any


def test_pool_voice_lists_are_merged_by_name() -> None:
    a = FakeClient("a", voices=[{"name": "default", "from": "a"}, {"name": "zed", "from": "a"}])
    b = FakeClient("b", voices=[{"name": "amy", "from": "b"}, {"name": "default", "from": "b"}])
    assert asyncio.run(pool_of(a, b).list_voices()) == [{"name": "amy", "from": "b"},
                                                        {"name": "default", "from": "a"}, {"name": "zed", "from": "a"}]


def test_pool_voice_changes_tolerate_a_shared_directory_only() -> None:
    exists, unknown = EngineRequestError("exists", "taken"), EngineRequestError("unknown_voice", "no such voice")
    bad = EngineRequestError("too_short", "short")
    assert asyncio.run(pool_of(FakeClient("a", add=exists), FakeClient("b")).add_voice("v", b""))["from"] == "b"
    for clients in ([FakeClient("a", add=exists), FakeClient("b", add=exists)],
                    [FakeClient("a"), FakeClient("b", add=bad)]):
        with pytest.raises(EngineRequestError) as err:
            asyncio.run(pool_of(*clients).add_voice("v", b""))
        assert err.value.code == clients[-1]._add.code
    asyncio.run(pool_of(FakeClient("a", delete=unknown), FakeClient("b")).delete_voice("v"))
    with pytest.raises(EngineRequestError) as err:
        asyncio.run(pool_of(FakeClient("a", delete=unknown), FakeClient("b", delete=unknown)).delete_voice("v"))
    assert err.value.code == "unknown_voice"


def test_a_worker_whose_tts_server_is_down_takes_no_utterances_until_it_is_back() -> None:
    """The worker of ``--engine http`` says so with a new ``ready``; the pool then starts utterances elsewhere (a Turbo
    worker beside it goes on), and /health lists the server's state under that engine."""
    from engine import protocol
    from gateway.engine_link.client import EngineClient

    client = EngineClient("unix:/tmp/http-worker.sock")
    backend = {"url": "http://tts:8004", "dialect": "devnen", "state": "up", "error": None, "since": 0.0}
    client._ws, client.ready = object(), EngineReady("http", "remote", "n/a", "http://tts:8004", True,  # connected
                                                     backend=backend)
    assert client.available
    down = {**backend, "state": "down", "error": "the TTS backend at http://tts:8004 is unreachable"}
    client._route(protocol.encode(EngineReady("http", "remote", "n/a", "http://tts:8004", True, backend=down)))
    assert not client.available
    pool = pool_of(FakeClient("turbo"))
    pool.clients.append(client)  # type: ignore[arg-type]
    assert asyncio.run(pool.start("default")).id == "turbo"
    assert pool.engines[1]["backend"]["state"] == "down" and not pool.engines[1]["available"]
    client._route(protocol.encode(EngineReady("http", "remote", "n/a", "http://tts:8004", True, backend=backend)))
    assert client.available
