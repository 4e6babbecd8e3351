"""The engine worker process: one model on one device, many utterances from many gateways.

Each gateway holds one WebSocket to the worker (engine protocol v1, engine/protocol.py). Utterances run as asyncio
tasks; the planner decides what to generate next. Generation runs on a single device thread, most urgent chunk first;
a batching engine (Turbo) instead decodes every utterance's chunk together token by token on its own thread, and only
its second stage (tokens to audio) goes through the device thread, chunks that finish close together in one call.
Every chunk is joined cleanly and watermarked before it leaves this process.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import dataclasses
import hmac
import logging
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from http import HTTPStatus
from typing import Any, Awaitable, Callable, Sequence

import numpy as np
from websockets.asyncio.server import ServerConnection, serve, unix_serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from engine import device_errors, heap, protocol
from engine.cost import CostModel
from engine.engines.base import BatchingEngine, Cancelled, Engine, EngineError, RemoteEngine
from engine.joins import Joiner, to_int16
from engine.gpu_utilization import UtilizationReader, card_id
from engine.gpu_utilization import moved as utilization_moved
from engine.placement import GIB, Card, Need, chosen_line, device_memory, moved
from engine.planner import ChunkPlanner, PlannedChunk, PlannerConfig, PlannerError
from engine.protocol import (LEXICON_NAME, MAX_SPEED, MIN_SPEED, AddLexicon, AddVoice, Cancel, Chunk, ChunkHeader,
                             DeleteLexicon, DeleteVoice, Done, End, EngineReady, Error, Flush, GetLexicon, GetVoice,
                             ListLexicons, ListVoices, Playout, ProtocolError, Result, SetLoaded, Start, Stored,
                             StoreRequest, Text)
from engine.residency import LOADED, ParkedEngine, Residency, release_memory
from engine.scheduler import DeviceQueue, Gathered
from engine import slices
from engine.settings import DEFAULT_VOCODE_WINDOW_S, EngineSettings
from engine.traces import NO_SPAN, NO_TRACES, Span
from engine.text import WORD_JOINER, BoundaryKind
from engine.voices import VoiceStore, voice_key
from engine.watermark import Watermarker
from engine.speech_text.lexicon import Lexicon, LexiconError, LexiconNotFound, LexiconStore
from engine.speech_text.reader import Reader, Stretch
from engine.speech_text.ssml import MAX_BREAK_S as MAX_PAUSE_S
from engine.speed import stretch, stretched_time
from engine.word_timing import chunk_words, word_offsets

log = logging.getLogger("chatterbox_fast.engine")
MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # voice uploads travel as one binary frame
MAX_TEXT_CHARS = 20000  # per utterance, a backstop behind the gateway's own limit
VOICE_UPLOAD_SLACK_S = 1.0  # a clone waits behind listeners with less than this much audio in hand
DEFAULT_LEXICON = "default"  # the lexicon every utterance is read with, where the server holds one
MAX_COST_MODELS = 256  # voices whose learnt generation cost is kept
BACKEND_PROBE_S = 5.0  # an engine's server quiet this long is asked whether it is there
BACKEND_RETRY_S = 1.0  # ...and this often while it is down
BACKEND_POLL_S = 0.25  # how often its state (as its requests leave it) is looked at
DEVICE_MEMORY_POLL_S = 5.0  # how often a CUDA worker's memory is looked at
PROMPT_CACHE_POLL_S = 1.0  # how often the prompt cache's figures are looked at (and at most re-announced)
ENGINE_SERVICE = "chatterbox-fast-engine"  # its traces' service.name (--otlp-endpoint)

Send = Callable[[str | bytes], Awaitable[None]]
WordStarts = list[tuple[int, float]] | None  # (character index, seconds) of each word, where the engine knows them


@dataclass
class Synthesizer:
    """The two stages of a chunk. Synthesis runs on the device queue (one at a time, most urgent first); the joins and
    the watermark run on a thread of their own, so the device can start another utterance's chunk meanwhile."""

    engine: Engine
    watermarker: Watermarker
    vocode_window_s: float = DEFAULT_VOCODE_WINDOW_S
    device: DeviceQueue = field(default_factory=DeviceQueue)
    post: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="watermark"))
    vocoder: Gathered | None = field(init=False, default=None)  # a batching engine's second stage, chunks gathered

    def __post_init__(self) -> None:
        if isinstance(self.engine, BatchingEngine):
            self.vocoder = Gathered(self.device, self._vocode_batch, self.engine.max_vocode_batch,
                                    self.vocode_window_s)

    def _vocode_batch(self, items: Sequence[tuple[Any, Any]]) -> list[np.ndarray]:
        assert isinstance(self.engine, BatchingEngine)
        return self.engine.vocode_batch(items)

    def speak(self, text: str, voice: Any, cancel: threading.Event) -> tuple[np.ndarray, WordStarts]:
        if cancel.is_set():
            raise Cancelled()
        return self.engine.synthesize_timed(text, voice, cancel)

    def finish(self, wav: np.ndarray, joiner: Joiner, previous: BoundaryKind | None, speed: float = 1.0,
               pause_s: float | None = None, span: Span = NO_SPAN) -> np.ndarray:
        """Stretched to ``speed``, joined (after ``pause_s`` if the text asked for one), then watermarked: PerTh
        goes on what the listener hears. ``span``: the chunk's, each stage a span under it."""
        with span.child("joins", speed=speed):
            wav = stretch(wav, speed, self.engine.sample_rate)
            wav = joiner.process(wav, self.engine.sample_rate, previous, pause_s)
        with span.child("watermark"):
            return self.watermarker.apply(wav, self.engine.sample_rate)

    def chunk(self, text: str, voice: Any, joiner: Joiner, previous: BoundaryKind | None,
              cancel: threading.Event) -> np.ndarray:
        """Both stages in the calling thread (warm-up and calibration)."""
        return self.finish(self.speak(text, voice, cancel)[0], joiner, previous)

    async def generate(self, text: str, voice: Any, cancel: threading.Event,
                       buffered: float) -> tuple[np.ndarray, WordStarts]:
        """A chunk's raw audio and its word starts where the engine knows them; ``buffered`` is the audio its
        listener has in hand (its deadline)."""
        engine = self.engine
        if not isinstance(engine, BatchingEngine):
            return await self.run(self.speak, text, voice, cancel, buffered=buffered)
        deadline = time.monotonic() + buffered
        tokens = await asyncio.wrap_future(engine.submit_tokens(text, voice, cancel, deadline))
        if cancel.is_set():
            raise Cancelled()
        assert self.vocoder is not None
        return await asyncio.wrap_future(self.vocoder.submit(deadline, (tokens, voice))), None

    def watched(self) -> list[Any]:
        """What runs device calls, each with ``busy_since`` (engine/watchdog.py): the device queue, and a batching
        engine, whose decode steps run on its own thread. Nothing for an engine in another server: each request to
        it has its own timeout."""
        if isinstance(self.engine, RemoteEngine):
            return []
        return [self.device, _EngineClock(self)] if isinstance(self.engine, BatchingEngine) else [self.device]

    async def run(self, fn: Callable[..., Any], *args: Any, buffered: float = 0.0) -> Any:
        """Run on the device thread; ``buffered`` is the audio the waiting listener has in hand (its slack)."""
        return await asyncio.wrap_future(self.device.submit(time.monotonic() + buffered, fn, *args))

    async def after(self, wav: np.ndarray, joiner: Joiner, previous: BoundaryKind | None, speed: float = 1.0,
                    pause_s: float | None = None, span: Span = NO_SPAN) -> np.ndarray:
        return await asyncio.get_running_loop().run_in_executor(self.post, self.finish, wav, joiner, previous, speed,
                                                                pause_s, span)


