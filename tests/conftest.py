"""Fixtures shared by several test files. Append new ones; keep each small."""

from __future__ import annotations

import pytest


def _one_default_ssl_context() -> None:
    """Every httpx client of a test process with the default verification shares one SSL context. httpx builds one
    per client, loading certifi's CA bundle: ~24 ms of CPU, so each bare ``httpx.get`` of a test's poll (every 50 ms:
    half a core) cost that much more than its request. Contexts for other verification (the TLS tests' CAs, verify
    off) are built as before, and a changed SSL_CERT_FILE or SSL_CERT_DIR gets a context of its own."""
    import functools
    import os

    import httpx._transports.default as transport

    create = transport.create_ssl_context

    @functools.cache
    def default(cert_file: str | None, cert_dir: str | None):  # noqa: ANN202
        return create()

    def create_ssl_context(verify=True, cert=None, trust_env=True):  # noqa: ANN001, ANN202 (httpx's signature)
        if verify is True and cert is None and trust_env:
            return default(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        return create(verify=verify, cert=cert, trust_env=trust_env)

    transport.create_ssl_context = create_ssl_context


_one_default_ssl_context()


@pytest.fixture(scope="session")
def espeak_engine():
    """The embedded eSpeak NG engine (real speech, milliseconds per sentence)."""
    from engine.engines.espeak import EspeakEngine

    return EspeakEngine()


@pytest.fixture(scope="session")
def watermarker():
    """The real PerTh watermarker (a few seconds to load, once per session)."""
    from engine.watermark import Watermarker

    return Watermarker()


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory):
    """A tiny random-weights Chatterbox-Turbo checkpoint whose utterances end after a few dozen tokens, so a whole
    worker (warm-up, calibration, speech) starts in seconds."""
    pytest.importorskip("chatterbox.tts_turbo")
    from tests.turbo_checkpoint import write_tiny_checkpoint

    return write_tiny_checkpoint(tmp_path_factory.mktemp("turbo-brief"), stop_bias=4.0)


@pytest.fixture(scope="session")
def damaged_checkpoint(tiny_checkpoint, tmp_path_factory: pytest.TempPathFactory):
    """``tiny_checkpoint`` with its T3 weights file gone (the other files linked, not copied)."""
    damaged = tmp_path_factory.mktemp("turbo-damaged")
    for path in tiny_checkpoint.iterdir():
        if path.name != "t3_turbo_v1.safetensors":
            (damaged / path.name).symlink_to(path)
    return damaged


@pytest.fixture(scope="session")
def keyed_gateway(tmp_path_factory: pytest.TempPathFactory):
    """One gateway (eSpeak) for the third-party client tests (Wyoming, LiveKit): an API key, a Wyoming port, short
    idle limits (tests/server.py KEYED_*). Yields (base URL, Wyoming port)."""
    from cbf_tools.peers.local_server import free_port
    from tests.server import KEYED_IDLE_S, KEYED_KEY, KEYED_MAX_UNAUTHENTICATED, running_server

    port = free_port()
    with running_server("--api-key", KEYED_KEY, "--wyoming-port", str(port), "--idle-timeout", str(KEYED_IDLE_S),
                        "--max-unauthenticated", str(KEYED_MAX_UNAUTHENTICATED),
                        voices_dir=tmp_path_factory.mktemp("keyed-voices")) as url:
        yield url, port


@pytest.fixture(scope="session")
def plain_server():
    """One gateway on the embedded engine with the default flags, shared by the test files that only speak through
    it (nothing they do changes what the next one meets): a server start costs 4-9 s here. Yields its base URL."""
    from tests.server import running_server

    with running_server() as url:
        yield url


@pytest.fixture(scope="session")
def phone_audiosocket_port() -> int:
    """The AudioSocket port of ``phone_server``."""
    from cbf_tools.peers.local_server import free_port

    return free_port()


@pytest.fixture(scope="session")
def phone_server(phone_audiosocket_port: int):
    """One keyed gateway (tests/server.py's PHONE_KEY) with room for long texts and an AudioSocket port (its key
    PHONE_AUDIOSOCKET_KEY, peers from 127.0.0.1 only), shared by the phone-call test files (each call is its own
    session and ends before the next). Yields its base URL."""
    from tests.server import PHONE_AUDIOSOCKET_KEY, PHONE_KEY, running_server

    with running_server("--api-key", PHONE_KEY, "--max-text-chars", "1000", "--audiosocket-port",
                        str(phone_audiosocket_port), "--audiosocket-key", PHONE_AUDIOSOCKET_KEY,
                        "--audiosocket-allow", "127.0.0.1") as url:
        yield url


