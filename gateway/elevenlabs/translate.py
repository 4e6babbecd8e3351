"""ElevenLabs' input-streaming WebSocket protocol in terms of our sessions (pure: no sockets, no event loop).

``Contexts`` takes their client messages (``stream-input``: one context; ``multi-stream-input``: many, by
``context_id``) and answers with what to do: open a context (one of our sessions), give it one of our messages
(``gateway/messages.py``), close it (finishing what was flushed, or cancelling what was not), say ``isFinal``, or
close the socket. ``audio_pieces`` and ``audio_message`` build their replies: base64 audio with character alignment,
relative to each message's own audio, as their clients (the ``elevenlabs`` SDK, pipecat) add it up.

Their ``optimize_streaming_latency`` (0-4) and ``auto_mode`` query parameters choose our latency preference
(``latency_preference``), ``apply_text_normalization`` our ``normalize`` mode (``query_reading``), and
``voice_settings.speed`` a context's speaking speed; replies carry ``alignment`` of the text as sent and
``normalizedAlignment`` of the text as spoken; ``pronunciation_dictionary_locators`` name our lexicons. What it cannot
honour is accepted and ignored: the rest of ``voice_settings``, ``generation_config``, ``model_id``,
``try_trigger_generation``, and the bit rate in an ``output_format`` name.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.protocol import NORMALIZE_MODES, SAMPLE_RATE, ProtocolError, Reading, check_lexicons, check_speed
from gateway import messages
from gateway.guard.client_input import speech_text

# optimize_streaming_latency: 0 their default (no optimisation: a longer first chunk), 1-2 "normal" and "strong"
# optimisations, 3-4 the most (4 also skips their text normaliser, which we do not have).
_OPTIMIZE_LATENCY = {"0": "prosody", "1": "balanced", "2": "balanced", "3": "fastest", "4": "fastest"}
MAX_PIECE_S = 1.0  # audio per reply at most (their SDK reads messages of at most 1 MiB), cut between words


@dataclass(frozen=True)
class Open:
    context: str | None


@dataclass(frozen=True)
class Say:
    context: str | None
    message: messages.Message


@dataclass(frozen=True)
class Close:
    """Stop taking text for ``context``: ``finish`` speaks what was flushed, then ``isFinal``; otherwise cancel now."""

    context: str | None
    finish: bool


@dataclass(frozen=True)
class Final:
    """``isFinal`` for a context that had nothing to speak."""

    context: str | None


@dataclass(frozen=True)
class CloseSocket:
    """Close the socket once every context closed before it has said ``isFinal``."""


Command = Open | Say | Close | Final | CloseSocket


@dataclass(frozen=True)
class ClientMessage:
    text: str | None = None
    context: str | None = None
    flush: bool = False
    close_context: bool = False
    close_socket: bool = False
    api_key: str | None = None  # ``xi_api_key`` (or ``xi-api-key``) in a first message
    speed: float | None = None  # ``voice_settings.speed``: the context's speaking speed from here on
    lexicons: list[str] | None = None  # ``pronunciation_dictionary_locators``' ids: our lexicons by name


def parse(raw: str | bytes) -> ClientMessage:
    """One of their JSON text frames; ``ProtocolError`` for anything malformed."""
    message = messages.json_frame(raw)
    if not isinstance(message, dict):
        raise ProtocolError("a message is a JSON object")
    text = _typed(message, "text", str)
    key = _typed(message, "xi_api_key", str) or _typed(message, "xi-api-key", str)
    return ClientMessage(speech_text(text) if text is not None else None, _typed(message, "context_id", str),
                         bool(_typed(message, "flush", bool)), bool(_typed(message, "close_context", bool)),
                         bool(_typed(message, "close_socket", bool)), key, _speed(message), _lexicons(message))


def _lexicons(message: dict[str, Any]) -> list[str] | None:
    """``pronunciation_dictionary_locators`` (``[{pronunciation_dictionary_id, version_id?}]``, up to 3, in order): each
    id names one of the server's lexicons (``/v1/lexicons``); the version is not kept."""
    locators = message.get("pronunciation_dictionary_locators")
    if locators is None:
        return None
    if not isinstance(locators, list) or not all(isinstance(x, dict) for x in locators):
        raise ProtocolError("field 'pronunciation_dictionary_locators' must be a list of objects")
    return check_lexicons([x.get("pronunciation_dictionary_id") for x in locators])


