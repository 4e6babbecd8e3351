"""gateway/sessions/core.py (the pure session rules) directly, and gateway/sessions/session.py (its asyncio adapter) with a fake
engine and a fake sink: turn order, cancel, disconnect with queued turns, engine failures, playout feedback."""

from __future__ import annotations

import asyncio
import json

import pytest

from engine.protocol import Chunk, ChunkHeader, Done, EngineReady, Reading
from engine.traces import NO_SPAN, Span
from gateway.sessions import core
from gateway.engine_link.client import EngineRequestError, EngineUnavailable
from gateway.metrics import Metrics
from gateway.prompt_cache.cache import PromptCache
from gateway.prompt_cache.store import CacheSettings
from gateway.sessions.session import Session
from gateway.sessions.registry import SessionRegistry
from gateway.settings import GatewaySettings
from gateway.shared_state import GatewayState
from gateway.sink import AudioSink


def frame(kind: str, **fields) -> str:
    return json.dumps({"type": kind, **fields})


def header(seq: int, text: str = "Hello.") -> ChunkHeader:
    return ChunkHeader(id="u", seq=seq, text=text, offset=0.5 * seq, duration=0.5, gen_time=0.1)


# The core.

def new_core(**kwargs) -> core.SessionCore:
    return core.SessionCore(**{"session_id": "s", "transport": "ws", "max_text_chars": 20, "configurable": True,
                               **kwargs})


def test_speak_starts_sends_and_ends_one_turn_and_the_next_text_starts_another() -> None:
    session = new_core()
    assert session.receive(frame("speak", text="Hi.", voice="amy")) == [
        core.StartUtterance(0, "amy", whole="Hi."), core.SendText(0, "Hi."), core.EndText(0)]
    assert session.receive(frame("text", text="Again")) == [core.StartUtterance(1, "amy"), core.SendText(1, "Again")]
    assert session.receive(frame("flush")) == [core.FlushText(1)]
    assert session.receive(frame("text", text=" more")) == [core.SendText(1, " more")]
    assert session.receive(frame("end")) == [core.EndText(1)]
    assert session.receive(frame("flush")) == [] and session.receive(frame("end")) == []
    assert session.queued == [0, 1]


def test_text_limit_counts_the_whole_utterance() -> None:
    session = new_core(max_text_chars=10)
    session.receive(frame("text", text="123456"))
    [refusal] = session.receive(frame("text", text="12345"))
    assert isinstance(refusal, core.Emit) and refusal.event["code"] == "text_too_long"
    assert session.receive(frame("text", text="1234")) == [core.SendText(0, "1234")]  # exactly at the limit
    session.receive(frame("end"))
    assert session.receive(frame("text", text="1234567890"))[-1] == core.SendText(1, "1234567890")  # a new turn


def test_queue_limit_refuses_a_new_turn_until_one_is_sent() -> None:
    session = new_core(max_queued=2)
    session.receive(frame("speak", text="one"))
    session.receive(frame("speak", text="two"))
    [refusal] = session.receive(frame("speak", text="three"))
    assert refusal.event["code"] == "too_many_utterances"  # type: ignore[union-attr]
    session.started(0, "u0")
    assert session.engine_done(0) == [core.EndAudio(0)]
    assert session.audio_ended(0, {"chunks": 1}) == [core.Emit({"type": "done", "utterance": "u0", "chunks": 1,
                                                                "heard_s": 0.0, "heard_text": "",
                                                                "heard_from": "sent"})]
    assert session.receive(frame("speak", text="three"))[0] == core.StartUtterance(2, "default", whole="three")


def test_audio_begins_once_per_turn_and_chunk_events_carry_the_engine_id() -> None:
    session = new_core()
    session.receive(frame("speak", text="Hello."))
    session.started(0, "u0")
    first = session.chunk(0, header(0), b"\x01\x00")
    second = session.chunk(0, header(1), b"\x02\x00")
    assert first[0] == core.BeginAudio() and core.BeginAudio() not in second
    assert first[1] == core.Emit({"type": "chunk", "utterance": "u0", "seq": 0, "text": "Hello.", "offset": 0.0,
                                  "duration": 0.5, "gen_time": 0.1, "words": [], "timing": "estimated"})
    assert first[2] == core.WriteAudio(b"\x01\x00") and second[-1] == core.WriteAudio(b"\x02\x00")


