"""One interactive client's session as a pure state machine: no sockets, no event loop, no engine.

Feed it what happened (a client frame, an utterance the engine started or refused, a chunk, the end of an utterance,
a disconnect); it answers with the actions that follow, in order: engine calls, audio-sink calls and client events.
``gateway/sessions/session.py`` is the asyncio adapter that carries them out.

A *turn* is one utterance of the session. Turns take text one at a time (the *current* turn, until ``end``), are
spoken in order, and stay queued until their audio has been sent; at most ``max_queued`` turns wait at once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from engine.protocol import SAMPLE_RATE, ChunkHeader, EngineReady, ProtocolError, Reading
from gateway import messages
from gateway.formats import WEBSOCKET_DEFAULT_FORMAT, websocket_rates
from gateway.sessions.playout_reports import PlayoutReports
from gateway.word_match import ClientWords, heard_chars, heard_text

MAX_QUEUED_UTTERANCES = 8  # per session: utterances started but not yet fully sent


# Engine calls, for one turn.
@dataclass(frozen=True)
class StartUtterance:
    """Start an engine utterance for ``turn``; report it with ``started`` (or ``start_failed``)."""

    turn: int
    voice: str
    reading: Reading = field(default_factory=Reading)  # None fields: the engine's defaults
    whole: str | None = None  # all of its text, when known at its start (a ``speak``): what the prompt cache looks up
    cache: bool = True  # whether it may come from the prompt cache


@dataclass(frozen=True)
class SendText:
    turn: int
    text: str


@dataclass(frozen=True)
class FlushText:
    turn: int


@dataclass(frozen=True)
class EndText:
    turn: int


@dataclass(frozen=True)
class CancelUtterance:
    """Stop the engine's work on ``turn`` and stop playing it."""

    turn: int


# Audio-sink calls (gateway/sink.py).
@dataclass(frozen=True)
class ConfigureSink:
    format: str
    sample_rate: int


@dataclass(frozen=True)
class BeginAudio:
    pass


@dataclass(frozen=True)
class WriteAudio:
    pcm: bytes


@dataclass(frozen=True)
class EndAudio:
    """Flush the sink; a paced sink returns once played out. Then report ``audio_ended``."""

    turn: int


@dataclass(frozen=True)
class ClearAudio:
    pass


# Client events (docs/protocol.md).
@dataclass(frozen=True)
class Emit:
    event: dict[str, Any]


Action = (StartUtterance | SendText | FlushText | EndText | CancelUtterance | ConfigureSink | BeginAudio | WriteAudio
          | EndAudio | ClearAudio | Emit)


@dataclass
class _Turn:
    key: int
    chars: int = 0
    utterance: str | None = None  # the engine's utterance id, once started
    audio_begun: bool = False
    text: ClientWords = field(default_factory=ClientWords)  # what the client sent, to spell the timed words
    words: list[dict[str, Any]] = field(default_factory=list)  # every timed word sent so far
    reported: PlayoutReports = field(default_factory=PlayoutReports)  # what the client says it played (``playout``)