# The slowest files, slowest first: every file of 20 s or more (their tests' seconds summed, `make test
# ARGS=--junitxml=...`, 2026-12-04 evening; the GPU kit's dry run, one test of ~50-150 s, ahead of all): xdist's
# loadfile hands files out in collection order (the Makefile turns off its reordering by test count), so these start
# first and the many short files fill the processes' ends rather than a 40 s file, last in the alphabet, running on
# alone.
SLOWEST_FIRST = ("test_gpu_bench.py",
                 # the shared servers' groups (below) run as one unit each, several minutes: begun first, not last
                 "test_caller_audio.py", "test_telephony.py", "test_carriers.py", "test_audiosocket.py",
                 "test_freeswitch.py", "test_livekit.py", "test_wyoming.py", "test_deepgram.py", "test_vapi.py",
                 "test_litellm.py", "test_echo_canceller.py", "test_cartesia.py", "test_failover.py", "test_page.py", "test_bench_soak.py", "test_bench.py",
                 "test_engine_pool.py", "test_tenants.py", "test_doctor.py", "test_traces.py", "test_http.py",
                 "test_faults.py", "test_docs_examples.py", "test_first_run.py", "test_idle_unload.py",
                 "test_engine_devices.py", "test_worker.py", "test_drain.py",
                 "test_prompt_cache_server.py", "test_fleet.py", "test_gate_quality.py", "test_s3gen_graphs.py",
                 "test_http_engine.py", "test_playout_websocket.py", "test_slow_reader.py", "test_worker_lifeline.py",
                 "test_bench_barge_in.py", "test_turbo.py", "test_bench_faults.py", "test_planner_simulation.py",
                 "test_graph_check.py", "test_revoked_http_streams.py", "test_voice_sync.py", "test_turn.py", "test_page_barge_in.py", "test_page_echo.py", "test_deploy_gate.py", "test_wyoming_zeroconf.py", "test_idle_while_speaking.py",
                 "test_signalling.py",
                 "test_whep.py", "test_processes.py", "test_discovery.py", "test_gst_bridge.py")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The count of the docs' examples run and not run (issue 52: none untested), at the end of every run; with -v,
    each one not run and why."""
    from tests.test_docs_examples import census

    lines = census().splitlines()
    terminalreporter.write_line("\n".join(lines if config.option.verbose > 0 else lines[:1]))


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session):
    """Collection (each test process imports every test file, and with them torch, PerTh and Chatterbox) with the
    cyclic garbage collector paused, then one collection and ``gc.freeze()``: what collection built lives as long as
    the process, and the tests' own collections no longer walk it. A process's collection here: 11.8 s -> 7.4 s of
    CPU; three files' tests after the whole suite's collection, 41.6-45.4 s -> 37.9-39.3 s. What tests make later
    (session fixtures included) is collected as before."""
    import gc

    from engine.librosa_import import import_librosa_audio

    gc.disable()
    try:
        import_librosa_audio()  # before any test file reaches it through PerTh: 1.9 s of CPU less per test process
        return (yield)
    finally:
        gc.collect()
        gc.freeze()
        gc.enable()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


# The files that use each shared session server (above). `make test` (--dist loadfile) hands each group out as one
# unit, so the server starts once rather than once in every test process (9 gateway and worker starts -> 3 with 4
# processes). xdist's own --dist loadgroup would do this and does nothing under pytest 9.2 (pytest-xdist issue
# #1386); tests/test_suite_groups.py fails when a file uses one of these servers and is not listed here.
SHARED_SERVER_FILES = {
    "plain_server": ("test_bench.py", "test_deploy_gate.py", "test_engine_devices.py", "test_engine_isolation.py",
                     "test_fleet_dashboards.py",
                     "test_gst_bridge.py",
                     "test_input_hygiene.py", "test_latency.py", "test_playout_websocket.py", "test_signalling.py",
                     "test_tokens_server.py", "test_watermark_delivered.py", "test_webrtc_dtmf.py"),
    "phone_server": ("test_audiosocket.py", "test_caller_audio.py", "test_carriers.py", "test_freeswitch.py",
                     "test_telephony.py"),
    "keyed_gateway": ("test_deepgram.py", "test_litellm.py", "test_livekit.py", "test_vapi.py", "test_wyoming.py"),
}
GROUP_OF = {file: server for server, files in SHARED_SERVER_FILES.items() for file in files}


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Under --dist loadfile, xdist's scheduling by file, with each shared server's files as one unit."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedServerScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return GROUP_OF.get(file.rsplit("/", 1)[-1], file)

    return SharedServerScheduling(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """With CBF_SUITE_TIMELINE=FILE, each test's process, start and end (setup to teardown) as a JSON line: when each
    test process went idle, and which file kept it last (`make test` on 2 cores is as long as its busiest process)."""
    import json
    import os
    import time

    path, started = os.environ.get("CBF_SUITE_TIMELINE"), time.time()
    try:
        return (yield)
    finally:
        if path:
            with open(path, "a") as f:
                f.write(json.dumps({"process": os.environ.get("PYTEST_XDIST_WORKER", "main"), "test": item.nodeid,
                                    "start": started, "end": time.time()}) + "\n")