def test_cancel_stops_every_turn_clears_the_sink_and_acknowledges_each() -> None:
    session = new_core()
    session.receive(frame("speak", text="one"))
    session.receive(frame("text", text="two"))
    session.started(0, "u0")
    session.started(1, "u1")
    assert session.receive(frame("cancel")) == [
        core.CancelUtterance(0), core.CancelUtterance(1), core.ClearAudio(),
        core.Emit({"type": "cancelled", "utterance": "u0", "heard_s": 0.0, "heard_text": "", "heard_from": "sent"}),
        core.Emit({"type": "cancelled", "utterance": "u1", "heard_s": 0.0, "heard_text": "", "heard_from": "sent"})]
    assert session.queued == []
    assert session.receive(frame("flush")) == []  # the cancelled turn no longer takes text
    assert session.receive(frame("cancel")) == [core.ClearAudio(), core.Emit({"type": "cancelled", "utterance": None})]


def timed(seq: int, offset: float, *words: tuple[str, float, float]) -> ChunkHeader:
    return ChunkHeader(id="u", seq=seq, text=" ".join(w for w, _, _ in words), offset=offset, duration=1.0,
                       gen_time=0.1, words=[{"word": w, "start": a, "end": b} for w, a, b in words], timing="exact")


def test_chunk_words_take_the_clients_spelling_and_cancel_says_what_was_heard() -> None:
    session = new_core(max_text_chars=200)
    session.receive(frame("text", text='well "I think" so: '))
    session.receive(frame("speak", text="[laugh] yes"))
    session.receive(frame("speak", text="Next one."))
    session.started(0, "u0")
    first = session.chunk(0, timed(0, 0.0, ("Well", 0.0, 0.3), ("I", 0.3, 0.4), ("think", 0.4, 0.8)), b"")
    assert [w["word"] for w in first[1].event["words"]] == ["well", '"I', 'think"']  # type: ignore[union-attr]
    session.chunk(0, timed(1, 1.0, ("So,", 1.0, 1.3), ("yes.", 1.4, 1.9)), b"")
    cancelled = session.receive(frame("cancel"), sent=1.35)
    assert cancelled[-2:] == [
        core.Emit({"type": "cancelled", "utterance": "u0", "heard_s": 1.35, "heard_text": 'well "I think" so:',
                   "heard_from": "sent"}),
        core.Emit({"type": "cancelled", "utterance": None, "heard_s": 0.0, "heard_text": "", "heard_from": "sent"})]


def test_a_playout_report_is_what_was_heard_but_never_past_what_was_sent() -> None:
    session = new_core(transport="webrtc", configurable=False)
    session.receive(frame("speak", text="one two"))
    session.started(0, "u0")
    session.chunk(0, timed(0, 0.0, ("One", 0.0, 0.4), ("two.", 0.5, 0.9)), b"")
    assert session.audio_ended(0, {"audio_seconds": 1.0})[0].event["heard_from"] == "track"  # type: ignore
    session.receive(frame("speak", text="three four"))
    session.started(1, "u1")
    session.chunk(1, timed(0, 0.0, ("Three", 0.0, 0.4), ("four.", 0.5, 0.9)), b"")
    assert session.receive(frame("playout", played=0.45), sent=0.5) == []
    [done] = session.audio_ended(1, {"audio_seconds": 1.0}, sent=1.0)
    assert (done.event["heard_s"], done.event["heard_text"], done.event["heard_from"]) == (  # type: ignore
        0.45, "three", "playout")
    session.receive(frame("speak", text="five"))
    session.started(2, "u2")
    session.chunk(2, timed(0, 0.0, ("Five.", 0.0, 0.4)), b"")
    session.receive(frame("playout", played=9.0), sent=0.3)  # past what had been sent then: what had been sent
    assert session.receive(frame("cancel"), sent=0.5)[-1].event["heard_s"] == 0.3  # type: ignore[union-attr]
    assert session.receive(frame("playout", played=-1))[0].event["code"] == "bad_message"  # type: ignore


def test_disconnect_cancels_every_queued_turn_and_nothing_follows() -> None:
    session = new_core()
    for text in ("one", "two", "three"):
        session.receive(frame("speak", text=text))
    assert session.disconnect() == [core.CancelUtterance(0), core.CancelUtterance(1), core.CancelUtterance(2)]
    assert session.closed and session.queued == []
    assert session.receive(frame("speak", text="four")) == [] and session.disconnect() == []