class _EngineClock:
    """A batching engine's ``busy_since``, read through the synthesizer: whichever engine is loaded now (the watchdog
    holds no reference to one that was unloaded)."""

    def __init__(self, synth: Synthesizer) -> None:
        self.synth = synth

    @property
    def busy_since(self) -> float | None:
        return getattr(self.synth.engine, "busy_since", None)


class Utterance:
    """One utterance: text in, planned chunks generated one by one, chunks out."""

    def __init__(self, uid: str, voice: str, worker: "Worker", send: Send,
                 latency: str | float | None = None, normalize: str | None = None,
                 speed: float | None = None, lexicon: Lexicon | None = None, traceparent: str | None = None,
                 locale: str | None = None, lead: float | None = None) -> None:
        """``traceparent``: the gateway's span, which this utterance's spans continue (with --otlp-endpoint);
        ``lead``: the most audio generated ahead of what the client has taken, past what the longest chunk needs
        (None: the planner's default)."""
        self.id = uid
        self.key = (send, uid)  # ids are the gateway's choice, unique only on its own connection
        self.voice = voice
        self.worker = worker
        self.send = send
        self.latency = latency or "balanced"
        budget = worker.settings.latency_budget(worker.synth.engine.info.device, latency)
        self.speed = speed or 1.0
        config = dataclasses.replace(worker.planner_config, first_audio_target_s=budget, speed=self.speed,
                                     **({} if lead is None else {"max_lead_s": lead}))
        self.planner = ChunkPlanner(config, worker.cost_model(voice))
        self.reader = Reader(normalize, lexicon, locale)  # the caller's text as it is spoken, and the way back
        self.spoken = ""  # what the reader gave the planner: chunks' start and end are offsets in it
        self._rates: list[tuple[int, float]] = [(0, 1.0)]  # (offset in spoken, SSML rate from there on)
        self._pauses: list[tuple[int, float]] = []  # (offset in spoken, seconds of silence asked for there)
        self.cancel_event = threading.Event()
        self.wakeup = asyncio.Event()
        self.chars = 0
        self.task: asyncio.Task[None] | None = None
        self._held: list[tuple[float, bytes]] = []  # chunks generated while first audio is held back (a slow
        # engine), each with its offset (seconds into the utterance)
        self._due: collections.deque[tuple[float, bytes]] = collections.deque()  # pieces (engine/slices.py) not
        # sent yet: each goes once its offset is within the lead of what the client has taken
        self._releaser: asyncio.Task[None] | None = None
        self._sending = asyncio.Lock()  # chunks leave in order: the releaser's held ones before any later one
        self.first_sent: float | None = None  # when the first chunk was sent (monotonic)
        info = worker.synth.engine.info
        self.span = worker.traces.span("engine.utterance", traceparent, voice=voice, engine=info.name,
                                       device=info.device, latency=str(self.latency), first_audio_target_s=budget,
                                       **{"utterance.id": uid})

    def append(self, text: str) -> None:
        self.chars += len(text)
        if self.chars > MAX_TEXT_CHARS:
            raise ProtocolError(f"utterance longer than {MAX_TEXT_CHARS} characters", "text_too_long")
        if self.planner.ended:
            raise ProtocolError("text after the end of the utterance", "ended")
        self._plan(self.reader.feed(text))
        self.wakeup.set()

    def flush(self) -> None:
        self._plan(self.reader.flush())
        self.planner.flush()
        self.wakeup.set()

    def end(self) -> None:
        self._plan(self.reader.flush(final=True))
        self.planner.end()
        self.wakeup.set()

    def _plan(self, stretches: list[Stretch]) -> None:
        """The reader's spoken text to the planner: no chunk spans a change of rate or an asked-for pause."""
        for part in stretches:
            if part.rate != self._rates[-1][1]:
                self.planner.flush()
                self._rates.append((len(self.spoken), part.rate))
            self.spoken += part.text
            self.planner.append(part.text)
            if part.pause_after:
                self.planner.flush()
                self._pauses.append((len(self.spoken), part.pause_after))

    def _chunk_reading(self, planned: PlannedChunk, previous: PlannedChunk | None) -> tuple[float, float | None]:
        """The speed ``planned`` is spoken at (the utterance's times SSML's rate, within the protocol's range), and the
        pause asked for before it (None: the joins' own)."""
        rate = next(r for at, r in reversed(self._rates) if at <= planned.start)
        since = previous.end if previous else 0
        asked = [s for at, s in self._pauses if since <= at <= planned.start]
        speed = min(MAX_SPEED, max(MIN_SPEED, self.speed * rate))
        return speed, min(MAX_PAUSE_S, sum(asked)) if asked else None

    def playout(self, played: float) -> None:
        self.planner.on_playout(played, time.monotonic())
        self.wakeup.set()

    def cancel(self) -> None:
        self.cancel_event.set()
        if self.task:
            self.task.cancel()

    async def run(self) -> None:
        synth = self.worker.synth
        started = time.monotonic()
        residency = self.worker.residency
        using = False
        try:
            reload_s = await residency.use()  # an unloaded model is loaded again first (its first audio pays that)
            using = True
            if reload_s is not None:
                self.span.event("reloaded", reload_s=reload_s)
            with self.span.child("voice"):
                voice = await synth.run(self.worker.voices.conditionals, self.voice)
            joiner = Joiner()
            previous: PlannedChunk | None = None
            seq, offset, gen_total = 0, 0.0, 0.0  # seq: chunks as sent (a long one may go in pieces)
            while True:
                waiting = time.time_ns()
                planned = await self._next_chunk()
                if planned is None:
                    break
                with self.span.child("chunk", waiting, seq=seq, chars=len(planned.text),
                                     boundary=planned.boundary.name.lower()) as chunk:
                    chunk.text("text", planned.text)
                    chunk.child("plan", waiting, buffered_s=round(self.planner.buffered(time.monotonic()), 3)).end()
                    duration, gen_time, pieces = await self._say(planned, previous, voice, joiner, seq, offset,
                                                                 chunk)
                seq, offset, gen_total, previous = seq + pieces, offset + duration, gen_total + gen_time, planned
            if seq == 0:
                raise EngineError("the utterance ended without any text to speak", "empty_text")
            await self._release()  # everything is generated: nothing is held back any longer
            await self._send_rest()
            async with self._sending:
                first = self.first_sent - started if self.first_sent is not None else None
                delay = self.planner.start_delay
                await self.send(protocol.encode(Done(self.id, seq, round(offset, 4), round(gen_total, 4),
                                                     round(first, 4) if first is not None else None,
                                                     latency=self.latency,
                                                     first_audio_s=self.planner.config.first_audio_target_s,
                                                     start_delay=None if delay is None else round(delay, 4),
                                                     reload_s=reload_s)))
            self.span.set(chunks=seq, audio_s=round(offset, 4), gen_s=round(gen_total, 4),
                          first_chunk_s=None if first is None else round(first, 4),
                          start_delay_s=None if delay is None else round(delay, 4))
        except (Cancelled, asyncio.CancelledError):
            self.span.event("cancelled")
        except EngineError as exc:
            self.span.end(error=exc.code)
            await self._error(exc.code, str(exc))
        except Exception as exc:  # a failure in one utterance never takes the worker down
            log.exception("utterance %s failed", self.id)
            self.span.end(error="engine_error")
            device_errors.check(exc)  # unless the device is gone for good (the watermark's CUDA calls, say)
            await self._error("engine_error", f"{type(exc).__name__}: {exc}")
        finally:
            if using:
                residency.done()
            self.span.end()
            if self._releaser is not None:
                self._releaser.cancel()

    async def _say(self, planned: PlannedChunk, previous: PlannedChunk | None, voice: Any, joiner: Joiner, seq: int,
                   offset: float, span: Span) -> tuple[float, float, int]:
        """Generate, join, watermark and send chunk ``seq`` (``offset`` seconds into the utterance); returns its
        seconds of audio and of generation, and the pieces it is sent in (one unless it reaches past the lead)."""
        synth = self.worker.synth
        t0 = time.monotonic()
        with span.child("generate"):
            raw, starts = await synth.generate(planned.text, voice, self.cancel_event, self.planner.buffered(t0))
        speed, pause = self._chunk_reading(planned, previous)
        wav = await synth.after(raw, joiner, previous.boundary if previous else None, speed, pause, span)
        if starts and speed != 1.0:
            starts = [(index, stretched_time(at, speed)) for index, at in starts]
        now = time.monotonic()
        gen_time = now - t0
        duration = len(wav) / synth.engine.sample_rate
        self.planner.on_generated(planned, gen_time=gen_time, audio_seconds=duration, now=now)
        words, timing = chunk_words(planned.text, joiner.placement, starts, duration)
        spans = self._word_spans(planned, len(words))
        header = ChunkHeader(self.id, seq, planned.text, round(offset, 4), round(duration, 4), round(gen_time, 4),
                             words=[{**w.later(offset).as_json(), "span": where} for w, where in zip(words, spans)],
                             timing=timing, span=list(self.reader.source(planned.start, planned.end)))
        pcm = to_int16(wav)
        taken = self.planner.taken
        pieces = [Chunk(header, pcm)] if taken is None or offset + duration - taken <= self.planner.lead_limit() \
            else slices.cut(header, pcm)
        await self._deliver([(piece.header.offset, protocol.encode(piece)) for piece in pieces])
        span.set(audio_s=round(duration, 4), gen_s=round(gen_time, 4), pieces=len(pieces))
        return duration, gen_time, len(pieces)

    async def _next_chunk(self) -> PlannedChunk | None:
        """The next chunk to generate, once the text and the listener's buffer call for one; None once every chunk
        is planned."""
        while True:
            await self._send_due()
            shared = len(self.worker.utterances) > 1  # others wait for the device too: keep chunks short
            cap = self.worker.settings.shared_chunk_s if shared else None
            planned = self.planner.next_chunk(time.monotonic(), cap)
            if planned is not None or self.planner.finished:
                return planned
            await self._sleep_until_needed()

    def _word_spans(self, planned: PlannedChunk, count: int) -> list[list[int]]:
        """The caller's characters each of the chunk's ``count`` timed words speaks for. The planner's text of a chunk
        has the same words as its timed text (punc_norm only changes a capital and ends a sentence); where it does
        not (a full stop after a closing tag is a word of its own), the words past the planner's take the chunk's."""
        whole = list(self.reader.source(planned.start, planned.end))
        found = [list(self.reader.word_span(planned.start + a, planned.start + b))
                 for a, b in word_offsets(self.spoken[planned.start:planned.end].replace(WORD_JOINER, " "))]
        return (found + [whole] * count)[:count]

    async def _deliver(self, pieces: list[tuple[float, bytes]]) -> None:
        """Send a chunk's pieces (each with its offset) as far as the lead allows, or hold them while the planner holds
        first audio back (until ``release_at``)."""
        planner = self.planner
        if planner.holding:
            self._held += pieces
            at = planner.release_at(time.monotonic())
            if at is not None and at > time.monotonic():
                if self._releaser is not None:
                    self._releaser.cancel()  # still asleep: holding is cleared before the releaser sends
                self._releaser = asyncio.create_task(self._release(at))
                return
            await self._release()
            return
        self._due += pieces
        await self._send_due()

    async def _send_due(self) -> None:
        """Send the pieces whose start lies within the lead of what the client has taken (all of them where it does
        not report), in order: a client that stops taking audio is sent no more than the lead and one piece."""
        async with self._sending:
            while self._due and not self.planner.holding:
                taken = self.planner.taken
                if taken is not None and self._due[0][0] - taken > self.planner.lead_limit():
                    return  # playout reports wake the utterance up (_sleep_until_needed), and it comes back here
                await self._send_chunk(self._due.popleft()[1])

    async def _send_rest(self) -> None:
        """Every piece still due, each as the lead allows (woken by the playout reports, looking again each second)."""
        while self._due:
            await self._send_due()
            if self._due:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wakeup.wait(), 1.0)
                self.wakeup.clear()

    async def _release(self, at: float | None = None) -> None:
        """At ``at`` (now if None): playback starts, and the held chunks go out in order."""
        if at is not None:
            await asyncio.sleep(max(0.0, at - time.monotonic()))
        if not self.planner.holding:
            return
        self.planner.release(time.monotonic())
        held, self._held = self._held, []
        if self.planner.start_delay:
            log.info("utterance %s: first audio held back %.2f s (the engine is slower than real time)", self.id,
                     self.planner.start_delay)
        self._due.extendleft(reversed(held))  # before any later piece, and paced as they are
        await self._send_due()
        self.wakeup.set()  # the planner plans by the buffer now

    async def _send_chunk(self, frame: str | bytes) -> None:
        if self.first_sent is None:
            self.first_sent = time.monotonic()
            self.span.event("first_send", held_s=self.planner.start_delay)
        await self.send(frame)

    async def _sleep_until_needed(self) -> None:
        """Until text, flush, end or playout arrives, or until the planner asked to be asked again."""
        timeout = None if self.planner.wake_at is None else max(0.0, self.planner.wake_at - time.monotonic())
        try:
            await asyncio.wait_for(self.wakeup.wait(), timeout)
        except TimeoutError:
            pass
        self.wakeup.clear()

    async def _error(self, code: str, message: str) -> None:
        try:
            await self.send(protocol.encode(Error(id=self.id, code=code, message=message)))
        except ConnectionClosed:
            pass


