"""The engine protocol (version 1): how a gateway talks to an engine worker.

Pure: no sockets, no event loop, no torch. The gateway imports this module; the worker imports it too.
The transport is one WebSocket per gateway connection at ``/v1/engine``. Control messages are JSON text frames;
audio chunks and voice uploads are binary frames laid out as::

    4-byte big-endian header length | UTF-8 JSON header | payload bytes

Every message is a frozen dataclass here; ``encode`` turns one into its frame, ``decode_request`` (the worker's side)
and ``decode_event`` (the gateway's side) turn a frame back into one, or raise ``ProtocolError``. Fields a reader does
not know are ignored, so a new optional field (with a default) needs no new protocol version.
See docs/engine-protocol.md for the message reference.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import MISSING, astuple, dataclass, fields
from typing import Any, Callable, ClassVar

from engine.speech_text.tags import TURBO_TAG

PROTOCOL_VERSION = 1
ENGINE_PATH = "/v1/engine"
SAMPLE_RATE = 24000  # every chunk on the wire is mono s16le at this rate
# A paralinguistic tag in the text ([laugh], [clear throat]): spoken as a sound, never as words, never split. One
# definition for the engine (chunk planning) and the gateway (which words a client hears). Only Turbo's own tags: any
# other bracketed text is words (a markdown link's, say).
TAG_MAX_LEN = 40  # a "[" with no "]" within this many characters opens no tag (text still arriving)
TAG = TURBO_TAG
_HEADER_LEN = struct.Struct("!I")
# A caller's latency preference (an utterance's ``latency``): how long its first audio may take to buy prosody.
# "fastest": the shortest natural unit first; "balanced": the worker's default first-audio budget; "prosody": a
# longer first chunk (LATENCY_PROSODY_S); a number: that first-audio budget in seconds of generation.
LATENCY_PRESETS = ("fastest", "balanced", "prosody")
LATENCY_PROSODY_S = 0.5
MAX_LATENCY_S = 5.0
# How an utterance's text is read (ElevenLabs' apply_text_normalization): "on" and "auto" as a person would say it
# (markdown, numbers, money, dates, symbols...: engine/speech_text/), SSML when it starts with <speak>; "off" as sent,
# with Chatterbox-Turbo's own punctuation rules only.
NORMALIZE_MODES = ("auto", "on", "off")
LOCALES = ("en-US", "en-GB")  # how numbers and dates are read (en-GB: slashed dates day first)
MIN_LEAD, MAX_LEAD = 0.5, 60.0  # an utterance's lead over what its client has taken (Start.lead), in seconds
MIN_SPEED, MAX_SPEED = 0.25, 4.0  # an utterance's speaking speed (OpenAI's range), pitch unchanged (engine/speed.py)
MAX_LEXICON_BYTES = 256 * 1024  # one lexicon file (the gateway refuses a bigger upload before sending it)
MAX_LEXICONS = 3  # lexicons one utterance names (ElevenLabs' limit on pronunciation_dictionary_locators)
LEXICON_NAME = re.compile(r"[a-z0-9_-]{1,64}")
TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")  # W3C trace context, version 00


def voice_key(name: str) -> str:
    """Voice names are case-insensitive: every name is looked up in this form (trimmed, lowercased), by the worker's
    voice store and by a gateway remembering the voices it deleted."""
    return name.strip().lower()


class ProtocolError(ValueError):
    """A message that does not follow the protocol. ``code`` is stable for clients."""

    def __init__(self, message: str, code: str = "bad_message") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Reading:
    """How one utterance is read, as a client asked (None: the worker's default): ``latency`` (LATENCY_PRESETS or a
    first-audio budget in seconds), ``normalize`` (NORMALIZE_MODES). The fields of ``Start`` after its voice."""

    latency: str | float | None = None
    normalize: str | None = None
    speed: float | None = None  # MIN_SPEED..MAX_SPEED; None: 1
    lexicons: list[str] | None = None  # pronunciation lexicons by name, applied in order (MAX_LEXICONS at most)
    locale: str | None = None  # one of LOCALES; None: en-US

    def __post_init__(self) -> None:
        check_latency(self.latency)
        check_normalize(self.normalize)
        check_speed(self.speed)
        check_lexicons(self.lexicons)
        check_locale(self.locale)

    def over(self, base: "Reading") -> "Reading":
        """This reading where it says something, ``base``'s elsewhere (an utterance's over its session's)."""
        return Reading(*(mine if mine is not None else theirs
                         for mine, theirs in zip(astuple(self), astuple(base), strict=True)))


