"""Cartesia's TTS API (``/tts/websocket``, ``/tts/bytes``, ``/tts/sse``) in terms of our sessions (pure: no sockets,
no event loop).

``parse`` reads one of their requests: a generation request (``transcript``, ``context_id``, ``continue``, ``flush``,
``voice``, ``model_id``, ``output_format``, ``add_timestamps``, ``speed`` / ``generation_config.speed``) or a cancel
(``{"context_id", "cancel": true}``). ``Contexts`` takes a socket's requests and answers with what to do: open a
context (one of our sessions, with its voice, format and timestamps fixed by its first request), give it one of our
messages (``gateway/messages.py``), mark a flush (``flush_done`` once the audio of the text before it is out),
finish it (``continue: false``: speak what was sent, then ``done``), stop it (a cancel: nothing more is sent), or say
``done`` at once (a context with nothing to speak). ``continue: true`` pieces are one utterance: the gateway's own
chunking reads across them.

The replies (``chunk``, ``timestamps``, ``flush_done``, ``done``, ``error``) carry their ``context_id`` always (pipecat
drops the connection on one without; ``null`` where a request named none); ``word_timestamps`` are seconds from the
context's start, from the engine's own word timings, spelt as the client sent the words. ``SpeechEvents`` is the same
replies as ``/tts/sse``'s events. Accepted and ignored: ``language`` (the voice speaks English), ``max_buffer_delay_ms``
(the gateway's chunk planner decides), ``add_phoneme_timestamps``, ``use_normalized_timestamps``,
``pronunciation_dict_id`` and the rest of ``generation_config``.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any

from engine.protocol import ChunkHeader, ProtocolError, Reading, check_speed
from gateway import messages
from gateway.guard.client_input import speech_text
from gateway.utterance_stream import UtteranceStats
from gateway.word_match import ClientWords

RATES = (8000, 16000, 22050, 24000, 44100, 48000)  # what their output_format lists
G711_RATE = 8000  # pcm_mulaw and pcm_alaw: telephony's rate only
ENCODINGS = {"pcm_s16le": "pcm", "pcm_f32le": "pcm_f32le", "pcm_mulaw": "mulaw", "pcm_alaw": "alaw"}  # -> ours
CONTAINERS = ("raw", "wav")
MODEL = re.compile(r"(sonic|chatterbox)([-_.][a-z0-9._-]*)?", re.IGNORECASE)  # every Sonic model and snapshot
SPEEDS = {"slowest": 0.7, "slow": 0.85, "normal": None, "fast": 1.2, "fastest": 1.4}  # their named speeds
MAX_PIECE_S = 0.5  # audio per chunk message at most (their SDK reads messages of at most 1 MiB)
SSE_CONTENT_TYPE = "text/event-stream"


class BadRequest(ProtocolError):
    """A request refused, with the context it named (None: none, or not readable)."""

    def __init__(self, message: str, code: str = "bad_message", context: str | None = None) -> None:
        super().__init__(message, code)
        self.context = context


@dataclass(frozen=True)
class AudioFormat:
    """Their ``output_format``: ``container`` (raw, wav), ``encoding`` (theirs) at ``sample_rate``."""

    container: str = "raw"
    encoding: str = "pcm_s16le"
    sample_rate: int = 24000

    @property
    def format(self) -> str:
        """Our format name (gateway/formats.py) for the encoding."""
        return ENCODINGS[self.encoding]


DEFAULT_FORMAT = AudioFormat()


@dataclass(frozen=True)
class Generation:
    context: str | None
    transcript: str = ""
    more: bool = False  # their ``continue``: more of this context's transcript follows
    flush: bool = False
    voice: str | None = None
    model: str | None = None
    format: AudioFormat | None = None
    timestamps: bool = False
    speed: float | None = None


@dataclass(frozen=True)
class CancelRequest:
    context: str


Request = Generation | CancelRequest


def parse(raw: str | bytes) -> Request:
    """One of their JSON text frames; ``BadRequest`` for anything malformed (with its ``context_id`` where one was
    readable)."""
    try:
        message = messages.json_frame(raw)
    except ProtocolError as exc:
        raise BadRequest(str(exc), exc.code) from None
    if not isinstance(message, dict):
        raise BadRequest("a message is a JSON object")
    context = message.get("context_id")
    if context is not None and not isinstance(context, str):
        raise BadRequest("field 'context_id' must be a string")
    try:
        return _request(message, context)
    except BadRequest:
        raise
    except ProtocolError as exc:
        raise BadRequest(str(exc), exc.code, context) from None


def _request(message: dict[str, Any], context: str | None) -> Request:
    if message.get("cancel") is not None:
        if message["cancel"] is not True:
            raise ProtocolError("field 'cancel' must be true")
        if context is None:
            raise ProtocolError("a cancel needs the 'context_id' it cancels")
        return CancelRequest(context)
    transcript = _typed(message, "transcript", str)
    more = _typed(message, "continue", bool)
    model = _typed(message, "model_id", str)
    if model is not None and not MODEL.fullmatch(model):
        raise ProtocolError(f"unknown model_id {model[:64]!r}: this server speaks sonic-* and chatterbox-* model "
                            "names with its own engine", "unknown_model")
    return Generation(context, speech_text(transcript or ""), bool(more), bool(_typed(message, "flush", bool)),
                      voice_name(message.get("voice")), model, audio_format(message.get("output_format")),
                      bool(_typed(message, "add_timestamps", bool)), _speed(message))


def parse_body(body: dict[str, Any]) -> Generation:
    """The body of ``/tts/bytes`` or ``/tts/sse``: one whole transcript, its voice (required) and output format
    (raw pcm_s16le at 24 kHz unless it says otherwise)."""
    context = body.get("context_id")
    if context is not None and not isinstance(context, str):
        raise ProtocolError("field 'context_id' must be a string")
    generation = _request(body, context)
    if not isinstance(generation, Generation):
        raise ProtocolError("a cancel is for the WebSocket")
    if not generation.transcript.strip():
        raise ProtocolError("transcript is empty", "bad_request")
    if generation.voice is None:
        raise ProtocolError("a request needs a 'voice'", "missing_voice")
    return Generation(context, generation.transcript, False, False, generation.voice, generation.model,
                      generation.format or DEFAULT_FORMAT, generation.timestamps, generation.speed)


def voice_object(voice: dict[str, Any]) -> dict[str, Any]:
    """One of the gateway's voices (``/v1/voices``' entry) as their voice object: its name is its id."""
    return {"id": voice["name"], "name": voice["name"], "description": "", "language": "en", "is_public": True,
            "is_owner": False, "created_at": "1970-01-01T00:00:00Z"}


def voice_name(value: Any) -> str | None:
    """Their ``voice``: a bare id, ``{"id"}`` or ``{"mode": "id", "id"}``; the id names one of the gateway's voices
    (None: not given). An embedding (a cloned voice sent inline) is refused."""
    if value is None or isinstance(value, str):
        return value or None
    if not isinstance(value, dict):
        raise ProtocolError("field 'voice' must be a voice id or an object with its 'id'")
    mode = value.get("mode", "id")
    if mode != "id":
        raise ProtocolError(f"voice mode {str(mode)[:32]!r} is not supported: give a voice id (the gateway's voices, "
                            "GET /cartesia/voices)", "unsupported_voice_mode")
    name = value.get("id")
    if not isinstance(name, str) or not name:
        raise ProtocolError("field 'voice' needs an 'id'")
    return name


def audio_format(value: Any) -> AudioFormat | None:
    """Their ``output_format`` (None: not given); ``ProtocolError`` naming what is not supported."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ProtocolError("field 'output_format' must be an object")
    container = value.get("container", "raw")
    if container not in CONTAINERS:
        raise ProtocolError(f"output_format.container must be one of {', '.join(CONTAINERS)}, not {container!r}"[:200],
                            "unsupported_output_format")
    encoding = value.get("encoding", "pcm_s16le")
    if encoding not in ENCODINGS:
        raise ProtocolError(f"output_format.encoding must be one of {', '.join(ENCODINGS)}, not {encoding!r}"[:200],
                            "unsupported_output_format")
    rate = value.get("sample_rate", 24000)
    rates = (G711_RATE,) if ENCODINGS[encoding] in ("mulaw", "alaw") else RATES
    if isinstance(rate, bool) or rate not in rates:
        raise ProtocolError(f"output_format.sample_rate for {encoding} must be one of "
                            f"{', '.join(map(str, rates))}, not {rate!r}"[:200], "unsupported_output_format")
    return AudioFormat(container, encoding, rate)