class Worker:
    """Serves engine-protocol connections for one loaded engine."""

    def __init__(self, synth: Synthesizer, voices: VoiceStore, settings: EngineSettings,
                 calibrated: CostModel | None = None, load: Callable[[], Engine] | None = None) -> None:
        """``load``: a new engine as a cold start loads it (for a reload after an idle unload; None: never unloaded,
        as for an engine in another server)."""
        self.synth = synth
        self._calibrated = calibrated or CostModel()
        self.voices = voices
        self.settings = settings
        self.lexicons = LexiconStore(settings.lexicons_dir or settings.voices_dir / "lexicons")
        self.planner_config = PlannerConfig(
            first_chunk_min_words=settings.first_chunk_words,
            max_chars=settings.max_chunk_chars,
            safety_margin_s=settings.safety_margin_s,
            first_audio_target_s=settings.first_audio_budget(synth.engine.info.device),
            hold_slow_start=isinstance(synth.engine, RemoteEngine),
        )
        self.utterances: dict[tuple[Send, str], Utterance] = {}  # by (connection, id)
        self.traces = NO_TRACES  # --otlp-endpoint: a trace of each utterance, continuing its gateway's
        self._costs: dict[str, CostModel] = {}
        info = synth.engine.info
        self.ready = EngineReady(info.name, info.device, info.dtype, info.weights, watermark=True, notes=info.notes,
                                 decode=info.decode, decode_fallback=info.decode_fallback,
                                 vocode=info.vocode, vocode_fallback=info.vocode_fallback,
                                 prompt_cache=synth.engine.prompt_cache(),
                                 state=None if isinstance(synth.engine, RemoteEngine) else LOADED)
        self._connections: set[Send] = set()
        self._load = None if isinstance(synth.engine, RemoteEngine) else load
        self.residency = Residency(self._swap_out, self._swap_in, self._state_changed, settings.unload_after_s)
        if isinstance(synth.engine, RemoteEngine):
            self.ready = replace(self.ready, backend=synth.engine.backend())

    def placed(self, card: Card, need: Need, others: list[Card], budget_gib: float | None = None) -> None:
        """Where placement by fit put this worker (engine/placement.py), at the start or on a reload after an idle
        unload: said in the log and in its ready message (/health's ``engine.device`` and ``engine.placement``, with
        the ``--gpu-memory`` budget where one is set)."""
        why = chosen_line(card, need, others)
        log.info("%s", why)
        seen = [{"device": c.device, "uuid": c.uuid, "name": c.name, "free_gib": round(c.free / GIB, 1),
                 "total_gib": round(c.total / GIB, 1)} for c in others]
        self.ready = replace(self.ready, device=card.device,
                             placement={"device": card.device, "uuid": card.uuid, "name": card.name, "why": why,
                                        "others": seen, "budget_gib": budget_gib})

    def _swap_out(self) -> None:
        """(In a thread, nothing using the engine.) Park the engine: the voices' conditionals to the host, every
        reference the worker holds dropped, its threads closed, its memory handed back."""
        old = self.synth.engine
        self.voices.rebind(ParkedEngine(old), lambda conds: old.conditionals_to(conds, "cpu"))
        self.synth.engine = self.voices._engine
        old.close()
        del old
        release_memory()

    def _swap_in(self) -> None:
        """(In a thread.) Load and warm a new engine as a cold start does (``warmup`` runs Turbo's CUDA graphs'
        start-up self-checks: a failure refuses the load as it refuses a start), then serve it."""
        if self._load is None:
            raise EngineError("this engine cannot be loaded again", "load_failed")
        engine = self._load()
        try:
            engine.warmup()
        except BaseException:
            engine.close()
            raise
        self.voices.rebind(engine, lambda conds: engine.conditionals_to(conds, engine.info.device))
        self.synth.engine = engine

    async def _state_changed(self, state: str) -> None:
        await self._announce(replace(self.ready, state=state, prompt_cache=self.synth.engine.prompt_cache()))

    def cost_model(self, voice: str) -> CostModel:
        """Generation cost is learnt per voice (conditionals change the prompt length) across utterances. A client
        may name any voice, known or not, so only the MAX_COST_MODELS most recently used are kept; a voice forgotten
        starts again from the calibrated model."""
        key = voice_key(voice)
        model = self._costs.pop(key, None) or copy.deepcopy(self._calibrated)
        self._costs[key] = model  # the most recently used last
        if len(self._costs) > MAX_COST_MODELS:
            del self._costs[next(iter(self._costs))]
        return model

    async def handle(self, ws: ServerConnection) -> None:
        """One gateway connection; its utterances are cancelled when it goes away."""
        send: Send = ws.send  # one bound method per connection: its utterances hold this very object
        await send(protocol.encode(self.ready))
        self._connections.add(send)
        try:
            async for frame in ws:
                try:
                    await self._dispatch(frame, send)
                except (ProtocolError, PlannerError) as exc:  # a bad request fails alone; the connection goes on
                    await send(protocol.encode(Error(code=exc.code, message=str(exc))))
        except ConnectionClosed:
            pass
        finally:
            self._connections.discard(send)
            for utt in [u for u in self.utterances.values() if u.send is send]:
                utt.cancel()

    async def watch_backend(self, engine: RemoteEngine) -> None:
        """Probe an engine's server when it has been quiet for BACKEND_PROBE_S (BACKEND_RETRY_S while it is down:
        nothing else asks it then), and tell every gateway (a new ``ready``) as soon as its state changes, so that none
        starts an utterance on a server that is down, and all use it again once it is back."""
        while True:
            down = (self.ready.backend or {}).get("state") == "down"
            if engine.idle_s >= (BACKEND_RETRY_S if down else BACKEND_PROBE_S):
                await asyncio.to_thread(engine.probe)
            backend = engine.backend()
            if {k: backend[k] for k in ("state", "error")} != {k: (self.ready.backend or {}).get(k)
                                                              for k in ("state", "error")}:
                await self._announce(replace(self.ready, backend=backend))
            await asyncio.sleep(BACKEND_POLL_S)

    async def watch_prompt_cache(self) -> None:
        """Tell every gateway (a new ``ready``) when the engine's prompt cache holds other voices or bytes than it
        last said: looked at every PROMPT_CACHE_POLL_S, so at most that often however many voices come and go."""
        while True:
            await asyncio.sleep(PROMPT_CACHE_POLL_S)
            figures = self.synth.engine.prompt_cache()
            if figures != self.ready.prompt_cache and self.residency.state == LOADED:
                await self._announce(replace(self.ready, prompt_cache=figures))

    async def watch_device_memory(self, budget_gib: float | None) -> None:
        """Tell every gateway (a new ``ready``) the worker's device memory whenever a figure moved by MEMORY_STEP,
        and its card's utilisation whenever it moved by gpu_utilization.STEP: looked at every DEVICE_MEMORY_POLL_S
        (the card the worker is on now: a reload after an idle unload may place it on another)."""
        reader: UtilizationReader | None = None
        try:
            while True:
                loaded = self.residency.state == LOADED
                card = card_id(self.ready.device, self.ready.placement)
                if reader is None or reader.card != card:
                    if reader is not None:
                        reader.stop()
                    reader = UtilizationReader(card).start()
                figures = device_memory(self.ready.device, budget_gib) if loaded else None
                busy = reader.latest if loaded else None
                if moved(self.ready.memory, figures) or utilization_moved(self.ready.utilization, busy):
                    await self._announce(replace(self.ready, memory=figures, utilization=busy))
                await asyncio.sleep(DEVICE_MEMORY_POLL_S)
        finally:
            if reader is not None:
                reader.stop()

    async def _announce(self, ready: EngineReady) -> None:
        """Make ``ready`` the greeting, and send it to every gateway connected now."""
        self.ready = ready
        frame = protocol.encode(ready)
        for send in list(self._connections):
            with contextlib.suppress(ConnectionClosed):
                await send(frame)

    async def _dispatch(self, frame: str | bytes, send: Send) -> None:
        request = protocol.decode_request(frame)
        if isinstance(request, StoreRequest):
            asyncio.create_task(self._store_request(request, send))
            return
        if isinstance(request, Start):
            if (send, request.id) in self.utterances:
                raise ProtocolError(f"utterance {request.id!r} already exists", "duplicate_id")
            try:
                lexicon = self.lexicon_for(request.lexicons, request.voice)
            except EngineError as exc:
                await send(protocol.encode(Error(id=request.id, code=exc.code, message=str(exc))))
                return
            utt = Utterance(request.id, request.voice, self, send, request.latency, request.normalize, request.speed,
                            lexicon, request.traceparent, request.locale, request.lead)
            self.utterances[utt.key] = utt
            utt.task = asyncio.create_task(utt.run())
            utt.task.add_done_callback(lambda _: self._forget(utt))
            return
        utt = self.utterances.get((send, request.id))
        if utt is None:
            if isinstance(request, (Cancel, Playout)):
                return  # already finished: nothing to do
            raise ProtocolError(f"no utterance {request.id!r}", "unknown_utterance")
        match request:
            case Text() | Flush() | End():
                await self._take_text(utt, request)
            case Cancel():
                utt.cancel()
            case Playout(played=played):
                utt.playout(played)

    async def _take_text(self, utt: Utterance, request: Text | Flush | End) -> None:
        """Text for ``utt``: text it cannot take (too long, SSML that does not parse) ends it with that error."""
        try:
            match request:
                case Text(text=text):
                    utt.append(text)
                case Flush():
                    utt.flush()
                case End():
                    utt.end()
        except ProtocolError as exc:
            utt.cancel()
            self._forget(utt)
            await utt.send(protocol.encode(Error(id=utt.id, code=exc.code, message=str(exc))))

    def _forget(self, utt: Utterance) -> None:
        """``utt``'s task ended, however: also when it was cancelled before it ever ran (a Cancel, or the connection
        closing, right behind its Start), when nothing inside ``run`` executes."""
        utt.span.end()  # (one cancelled before it ever ran)
        if self.utterances.get(utt.key) is utt:
            del self.utterances[utt.key]

    def lexicon_for(self, names: list[str] | None, voice: str) -> Lexicon | None:
        """What an utterance is read with: the lexicons it names, in order, then its voice's and the server's
        ``default`` where they exist (the first to define a grapheme wins); ``unknown_lexicon`` for a name not held."""
        own = voice_key(voice)
        chosen: Lexicon | None = None
        for name in [*(names or []), *([own] if LEXICON_NAME.fullmatch(own) else []), DEFAULT_LEXICON]:
            try:
                lexicon = self.lexicons.get(name)
            except LexiconError as exc:
                if name in (names or []):
                    raise EngineError(str(exc), "unknown_lexicon") from None
                continue
            chosen = lexicon if chosen is None else chosen.then(lexicon)
        return chosen

    async def _store_request(self, request: StoreRequest, send: Send) -> None:
        reply: Result | Stored | Error
        try:
            match request:
                case ListLexicons():
                    reply = Result(request.req, lexicons=await asyncio.to_thread(self.lexicons.list))
                case DeleteLexicon(name=name):
                    await asyncio.to_thread(self.lexicons.delete, name)
                    reply = Result(request.req)
                case AddLexicon(name=name, data=data):
                    reply = Result(request.req, lexicon=await asyncio.to_thread(self.lexicons.add, name, data))
                case GetLexicon(name=name):
                    reply = Stored(request.req, await asyncio.to_thread(self.lexicons.source, name))
                case ListVoices():
                    voices = await asyncio.to_thread(self.voices.list)
                    reply = Result(request.req, voices=[asdict(v) for v in voices])
                case DeleteVoice(name=name):
                    await asyncio.to_thread(self.voices.delete, name)
                    reply = Result(request.req)
                case AddVoice(name=name, audio=audio):
                    await self.residency.use()  # its conditionals are computed on the model
                    try:
                        info = await self.synth.run(self.voices.add, name, audio, buffered=VOICE_UPLOAD_SLACK_S)
                    finally:
                        self.residency.done()
                    reply = Result(request.req, voice=asdict(info))
                case SetLoaded(loaded=True):
                    took = await self.residency.load()
                    reply = Result(request.req, state=self.residency.state, reload_s=took)
                case SetLoaded(loaded=False):
                    if self._load is None:
                        raise EngineError("this engine is not loaded here: it cannot be unloaded", "not_supported")
                    if not await self.residency.unload():
                        raise EngineError("utterances are using the model: it unloads once they end (with "
                                          "--unload-after) or when asked again", "busy")
                    reply = Result(request.req, state=self.residency.state)
                case GetVoice(name=name):
                    reply = Stored(request.req, await asyncio.to_thread(self.voices.audio, name))
        except EngineError as exc:
            reply = Error(req=request.req, code=exc.code, message=str(exc))
        except LexiconNotFound as exc:
            reply = Error(req=request.req, code="unknown_lexicon", message=str(exc))
        except LexiconError as exc:
            reply = Error(req=request.req, code="bad_lexicon", message=str(exc))
        except Exception as exc:
            log.exception("voice or lexicon request failed")
            reply = Error(req=request.req, code="engine_error", message=str(exc))
        try:
            await send(protocol.encode(reply))
        except ConnectionClosed:
            pass