# Gateway -> worker: one utterance's requests (``id`` is chosen by the gateway, unique on its connection).
@dataclass(frozen=True)
class Start:
    type: ClassVar[str] = "start"
    id: str
    voice: str = "default"
    latency: str | float | None = None  # a preset of LATENCY_PRESETS or a first-audio budget (s); None: "balanced"
    normalize: str | None = None  # one of NORMALIZE_MODES: how the text is read (None: "auto")
    speed: float | None = None  # MIN_SPEED..MAX_SPEED: how fast it is spoken (None: 1)
    lexicons: list[str] | None = None  # the worker's lexicons to read it with, in order, before its voice's and
    # the server's ``default``
    locale: str | None = None  # one of LOCALES: whose conventions numbers and dates are read in (None: en-US)
    traceparent: str | None = None  # W3C trace context of the gateway's span (engine/traces.py): the worker's
    # spans of this utterance continue its trace; absent when the gateway does not trace
    lead: float | None = None  # MIN_LEAD..MAX_LEAD: seconds of audio generated ahead of what the client has taken
    # (its ``playout``), beyond what the longest chunk needs; None: the worker's default (engine/planner.py max_lead_s)

    def __post_init__(self) -> None:
        check_latency(self.latency)
        check_normalize(self.normalize)
        check_speed(self.speed)
        check_lexicons(self.lexicons)
        check_locale(self.locale)
        check_traceparent(self.traceparent)
        check_lead(self.lead)


@dataclass(frozen=True)
class Text:
    type: ClassVar[str] = "text"
    id: str
    text: str


@dataclass(frozen=True)
class Flush:
    type: ClassVar[str] = "flush"
    id: str


@dataclass(frozen=True)
class End:
    type: ClassVar[str] = "end"
    id: str


@dataclass(frozen=True)
class Cancel:
    type: ClassVar[str] = "cancel"
    id: str


@dataclass(frozen=True)
class Playout:
    """Seconds of the utterance the listener has heard."""

    type: ClassVar[str] = "playout"
    id: str
    played: float


# Gateway -> worker: voice and lexicon requests, answered by a ``Result`` or an ``Error`` with the same ``req``. (Field
# order is the wire's key order.)
@dataclass(frozen=True)
class ListVoices:
    type: ClassVar[str] = "list_voices"
    req: str


@dataclass(frozen=True)
class DeleteVoice:
    type: ClassVar[str] = "delete_voice"
    name: str
    req: str


@dataclass(frozen=True)
class SetLoaded:
    """Load the model (``loaded`` true) or free it (false) now: answered by a ``Result`` with the ``state`` then, or
    an ``Error`` (``busy``: utterances in flight; ``load_failed``)."""

    type: ClassVar[str] = "set_loaded"
    loaded: bool
    req: str


@dataclass(frozen=True)
class ListLexicons:
    type: ClassVar[str] = "list_lexicons"
    req: str


@dataclass(frozen=True)
class DeleteLexicon:
    type: ClassVar[str] = "delete_lexicon"
    name: str
    req: str


@dataclass(frozen=True)
class AddLexicon:
    """A binary frame: the header carries ``name`` and ``req``, the payload is the lexicon file (PLS or JSON)."""

    type: ClassVar[str] = "add_lexicon"
    name: str
    req: str
    data: bytes