def _speed(message: dict[str, Any]) -> float | None:
    """``generation_config.speed`` (a number: their 0.6-1.5, or any speed this server speaks) or the older ``speed``
    (slow, normal, fast)."""
    config = message.get("generation_config")
    if config is not None:
        if not isinstance(config, dict):
            raise ProtocolError("field 'generation_config' must be an object")
        if config.get("speed") is not None:
            return check_speed(config["speed"])
    named = message.get("speed")
    if named is None:
        return None
    if named in SPEEDS:
        return SPEEDS[named]
    if isinstance(named, (int, float)) and not isinstance(named, bool):  # their first API: -1 (slowest) to 1
        return check_speed(round(1.0 + 0.4 * max(-1.0, min(1.0, named)), 3))
    raise ProtocolError(f"speed must be one of {', '.join(SPEEDS)} or a number, not {named!r}"[:200], "bad_speed")


def _typed(message: dict[str, Any], name: str, kind: type) -> Any:
    value = message.get(name)
    if value is not None and not isinstance(value, kind):
        raise ProtocolError(f"field {name!r} must be {'a string' if kind is str else 'true or false'}")
    return value


@dataclass(frozen=True)
class Command:
    """What the socket's requests ask of one of its contexts (each kind a subclass)."""

    context: str


@dataclass(frozen=True)
class Open(Command):
    """A new context, as its first request fixes it."""

    voice: str
    format: AudioFormat
    timestamps: bool