@dataclass
class SessionCore:
    """The session's rules. ``configurable``: whether the sink takes a client-chosen format (``config``).
    ``heard_from``: what the sink's position is (``AudioSink.heard_from``); None: ``track`` on WebRTC, else
    ``sent``."""

    session_id: str
    transport: str
    max_text_chars: int
    configurable: bool
    voice: str = "default"
    reading: Reading = field(default_factory=Reading)  # the session's (``config``); a ``speak`` may set its own
    cache: bool = True  # the session's (``config``); a ``speak`` may say otherwise
    max_queued: int = MAX_QUEUED_UTTERANCES
    closed: bool = False
    heard_from: str | None = None
    _turns: list[_Turn] = field(default_factory=list)  # every turn not yet fully sent, in order
    _current: _Turn | None = None  # the turn taking text
    _next_key: int = 0

    @property
    def queued(self) -> list[int]:
        """The turns not yet fully sent, in order."""
        return [turn.key for turn in self._turns]

    @property
    def text(self) -> str:
        """The client's text of the turn taking text, as taken so far (refused text is not); "" when none is."""
        return self._current.text.text if self._current is not None else ""

    def greeting(self, engine: EngineReady | None) -> list[Action]:
        """The ``ready`` event, from the engine's greeting (None while no engine is connected); where the client
        chooses the wire format (``configurable``), ``formats`` says which formats and rates ``config`` takes."""
        shown = ("engine", "device", "dtype", "weights", "watermark")
        described = asdict(engine) if engine is not None else {}
        ready = {
            "type": "ready", "session": self.session_id,
            "engine": {k: described.get(k) for k in shown},
            "limits": {"max_text_chars": self.max_text_chars, "max_message_bytes": messages.MAX_MESSAGE_BYTES},
        }
        if self.configurable:
            ready["formats"] = websocket_rates()
        return [Emit(ready)]

    def receive(self, raw: str | bytes, sent: float | None = None, now: float = 0.0) -> list[Action]:
        """One client frame. A refusal is an ``error`` event; nothing a client sends ends the session. ``sent``: the
        sink's position in the turn it is playing (``AudioSink.played_seconds``), for what a ``cancel`` says was
        heard and what a ``playout`` report may claim; ``now``: a monotonic clock's (for the reports' flood limit)."""
        try:
            msg = messages.parse_message(raw)
        except ProtocolError as exc:
            return [] if self.closed else [self.error(exc.code, str(exc))]
        return self.apply(msg, sent, now)

    def apply(self, msg: messages.Message, sent: float | None = None, now: float = 0.0) -> list[Action]:
        """One message already parsed (by another protocol's adapter, gateway/elevenlabs/); as ``receive``."""
        if self.closed:
            return []
        try:
            return self._apply(msg, sent, now)
        except ProtocolError as exc:
            return [self.error(exc.code, str(exc))]

    @staticmethod
    def error(code: str, message: str, **extra: Any) -> Emit:
        return Emit({"type": "error", "code": code, "message": message, **extra})

    def _apply(self, msg: messages.Message, sent: float | None, now: float) -> list[Action]:
        match msg:
            case messages.Config():
                return self._configure(msg)
            case messages.Text(text=text):
                return self._append(text)
            case messages.Speak(text=text, voice=voice, reading=reading, cache=cache):
                if voice is not None:
                    self.voice = voice
                return self._append(text, reading, whole=True, cache=cache) + self._end()
            case messages.Flush():
                return [FlushText(self._current.key)] if self._current else []
            case messages.End():
                return self._end()
            case messages.Cancel():
                return self._cancel(sent)
            case messages.Playout(played=played, utterance=utterance):
                head = self._turns[0] if self._turns else None
                if head is not None and head.audio_begun and utterance in (None, head.utterance):
                    head.reported.report(played, sent or 0.0, now)
                return []  # else of an utterance sent whole already, or none playing yet: ignored
        raise AssertionError(f"unhandled message {msg!r}")

    def _configure(self, config: messages.Config) -> list[Action]:
        actions: list[Action] = []
        if config.format is not None or config.sample_rate is not None:
            if not self.configurable:
                raise ProtocolError(f"the {self.transport} transport negotiates its own audio format", "bad_config")
            actions.append(ConfigureSink(config.format or WEBSOCKET_DEFAULT_FORMAT, config.sample_rate or SAMPLE_RATE))
        if config.voice is not None:
            self.voice = config.voice
        if config.cache is not None:
            self.cache = config.cache
        self.reading = config.reading.over(self.reading)
        return actions

    def _append(self, text: str, reading: Reading = Reading(), *, whole: bool = False,
                cache: bool | None = None) -> list[Action]:
        """``text`` for the current turn, starting one (read as ``reading`` says, else as the session's) where none
        is. ``whole``: ``text`` is all of a new turn's (a ``speak``), so the prompt cache may say it."""
        turn = self._current
        used = turn.chars if turn else 0
        if used + len(text) > self.max_text_chars:
            raise ProtocolError(f"an utterance may have at most {self.max_text_chars} characters of text",
                                "text_too_long")
        if not text:
            return []
        actions: list[Action] = []
        if turn is None:
            if len(self._turns) >= self.max_queued:
                raise ProtocolError(f"{self.max_queued} utterances are already waiting to be spoken; wait for a "
                                    "'done' or send 'cancel'", "too_many_utterances")
            turn = self._current = _Turn(self._next_key)
            self._next_key += 1
            self._turns.append(turn)
            actions.append(StartUtterance(turn.key, self.voice, reading.over(self.reading), text if whole else None,
                                          self.cache if cache is None else cache))
        turn.chars += len(text)
        turn.text.add(text)
        actions.append(SendText(turn.key, text))
        return actions

    def _end(self) -> list[Action]:
        if self._current is None:
            return []
        turn, self._current = self._current, None
        return [EndText(turn.key)]

    def _cancel(self, sent: float | None) -> list[Action]:
        turns, self._turns, self._current = self._turns, [], None
        actions: list[Action] = [CancelUtterance(turn.key) for turn in turns]
        actions.append(ClearAudio())
        actions += [Emit({"type": "cancelled", "utterance": turn.utterance, **self._heard(turn, sent)})
                    for turn in turns]
        if not turns:  # everything had been sent already (the client may still be playing it): acknowledge anyway
            actions.append(Emit({"type": "cancelled", "utterance": None}))
        return actions

    def disconnect(self) -> list[Action]:
        """The client went away: stop the engine's work on every turn. Nothing is sent any more."""
        if self.closed:
            return []
        self.closed = True
        turns, self._turns, self._current = self._turns, [], None
        return [CancelUtterance(turn.key) for turn in turns]

    # What the engine and the sink report back.

    def started(self, key: int, utterance: str) -> None:
        """The engine started ``key``'s utterance with this id."""
        if (turn := self._find(key)) is not None:
            turn.utterance = utterance

    def start_failed(self, key: int, code: str, message: str) -> list[Action]:
        """The engine refused to start ``key``: forget the turn."""
        self._drop(key)
        return [self.error(code, message)]

    def engine_failed(self, code: str, message: str) -> list[Action]:
        """An engine call for the current text failed (the worker went away, say)."""
        return [self.error(code, message)]

    def chunk(self, key: int, header: ChunkHeader, pcm: bytes) -> list[Action]:
        """``key``'s next chunk and its 24 kHz PCM, taken for sending (its turn is at the head)."""
        turn = self._find(key)
        if turn is None:
            return []
        actions: list[Action] = []
        if not turn.audio_begun:
            turn.audio_begun = True
            actions.append(BeginAudio())
        words = turn.text.rename(header.words or [])
        turn.words += words
        actions.append(Emit({"type": "chunk", "utterance": turn.utterance, "seq": header.seq, "text": header.text,
                             **turn.text.spanned(header.span),
                             "offset": header.offset, "duration": header.duration, "gen_time": header.gen_time,
                             "words": words, "timing": header.timing or "estimated"}))
        actions.append(WriteAudio(pcm))
        return actions

    def engine_done(self, key: int) -> list[Action]:
        """The engine finished ``key``: flush the sink (the ``done`` event waits for ``audio_ended``)."""
        return [EndAudio(key)] if self._find(key) is not None else []

    def audio_ended(self, key: int, summary: dict[str, Any], sent: float | None = None) -> list[Action]:
        """``key``'s audio has all been sent: ``done``, with the utterance's figures and what was heard (``sent``:
        the sink's position at its end; None: all of ``summary["audio_seconds"]``)."""
        turn = self._drop(key)
        if turn is None:
            return []
        sent = summary.get("audio_seconds", 0.0) if sent is None else sent
        return [Emit({"type": "done", "utterance": turn.utterance, **summary, **self._heard(turn, sent)})]

    def played(self, key: int, sent: float, now: float) -> float | None:
        """Where ``key``'s client says it is now (``PlayoutReports.position``), never past ``sent``; None when it has
        not reported (or the turn is gone)."""
        turn = self._find(key)
        return turn.reported.position(sent, now) if turn is not None else None

    def _heard(self, turn: _Turn, sent: float | None) -> dict[str, Any]:
        """How far the listener got in ``turn``: the client's ``playout`` report (never past what was sent), else
        what the sink played (WebRTC: the frames the paced track sent) or sent (WebSocket). A turn that never began
        playing: nothing."""
        sent = sent if turn.audio_begun and sent is not None else 0.0
        if turn.reported.played is not None:
            seconds, source = min(turn.reported.played, sent), "playout"
        else:
            seconds, source = sent, self.heard_from or ("track" if self.transport == "webrtc" else "sent")
        chars = heard_chars(turn.words, seconds)
        return {"heard_s": round(seconds, 3), "heard_text": heard_text(turn.words, seconds), "heard_from": source,
                **({} if chars is None else {"heard_chars": chars})}

    def failed(self, key: int, code: str, message: str) -> list[Action]:
        """The engine failed ``key``'s utterance."""
        turn = self._drop(key)
        return [self.error(code, message, utterance=turn.utterance)] if turn is not None else []

    def abandoned(self, key: int) -> None:
        """Sending ``key`` broke off (the client went away mid-send): forget it without a word."""
        self._drop(key)

    def _find(self, key: int) -> _Turn | None:
        return next((turn for turn in self._turns if turn.key == key), None)

    def _drop(self, key: int) -> _Turn | None:
        turn = self._find(key)
        if turn is not None:
            self._turns.remove(turn)
        if self._current is turn:
            self._current = None
        return turn