def _speed(message: dict[str, Any]) -> float | None:
    """``voice_settings.speed`` (theirs: 0.7-1.2; any speed this server speaks is taken), or None."""
    settings = message.get("voice_settings")
    if settings is None:
        return None
    if not isinstance(settings, dict):
        raise ProtocolError("field 'voice_settings' must be an object")
    return check_speed(settings.get("speed"))


def query_reading(query: Mapping[str, str]) -> Reading:
    """How their query parameters ask every context to be read: ``apply_text_normalization`` (auto, on, off: ours
    too) and the latency preference of ``latency_preference``; ``ProtocolError`` for a bad value."""
    normalize = query.get("apply_text_normalization")
    if normalize is not None and normalize not in NORMALIZE_MODES:
        raise ProtocolError("apply_text_normalization must be auto, on or off", "invalid_text_normalization")
    return Reading(latency_preference(query), normalize)


def latency_preference(query: Mapping[str, str]) -> str | None:
    """Our latency preference for their query parameters (None: neither given, the server's default).
    ``auto_mode=true`` ("no chunk schedule or buffers") is the fastest first audio; ``ProtocolError`` for a bad value."""
    auto, optimize = query.get("auto_mode"), query.get("optimize_streaming_latency")
    if auto not in (None, "true", "false"):
        raise ProtocolError("auto_mode must be true or false", "invalid_latency")
    if optimize is not None and optimize not in _OPTIMIZE_LATENCY:
        raise ProtocolError("optimize_streaming_latency must be 0, 1, 2, 3 or 4", "invalid_latency")
    if auto == "true":
        return "fastest"
    return _OPTIMIZE_LATENCY[optimize] if optimize is not None else None


def _typed(message: dict[str, Any], name: str, kind: type) -> Any:
    value = message.get(name)
    if value is not None and not isinstance(value, kind):
        raise ProtocolError(f"field {name!r} must be {'a string' if kind is str else 'true or false'}")
    return value


@dataclass
class _Context:
    spoken: bool = False  # text other than blanks has arrived
    unflushed: bool = False  # text arrived since the last flush


@dataclass
class Contexts:
    """The contexts of one socket. ``multi``: the multi-stream-input endpoint (else one context, id None)."""

    multi: bool
    _open: dict[str | None, _Context] = field(default_factory=dict)
    _finishing: set[str | None] = field(default_factory=set)  # closed to finish, not yet final: a second close cuts

    def ended(self, ctx: str | None) -> None:
        """The context now under ``ctx`` said ``isFinal``: a close for that id finds nothing there."""
        self._finishing.discard(ctx)

    def receive(self, msg: ClientMessage) -> list[Command]:
        if msg.close_socket:
            if not self.multi:
                raise ProtocolError("'close_socket' is for multi-stream-input; send {\"text\": \"\"} to finish")
            out = [c for ctx in list(self._open) for c in self._close(ctx)]
            return out + [CloseSocket()]
        ctx = msg.context if self.multi else None
        if msg.close_context:
            if not self.multi or msg.context is None:
                raise ProtocolError("'close_context' needs a 'context_id' (multi-stream-input)")
            if ctx in self._open:
                return self._close(ctx)
            if ctx in self._finishing:  # closed once to finish its speech, now again: a barge-in (pipecat's)
                self._finishing.discard(ctx)
                return [Close(ctx, finish=False)]
            return [Final(ctx)]
        if msg.text == "" and not msg.flush:  # one context: the end of its text; several: a keep-alive
            return [] if self.multi else self._close(ctx, finish=True)
        out: list[Command] = []
        state = self._open.get(ctx)
        if state is None:
            state = self._open[ctx] = _Context()
            self._finishing.discard(ctx)  # the id is the new context's now
            out.append(Open(ctx))
        if msg.speed is not None or msg.lexicons is not None:
            out.append(Say(ctx, messages.Config(reading=Reading(speed=msg.speed, lexicons=msg.lexicons))))
        if msg.text and (state.spoken or msg.text.strip()):  # leading blanks (their first message) open only
            state.spoken = state.unflushed = True
            out.append(Say(ctx, messages.Text(msg.text)))
        if msg.flush:
            state.unflushed = False
            out.append(Say(ctx, messages.Flush()))
        return out

    def _close(self, ctx: str | None, finish: bool | None = None) -> list[Command]:
        state = self._open.pop(ctx, None)
        if state is None or not state.spoken:
            return [Final(ctx)]
        close = Close(ctx, not state.unflushed if finish is None else finish)
        if close.finish:
            self._finishing.add(ctx)
        return [close]