def test_a_refused_start_forgets_the_turn() -> None:
    session = new_core()
    session.receive(frame("text", text="Hi"))
    assert session.start_failed(0, "engine_unavailable", "away") == [core.Emit(
        {"type": "error", "code": "engine_unavailable", "message": "away"})]
    assert session.queued == []
    assert session.receive(frame("text", text="Hi"))[0] == core.StartUtterance(1, "default")


def test_a_failed_utterance_is_an_error_naming_it() -> None:
    session = new_core()
    session.receive(frame("speak", text="Hi"))
    session.started(0, "u0")
    [error] = session.failed(0, "unknown_voice", "no such voice")
    assert error.event == {"type": "error", "code": "unknown_voice", "message": "no such voice",  # type: ignore
                           "utterance": "u0"}
    assert session.queued == [] and session.failed(0, "x", "y") == []


def test_config_sets_the_format_only_where_the_sink_takes_one() -> None:
    assert new_core().receive(frame("config", format="mulaw", voice="amy")) == [core.ConfigureSink("mulaw", 8000)]
    assert new_core().receive(frame("config", sample_rate=16000)) == [core.ConfigureSink("pcm_s16le", 16000)]
    fixed = new_core(configurable=False, transport="webrtc")
    [refusal] = fixed.receive(frame("config", format="mulaw"))
    assert refusal.event["code"] == "bad_config" and "webrtc" in refusal.event["message"]  # type: ignore[union-attr]
    assert fixed.receive(frame("config", voice="amy")) == [] and fixed.voice == "amy"


def test_ready_lists_the_formats_and_rates_config_takes_only_where_the_sink_takes_one() -> None:
    [ready] = new_core().greeting(None)
    formats = ready.event["formats"]  # type: ignore[union-attr]
    assert formats == {"pcm_s16le": [8000, 16000, 22050, 24000, 32000, 44100, 48000], "mulaw": [8000]}
    for name, rates in formats.items():
        for rate in rates:  # each one is taken
            taken = new_core().receive(frame("config", format=name, sample_rate=rate))
            assert taken == [core.ConfigureSink(name, rate)]
    [fixed] = new_core(configurable=False, transport="webrtc").greeting(None)
    assert "formats" not in fixed.event  # type: ignore[union-attr]


def test_malformed_frames_are_errors() -> None:
    session = new_core()
    assert session.receive(b"\x00")[0].event["code"] == "bad_message"  # type: ignore[union-attr]
    assert session.receive(frame("shout"))[0].event["code"] == "unknown_type"  # type: ignore[union-attr]


# The adapter, with a fake engine and sink.

class FakeUtterance:
    span = NO_SPAN

    def __init__(self, uid: str) -> None:
        self.id = uid
        self.texts: list[str] = []
        self.ended = self.cancelled = self.finished = False
        self.playouts: list[float] = []
        self._events: asyncio.Queue[Chunk | Done | EngineRequestError] = asyncio.Queue()

    async def text(self, text: str) -> None:
        self.texts.append(text)

    async def flush(self) -> None:
        pass

    async def end(self) -> None:
        self.ended = True

    async def playout(self, played: float) -> None:
        self.playouts.append(played)

    async def cancel(self) -> None:
        if not self.finished:
            self.cancelled = self.finished = True

    async def events(self):
        while True:
            event = await self._events.get()
            if isinstance(event, EngineRequestError):
                self.finished = True
                raise event
            yield event
            if isinstance(event, Done):
                self.finished = True
                return

    def speak(self, chunks: int, *, done: bool = True) -> None:
        """The engine's answer: ``chunks`` chunks of 0.5 s each, then (unless not ``done``) done."""
        for seq in range(chunks):
            self._events.put_nowait(Chunk(header(seq), bytes(24000)))
        if done:
            self.done(chunks)

    def done(self, chunks: int) -> None:
        self._events.put_nowait(Done(self.id, chunks=chunks, audio=0.5 * chunks, gen_time=0.1 * chunks))

    def fail(self, code: str) -> None:
        self._events.put_nowait(EngineRequestError(code, "the engine says no"))


class FakeEngine:
    ready = EngineReady(engine="fake", device="cpu", dtype="float32", weights="none", watermark=True)

    def __init__(self) -> None:
        self.utterances: list[FakeUtterance] = []
        self.available = True

    async def start(self, voice: str, reading: Reading = Reading(), span: Span = NO_SPAN) -> FakeUtterance:
        if not self.available:
            raise EngineUnavailable("the engine worker is not connected")
        utterance = FakeUtterance(f"u{len(self.utterances)}")
        self.utterances.append(utterance)
        return utterance