@dataclass(frozen=True)
class AddVoice:
    """A binary frame: the header carries ``name`` and ``req``, the payload is the reference audio file."""

    type: ClassVar[str] = "add_voice"
    name: str
    req: str
    audio: bytes


@dataclass(frozen=True)
class GetVoice:
    """A stored voice's audio file, answered by a ``Stored``: how a gateway copies a voice to a worker that lacks
    it (one that joins later, with its own voices directory)."""

    type: ClassVar[str] = "get_voice"
    name: str
    req: str


@dataclass(frozen=True)
class GetLexicon:
    """A stored lexicon's file, answered by a ``Stored`` (as ``GetVoice``)."""

    type: ClassVar[str] = "get_lexicon"
    name: str
    req: str


# Worker -> gateway.
@dataclass(frozen=True)
class EngineReady:
    """What a worker announces as its first message on every connection. New fields need defaults."""

    type: ClassVar[str] = "ready"
    engine: str
    device: str
    dtype: str
    weights: str  # where the weights came from: a directory, "hf-cache", "random (compute cost only)", "embedded"
    watermark: bool
    sample_rate: int = SAMPLE_RATE
    protocol: int = PROTOCOL_VERSION
    notes: str = ""
    decode: str | None = None  # a batching engine's decode mode ("eager", "graph"); absent for the others
    # An engine in another server (--engine http): {url, dialect, state: up | down | unknown, error, since}. Sent
    # again (a later ``ready``) whenever the state changes; the gateway starts no utterance there while it is down.
    backend: dict[str, Any] | None = None
    decode_fallback: str | None = None  # why it decodes eagerly where CUDA graphs were meant (failed self-check)
    vocode: str | None = None  # a batching engine's S3Gen mode ("eager", "graph"); absent for the others
    vocode_fallback: str | None = None  # why S3Gen runs eagerly where CUDA graphs were meant (failed self-check)
    # An engine that keeps voice prompts' keys and values on the device (chatterbox-turbo): {voices, bytes, limit}.
    # Sent again (a later ``ready``, at most once a second) when its figures change; absent for the others.
    prompt_cache: dict[str, Any] | None = None
    # Where placement by fit put a CUDA worker (engine/placement.py): {device, uuid, name, why, others: [{device,
    # uuid, name, free_gib, total_gib}]}; absent elsewhere.
    placement: dict[str, Any] | None = None
    # A CUDA worker's device memory in bytes: {allocated, reserved, card_free, card_total, budget}; sent again when a
    # figure moved by 64 MiB (looked at every 5 s); absent elsewhere.
    memory: dict[str, Any] | None = None
    # Whether the model is in memory: loaded | unloading | unloaded | loading (--unload-after, POST /v1/admin/unload,
    # /v1/admin/load). Sent again (a later ``ready``) on every change; absent from a worker that predates it.
    state: str | None = None
    # A CUDA worker's card's utilisation, 0..1 (nvidia-smi's utilization.gpu, read every 5 s: engine/gpu_utilization.py);
    # sent again when it moved by 0.05; absent elsewhere, unloaded, or when nvidia-smi does not answer.
    utilization: float | None = None


@dataclass(frozen=True)
class ChunkHeader:
    """Metadata of one audio chunk of an utterance; the PCM travels as the frame's payload."""

    type: ClassVar[str] = "chunk"
    id: str
    seq: int
    text: str
    offset: float  # seconds of utterance audio before this chunk
    duration: float  # seconds of audio in this chunk
    gen_time: float  # seconds the engine spent generating it
    sample_rate: int = SAMPLE_RATE
    words: list[dict[str, Any]] | None = None  # [{word, start, end, span}] in seconds of utterance audio; ``span``:
    # [start, end) of the caller's characters the word speaks for (every word of "one hundred" has 100's)
    span: list[int] | None = None  # [start, end) of the caller's characters this chunk speaks for
    timing: str | None = None  # "exact" (the engine placed the words) or "estimated" (spread by syllables)