@dataclass(frozen=True)
class Piece:
    start: float  # seconds of the chunk
    end: float
    alignment: dict[str, list[Any]]  # the client's text's characters (theirs: ``alignment``)
    normalized: dict[str, list[Any]] | None = None  # the spoken text's (``normalizedAlignment``); None: the same


@dataclass
class Spelling:
    """A context's text as its session took it, and how much of it the replies' ``alignment`` has given back."""

    text: str = ""
    given: int = 0

    def upto(self, end: int) -> str:
        """The characters not yet given back, up to ``end`` (none where ``end`` is behind)."""
        end = min(max(end, self.given), len(self.text))
        out, self.given = self.text[self.given:end], end
        return out

    def spaces_at(self, start: int) -> int:
        """Where the whitespace from ``start`` on ends (in the text so far)."""
        end = max(start, 0)
        while end < len(self.text) and self.text[end].isspace():
            end += 1
        return end


EMPTY: dict[str, list[Any]] = {"chars": [], "charStartTimesMs": [], "charDurationsMs": []}
_Timed = tuple[str, float, float, str | None, list[int] | None]  # word, start, end, spoken, span


def audio_pieces(words: list[dict[str, Any]], offset: float, duration: float, spelling: Spelling | None = None,
                 max_piece_s: float = MAX_PIECE_S) -> list[Piece]:
    """A chunk's audio cut between words into replies of about ``max_piece_s`` at most (a word longer than that
    gets a piece of its own), each with the alignment of its own words, in milliseconds from the piece's start.

    With ``spelling`` and words that carry their ``span``, ``alignment`` gives back every character of the client's
    text in order: the characters before a word that no word took (markup, emoji, dropped blocks) at its start, the
    word's spread over it, the whitespace after it from its end. Otherwise every word's characters are followed by
    a space, so a client that builds words from the characters completes each word within its piece. The last
    character of a piece ends where the piece does, so a client that adds up ``start + duration`` of each last
    character keeps the utterance's clock. ``words``: the chunk event's, in seconds of the utterance (``offset``:
    where the chunk starts); a word's ``spoken`` (what was said for it, where the front end rewrote it: "one
    hundred" for "100") is what the normalised alignment spells."""
    local: list[_Timed] = [(w["word"], max(0.0, w["start"] - offset), min(duration, max(0.0, w["end"] - offset)),
                            w.get("spoken"), w.get("span")) for w in words]
    spanned = spelling is not None and all(w[4] is not None for w in local)
    if spelling is not None and not spanned:  # a worker without spans: its words stand for the text so far
        spelling.upto(len(spelling.text))
    groups: list[list[_Timed]] = []
    for word in local:
        if groups and word[2] - (groups[-1][0][1] if len(groups) > 1 else 0.0) <= max_piece_s:
            groups[-1].append(word)
        else:
            groups.append([word])
    if not groups:
        return [Piece(0.0, duration, EMPTY)]
    cuts = [0.0] + [group[0][1] for group in groups[1:]] + [duration]
    pieces = []
    for group, start, end in zip(groups, cuts, cuts[1:]):
        said = _alignment([(_spaced(w[3] or w[0]), w[1], w[2]) for w in group], start, end)
        written = (_alignment([_given(spelling, w) for w in group], start, end) if spelling is not None and spanned
                   else _alignment([(_spaced(w[0]), w[1], w[2]) for w in group], start, end))
        pieces.append(Piece(start, end, written, None if said == written else said))
    return pieces