@dataclass(frozen=True)
class Say(Command):
    message: messages.Message


@dataclass(frozen=True)
class MarkFlush(Command):
    """The text so far was flushed: ``flush_done`` with ``flush_id`` once its audio is out."""

    flush_id: int


class Finish(Command):
    """No more input: speak what was sent, then ``done``."""


class Stop(Command):
    """A cancel: stop now; nothing more of the context is sent."""


class Done(Command):
    """``done`` for a context that had nothing to speak."""


@dataclass
class _Context:
    spoken: bool = False  # text other than blanks has arrived
    flushes: int = 0
    last: str = ""  # the last character of its text so far


@dataclass
class Contexts:
    """The contexts of one socket."""

    _open: dict[str, _Context] = field(default_factory=dict)
    _finishing: set[str] = field(default_factory=set)  # input ended, ``done`` not yet sent

    def ended(self, ctx: str) -> None:
        """``done`` went out for ``ctx`` (or an error ended it): the id is free for a new context."""
        self._open.pop(ctx, None)
        self._finishing.discard(ctx)

    def receive(self, request: Request) -> list[Command]:
        if isinstance(request, CancelRequest):
            ctx = request.context
            if self._open.pop(ctx, None) is not None or ctx in self._finishing:
                self._finishing.discard(ctx)
                return [Stop(ctx)]
            return []  # nothing there (never opened, or already done): nothing to stop
        ctx = request.context
        if ctx is None:
            raise BadRequest("a generation request needs a 'context_id'")
        if ctx in self._finishing:
            raise BadRequest(f"context {ctx[:64]!r} has had its last input (continue: false); use a new context_id",
                             "context_ended", ctx)
        out: list[Command] = []
        state = self._open.get(ctx)
        if state is None:
            if not request.more and not request.transcript.strip():  # nothing to speak (the SDK's no_more_inputs)
                return [Done(ctx)]
            if request.voice is None:
                raise BadRequest("a context's first request needs a 'voice'", "missing_voice", ctx)
            state = self._open[ctx] = _Context()
            out.append(Open(ctx, request.voice, request.format or DEFAULT_FORMAT, request.timestamps))
        if request.speed is not None:
            out.append(Say(ctx, messages.Config(reading=Reading(speed=request.speed))))
        text = request.transcript
        if text and (state.spoken or text.strip()):
            if state.last and state.last in ".!?;:," and text[0].isalnum():  # "Hi." + "There" reads "Hi. There"
                text = " " + text
            state.spoken, state.last = True, text[-1]
            out.append(Say(ctx, messages.Text(text)))
        if request.flush:
            state.flushes += 1
            out += [Say(ctx, messages.Flush()), MarkFlush(ctx, state.flushes)]
        if not request.more:
            del self._open[ctx]
            if state.spoken:
                self._finishing.add(ctx)
                out.append(Finish(ctx))
            else:
                out.append(Done(ctx))
        return out