class FakeSink(AudioSink):
    def __init__(self, *, configurable: bool = True, paced: bool = False) -> None:
        self.configurable = configurable
        self.paced = paced
        self.calls: list[str] = []
        self.runs_dry = 0

    async def begin(self) -> None:
        self.calls.append("begin")

    async def write(self, pcm: bytes) -> None:
        self.calls.append(f"write {len(pcm)}")

    async def end(self) -> None:
        self.calls.append("end")
        if self.paced:
            self.runs_dry += 1
            await asyncio.sleep(0.3)  # played out in real time

    async def clear(self) -> None:
        self.calls.append("clear")

    def configure(self, fmt: str, sample_rate: int) -> None:
        self.calls.append(f"configure {fmt} {sample_rate}")

    def played_seconds(self) -> float | None:
        return 0.25 if self.paced else None

    def underruns(self) -> int | None:
        return self.runs_dry if self.paced else None


class Client:
    """A session over the fake engine and sink, and the events its client received."""

    def __init__(self, sink: FakeSink | None = None) -> None:
        self.engine = FakeEngine()
        self.sink = sink or FakeSink()
        self.metrics = Metrics()
        state = GatewayState(GatewaySettings(max_text_chars=100), self.engine, self.metrics,  # type: ignore[arg-type]
                             SessionRegistry(4, self.metrics),
                             PromptCache(CacheSettings(memory_mib=0), self.engine, lambda: False, self.metrics))  # type: ignore[arg-type]
        self.registry = state.sessions
        self.events: list[dict] = []
        self.session = Session(state, self.sink, self._send, transport="ws")

    async def _send(self, event: dict) -> None:
        self.events.append(event)

    async def until(self, kind: str, count: int = 1) -> None:
        async with asyncio.timeout(5):
            while sum(e["type"] == kind for e in self.events) < count:
                await asyncio.sleep(0.005)

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["type"] == kind]

    def counted(self, outcome: str) -> float:
        return self.metrics.utterances.labels("ws", outcome)._value.get()


async def test_open_greets_and_a_spoken_utterance_goes_to_the_sink_then_done() -> None:
    client = Client()
    await client.session.open()
    assert client.events[0]["type"] == "ready" and client.events[0]["engine"]["engine"] == "fake"
    assert len(client.registry) == 1
    await client.session.handle_text(frame("speak", text="Hello there."))
    [utterance] = client.engine.utterances
    assert utterance.texts == ["Hello there."] and utterance.ended
    utterance.speak(2)
    await client.until("done")
    assert [e["type"] for e in client.events[1:]] == ["chunk", "chunk", "done"]
    assert client.sink.calls == ["begin", "write 24000", "write 24000", "end"]
    done = client.of("done")[0]
    assert done["utterance"] == "u0" and done["chunks"] == 2 and done["audio_seconds"] == 1.0 and done["rtf"] == 5.0
    assert done["ttfa"] is not None and "underruns" not in done  # the sink does not pace playout
    assert client.counted("done") == 1
    await client.session.close()
    assert len(client.registry) == 0


async def test_turns_are_sent_in_order_whatever_order_the_engine_answers() -> None:
    client = Client()
    await client.session.handle_text(frame("speak", text="First."))
    await client.session.handle_text(frame("speak", text="Second."))
    first, second = client.engine.utterances
    second.speak(2)  # the second is ready first: it waits for the first to be sent
    await asyncio.sleep(0.05)
    assert client.events == []
    first.speak(1)
    await client.until("done", 2)
    assert [(e["type"], e["utterance"]) for e in client.events] == [
        ("chunk", "u0"), ("done", "u0"), ("chunk", "u1"), ("chunk", "u1"), ("done", "u1")]
    await client.session.close()


async def test_cancel_stops_the_engine_for_every_turn_and_the_session_goes_on() -> None:
    client = Client()
    await client.session.handle_text(frame("speak", text="One."))
    await client.session.handle_text(frame("text", text="Two"))
    await client.session.handle_text(frame("cancel"))
    assert all(u.cancelled for u in client.engine.utterances)
    assert client.sink.calls == ["clear"]
    assert [e["utterance"] for e in client.of("cancelled")] == ["u0", "u1"] and client.counted("cancelled") == 2
    await client.session.handle_text(frame("speak", text="Three."))
    client.engine.utterances[-1].speak(1)
    await client.until("done")
    assert client.of("done")[0]["utterance"] == "u2"
    await client.session.close()