@dataclass(frozen=True)
class Chunk:
    """A binary frame: the header, and mono s16le PCM at ``header.sample_rate`` as its payload."""

    header: ChunkHeader
    pcm: bytes


@dataclass(frozen=True)
class Done:
    """Every chunk of the utterance has been sent."""

    type: ClassVar[str] = "done"
    id: str
    chunks: int
    audio: float  # seconds
    gen_time: float  # seconds of generation, summed over the chunks
    first_chunk: float | None = None  # seconds from start to the first chunk
    latency: str | float | None = None  # the preference that applied (a preset, or the budget the caller gave)
    first_audio_s: float | None = None  # the first-audio budget it meant, seconds (0: the shortest natural unit)
    start_delay: float | None = None  # seconds first audio was held back (an engine slower than real time)
    reload_s: float | None = None  # seconds it waited for the model to be loaded again (unloaded when idle); absent: none
    # set by the gateway (gateway/engine_link/failover.py), never sent by a worker: the times the utterance moved
    # to another worker after its own went away, and the gaps that made, summed (seconds)
    failovers: int | None = None
    failover_gap: float | None = None


@dataclass(frozen=True, kw_only=True)
class Error:
    """A refusal or failure: of one utterance (``id``, which it ends), of one voice request (``req``), or of a frame
    that named neither."""

    type: ClassVar[str] = "error"
    id: str | None = None
    req: str | None = None
    code: str
    message: str


@dataclass(frozen=True)
class Result:
    """A voice request's answer: ``voices`` for ``list_voices``, ``voice`` for ``add_voice``, neither for a delete."""

    type: ClassVar[str] = "result"
    req: str
    voices: list[dict[str, Any]] | None = None
    voice: dict[str, Any] | None = None
    lexicons: list[dict[str, Any]] | None = None  # for ``list_lexicons``
    lexicon: dict[str, Any] | None = None  # for ``add_lexicon``
    state: str | None = None  # for ``set_loaded``: the model's state after it (loaded, unloaded)
    reload_s: float | None = None  # for ``set_loaded``: seconds the load took (none when it was loaded already)


@dataclass(frozen=True)
class Stored:
    """A binary frame answering ``get_voice`` or ``get_lexicon``: the header carries ``req``, the payload is the file
    as the worker keeps it (what ``add_voice`` or ``add_lexicon`` takes)."""

    type: ClassVar[str] = "stored"
    req: str
    data: bytes


Request = (Start | Text | Flush | End | Cancel | Playout | ListVoices | DeleteVoice | AddVoice | GetVoice
           | ListLexicons | DeleteLexicon | AddLexicon | GetLexicon | SetLoaded)
StoreRequest = (ListVoices | DeleteVoice | AddVoice | GetVoice | ListLexicons | DeleteLexicon | AddLexicon | GetLexicon
                | SetLoaded)
Event = EngineReady | Chunk | Done | Error | Result | Stored
_REQUESTS: dict[str, type] = {cls.type: cls for cls in (Start, Text, Flush, End, Cancel, Playout, ListVoices,
                                                        DeleteVoice, AddVoice, GetVoice, ListLexicons, DeleteLexicon,
                                                        AddLexicon, GetLexicon, SetLoaded)}
_EVENTS: dict[str, type] = {cls.type: cls for cls in (EngineReady, ChunkHeader, Done, Error, Result, Stored)}
_BINARY = frozenset({AddVoice.type, AddLexicon.type, ChunkHeader.type, Stored.type})  # sent as binary frames