@dataclass
class FlushMarks:
    """A context's flushes, each at the length of its text when it came: due once a chunk's audio reaches there
    (its ``span``'s end), or at the end of its speech."""

    _marks: list[tuple[int, int]] = field(default_factory=list)  # (flush_id, characters of text before it)

    def add(self, flush_id: int, upto: int) -> None:
        self._marks.append((flush_id, upto))

    def reached(self, span: list[int] | None) -> list[int]:
        """The flushes whose text the chunk spanning ``span`` (None: not known) finished."""
        if not span:
            return []
        due = [fid for fid, upto in self._marks if upto <= span[1]]
        self._marks = self._marks[len(due):]
        return due

    def rest(self) -> list[int]:
        due, self._marks = [fid for fid, _ in self._marks], []
        return due


def pieces(audio: bytes, fmt: AudioFormat, max_piece_s: float = MAX_PIECE_S) -> list[bytes]:
    """``audio`` (encoded as ``fmt``) cut at sample boundaries into pieces of ``max_piece_s`` at most."""
    width = 4 if fmt.encoding == "pcm_f32le" else 1 if fmt.format in ("mulaw", "alaw") else 2
    step = max(width, int(fmt.sample_rate * max_piece_s) * width)
    return [audio[i:i + step] for i in range(0, len(audio), step)]


def chunk_message(context: str | None, audio: bytes, step_time_ms: float = 0.0) -> dict[str, Any]:
    return {"type": "chunk", "context_id": context, "data": base64.b64encode(audio).decode(), "done": False,
            "status_code": 206, "step_time": round(step_time_ms, 1)}


def timestamps_message(context: str | None, words: list[dict[str, Any]]) -> dict[str, Any]:
    """A chunk's words (``{word, start, end}`` in seconds of the utterance) as their ``word_timestamps``."""
    return {"type": "timestamps", "context_id": context, "done": False, "status_code": 206,
            "word_timestamps": {"words": [w["word"] for w in words], "start": [round(w["start"], 3) for w in words],
                                "end": [round(w["end"], 3) for w in words]}}


def flush_done_message(context: str, flush_id: int) -> dict[str, Any]:
    return {"type": "flush_done", "context_id": context, "done": False, "flush_done": True, "flush_id": flush_id,
            "status_code": 206}


def done_message(context: str | None) -> dict[str, Any]:
    return {"type": "done", "context_id": context, "done": True, "status_code": 200}


def error_message(code: str, message: str, context: str | None = None, status: int = 400) -> dict[str, Any]:
    return {"type": "error", "context_id": context, "done": True, "status_code": status, "title": code,
            "error_code": code, "message": message}


def event(reply: dict[str, Any]) -> bytes:
    """One server-sent event of ``/tts/sse``: its type, and the reply as one JSON ``data:`` line."""
    data = json.dumps(reply, separators=(",", ":"), ensure_ascii=False)
    return f"event: {reply['type']}\ndata: {data}\n\n".encode()


class SpeechEvents:
    """``/tts/sse``'s body framing (gateway/http/stream.py ``Framing``): ``chunk`` events of base64 audio, then (with
    ``add_timestamps``) the chunk's ``timestamps``, ``done`` at the end, ``error`` for a failure mid-way."""

    media_type = SSE_CONTENT_TYPE

    def __init__(self, text: str, fmt: AudioFormat, context: str | None, timestamps: bool) -> None:
        self.format, self.context, self.timestamps = fmt, context, timestamps
        self.spelling = ClientWords()
        self.spelling.add(text)

    def chunk(self, audio: bytes, header: ChunkHeader) -> bytes:
        body = self.tail(audio)
        if self.timestamps and (words := self.spelling.rename(header.words or [])):
            body += event(timestamps_message(self.context, words))
        return body

    def tail(self, audio: bytes) -> bytes:
        return b"".join(event(chunk_message(self.context, piece)) for piece in pieces(audio, self.format))

    def done(self, stats: UtteranceStats) -> bytes:
        return event(done_message(self.context))

    def failed(self, code: str, message: str) -> bytes | None:
        return event(error_message(code, message, self.context, 500))
