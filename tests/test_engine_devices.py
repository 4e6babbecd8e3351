"""``serve --engine-devices``: one embedded worker per entry, each supervised, all in the gateway's one engine pool
(issue 50 item 4). CI has no GPU, so the workers are real eSpeak workers on ``cpu,cpu``: the same supervision, pool
and /health as one worker per card; ``auto``'s reading of nvidia-smi is checked on its output written by hand (cards
this machine does not have). One server is shared by the tests that speak: ``--processes 2`` gateway processes
sharing two workers (the supervisor's, as a one-process server's are its own), and one worker's /health is read
from the suite's plain server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from typing import Any, Iterator

import httpx
import pytest

from cbf_tools.peers.local_server import local_server
from gateway import cli
from gateway.engine_link.devices import listed_cards, parse, resolve, visible
from gateway.engine_link.workers import EmbeddedWorkers
from tests.server import health, health_when

A = "GPU-aaaa1111-2222-3333-4444-555566667777"
B = "GPU-bbbb1111-2222-3333-4444-555566667777"
SMI = f"0, {A}\n1, {B}\n"  # nvidia-smi --query-gpu=index,uuid --format=csv,noheader on a two-card host


def test_the_entries_and_what_they_refuse() -> None:
    assert parse("cuda:0, cuda:1") == ("cuda:0", "cuda:1")
    assert parse(f"{A},cpu") == (A, "cpu")
    assert parse("cpu,cpu") == ("cpu", "cpu")  # several CPU workers
    for bad, said in (("", "got nothing"), ("auto,cpu", "auto stands alone"), ("gpu0", "got 'gpu0'"),
                      ("cuda:x", "got 'cuda:x'"), ("cuda:1,cuda:1", "cuda:1 named twice"), (f"{A},{A}", "named twice")):
        with pytest.raises(ValueError, match=said):
            parse(bad)


def test_auto_is_every_visible_card_else_one_cpu_worker() -> None:
    cards = listed_cards(SMI)
    assert cards == [(0, A), (1, B)]
    assert resolve(("auto",), {}, lambda: SMI) == (A, B)  # every card, by UUID
    assert resolve(("auto",), {}, lambda: None) == ()  # no nvidia-smi: the one worker, on its own --device auto
    assert resolve(("cpu", "cpu"), {}, lambda: SMI) == ("cpu", "cpu")  # a list is taken as given
    # CUDA_VISIBLE_DEVICES: its cards in its order, up to the first that names none (as CUDA reads it); an index is
    # torch's under that variable, never mapped through nvidia-smi's numbering
    assert visible(cards, "1") == ("cuda:0",)
    assert visible(cards, "1,0") == ("cuda:0", "cuda:1")
    assert visible(cards, "GPU-bbbb") == (B,)
    assert visible(cards, "0,7,1") == ("cuda:0",)
    assert resolve(("auto",), {"CUDA_VISIBLE_DEVICES": ""}, lambda: SMI) == ()
    assert resolve(("auto",), {"CUDA_VISIBLE_DEVICES": "-1"}, lambda: SMI) == ()


def test_a_worker_that_cannot_start_is_named_by_its_device() -> None:
    """(Its sentence stops the server: `serve --engine chatterbox-turbo --engine-devices cuda:0,cuda:1` here, with no
    CUDA, exits 3 with "the engine worker on cuda:0 cannot start: --device cuda:0 asks for a CUDA device...".)"""
    told: list[str] = []
    workers = EmbeddedWorkers(["--engine", "espeak"], ("cuda:0", "cuda:1"), told.append)
    assert [p.device for p in workers.processes] == ["cuda:0", "cuda:1"]
    assert len({p.secret for p in workers.processes}) == 1 and len(set(workers.urls)) == 2  # one pool, one secret
    workers.processes[1]._on_refusal_at_start("no CUDA device")
    assert told == ["the engine worker on cuda:1 cannot start: no CUDA device"]
    one = EmbeddedWorkers(["--engine", "espeak"], (), told.append)  # the one worker: its sentence as it was
    one.processes[0]._on_refusal_at_start("no weights")
    assert told[-1] == "no weights" and one.processes[0].device is None
    for group in (workers, one):
        asyncio.run(group.stop())  # (none was started: their socket folders removed)


@pytest.mark.parametrize("args, env, said", [
    (["--engine-devices", "cpu,cpu", "--engine-url", "ws://127.0.0.1:1"], {}, "set one of them"),
    (["--engine-devices", "cpu", "--device", "cuda:1"], {}, "leave --device unset"),
    ([], {"CBF_ENGINE_DEVICES": "cuda:0,gpu1"}, "CBF_ENGINE_DEVICES (--engine-devices): expected auto, cpu"),
])
def test_contradictory_settings_are_one_sentence_and_exit_2(args: list[str], env: dict[str, str], said: str,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--port", "0", *args])
    stderr = capsys.readouterr().err
    assert exited.value.code == 2 and said in stderr and len(stderr.strip().splitlines()) == 1, stderr


@pytest.fixture(scope="module")
def two_workers() -> Iterator[tuple[str, int]]:
    """``--processes 2 --engine-devices cpu,cpu``: two gateway processes sharing two workers; (URL, supervisor pid)."""
    with local_server(["--processes", "2", "--engine", "espeak", "--engine-devices", "cpu,cpu", "--cache-mib", "0"],
                      env=dict(os.environ)) as served:
        yield served


def _both_ready(body: dict[str, Any]) -> bool:
    return [w["state"] for w in body.get("workers", [])] == ["ready", "ready"]


def _fresh_health(url: str) -> dict[str, Any]:
    """/health on a new connection: SO_REUSEPORT hands it to either gateway process."""
    return httpx.get(url + "/health", timeout=10).json()


def test_health_lists_each_worker_in_every_gateway_process(two_workers: tuple[str, int]) -> None:
    url, supervisor = two_workers
    health_when(url, _both_ready, "both workers ready", within=60)
    answered = set()
    for _ in range(12):  # whichever gateway process answers, it lists both of the supervisor's workers
        body = _fresh_health(url)
        answered.add(body["pid"])
        workers = body["workers"]
        assert [w["device"] for w in workers] == ["cpu", "cpu"] and all(w["model"] == "loaded" for w in workers)
        assert len({w["pid"] for w in workers}) == 2 and supervisor not in {w["pid"] for w in workers}
        assert all(w["alive"] and w["restarts"] == 0 for w in workers)
        assert [e["url"] for e in body["engines"]] == [w["url"] for w in workers]  # all in the one pool
        assert "worker" not in body  # (the one embedded worker's field)
    assert len(answered) == 2


def test_one_worker_is_listed_too(plain_server: str) -> None:
    body = health(plain_server).json()
    assert [(w["device"], w["state"], w["model"]) for w in body["workers"]] == [("", "ready", "loaded")]
    assert body["worker"]["pid"] == body["workers"][0]["pid"]  # the one embedded worker's field, as before


def test_utterances_take_turns_on_idle_workers(two_workers: tuple[str, int]) -> None:
    url, _ = two_workers
    with httpx.Client(base_url=url, timeout=60) as one_process:  # one kept-alive connection: one gateway's pool
        before = {e["url"]: e["started"] for e in one_process.get("/health").json()["engines"]}
        for n in range(2):
            spoken = one_process.post("/v1/tts", json={"text": f"Turn number {n} of the devices test."})
            assert spoken.status_code == 200 and len(spoken.content) > 4800
        after = {e["url"]: e["started"] for e in one_process.get("/health").json()["engines"]}
    assert [after[worker] - before[worker] for worker in before] == [1, 1]


def test_a_worker_killed_mid_utterance_hands_it_on_and_is_restarted(two_workers: tuple[str, int]) -> None:
    url, _ = two_workers
    health_when(url, _both_ready, "both workers ready", within=60)
    text = " ".join(f"Sentence {n} of a long reading that outlasts its worker." for n in range(12))  # (~35 s)
    lines = []
    with httpx.stream("POST", url + "/v1/tts", json={"text": text, "format": "ndjson"}, timeout=60) as reply:
        assert reply.status_code == 200
        stream = reply.iter_lines()
        lines.append(json.loads(next(stream)))  # its first chunk: the utterance is on a worker, held by the lead
        busy = next(w for _ in range(60) for w in _fresh_health(url)["workers"] if w["in_flight"])  # (its process's)
        os.kill(busy["pid"], signal.SIGKILL)
        lines += [json.loads(line) for line in stream if line]
    assert lines[-1]["type"] == "done" and lines[-1]["failovers"] == 1, lines[-1]  # went on on the other worker
    back = health_when(url, lambda b: any(w["url"] == busy["url"] and w["alive"] and w["pid"] != busy["pid"]
                                          for w in b["workers"]), "the killed worker restarted", within=60)
    restarted = next(w for w in back["workers"] if w["url"] == busy["url"])  # (its start is test_worker_lifeline's)
    assert restarted["restarts"] == 1 and restarted["last_exit_reason"] == "killed by SIGKILL"