def encode(message: Request | Event) -> str | bytes:
    """The frame for ``message``: JSON text, or a binary frame for ``Chunk``, ``AddVoice``, ``AddLexicon`` and
    ``Stored``."""
    if isinstance(message, Chunk):
        return _encode_binary(_header(message.header), message.pcm)
    if isinstance(message, AddVoice):
        return _encode_binary(_header(message), message.audio)
    if isinstance(message, (AddLexicon, Stored)):
        return _encode_binary(_header(message), message.data)
    return _encode_json(_header(message))


def decode_request(frame: str | bytes) -> Request:
    """A gateway's frame, as the worker reads it."""
    header, payload = _split(frame, _REQUESTS)
    if header["type"] == AddVoice.type:
        return AddVoice(**_fields(AddVoice, header), audio=payload)
    if header["type"] == AddLexicon.type:
        return AddLexicon(**_fields(AddLexicon, header), data=payload)
    return _REQUESTS[header["type"]](**_fields(_REQUESTS[header["type"]], header))


def decode_event(frame: str | bytes) -> Event:
    """A worker's frame, as the gateway reads it. A ``ready`` of another protocol version is refused."""
    header, payload = _split(frame, _EVENTS)
    kind = header["type"]
    if kind == ChunkHeader.type:
        return Chunk(ChunkHeader(**_fields(ChunkHeader, header)), payload)
    if kind == Stored.type:
        return Stored(**_fields(Stored, header), data=payload)
    if kind == EngineReady.type and header.get("protocol") != PROTOCOL_VERSION:
        raise ProtocolError(f"the worker speaks engine protocol {header.get('protocol')!r}, not {PROTOCOL_VERSION}")
    return _EVENTS[kind](**_fields(_EVENTS[kind], header))


def _encode_json(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def _encode_binary(header: dict[str, Any], payload: bytes) -> bytes:
    head = _encode_json(header).encode()
    return _HEADER_LEN.pack(len(head)) + head + payload


def _decode_binary(frame: bytes) -> tuple[dict[str, Any], bytes]:
    """Split a binary frame into its JSON header and payload."""
    if len(frame) < _HEADER_LEN.size:
        raise ProtocolError("binary frame shorter than its length prefix")
    (n,) = _HEADER_LEN.unpack_from(frame)
    end = _HEADER_LEN.size + n
    if n == 0 or end > len(frame):
        raise ProtocolError("binary frame header length out of range")
    header = _parse_object(frame[_HEADER_LEN.size:end])
    return header, bytes(frame[end:])


def _parse_object(raw: str | bytes) -> dict[str, Any]:
    try:
        message = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError("a message is a JSON object with a string 'type'")
    return message


def _header(message: Any) -> dict[str, Any]:
    """``message`` as a JSON object: its type, then its fields in order, without payloads and unset optional ones."""
    out: dict[str, Any] = {"type": message.type}
    for f in fields(message):
        value = getattr(message, f.name)
        if f.type != "bytes" and not (value is None and f.default is None):
            out[f.name] = value
    return out


def _split(frame: str | bytes, known: dict[str, type]) -> tuple[dict[str, Any], bytes]:
    """A frame's JSON object and payload, once its type is known and sent as the right kind of frame."""
    header, payload = _decode_binary(frame) if isinstance(frame, bytes) else (_parse_object(frame), b"")
    kind = header["type"]
    if kind not in known:
        raise ProtocolError(f"unknown message type {kind!r}", "unknown_type")
    if (kind in _BINARY) != isinstance(frame, bytes):
        raise ProtocolError(f"{kind!r} must be sent as a {'binary' if kind in _BINARY else 'text'} frame")
    return header, payload


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_latency(value: Any) -> str | float | None:
    """A latency preference as sent (None: the default), or ``ProtocolError`` (``bad_latency``) saying what it may be."""
    if value is None or value in LATENCY_PRESETS:
        return value
    if _is_number(value) and 0 <= value <= MAX_LATENCY_S:
        return float(value)
    raise ProtocolError(f"latency must be one of {', '.join(map(repr, LATENCY_PRESETS))} or a first-audio budget "
                        f"in seconds from 0 to {MAX_LATENCY_S:g}, not {value!r}", "bad_latency")


def check_normalize(value: Any) -> str | None:
    """A normalisation mode as sent (None: the default), or ``ProtocolError`` (``bad_normalize``)."""
    if value is None or value in NORMALIZE_MODES:
        return value
    raise ProtocolError(f"normalize must be one of {', '.join(map(repr, NORMALIZE_MODES))}, not {value!r}",
                        "bad_normalize")


def check_locale(value: Any) -> str | None:
    """A locale as sent (None: the default), or ``ProtocolError`` (``bad_locale``)."""
    if value is None or value in LOCALES:
        return value
    raise ProtocolError(f"locale must be one of {', '.join(map(repr, LOCALES))}, not {value!r}", "bad_locale")


def check_speed(value: Any) -> float | None:
    """A speaking speed as sent (None: the default), or ``ProtocolError`` (``bad_speed``) naming the range."""
    if value is None:
        return None
    if _is_number(value) and MIN_SPEED <= value <= MAX_SPEED:
        return float(value)
    raise ProtocolError(f"speed must be a number from {MIN_SPEED} to {MAX_SPEED}, not {value!r}", "bad_speed")


def check_lead(value: Any) -> float | None:
    """A lead as sent (None: the worker's default), or ``ProtocolError`` (``bad_lead``) naming the range."""
    if value is None:
        return None
    if _is_number(value) and MIN_LEAD <= value <= MAX_LEAD:
        return float(value)
    raise ProtocolError(f"lead must be a number of seconds from {MIN_LEAD:g} to {MAX_LEAD:g}, not {value!r}", "bad_lead")


def check_lexicons(value: Any) -> list[str] | None:
    """Lexicon names as sent (None: none), or ``ProtocolError`` (``bad_lexicons``)."""
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) > MAX_LEXICONS
            or not all(isinstance(name, str) and LEXICON_NAME.fullmatch(name) for name in value)):
        raise ProtocolError(f"lexicons must be a list of at most {MAX_LEXICONS} lexicon names (1-64 of a-z 0-9 - _), "
                            f"not {value!r}"[:300], "bad_lexicons")
    return value


