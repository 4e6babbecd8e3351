"""Traces (--otlp-endpoint): a real server and its embedded worker export over OTLP/HTTP to an in-process receiver
(tests/otlp_receiver.py); an utterance over the WebSocket and one over /v1/tts each make one trace, the gateway's
root span and the worker's spans under it; no text in them unless --trace-text, never the API key. Then the pure
parts: the traceparent on the engine protocol, the endpoint's URL, the tenant read from the connection's scope."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Iterator

import httpx
import pytest
from websockets.asyncio.client import connect

from cbf_tools.bench.failover import TEXT, Fleet, speak
from engine import protocol
from engine.protocol import ProtocolError, Start
from engine.traces import NO_SPAN, NO_TRACES, traces_url
from gateway.traces import ConnectionScope, tenant
from tests.cli_run import run_cli
from tests.test_caller_audio import caller_wav, say  # noqa: F401 (a fixture: the caller's voice)
from tests.test_telephony import KEY, LONG_TEXT, controller, simulated
from tests.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.server import next_event, running_server

WORDS = "Quetzalcoatl visited Ouagadougou"  # found nowhere but in what the client sends
FAST_EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "100"}  # ms between batches (the SDK's own variable)
WORKER_STAGES = {"voice", "chunk", "plan", "generate", "joins", "watermark"}


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as found:
        yield found


@pytest.fixture(scope="module")
def server(receiver: OtlpReceiver) -> Iterator[str]:
    with running_server("--otlp-endpoint", receiver.url, "--api-key", KEY, env=FAST_EXPORT) as url:
        yield url


@pytest.fixture(scope="module")
def texts() -> Iterator[OtlpReceiver]:
    """The receiver of ``pair``: callers' text arrives there, never at ``receiver``."""
    with OtlpReceiver() as found:
        yield found


@pytest.fixture(scope="module")
def pair(texts: OtlpReceiver, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Fleet]]:
    """Two simulated workers (tests/test_failover.py's fleet) behind a gateway, all with --trace-text, exporting to
    ``texts``: (its base URL, the fleet). One gateway and its workers for the text and the failover test (each start
    costs seconds of CPU); the failover test kills one worker, so a test here must need only one."""
    group = Fleet(tmp_path_factory.mktemp("pair"), ("--engine", "simulated", "--sim-rtf", "3", "--sim-fixed", "0.1",
                                                    "--otlp-endpoint", texts.url, "--trace-text", "true"))
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # the workers' too
            engines = group.start_both()
        with running_server("--engine-url", engines, "--failover-wait", "5", "--otlp-endpoint",
                            texts.url + "/v1/traces", "--trace-text", "true", env=FAST_EXPORT) as url:
            yield url, group
    finally:
        group.workers.stop()


def trace_of(spans: list[ReceivedSpan], root: ReceivedSpan) -> list[ReceivedSpan]:
    return [span for span in spans if span.trace_id == root.trace_id]


def whole_trace(attribute: str, value: Any) -> Any:
    """A condition: the gateway's root span with ``attribute`` == ``value`` has arrived, and the worker's spans of
    its trace, down to the last chunk's watermark."""
    def found(spans: list[ReceivedSpan]) -> bool:
        roots = [s for s in spans if s.name == "utterance" and s.attributes.get(attribute) == value]
        if not roots:
            return False
        names = {s.name for s in trace_of(spans, roots[0])}
        return {"engine.utterance", *WORKER_STAGES} <= names
    return found


def check_trace(spans: list[ReceivedSpan], attribute: str, value: Any, transport: str,
                engine_name: str = "espeak") -> list[ReceivedSpan]:
    """The one trace of that utterance: the gateway's root, the worker's utterance under it, every chunk's stages
    under their chunk; returns its spans."""
    root = next(s for s in spans if s.name == "utterance" and s.attributes.get(attribute) == value)
    assert root.service == "chatterbox-fast-gateway" and root.parent_id == "" and root.error is None
    assert root.attributes["transport"] == transport and root.attributes["voice"] == "default"
    assert root.attributes["engine"] == engine_name and root.attributes["worker"].startswith("unix:")
    assert root.attributes["chunks"] >= 1 and root.attributes["audio_s"] > 0
    assert "first_audio" in [name for name, _ in root.events]
    trace = trace_of(spans, root)
    by_id = {s.span_id: s for s in trace}
    (engine,) = [s for s in trace if s.name == "engine.utterance"]
    assert engine.service == "chatterbox-fast-engine" and engine.parent_id == root.span_id  # across the processes
    assert engine.attributes["utterance.id"] == root.attributes["utterance.id"]
    assert engine.attributes["engine"] == engine_name and engine.attributes["voice"] == "default"
    assert "first_send" in [name for name, _ in engine.events]
    chunks = [s for s in trace if s.name == "chunk"]
    assert [c.attributes["seq"] for c in sorted(chunks, key=lambda c: c.attributes["seq"])] == list(
        range(engine.attributes["chunks"])) and all(c.parent_id == engine.span_id for c in chunks)
    for chunk in chunks:
        stages = sorted(s.name for s in trace if s.parent_id == chunk.span_id)
        assert stages == ["generate", "joins", "plan", "watermark"]
    assert by_id[next(s for s in trace if s.name == "voice").parent_id] is engine
    return trace