def _spaced(word: str) -> list[tuple[str, bool]]:
    """A word's characters, then a space (each with whether it is the word's)."""
    return [(c, True) for c in word] + [(" ", False)]


def _given(spelling: Spelling, word: _Timed) -> tuple[list[tuple[str, bool]], float, float]:
    """The client's characters a word gives back: those before its span not yet given, its own, and the whitespace
    after it."""
    assert word[4] is not None
    first, last = word[4]
    before, own, after = spelling.upto(first), spelling.upto(last), spelling.upto(spelling.spaces_at(last))
    return [(c, False) for c in before] + [(c, True) for c in own] + [(c, False) for c in after], word[1], word[2]


def _alignment(words: list[tuple[list[tuple[str, bool]], float, float]], start: float,
               end: float) -> dict[str, list[Any]]:
    """Each word's own characters spread evenly over the word; a character around it (not its own) at its start
    before them, at its end after them, the last one lasting to the next character (or the piece's end)."""
    chars: list[str] = []
    edges: list[float] = []  # the start of every character, then the piece's end
    for letters, w_start, w_end in words:
        own = sum(mine for _, mine in letters)
        step = (w_end - w_start) / max(own, 1)
        k = 0
        for char, mine in letters:
            chars.append(char)
            edges.append(w_start + k * step if mine else w_start if k == 0 else w_end)
            k += mine
    edges.append(end)
    ms = [round((max(start, min(t, end)) - start) * 1000) for t in edges]
    ms = [max(ms[: i + 1]) for i in range(len(ms))]  # never backwards
    return {"chars": chars, "charStartTimesMs": ms[:-1], "charDurationsMs": [b - a for a, b in zip(ms, ms[1:])]}


def tail_alignment(spelling: Spelling) -> dict[str, list[Any]] | None:
    """At the end of a context's speech: the characters after its last word (none given yet), at the end of its
    audio, taking no time; None when there are none. A text that does not end in whitespace gets a space after it,
    as their socket's alignment ends: clients (pipecat) complete a word only on the space that follows it."""
    rest = spelling.upto(len(spelling.text))
    if spelling.text and not spelling.text[-1].isspace():
        rest += " "
    if not rest:
        return None
    return {"chars": list(rest), "charStartTimesMs": [0] * len(rest), "charDurationsMs": [0] * len(rest)}


def pcm_slice(pcm: bytes, start: float, end: float) -> bytes:
    """The 24 kHz s16le samples of ``pcm`` from ``start`` to ``end`` seconds."""
    first, last = round(start * SAMPLE_RATE) * 2, round(end * SAMPLE_RATE) * 2
    return pcm[first:last]


def audio_message(audio: bytes, alignment: dict[str, list[Any]] | None, context: str | None,
                  normalized: dict[str, list[Any]] | None = None) -> dict[str, Any]:
    """One audio reply, as theirs: ``alignment`` of the text as sent, ``normalizedAlignment`` of the text as spoken
    (``normalized``; None: the same)."""
    reply: dict[str, Any] = {"audio": base64.b64encode(audio).decode(), "isFinal": None,
                             "normalizedAlignment": normalized or alignment, "alignment": alignment}
    if context is not None:
        reply["contextId"] = context
    return reply


def final_message(context: str | None) -> dict[str, Any]:
    return {"isFinal": True} if context is None else {"isFinal": True, "contextId": context}


def error_message(code: str, message: str, context: str | None = None) -> dict[str, Any]:
    reply: dict[str, Any] = {"message": message, "error": code, "code": code}
    if context is not None:
        reply["contextId"] = context
    return reply