def check_traceparent(value: Any) -> str | None:
    """A W3C traceparent as sent (None: none), or ``ProtocolError`` (``bad_traceparent``)."""
    if value is None or (isinstance(value, str) and TRACEPARENT.fullmatch(value)):
        return value
    raise ProtocolError(f"traceparent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>), not {value!r}"[:200],
                        "bad_traceparent")


# What a JSON value must be for each field annotation used above ("| None" aside).
_CHECKS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "str": ("a string", lambda v: isinstance(v, str)),
    "int": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "float": ("a number", _is_number),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "str | float": ("a string or a number", lambda v: isinstance(v, str) or _is_number(v)),
    "dict[str, Any]": ("an object", lambda v: isinstance(v, dict)),
    "list[str]": ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)),
    "list[int]": ("a list of integers",
                  lambda v: isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)),
    "list[dict[str, Any]]": ("a list of objects",
                             lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v)),
}


def _fields(cls: type, message: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``cls`` from a decoded JSON object: required fields present, every field of its type
    (an optional field may be absent or null: its default), unknown fields ignored."""
    out: dict[str, Any] = {}
    for f in fields(cls):
        if f.type == "bytes":
            continue
        value = message.get(f.name)
        if value is None:
            if f.default is MISSING:
                raise ProtocolError(f"{cls.type!r} needs field {f.name!r}")
            continue
        what, check = _CHECKS[f.type.removesuffix(" | None")]
        if not check(value):
            raise ProtocolError(f"field {f.name!r} of {cls.type!r} must be {what}")
        out[f.name] = float(value) if f.type.startswith("float") else value
    return out