CALIBRATION_TEXTS = ("Hello there.", "Thanks for calling, how can I help you today?",
                     "Your order shipped this morning and should arrive on Thursday, before noon, at the front desk.")


def calibrate(synth: Synthesizer) -> CostModel:
    """Measure this engine on this device once, so a voice's first utterance is planned from real costs rather than
    a generic prior (a wide prior makes the planner's first chunks cautiously long)."""
    model, voice = CostModel(), synth.engine.default_voice()
    for text in CALIBRATION_TEXTS:
        t0 = time.monotonic()
        wav = synth.chunk(text, voice, Joiner(), None, threading.Event())
        model.observe(len(text), time.monotonic() - t0)
        model.observe_audio(len(text), len(wav) / synth.engine.sample_rate)
    return model


def build_worker(settings: EngineSettings) -> Worker:
    """Load the watermarker first (no watermark, no start), then the engine, then warm it."""
    from engine.engines import load_engine

    watermarker = Watermarker()
    worker = worker_for(load_engine(settings), settings, watermarker)
    if not isinstance(worker.synth.engine, RemoteEngine):
        worker._load = lambda: load_engine(settings)  # a reload after an idle unload: as this cold start
    return worker


def worker_for(engine: Engine, settings: EngineSettings, watermarker: Watermarker) -> Worker:
    """Warm a loaded engine, measure its costs, and serve it (the watermarker moves to the engine's GPU)."""
    if engine.info.device.startswith("cuda"):  # mark on the GPU too: on the CPU it costs ~25 ms per audio second
        watermarker = Watermarker(device=engine.info.device)
    if engine.info.name in ("espeak", "simulated"):
        # PerTh is the only torch user then; on a busy CPU one thread is 10-20x faster than torch's default.
        import torch

        torch.set_num_threads(1)
    t0 = time.monotonic()
    engine.warmup()
    remote = isinstance(engine, RemoteEngine)
    synth = Synthesizer(engine, watermarker, settings.vocode_window_s,
                        device=DeviceQueue(threads=engine.concurrency) if remote else DeviceQueue())
    try:
        synth.chunk("Warming up.", engine.default_voice(), Joiner(), None, threading.Event())  # first calls are slow
        calibrated = calibrate(synth)
    except EngineError as exc:
        if not remote:
            raise
        log.warning("%s: starting with a generic cost model, learnt on the first utterances", exc)
        calibrated = CostModel()
    log.info("engine %s ready on %s (%s, weights: %s), warm-up %.2f s; cost %.3f s + %.4f s/char, %.3f s audio/char",
             engine.info.name, engine.info.device, engine.info.dtype, engine.info.weights, time.monotonic() - t0,
             calibrated.fixed_s, calibrated.per_char_s, calibrated.audio_per_char_s)
    return Worker(synth, VoiceStore(settings.voices_dir, engine), settings, calibrated)