def texts_in(spans: list[ReceivedSpan]) -> str:
    return json.dumps([[s.attributes, s.events] for s in spans])


async def speak_ws(server: str, text: str) -> str:
    """One utterance over /v1/stream; returns the session's id."""
    async with connect(server.replace("http://", "ws://") + "/v1/stream",
                       additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
        ready = json.loads(await ws.recv())
        await ws.send(json.dumps({"type": "speak", "text": text}))
        while not (isinstance(frame := await asyncio.wait_for(ws.recv(), 30), str)
                   and json.loads(frame)["type"] == "done"):
            pass
    return ready["session"]


async def test_a_websocket_utterance_is_one_trace_across_gateway_and_worker_with_no_text_and_no_key(
        server: str, receiver: OtlpReceiver) -> None:
    session = await speak_ws(server, f"{WORDS} on a Tuesday.")
    spans = receiver.wait_for(whole_trace("session.id", session))
    trace = check_trace(spans, "session.id", session, "ws")
    assert "tenant" not in next(s for s in trace if s.name == "utterance").attributes  # no tenant stored: none
    for word in WORDS.split():
        assert word not in texts_in(spans)
        assert all(word.encode() not in body for body in receiver.bodies)
    assert all(KEY.encode() not in body for body in receiver.bodies)


def test_an_http_utterance_is_its_own_trace(server: str, receiver: OtlpReceiver) -> None:
    reply = httpx.post(server + "/v1/tts", json={"text": f"{WORDS} by train.", "format": "pcm"},
                       headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
    assert reply.status_code == 200 and len(reply.content) > 0
    uid = reply.headers["X-Utterance-Id"]
    spans = receiver.wait_for(whole_trace("utterance.id", uid))
    trace = check_trace(spans, "utterance.id", uid, "http")
    assert "session.id" not in next(s for s in trace if s.name == "utterance").attributes
    assert all(KEY.encode() not in body for body in receiver.bodies)
    assert all(b"Ouagadougou" not in body for body in receiver.bodies)


def test_with_trace_text_the_text_is_in_the_gateway_s_and_the_worker_s_spans(pair: tuple[str, Fleet],
                                                                               texts: OtlpReceiver) -> None:
    url, _ = pair
    reply = httpx.post(url + "/v1/tts", json={"text": f"{WORDS} at dawn."}, timeout=60)
    uid = reply.headers["X-Utterance-Id"]
    spans = texts.wait_for(whole_trace("utterance.id", uid))
    trace = check_trace(spans, "utterance.id", uid, "http", engine_name="simulated")
    root = next(s for s in trace if s.name == "utterance")
    assert ("text", {"text": f"{WORDS} at dawn."}) in root.events
    chunk_texts = [attrs["text"] for s in trace if s.name == "chunk" for name, attrs in s.events if name == "text"]
    assert "Quetzalcoatl" in " ".join(chunk_texts)


def test_serve_gives_its_embedded_worker_the_trace_flags() -> None:
    """What the text test above gives its workers by hand: serve's --otlp-endpoint and --trace-text, as the embedded
    worker's command line (gateway/engine_link/process.py) reads them."""
    from gateway.cli import build_parser, engine_argv

    serve = build_parser().parse_args(["serve", "--otlp-endpoint", "http://collector:4318", "--trace-text", "true"])
    engine = build_parser().parse_args(["engine", "--listen", "unix:/tmp/e.sock", *engine_argv(serve)])
    assert (engine.otlp_endpoint, engine.trace_text) == ("http://collector:4318", True)


async def test_a_callers_barge_in_is_an_event_of_the_utterance_it_cut(server: str, receiver: OtlpReceiver,
                                                                       caller_wav: Any) -> None:
    """A phone caller (tests/test_caller_audio.py's) talks over the gateway: barge_in, then cancelled, on the
    utterance's root span; the worker's span says cancelled too; the call's key (a stream parameter) is nowhere."""
    from streamdouble.scenario import Expect, Wait, WaitFor

    call, call_sid = simulated(server, [WaitFor("audio", 30), Wait(1.5), say(caller_wav), Expect("clear"), Wait(0.5)])
    running = asyncio.create_task(call.run())
    agent = await controller(server, call_sid)
    await agent.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
    await next_event(agent, "interrupted", timeout=30)
    await running
    await agent.close()

    def cut(spans: list[ReceivedSpan]) -> bool:
        roots = [s for s in spans if s.name == "utterance" and s.attributes.get("session.id") == call_sid]
        return bool(roots) and any(s.name == "engine.utterance" for s in trace_of(spans, roots[0]))

    spans = receiver.wait_for(cut)
    root = next(s for s in spans if s.name == "utterance" and s.attributes.get("session.id") == call_sid)
    assert root.attributes["transport"] == "twilio"
    names = [name for name, _ in root.events]
    assert names.index("first_audio") < names.index("barge_in") < names.index("cancelled"), names
    assert dict(root.events)["barge_in"] == {"act": "interrupt"}
    (engine,) = [s for s in trace_of(spans, root) if s.name == "engine.utterance"]
    assert engine.parent_id == root.span_id and "cancelled" in [name for name, _ in engine.events]
    assert all(KEY.encode() not in body for body in receiver.bodies)


# -- the pure parts --------------------------------------------------------------------------------------------------

def test_the_traceparent_travels_on_start_and_a_malformed_one_is_refused() -> None:
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    frame = protocol.encode(Start("u1", "amy", traceparent=parent))
    assert frame == f'{{"type":"start","id":"u1","voice":"amy","traceparent":"{parent}"}}'
    assert protocol.decode_request(frame) == Start("u1", "amy", traceparent=parent)
    assert protocol.decode_request('{"type":"start","id":"u1"}').traceparent is None  # an older gateway's
    for bad in ("01-nope", parent.upper(), parent + "-x", 7):
        with pytest.raises(ProtocolError) as refused:
            protocol.decode_request(json.dumps({"type": "start", "id": "u1", "traceparent": bad}))
        assert refused.value.code in ("bad_traceparent", "bad_message")


def test_the_endpoint_is_a_collector_base_url_or_a_full_one() -> None:
    assert traces_url("http://collector:4318") == "http://collector:4318/v1/traces"
    assert traces_url("http://collector:4318/") == "http://collector:4318/v1/traces"
    assert traces_url("https://otel.example/custom/v1/traces") == "https://otel.example/custom/v1/traces"
    for bad in ("collector:4318", "grpc://collector:4317", "http://"):
        with pytest.raises(ValueError, match="--otlp-endpoint"):
            traces_url(bad)


def test_without_an_endpoint_nothing_is_traced() -> None:
    span = NO_TRACES.span("utterance", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", voice="x")
    assert span is NO_SPAN and span.traceparent is None and span.child("chunk") is NO_SPAN


async def test_the_tenant_is_the_one_the_connection_s_authentication_stored_in_its_scope() -> None:
    seen: list[str | None] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scope.setdefault("state", {})["tenant"] = scope["path"].strip("/") or None  # as the key check would
        await asyncio.create_task(asyncio.sleep(0))  # the connection's tasks see it too
        seen.append(await asyncio.create_task(_tenant_later()))

    for path in ("/acme", "/", "/globex"):
        await ConnectionScope(app)({"type": "http", "path": path}, None, None)
    assert seen == ["acme", None, "globex"] and tenant() is None  # and none outside a connection


async def _tenant_later() -> str | None:
    return tenant()


def test_the_server_refuses_an_endpoint_that_is_not_a_url() -> None:
    done = run_cli("serve", "--port", "0", "--otlp-endpoint", "collector:4318", timeout=60)
    assert done.returncode == 2 and "--otlp-endpoint must be an http://" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_failover_is_an_event_and_the_worker_that_said_the_rest_joins_the_trace(pair: tuple[str, Fleet],
                                                                                   texts: OtlpReceiver) -> None:
    """The one speaking is SIGKILLed at the first chunk: its queued spans die with it, the gateway's root says
    ``failover``, and the other's ``engine.utterance`` is under it."""
    url, group = pair
    killed: list[str] = []
    spoken = speak("http", url, TEXT, lambda n: killed.append(group.kill_the_speaking_one(url)) if n == 1 else None)
    assert killed and spoken.done["failovers"] == 1

    def moved(spans: list[ReceivedSpan]) -> bool:
        roots = [s for s in spans if s.name == "utterance" and s.attributes.get("failovers") == 1]
        return bool(roots) and any(s.name == "engine.utterance" and s.parent_id == roots[0].span_id for s in spans)

    spans = texts.wait_for(moved)
    root = next(s for s in spans if s.name == "utterance" and s.attributes.get("failovers") == 1)
    (failover,) = [attrs for name, attrs in root.events if name == "failover"]
    survivor = "b" if killed[0] == "a" else "a"
    assert failover["move"] == 1 and failover["worker"] == group.listen(survivor) and failover["from_char"] > 0
    rest = [s for s in trace_of(spans, root) if s.name == "engine.utterance"]
    assert len(rest) == 1 and rest[0].error is None and rest[0].attributes["engine"] == "simulated"
