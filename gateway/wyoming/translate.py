"""A Wyoming TTS conversation in terms of engine utterances (pure: no sockets, no event loop).

``Conversation`` takes the client's events and answers with what to do: describe the server, start an utterance
(``synthesize``: its whole text; ``synthesize-start``: text to follow), give it text (``synthesize-chunk``), end its
text (``synthesize-stop``), cancel it, or reply with an event. Home Assistant streams as ``synthesize-start``, the
chunks, then the whole text again as ``synthesize`` for servers that do not stream (not spoken twice here), then
``synthesize-stop``; the audio goes out as it is made, and ``synthesize-stopped`` follows its ``audio-stop``.
One synthesis at a time per connection. ``info``, ``audio_*`` build the replies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.protocol import SAMPLE_RATE, ProtocolError
from gateway.guard.client_input import speech_text
from gateway.wyoming.wire import Event

RATE, WIDTH, CHANNELS = SAMPLE_RATE, 2, 1  # the engine's own audio: 16-bit mono at 24 kHz, never resampled
LANGUAGES = ["en"]
ATTRIBUTION = {"name": "Resemble AI (Chatterbox)", "url": "https://github.com/resemble-ai/chatterbox"}


@dataclass(frozen=True)
class Describe:
    """Reply with ``info`` (the voices are the engine's)."""


@dataclass(frozen=True)
class Start:
    voice: str
    text: str | None  # the whole text (``synthesize``), or None: it streams in


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class Finish:
    """The utterance's text is complete."""


@dataclass(frozen=True)
class Cancel:
    """Stop the utterance under way; nothing more of it is sent."""


@dataclass(frozen=True)
class Reply:
    event: Event


Command = Describe | Start | Say | Finish | Cancel | Reply


def error(code: str, text: str) -> Reply:
    return Reply(Event("error", {"text": text, "code": code}))


class Conversation:
    """One connection's syntheses. ``max_chars``: text per utterance."""

    IDLE, SPEAKING, STREAMING, FINISHING, DISCARDING = "idle", "speaking", "streaming", "finishing", "discarding"

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.state = self.IDLE
        self._chars = 0

    def receive(self, event: Event) -> list[Command]:
        """The commands for one client event; a refused one is an ``error`` reply, never an exception."""
        try:
            return self._receive(event)
        except ProtocolError as exc:
            return [error("bad_event", str(exc))]

    def _receive(self, event: Event) -> list[Command]:
        kind, data = event.type, event.data
        if kind == "describe":
            return [Describe()]
        if kind == "ping":
            return [Reply(Event("pong", {"text": data.get("text")} if isinstance(data.get("text"), str) else {}))]
        if kind == "synthesize":
            if self.state == self.STREAMING:
                return []  # the whole text again, for servers that do not stream: already spoken from its chunks
            if self.state == self.DISCARDING:
                return []
            self._idle_or_refuse(kind)
            text = self._text(data.get("text"))
            if not text.strip():
                return [error("bad_event", "'synthesize' needs a 'text'")]
            if len(text) > self.max_chars:
                return [error("text_too_long", f"text over {self.max_chars} characters")]
            voice = _voice(data)
            self.state, self._chars = self.SPEAKING, len(text)
            return [Start(voice, text)]
        if kind == "synthesize-start":
            self._idle_or_refuse(kind)
            voice = _voice(data)
            self.state, self._chars = self.STREAMING, 0
            return [Start(voice, None)]
        if kind == "synthesize-chunk":
            if self.state == self.DISCARDING:
                return []
            if self.state != self.STREAMING:
                return [error("bad_event", "'synthesize-chunk' comes between 'synthesize-start' and "
                                           "'synthesize-stop'")]
            text = self._text(data.get("text"))
            self._chars += len(text)
            if self._chars > self.max_chars:
                self.state = self.DISCARDING
                return [Cancel(), error("text_too_long", f"text over {self.max_chars} characters")]
            return [Say(text)] if text else []
        if kind == "synthesize-stop":
            if self.state == self.DISCARDING:
                self.state = self.IDLE
                return [Reply(Event("synthesize-stopped"))]
            if self.state != self.STREAMING:
                return [error("bad_event", "'synthesize-stop' without 'synthesize-start'")]
            self.state = self.FINISHING
            return [Finish()]
        return [error("unsupported", f"this is a TTS server: {kind!r} is not one of its events")]

    def _idle_or_refuse(self, kind: str) -> None:
        if self.state != self.IDLE:
            raise ProtocolError(f"{kind!r} while a synthesis is under way: one at a time on a connection")

    def _text(self, text: Any) -> str:
        if not isinstance(text, str):
            raise ProtocolError("'text' must be a string")
        return speech_text(text)

    def spoken(self) -> list[Command]:
        """The utterance's audio has all gone out (after its ``audio-stop``)."""
        streamed = self.state == self.FINISHING
        self.state = self.IDLE
        return [Reply(Event("synthesize-stopped"))] if streamed else []

    def failed(self, code: str, message: str) -> list[Command]:
        """The utterance failed: an ``error``. A stream still taking text drops its chunks until its
        ``synthesize-stop``; one already stopped gets its ``synthesize-stopped``."""
        finishing = self.state == self.FINISHING
        self.state = self.DISCARDING if self.state == self.STREAMING else self.IDLE
        return [error(code, message)] + ([Reply(Event("synthesize-stopped"))] if finishing else [])


def _voice(data: dict[str, Any]) -> str:
    """The voice by name (the engine's names are case-insensitive); none, or a language only: the default."""
    voice = data.get("voice") or {}
    if not isinstance(voice, dict):
        raise ProtocolError("'voice' must be an object with a 'name'")
    name = voice.get("name")
    if name is not None and not isinstance(name, str):
        raise ProtocolError("the voice's 'name' must be a string")
    return name or "default"


def info(voices: list[str], version: str) -> Event:
    """``info``: one TTS program whose voices are the engine's library."""
    artifact = {"attribution": ATTRIBUTION, "installed": True, "version": version}
    program = {"name": "chatterbox-fast", "description": "Chatterbox-Turbo, streamed by chatterbox-fast", **artifact,
               "voices": [{"name": name, "description": name, "languages": LANGUAGES, **artifact} for name in voices],
               "supports_synthesize_streaming": True}
    return Event("info", {"asr": [], "tts": [program], "handle": [], "intent": [], "wake": [], "mic": [],
                          "snd": []})


def _format(at_samples: int) -> dict[str, Any]:
    return {"rate": RATE, "width": WIDTH, "channels": CHANNELS, "timestamp": at_samples * 1000 // RATE}


def audio_start() -> Event:
    return Event("audio-start", _format(0))


def audio_chunk(pcm: bytes, at_samples: int) -> Event:
    """``pcm``: 16-bit mono samples at RATE, starting ``at_samples`` into the utterance."""
    return Event("audio-chunk", _format(at_samples), pcm)


def audio_stop(at_samples: int) -> Event:
    return Event("audio-stop", {"timestamp": at_samples * 1000 // RATE})