def require_secret(secret: str) -> Callable[[ServerConnection, Request], Response | None]:
    """A handshake check: a connection without ``Authorization: Bearer <secret>`` is refused with 401."""
    expected = f"Bearer {secret}".encode()

    def check(connection: ServerConnection, request: Request) -> Response | None:
        given = request.headers.get("Authorization", "").encode()
        if hmac.compare_digest(given, expected):
            return None
        return connection.respond(HTTPStatus.UNAUTHORIZED, "this worker needs its engine secret\n")

    return check


def listening_unix_socket(path: str) -> socket.socket:
    """A Unix socket that is already listening when its file appears at ``path``: bound under a temporary name in the
    same folder and renamed into place. Bound at ``path`` itself, the file would exist a moment before the socket
    listens, and whoever waits for the file (a supervisor, a test) could connect in that moment and be refused."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(temporary)
        sock.listen(100)
        os.replace(temporary, path)
    except OSError:
        sock.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return sock


async def serve_worker(worker: Worker, listen: str, stop: asyncio.Event | None = None,
                       sock: socket.socket | None = None, secret: str | None = None) -> None:
    """Listen on ``HOST:PORT`` (or ``sock``, bound to it) or ``unix:/path`` until ``stop`` is set (or forever).
    With a ``secret``, only gateways that present it may connect."""
    kwargs: dict[str, Any] = {"max_size": MAX_MESSAGE_BYTES, "ping_interval": 20, "ping_timeout": 60,
                              "process_request": require_secret(secret) if secret else None}
    if sock is not None:
        server = serve(worker.handle, sock=sock, **kwargs)
    elif listen.startswith("unix:"):
        server = unix_serve(worker.handle, sock=listening_unix_socket(listen[5:]), **kwargs)
    else:
        host, _, port = listen.rpartition(":")
        server = serve(worker.handle, host or "127.0.0.1", int(port), **kwargs)
    engine = worker.synth.engine
    watches = [asyncio.create_task(heap.trim_forever())]
    if isinstance(engine, RemoteEngine):
        watches.append(asyncio.create_task(worker.watch_backend(engine)))
    del engine  # no reference kept here: an idle unload frees it
    if worker.residency.unload_after is not None and worker._load is not None:
        watches.append(asyncio.create_task(worker.residency.watch(lambda: bool(worker.utterances))))
    if worker.ready.prompt_cache is not None:
        watches.append(asyncio.create_task(worker.watch_prompt_cache()))
    if worker.ready.device.startswith("cuda"):
        watches.append(asyncio.create_task(worker.watch_device_memory(worker.settings.gpu_memory_gib)))
    async with server:
        log.info("engine worker listening on %s (protocol v%d)", listen, protocol.PROTOCOL_VERSION)
        if not secret:
            log.warning("no --engine-secret (CBF_ENGINE_SECRET): whoever reaches %s can speak, add and delete voices",
                        listen)
        try:
            await (stop.wait() if stop else asyncio.Future())
        finally:
            for watch in watches:
                watch.cancel()