async def test_disconnect_with_queued_turns_leaves_no_engine_work_behind() -> None:
    client = Client()
    await client.session.open()
    for n in range(4):
        await client.session.handle_text(frame("speak", text=f"Number {n}."))
    await client.session.handle_text(frame("text", text="and more"))
    client.engine.utterances[0].speak(1, done=False)  # being sent; the others wait their turn
    await client.until("chunk")
    await client.session.close()
    assert [u.cancelled for u in client.engine.utterances] == [True] * 5
    assert len(client.registry) == 0
    sent = len(client.events)
    for utterance in client.engine.utterances:
        utterance.speak(1)  # too late: nobody listens
    await asyncio.sleep(0.05)
    assert len(client.events) == sent
    assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]


async def test_an_engine_that_is_away_refuses_the_turn_and_a_later_one_works() -> None:
    client = Client()
    client.engine.available = False
    await client.session.handle_text(frame("speak", text="Hello."))
    assert [(e["type"], e["code"]) for e in client.events] == [("error", "engine_unavailable")]
    assert client.session.core.queued == []
    client.engine.available = True
    await client.session.handle_text(frame("speak", text="Hello."))
    client.engine.utterances[0].speak(1)
    await client.until("done")
    await client.session.close()


async def test_an_utterance_the_engine_fails_is_an_error_and_the_next_turn_still_plays() -> None:
    client = Client()
    await client.session.handle_text(frame("speak", text="One.", voice="nobody"))
    await client.session.handle_text(frame("speak", text="Two.", voice="default"))
    first, second = client.engine.utterances
    first.fail("unknown_voice")
    second.speak(1)
    await client.until("done")
    error = client.of("error")[0]
    assert error["code"] == "unknown_voice" and error["utterance"] == "u0" and client.counted("error") == 1
    assert client.of("done")[0]["utterance"] == "u1"
    await client.session.close()


async def test_a_paced_sink_gets_playout_reports_sent_to_the_engine_and_underruns_in_done() -> None:
    client = Client(FakeSink(configurable=False, paced=True))
    await client.session.handle_text(frame("config", format="mulaw"))
    assert client.of("error")[0]["code"] == "bad_config"
    await client.session.handle_text(frame("speak", text="Hello."))
    [utterance] = client.engine.utterances
    utterance.speak(1, done=False)
    await client.until("chunk")
    while len(utterance.playouts) < 2:  # the engine is still generating: the listener's position is reported
        await asyncio.sleep(0.01)
    utterance.done(1)
    await client.until("done")
    assert utterance.playouts[:2] == [0.0, 0.25]  # nothing heard before the first audio, then the sink's position
    assert client.of("done")[0]["underruns"] == 1
    assert client.metrics.underruns.labels("ws")._value.get() == 1  # cbf_underruns_total
    await client.session.close()


async def test_a_turn_queued_behind_another_is_reported_unheard_so_the_engine_pauses_it() -> None:
    client = Client(FakeSink(configurable=False, paced=True))
    await client.session.handle_text(frame("speak", text="One."))
    await client.session.handle_text(frame("speak", text="Two."))
    first, second = client.engine.utterances
    first.speak(1, done=False)
    second.speak(1, done=False)  # generated ahead while the first plays
    await client.until("chunk")
    while len(second.playouts) < 2 or len(first.playouts) < 2:
        await asyncio.sleep(0.01)
    assert set(second.playouts) == {0.0} and first.playouts[1] == 0.25
    await client.session.close()


async def test_config_reaches_a_configurable_sink() -> None:
    client = Client()
    await client.session.handle_text(frame("config", format="pcm_s16le", sample_rate=16000))
    assert client.sink.calls == ["configure pcm_s16le 16000"] and client.events == []


@pytest.mark.parametrize("kind", ["text", "speak"])
async def test_text_over_the_limit_is_refused_and_counted(kind: str) -> None:
    client = Client()
    await client.session.handle_text(frame(kind, text="x" * 101))
    assert client.of("error")[0]["code"] == "text_too_long" and client.engine.utterances == []
    assert client.metrics.errors.labels("text_too_long")._value.get() == 1
