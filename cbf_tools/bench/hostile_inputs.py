"""Hostile client inputs, generated from a seed (pure): what an attacker or a broken client might send to the
WebSocket and to the HTTP JSON routes. Used by ``bench faults``; every one must be refused cleanly or spoken."""

from __future__ import annotations

import base64
import json
import math
import random
import struct
from typing import Any, Callable

import numpy as np

_NASTY_TEXT = ("\ud800", "\udfff", "\x00", "\x000\x00", "\x00\x31\x00 [laugh]", "\x1b[31m", "\x7f", "\x85",
               "\u202e", "\ufeff", "\U0001F600", "[", "]", "[" * 50, "[laugh]", "[" + "x" * 60 + "]", "…" * 20,
               "\n" * 30, " ", "", "e\u0301" * 20, "Ω≈ç√", "Dr. J. Smith", "\t\r\n")


# Whole texts the text front end (engine/speech_text/) must refuse clearly or read in bounded time: SSML bombs and
# malformed SSML, absurd numbers, markdown or emoji and nothing else.
_NASTY_DOCUMENTS = ("<speak>" + "<p>" * 10000 + "x" + "</p>" * 10000 + "</speak>",
                    '<?xml version="1.0"?><!DOCTYPE lol [<!ENTITY a "aaaaaaaa">]><speak>&a;&a;&a;</speak>',
                    "<speak>" + '<break time="10s"/>' * 100 + "</speak>", '<speak><break time="1e9s"/>hi</speak>',
                    "<speak>hi", "<speak><p>hi</s></speak>", "<speak>hi</speak> and more", '<speak a=b>hi</speak>',
                    "<speak>&bogus;</speak>", '<speak><say-as interpret-as="cardinal">' + "9" * 5000 + "</say-as></speak>",
                    "9" * 1000, "$" + "9" * 400 + ".99", "1" + ",000" * 300, "-" * 5000, "*" * 10000, "```\n" * 50,
                    "| a | b |\n|---|---|\n" * 200, "😀" * 5000, "[" * 3000 + "](" * 3000,
                    "https://" + "a." * 3000 + "com", "@" * 5000, "12:" * 2000, "1/" * 3000, "%" * 5000,
                    # dates, times and codes no calendar, clock or catalogue has, and runs of them
                    "99/99/9999 25:61 00:00 13/45 0x" + "F" * 5000, "A1" * 5000, "1-" * 5000 + "1", "#" + "1" * 2000,
                    "x^" * 3000 + "2", "Chapter " + "M" * 5000, "+1 " * 3000, "Q1-Q" * 2000, "Apt. " * 3000 + "4B",
                    "1428 " + "Elm " * 3000 + "St.", "₩" * 3000 + "9" * 300, "1/4th " * 2000, "5'11\" " * 2000)


def _text(rng: random.Random) -> str:
    if rng.random() < 0.1:
        return rng.choice(_NASTY_DOCUMENTS)
    pieces = [rng.choice(_NASTY_TEXT) if rng.random() < 0.5 else rng.choice(("hi", "there", "ok.", "a,", "b!"))
              for _ in range(rng.randint(0, 6))]
    return " ".join(pieces)


def _value(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON value, sometimes deep, sometimes of a type no field expects."""
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice((True, False))
    if kind == 2:
        return rng.choice((0, -1, 2**63, 8000, 24000, 1e308, -0.0, 3.5))
    if kind in (3, 4, 5):
        return _text(rng)
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == 7:
        return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return _nested(rng.choice((10, 31, 33, 100, 5000)))


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(min(depth, 500)):  # json.dumps itself recurses; deeper nesting is sent as raw text in _frame
        value = [value]
    return value


def _frame(rng: random.Random, fields: dict[str, Callable[[random.Random], Any]]) -> str:
    """One JSON object of ``fields`` (each kept, dropped or mistyped), or something that is not quite one."""
    mangle = rng.random()
    if mangle < 0.05:
        return "[" * rng.choice((40, 2000, 20000)) + "]" * rng.randrange(3)
    if mangle < 0.1:
        return rng.choice(('{"type": "speak", "text": "hi', "{", "null", "[]", '"x"', "1e999", "NaN",
                           '{"type": "speak", "text": "\\ud800"}', '{"text": "\\udc00\\ud800"}', "\x00", ""))
    body = {name: (make(rng) if rng.random() < 0.8 else _value(rng)) for name, make in fields.items()
            if rng.random() < 0.9}
    for _ in range(rng.randrange(3)):
        body[_text(rng)] = _value(rng)
    return json.dumps(body)  # ASCII: a lone surrogate travels as its JSON escape, as an attacker sends it


def _pick(*choices: Any) -> Callable[[random.Random], Any]:
    return lambda rng: rng.choice(choices)


_LATENCY = _pick("fastest", "prosody", 0.2, 0, -1, 1e9, "slow", True, None, [0.1], {"s": 1})
_NORMALIZE = _pick("auto", "on", "off", "OFF", "", 1, True, None, ["on"])
_SPEED = _pick(0.25, 1.5, 4.0, 0, 0.24, 4.01, -1, 1e308, "1", True, None, [1])
_CACHE = _pick(True, False, None, "false", 0, 1, [], {})  # the prompt cache's per-request switch
WEBSOCKET_FIELDS = {"type": _pick("speak", "text", "flush", "end", "cancel", "config", "playout", "sing", ""),
                    "text": _text, "voice": _pick("default", "Default", "nobody", "\ud800", "../x"),
                    "format": _pick("pcm_s16le", "mulaw", "mp3"), "sample_rate": _pick(8000, 16000, 44100, True),
                    "played": _pick(0.5, -1, "1", 1e9, True), "latency": _LATENCY, "normalize": _NORMALIZE,
                    "speed": _SPEED, "cache": _CACHE}
# ElevenLabs' multi-stream-input messages (close_socket left out: it would end the client's socket legitimately)
ELEVENLABS_FIELDS = {"text": _text, "context_id": _pick("a", "b", "", 3), "flush": _pick(True, False, "yes"),
                     "close_context": _pick(True, False, 1), "voice_settings": _pick({"speed": 2}, {"speed": 0.1}, {"speed": "x"}, "fast", None),
                     "xi_api_key": _pick("key", 5)}
# Cartesia's socket and HTTP routes (/cartesia): generation requests of every field mangled, voices and formats they
# do not offer here, beside sound ones
_CARTESIA_S16 = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16000}
_CARTESIA_SOUND_FORMATS = (_CARTESIA_S16, {"container": "raw", "encoding": "pcm_f32le", "sample_rate": 44100},
                           {"container": "wav", "encoding": "pcm_mulaw", "sample_rate": 8000})
CARTESIA_HTTP_FIELDS = {
    "transcript": lambda rng: _text(rng) if rng.random() < 0.5 else "Hello there, your table is ready.",
    "context_id": _pick("a", "b", "gone", None, None, None, 5),
    "voice": _pick("default", {"mode": "id", "id": "default"}, {"id": "default"}, {"id": "nobody"},
                   {"mode": "embedding", "embedding": [0.1]}, {"mode": "id"}, 5, "", "\ud800"),
    "model_id": _pick("sonic-3", "sonic-3", "sonic-2", "sonic-turbo", "eleven_flash_v2_5", 5, ""),
    "output_format": _pick(*_CARTESIA_SOUND_FORMATS,
                           {"container": "raw", "encoding": "pcm_alaw", "sample_rate": 16000}, {"container": "mp3"},
                           {"encoding": "pcm_s16le", "sample_rate": 7}, {"sample_rate": True}, "pcm"),
    "add_timestamps": _pick(True, False, "yes"), "speed": _pick("fast", "slow", 0.5, "warp", None, True),
    "generation_config": _pick({"speed": 1.2}, {"speed": 9}, {"speed": "x"}, "x", None), "language": _pick("en", 5)}
CARTESIA_FIELDS = {**CARTESIA_HTTP_FIELDS, "continue": _pick(True, True, False, "yes"), "flush": _pick(True, False, 1),
                   "context_id": _pick("a", "b", "c", "gone", "", 5, None, "x" * 300)}


def cartesia_bodies(rng: random.Random, count: int) -> list[str]:
    """Bodies of /cartesia/tts/bytes and /sse: mangled ones, and a fifth sound (each spoken, raw or WAV)."""
    sound = {"model_id": "sonic-3", "transcript": "Hello there, your table is ready.", "voice": "default"}
    return [json.dumps({**sound, "output_format": rng.choice(_CARTESIA_SOUND_FORMATS)}) if rng.random() < 0.2
            else _frame(rng, CARTESIA_HTTP_FIELDS) for _ in range(count)]


def cartesia_messages(rng: random.Random, count: int) -> list[str]:
    """Cartesia's socket: generation requests mangled as every surface's are, and the socket's own hazards: cancels
    of contexts never opened or already ended, floods of fresh contexts, a context spoken into after its last input
    (and the client closes its sockets with contexts mid-speech: ``bench faults``' clients do)."""
    out: list[str] = []
    while len(out) < count:
        kind = rng.random()
        if kind < 0.15:
            out.append(json.dumps({"context_id": rng.choice(("a", "b", "gone", "never", "", 5)),
                                   "cancel": rng.choice((True, True, False, 1))}))
        elif kind < 0.2:  # a flood of contexts, each a fresh id and one short sentence
            out += [json.dumps({"context_id": f"flood-{rng.getrandbits(32):08x}", "transcript": "Hi there.",
                                "voice": "default", "continue": False, "model_id": "sonic-3",
                                "output_format": _CARTESIA_S16}) for _ in range(rng.randrange(5, 40))]
        else:
            out.append(_frame(rng, CARTESIA_FIELDS))
    return out[:count]


# Phone stacks' frames: Twilio's and Telnyx's media-stream events ("stop" left out: it ends the call legitimately),
# Asterisk's chan_websocket events, jambonz's TTS vendor messages.
_MARKS = ("e1.800", "e1.800.end", "e0.0", "e" + "9" * 40 + ".1", "e1.-5", "e1.x", "e1", "", "x" * 5000, "\ud800")


def _named(key: str, *choices: Any) -> Callable[[random.Random], Any]:
    return lambda rng: {key: rng.choice(choices)} if rng.random() < 0.8 else _value(rng)


MEDIA_STREAM_FIELDS = {
    "event": _pick("media", "media", "mark", "dtmf", "start", "connected", "clear", "error", "", 5),
    "streamSid": _pick("MZ1", "", 5), "stream_id": _pick("S1", None),
    "media": _named("payload", "/////w==", "not base64!", 5, "", "A" * 20000),
    "mark": _named("name", *_MARKS), "dtmf": _named("digit", "5", "#", "55", "", 5, "\x00", "\ud800"),
    "payload": _named("digit", "1", "x"),
    "start": _named("callSid", "CA1", "", 5, "\ud800"),
}
ASTERISK_FIELDS = {
    "event": _pick("DTMF_END", "MEDIA_XOFF", "MEDIA_XON", "MEDIA_MARK_PROCESSED", "MEDIA_START", "STATUS",
                   "QUEUE_DRAINED", "HANGUP", ""),
    "channel_id": _pick("1761245643.1", "", 5), "correlation_id": _pick(*_MARKS), "digit": _pick("5", "55", 5, ""),
    "format": _pick("ulaw", "slin16", "opus", 5), "optimal_frame_size": _pick(160, 0, -1, 70000, "160", True),
    "ptime": _pick(20, 0, 1000, "20"),
}
# Deepgram's speak socket ("Close" left out: it ends the socket legitimately) and its REST route's queries; Vapi's
# custom-voice webhook bodies.
DEEPGRAM_FIELDS = {"type": _pick("Speak", "Speak", "Speak", "Speak", "Flush", "Flush", "Clear", "speak", "Shout", ""),
                   "text": _text}
DEEPGRAM_QUERIES = ("", "encoding=linear16&container=none&sample_rate=16000", "encoding=mulaw", "encoding=alaw",
                    "encoding=mp3", "encoding=opus", "encoding=flac", "encoding=aac&sample_rate=7",
                    "encoding=wav", "model=aura-2-nobody-en&container=ogg", "sample_rate=x&encoding=linear16",
                    "model=%00&bit_rate=-1")
DEEPGRAM_REST_FIELDS = {"text": _text}
_VAPI_MESSAGE = {"type": _pick("voice-request", "voice-request", "voice-request", "assistant-request", "status-update",
                               ""),
                 "text": _text, "sampleRate": _pick(8000, 16000, 22050, 24000, 44100, 48000, 11025, "24000", True, 0),
                 "call": _pick({"id": "c"}, None, 5)}
VAPI_FIELDS = {"message": lambda rng: {name: make(rng) if rng.random() < 0.8 else _value(rng)
                                       for name, make in _VAPI_MESSAGE.items() if rng.random() < 0.9}}
# Plivo's audio-stream events (its marks come back as playedStream) and Exotel's (Twilio's, snake-case ids).
PLIVO_FIELDS = {
    "event": _pick("media", "media", "playedStream", "clearedAudio", "dtmf", "start", "checkpoint", "", 5),
    "streamId": _pick("s1", "", 5), "name": _pick(*_MARKS), "extra_headers": _pick('{"key": "k"}', "a=b", "{", 5),
    "media": _named("payload", "AAA=", "not base64!", 5, "", "A" * 20000),
    "dtmf": _named("digit", "5", "#", "55", "", 5, "\x00", "\ud800"),
    "start": _named("callId", "c1", "", 5, "\ud800"),
}
EXOTEL_FIELDS = {**{k: v for k, v in MEDIA_STREAM_FIELDS.items() if k not in ("streamSid", "stream_id")},
                 "stream_sid": _pick("s1", "", 5), "start": _named("call_sid", "c1", "", 5, "\ud800")}
VONAGE_FIELDS = {
    "event": _pick("websocket:notify", "websocket:dtmf", "websocket:cleared", "websocket:connected", "x", "", 5),
    "payload": _named("name", *_MARKS), "digit": _pick("5", "55", 5, "", True, None),
    "content-type": _pick("audio/l16;rate=16000", "audio/l16;rate=7", "audio/x-mulaw", 5), "uuid": _pick("u1", "", 5),
}


def vonage_frames(rng: random.Random, count: int) -> list[str | bytes]:
    """Vonage's TEXT events and BINARY caller audio of odd sizes (a 640-byte frame is 20 ms at 16 kHz)."""
    return [bytes(rng.getrandbits(8) for _ in range(rng.choice((0, 1, 639, 640, 641, 32000)))) if rng.random() < 0.2
            else _frame(rng, VONAGE_FIELDS) for _ in range(count)]


JAMBONZ_FIELDS = {"type": _pick("stream", "stream", "stream", "flush", "stop", "keepalive", "x", ""), "text": _text}
# A controller's messages about the caller's side of a call (``listen``, ``barge_in``): bad formats and modes,
# settings out of range or of the wrong type, beside sound ones.
_MS = _pick(120, 0, 300, 5000, 5001, -1, 1e9, "120", True, None, [120])
CALLER_CONTROL_FIELDS = {"type": _pick("listen", "barge_in", "listen", "barge_in", "listen_", "barge-in"),
                         "format": _pick("native", "pcm16", "off", "wav", "PCM16", "", 5, None, True, ["native"]),
                         "mode": _pick("vad", "pause", "off", "VAD", "", 1, None, False, {"mode": "vad"}),
                         "threshold": _pick(0.5, 0.01, 0, 1, -0.1, 1.5, "0.5", True, None, 1e308, 2**63),
                         "min_speech_ms": _MS, "min_silence_ms": _MS,
                         "echo_margin_db": _pick(10, 0, 60, 61, -1, "10", None, [], {})}
_CALLER_PAYLOADS_REJECTED = ("not base64!", "/w", "////w", "AAAA\nAAAA", "", None, 5, ["/w=="], {"payload": "/w=="},
                             base64.b64encode(b"\xff" * 8001).decode(), base64.b64encode(b"\xff" * 16000).decode())
_CALLER_TIMESTAMPS = ("0", "20", "-20", "1e12", "x", "", None, 40, True)


def caller_media(rng: random.Random, count: int) -> list[tuple[str, str | bytes]]:
    """The caller's audio on a started Twilio stream, as a broken or hostile carrier sends it, each frame with what
    it must do: ``rejected`` (dropped and counted: a payload that is not base64 or not a string, an empty one, one of
    over a second of audio), ``heard`` (mu-law of an odd but sound size, up to a second) or ``closes`` (a binary
    frame, which a Media Stream never sends: closed with 4400). Timestamps are odd too; they are only the stream's."""
    frames: list[tuple[str, str | bytes]] = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.05:
            frames.append(("closes", rng.randbytes(rng.choice((0, 1, 160, 1000)))))
            continue
        if kind < 0.65:
            outcome, payload = "rejected", rng.choice(_CALLER_PAYLOADS_REJECTED)
        else:
            outcome = "heard"
            payload = base64.b64encode(rng.randbytes(rng.choice((1, 159, 160, 161, 800, 8000)))).decode()
        media: dict[str, Any] = {"track": "inbound", "timestamp": rng.choice(_CALLER_TIMESTAMPS)}
        if payload is not None:
            media["payload"] = payload
        frames.append((outcome, json.dumps({"event": "media", "streamSid": "MZ1", "media": media})))
    return frames


def asterisk_frames(rng: random.Random, count: int) -> list[str | bytes]:
    """chan_websocket TEXT frames (JSON, and the deprecated plain text a misconfigured dial string sends) and BINARY
    caller audio of odd sizes."""
    frames: list[str | bytes] = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.1:
            frames.append(bytes(rng.getrandbits(8) for _ in range(rng.choice((0, 1, 161, 640)))))
        elif kind < 0.15:
            frames.append(rng.choice(("MEDIA_XOFF", "DTMF_END digit:5", "MEDIA_START format:ulaw")))
        else:
            frames.append(_frame(rng, ASTERISK_FIELDS))
    return frames


def freeswitch_frames(rng: random.Random, count: int) -> list[str | bytes]:
    """mod_audio_stream's frames, mangled: binary caller audio of odd, empty and oversized lengths (a second of 16 kHz
    L16 is 32000 bytes), and TEXT frames where the module sends only its metadata."""
    frames: list[str | bytes] = []
    for _ in range(count):
        if rng.random() < 0.7:
            frames.append(bytes(rng.getrandbits(8) for _ in range(rng.choice((0, 1, 319, 320, 640, 641, 40000)))))
        else:
            frames.append(_frame(rng, MEDIA_STREAM_FIELDS))
    return frames


def freeswitch_queries(rng: random.Random, count: int) -> list[str]:
    """The query of a hostile ``uuid_audio_stream`` URL: no call, a call id too long or not printable, a rate the
    module cannot be asked for."""
    calls = ("", "x" * 129, "a%0Ab", "%00", "%1B%5B31m")
    rates = ("11025", "0", "-8000", "16000.0", "%00", "1e9", "8")
    out = []
    for _ in range(count):
        if rng.random() < 0.5:
            out.append(f"call={rng.choice(calls)}")
        else:
            out.append(f"call=fuzz-{rng.randrange(10**9)}&rate={rng.choice(rates)}")
    return out


TTS_FIELDS = {"text": _text, "voice": _pick("default", "nobody", "\ud800"), "format": _pick("pcm", "wav", "opus", "x"),
              "sample_rate": _pick(8000, 24000, 7, "24000"), "latency": _LATENCY,
              "stream": _pick(True, False, "yes"), "normalize": _NORMALIZE, "speed": _SPEED, "cache": _CACHE}
OPENAI_FIELDS = {"model": _pick("tts-1", 1), "input": _text, "voice": _pick("alloy", "marin", "default", "\ud800"),
                 "response_format": _pick("pcm", "wav", "mp3", "flac", "opus", "x"), "speed": _SPEED, "normalize": _NORMALIZE,
                 "stream_format": _pick("audio", "sse", "sse", "ws"), "instructions": _pick("Calm.", 3),
                 "latency": _LATENCY, "stream": _pick(True, False, 0), "cache": _CACHE}
# The data of Wyoming events (the event's type is picked apart, in wyoming_frames)
WYOMING_FIELDS = {"text": _text, "voice": _pick({"name": "default"}, {"name": "NOBODY"}, {"name": 5}, "x",
                                                {"language": "en"}, {}),
                  "rate": _pick(24000, "x"), "timestamp": _pick(0, -1, None)}
WYOMING_TYPES = ("describe", "synthesize", "synthesize", "synthesize-start", "synthesize-chunk", "synthesize-chunk",
                 "synthesize-stop", "ping", "audio-chunk", "transcribe", "", 7, None)


def websocket_messages(rng: random.Random, count: int,
                       fields: dict[str, Callable[[random.Random], Any]] = WEBSOCKET_FIELDS) -> list[str]:
    return [_frame(rng, fields) for _ in range(count)]


_PLAYOUT_LIES = (1e5, 999_999.0, 3600.0, 60.0)  # far ahead of anything sent
_PLAYOUT_BAD = (-1, "1", True, None, 1e6, [1.0], {"s": 1})  # refused: not seconds, 0 or more, under a million


def playout_lies(rng: random.Random, count: int) -> list[str]:
    """A WebSocket client's ``playout`` reports that lie while its utterances play: ahead of what was sent, going
    backwards, a flood of them, of another utterance, or not a position at all (refused); each run of them after a
    ``speak`` so that something is playing."""
    out: list[str] = []
    while len(out) < count:
        out.append(json.dumps({"type": "speak", "text": _text(rng) or "Hello there, how are you today?"}))
        lie = rng.randrange(5)
        if lie == 0:
            reports: list[Any] = [rng.choice(_PLAYOUT_LIES) for _ in range(rng.randrange(1, 6))]
        elif lie == 1:
            reports = sorted((rng.uniform(0, 30) for _ in range(rng.randrange(2, 12))), reverse=True)
        elif lie == 2:
            reports = [rng.uniform(0, 2)] * rng.randrange(30, 80)
        else:
            reports = [rng.choice((*_PLAYOUT_BAD, 0.5)) for _ in range(rng.randrange(1, 8))]
        utterance = _pick("nobody", "", 5, "\ud800")(rng) if lie == 4 else None
        out += [json.dumps({"type": "playout", "played": played, **({} if utterance is None else
                                                                   {"utterance": utterance})})
                for played in reports]
        if rng.random() < 0.2:
            out.append('{"type": "cancel"}')
    return out[:count]


def http_bodies(rng: random.Random, count: int, fields: dict[str, Callable[[random.Random], Any]]) -> list[str]:
    return [_frame(rng, fields) for _ in range(count)]


def wyoming_frames(rng: random.Random, count: int) -> list[bytes]:
    """Wyoming events on the wire (a header line, JSON data, a payload), some well-formed, some whose header, data
    or lengths lie; each complete in itself (no length claims bytes that never come: a server must wait for those)."""
    frames = []
    for _ in range(count):
        data = _frame(rng, WYOMING_FIELDS).encode("utf-8", "surrogatepass")
        payload = bytes(rng.getrandbits(8) for _ in range(rng.choice((0, 0, 0, 10, 480))))
        header: dict[str, Any] = {"type": rng.choice(WYOMING_TYPES), "version": "1.10.2"}
        mangle = rng.random()
        if mangle < 0.8:
            header.update(data_length=len(data), payload_length=len(payload))
        elif mangle < 0.85:
            header.update(data_length=rng.choice((-1, "10", 2**40, 10**9)), payload_length=len(payload))
        elif mangle < 0.9:
            header.update(data_length=max(0, len(data) - rng.randint(1, 5)), payload_length=len(payload))
        elif mangle < 0.95:
            header["data"] = _value(rng)
            data, payload = b"", b""
        else:
            frames.append(_text(rng).encode("utf-8", "surrogatepass") + rng.choice((b"\n", b"{\n", b"[" * 50 + b"\n")))
            continue
        frames.append(json.dumps(header).encode() + b"\n" + data + payload)
    return frames


_OFFER = "\r\n".join((
    "v=0", "o=- 4611731400430051336 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0 1",
    "a=msid-semantic: WMS",
    "m=audio 9 UDP/TLS/RTP/SAVPF 111 0 8 126", "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0",
    "a=ice-ufrag:Fq3x", "a=ice-pwd:0123456789abcdefghijklmn", "a=ice-options:trickle",
    "a=fingerprint:sha-256 " + ":".join(["AB"] * 32), "a=setup:actpass", "a=mid:0", "a=recvonly", "a=rtcp-mux",
    "a=rtpmap:111 opus/48000/2", "a=fmtp:111 minptime=10;useinbandfec=1", "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:8 PCMA/8000", "a=rtpmap:126 telephone-event/8000", "a=ptime:20",
    "a=candidate:1 1 udp 2122260223 127.0.0.1 9 typ host",
    "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 0.0.0.0", "a=ice-ufrag:Fq3x",
    "a=ice-pwd:0123456789abcdefghijklmn", "a=fingerprint:sha-256 " + ":".join(["AB"] * 32), "a=setup:actpass",
    "a=mid:1", "a=sctp-port:5000", "a=max-message-size:262144", ""))

_SDP_LINES = ("m=audio 9 UDP/TLS/RTP/SAVPF 999999", "m=audio -1 RTP/AVP", "m=video 9 UDP/TLS/RTP/SAVPF 96",
              "a=rtpmap:111 opus/0/0", "a=rtpmap:0 PCMU/-8000", "a=rtpmap:x y", "a=fmtp:111 " + "x=1;" * 500,
              "a=fingerprint:md5 ZZ", "a=fingerprint:sha-256 ", "a=setup:nonsense", "a=setup:passive",
              "a=candidate:1 1 udp 1 999.999.1.1 70000 typ host", "a=candidate:x", "a=ice-ufrag:",
              "a=sctp-port:70000", "a=max-message-size:-1", "a=mid:", "a=group:BUNDLE 7 8 9", "c=IN IP6 ::zz",
              "o=- x x IN IP4", "v=1", "a=ptime:0", "a=rtcp:abc", "m=application 9 UDP/DTLS/SCTP x", "\x00",
              "a=\ud800", "a=msid:" + "z" * 2000)


def _sdp(rng: random.Random) -> str:
    """The offer above, mangled: lines dropped, repeated, replaced or added, cut short, or grown too large."""
    lines = _OFFER.split("\r\n")
    for _ in range(rng.randint(0, 4)):
        at = rng.randrange(len(lines))
        action = rng.randrange(4)
        if action == 0:
            del lines[at]
        elif action == 1:
            lines[at:at] = [lines[at]] * rng.choice((2, 3, 40))
        elif action == 2:
            lines[at] = rng.choice(_SDP_LINES)
        else:
            lines.insert(at, rng.choice(_SDP_LINES))
    sdp = rng.choice(("\r\n", "\n", "\r\n")).join(lines)
    shape = rng.random()
    if shape < 0.1:
        return sdp[:rng.randrange(len(sdp) + 1)]
    if shape < 0.15:
        return sdp * rng.choice((5, 20))  # too many sections, or over the size limit
    if shape < 0.2:
        return _text(rng)
    return sdp


OFFER_FIELDS = {"sdp": _sdp, "type": _pick("offer", "offer", "answer", "pranswer", ""),
                "voice": _pick("default", "nobody", "\ud800"), "codec": _pick(None, "opus", "pcmu", "g722", "")}


def offer_bodies(rng: random.Random, count: int) -> list[str]:
    return [_frame(rng, OFFER_FIELDS) for _ in range(count)]


def whep_offers(rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    """WHEP bodies: mangled SDP (a lone surrogate sent as invalid UTF-8), under the right content type or a wrong one."""
    kinds = ("application/sdp", "application/sdp", "application/sdp", "application/SDP; charset=utf-8",
             "application/json", "text/plain", "")
    return [(rng.choice(kinds), _sdp(rng).encode("utf-8", "surrogatepass")) for _ in range(count)]


def _wav(rng: random.Random) -> bytes:
    """A WAV file, sometimes a sound one, sometimes lying about itself."""
    rate = rng.choice((24000, 16000, 1, 0, 4_000_000))
    frames = rng.choice((0, 1, 240, 24000 * 3))
    data = bytes(rng.getrandbits(8) for _ in range(min(frames * 2, 4096))) * (frames * 2 // 4096 + 1)
    data = data[:frames * 2]
    claimed = rng.choice((len(data), 0, 2**32 - 1))
    header = b"RIFF" + struct.pack("<I", (36 + claimed) % 2**32) + b"WAVEfmt " + struct.pack(
        "<IHHIIHH", 16, rng.choice((1, 1, 3, 85)), rng.choice((1, 1, 2, 0)), rate, rate * 2, 2,
        rng.choice((16, 16, 8, 0))) + b"data" + struct.pack("<I", claimed)
    return (header + data)[:rng.choice((None, None, 20, 44))]


def _sound_wav(rng: random.Random) -> bytes:
    """Six seconds of a voiced-speech stand-in (a harmonic tone, syllable-rate loudness) as 16-bit mono 24 kHz WAV:
    a well-formed upload the engine stores."""
    f0 = rng.uniform(100, 220)
    t = np.arange(6 * 24000, dtype=np.float64)  # numpy: sample by sample in Python this took 0.3 s a file
    loudness = 0.6 + 0.4 * np.sin(2 * math.pi * 4 * t / 24000)
    tone = sum(np.sin(2 * math.pi * k * f0 * t / 24000) / k for k in (1, 2, 3))
    data = (6000 * loudness * tone).astype("<i2").tobytes()  # truncated toward zero, as int() does
    return b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack(
        "<IHHIIHH", 16, 1, 1, 24000, 48000, 2, 16) + b"data" + struct.pack("<I", len(data)) + data


def _upload_file(rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 4:
        return _sound_wav(rng)
    if kind == 0:
        return _wav(rng)
    if kind == 1:
        return bytes(rng.getrandbits(8) for _ in range(rng.choice((0, 1, 100, 5000))))
    if kind == 2:
        return b"ID3" + bytes(200) if rng.random() < 0.5 else b"OggS" + bytes(rng.randrange(300))
    return _text(rng).encode("utf-8", "surrogatepass")


def voice_uploads(rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    """(content type, body) pairs for POST /v1/voices: multipart forms with odd names and files, and forms that are
    not quite multipart."""
    uploads = []
    for _ in range(count):
        boundary = rng.choice(("b0undary", "x" * 70, "a b", ""))
        name = rng.choice((f"fuzz-{rng.randrange(5)}", "fuzz-0", "default", "Default", "../x", "", "a" * 65, "\ud800", "x\x00y", _text(rng)))
        parts = []
        if rng.random() < 0.9:
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n'.encode()
                         + name.encode("utf-8", "surrogatepass") + b"\r\n")
        if rng.random() < 0.9:
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="v.wav"\r\n'
                         f"Content-Type: audio/wav\r\n\r\n".encode() + _upload_file(rng) + b"\r\n")
        for _ in range(rng.randrange(3) if rng.random() < 0.2 else 0):
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="extra"\r\n\r\nx\r\n'.encode())
        body = b"".join(parts) + (f"--{boundary}--\r\n".encode() if rng.random() < 0.9 else b"")
        if rng.random() < 0.1:
            body = body[:rng.randrange(len(body) + 1)]
        content_type = rng.choice((f"multipart/form-data; boundary={boundary}",) * 8 + (
            "multipart/form-data", "application/json", f"multipart/form-data; boundary={boundary}x"))
        uploads.append((content_type, body))
    return uploads


_PLS_HEAD = '<?xml version="1.0"?><lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon">'
_LEXICON_BODIES = (
    _PLS_HEAD + "<lexeme><grapheme>SQL</grapheme><alias>sequel</alias></lexeme></lexicon>",
    '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><lexicon>&b;</lexicon>',
    _PLS_HEAD + "<lexeme><grapheme>x</grapheme>" * 3000,
    _PLS_HEAD + "<lexeme><grapheme>" + "g" * 5000 + "</grapheme><alias>a</alias></lexeme></lexicon>",
    '{"rules": [{"type": "alias", "string_to_replace": "api", "alias": "A P I", "case_sensitive": false}]}',
    '{"rules": [' + ",".join(['{"type": "alias", "string_to_replace": "w%d", "alias": "x"}' % i
                               for i in range(2001)]) + "]}",
    '{"rules": "many"}', '{"rules": [{"type": "alias"}]}', "[]", "null", "", "<", "\ufeff<lexicon/>",
)


def lexicon_uploads(rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    """(content type, body) pairs for PUT /v1/lexicons/NAME: sound and broken PLS and rules JSON, entity bombs, too
    many rules, a huge grapheme, a body over the size limit, and anything else."""
    uploads = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.7:
            body = rng.choice(_LEXICON_BODIES).encode("utf-8", "surrogatepass")
        elif kind < 0.75:
            body = b"<" * (300 * 1024)
        else:
            body = _frame(rng, {"rules": _pick([], [{"type": "alias"}], "x", None)}).encode("utf-8", "surrogatepass")
        uploads.append((rng.choice(("application/pls+xml", "application/json", "text/plain", "")), body))
    return uploads


def keys_files(rng: random.Random, count: int, good: str) -> list[bytes]:
    """Keys files (gateway/guard/keys_file.py) a careless or hostile operator might write, made from ``good`` (a
    file that loads): cut short, bytes flipped, duplicated keys, unknown fields, limits that are not numbers, short
    keys, other tables, deep nesting, bytes that are not UTF-8."""
    mutations: list[Callable[[], str | bytes]] = [
        lambda: good[: rng.randrange(len(good))],
        lambda: "".join(c if rng.random() > 0.05 else rng.choice("[]=\"'.#\n{},") for c in good),
        lambda: good + good,
        lambda: good + f"\n[keys.twin{rng.randrange(99)}]\n" + good.split("\n", 1)[1],
        lambda: good + f"\n{rng.choice(['max_session', 'admin2', 'key ', 'limits'])} = 1\n",
        lambda: good + "\nmax_sessions = " + rng.choice(['"4"', "4.5", "-1", "0", "true", "[4]", "{a = 1}"]) + "\n",
        lambda: f'[keys.short]\nkey = "{_text(rng)[:15]}"\n',
        lambda: "[" + rng.choice(["clients", "key", "keys.a.b", "KEYS"]) + ']\nkey = "x' + "y" * 20 + '"\n',
        lambda: "[keys.deep]\nvoices = " + "[" * 200 + "]" * 200 + "\n",
        lambda: good.encode() + bytes(rng.randrange(256) for _ in range(16)),
        lambda: f'[keys."{_text(rng)}"]\nkey = "long-enough-key-0000"\n',
        lambda: f'[keys.h]\nkey_sha256 = "{rng.choice(["", "zz" * 32, "ab" * 31, "ab" * 33])}"\n',
    ]
    out = []
    for _ in range(count):
        made = rng.choice(mutations)()
        out.append(made if isinstance(made, bytes) else made.encode("utf-8", "surrogatepass"))
    return out


# -- credentials: short-lived tokens (POST /v1/tokens) and browser origins (--cors-origins) ---------------------------

_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _claims_of(token: str) -> dict[str, Any]:
    """A minted token's claims (they are not secret: base64url JSON between its dots)."""
    encoded = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))


def _tampered(rng: random.Random, token: str) -> str:
    prefix, claims, signature = token.split(".")
    choice = rng.randrange(7)
    if choice == 0:  # one character changed, anywhere after the prefix (a signature's last one: its padding bits too)
        at = rng.randrange(len(prefix) + 1, len(token))
        swapped = rng.choice([c for c in _B64URL + "." if c != token[at]])
        return token[:at] + swapped + token[at + 1:]
    if choice == 1:  # its claims widened and re-encoded, the signature kept
        wider = _claims_of(token) | rng.choice(({"e": _claims_of(token)["e"] + 86400}, {"r": ["stream", "voices"]},
                                                 {"u": 10_000}, {"v": ["*"]}, {"t": "someone-else"}))
        return f"{prefix}.{_b64(json.dumps(wider, separators=(',', ':')).encode())}.{signature}"
    if choice == 2:  # a character inserted or dropped
        at = rng.randrange(len(prefix) + 1, len(token))
        return token[:at] + (rng.choice(_B64URL) + token[at:] if rng.random() < 0.5 else token[at + 1:])
    if choice == 3:
        return f"{prefix}.{signature}.{claims}"
    if choice == 4:
        return token.swapcase()
    if choice == 5:  # padded, or another's signature on these claims
        return rng.choice((f"{token}=", f"{token}==", f"{prefix}.{claims}=.{signature}", f"{prefix}.{claims}.{signature}A"))
    return f"{prefix}.{claims}.{_b64(bytes(rng.randrange(256) for _ in range(32)))}"


def _garbage_token(rng: random.Random) -> str:
    return rng.choice(("cbft.", "cbft..", "cbft.a.b", "cbft." + "A" * rng.choice((100, 2100, 9000)) + ".x",
                       "cbft.e30.", "cbft.e30." + "A" * 43, "CBFT.e30.AAAA", "cbft.%00.x", "cbft./../../etc.x",
                       "cbft." + _b64(b"[" * 900) + ".AAAA", "cbft." + _b64(json.dumps({"e": 2**62}).encode()) + ".AA",
                       "cbft.e30.AAAA.AAAA", "cbft", "token", "null", "cbft.\u00e9.\u00e9"))


def _signed_claims(rng: random.Random, valid: dict[str, Any], now: float) -> tuple[str, dict[str, Any] | bytes]:
    """Claims that no server minted and none may take even when signed with its own secret (an insider's, or a
    leaked secret's, mistakes): expired, another key's mark or tenant, fields of the wrong type, counts at 0, scope
    for routes no token reaches, claims that are not an object, deeply nested, or over the size read at all."""
    kind = rng.randrange(9)
    if kind == 0:
        return "expired", valid | {"e": rng.choice((int(now) - 1, int(now) - rng.randrange(1, 10**7), 0, -(2**40)))}
    if kind == 1:
        return "foreign key", valid | rng.choice(({"k": _b64(bytes(rng.randrange(256) for _ in range(12)))},
                                                  {"t": rng.choice(("nobody", "", "bench\u0000", "a" * 300))},
                                                  {"k": ""}))
    if kind == 2:  # (never null where null means "no limit", nor an empty voice list: a socket opens without a voice)
        field = rng.choice(("i", "e", "k", "t", "r", "v", "s", "u"))
        wrong = rng.choice((None, 1.5, "1", {}, [1], {"a": 1}, -1, "x" * 17) if field in ("i", "e", "k") else
                           (True, 1.5, [], {}, [1], -1, "x" * 17) if field == "t" else
                           (True, 1.5, "1", {}, [1], {"a": 1}, -1) if field in ("r", "v") else
                           (True, 1.5, "1", [], {}, [1]))
        if wrong is None:
            return "mangled claims", {key: value for key, value in valid.items() if key != field}
        return "mangled claims", valid | {field: wrong}
    if kind == 3:
        return "used up", valid | {"u": rng.choice((0, -1, -(2**40)))}
    if kind == 4:
        return "out of scope", valid | {"r": rng.choice((["admin"], ["voices"], ["tokens", "usage"], ["metrics"]))}
    if kind == 5:
        return "not an object", rng.choice((b"[]", b"null", b"1", b'"cbft"', b"", b"{", b"\xff\xfe",
                                            json.dumps([valid]).encode()))
    if kind == 6:
        depth = rng.choice((999, 1000, 1200, 1400))  # past the JSON decoder's recursion limit, within 2,048 characters
        if rng.random() < 0.5:
            return "nested claims", b"[" * depth + b"]" * rng.randrange(2)
        return "nested claims", json.dumps(valid).encode()[:-1] + b',"r":' + b"[" * (depth - 200) + b"}"
    if kind == 7:  # (each past the 2,048 characters a token may have: a signed one under it would be a real token)
        return "huge claims", valid | {"x": "A" * rng.choice((2000, 3000, 12_000))}
    return "huge claims", valid | {"v": [f"v{n}" for n in range(rng.choice((400, 1000)))]}


def hostile_tokens(rng: random.Random, count: int, valid: str,
                   sign: Callable[[bytes], str] | None = None, now: float = 0.0) -> list[tuple[str, str]]:
    """(kind, credential) pairs, made from ``valid`` (a token the server minted), none of which may open anything:
    forged under another secret (``forged``), changed anywhere (``tampered``), cut short (``truncated``), not a token
    at all (``garbage``); and with ``sign`` (the server's own signature over claims' bytes, where its secret is
    known), claims it never minted: expired, another key's, mistyped, used up, out of scope, not an object, nested
    past the decoder's limit, huge."""
    claims = _claims_of(valid)
    foreign = random.Random(rng.random())
    out: list[tuple[str, str]] = []
    for _ in range(count):
        kind = rng.random()
        if sign is not None and kind < 0.35:
            name, forged = _signed_claims(rng, claims, now)
            body = forged if isinstance(forged, bytes) else json.dumps(forged, separators=(",", ":")).encode()
            out.append((name, sign(body)))
        elif kind < 0.5:
            body = json.dumps(claims | {"e": int(now) + 600}, separators=(",", ":")).encode()
            signature = bytes(foreign.randrange(256) for _ in range(32))
            out.append(("forged", f"cbft.{_b64(body)}.{_b64(signature)}"))
        elif kind < 0.8:
            out.append(("tampered", _tampered(rng, valid)))
        elif kind < 0.92:
            out.append(("truncated", valid[:rng.randrange(len(valid))]))
        else:
            out.append(("garbage", _garbage_token(rng)))
        if out[-1][1] == valid:  # (a change that changed nothing)
            out[-1] = ("tampered", valid[:-1] + ("A" if valid[-1] != "A" else "B"))
    return out


def hostile_origins(rng: random.Random, count: int, allowed: str | None) -> list[tuple[str, bytes]]:
    """(kind, Origin header value) pairs a server with ``--cors-origins`` must not allow: another site, ``null``,
    near misses of ``allowed`` (one origin it lists, where known: another scheme or port, a longer or shorter host,
    a user part, a path, two origins in one), and values that are no origin at all (empty, ``*``, control bytes,
    bytes that are not ASCII, thousands of characters). Every generated host ends in ``.invalid``, or is a near
    miss of ``allowed``, so none is in a real list."""
    out: list[tuple[str, bytes]] = []
    for _ in range(count):
        kind = rng.random()
        label = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789-") for _ in range(rng.randint(1, 20)))
        if allowed is not None and kind < 0.45:
            scheme, _, host_port = allowed.partition("://")
            host, colon, port = host_port.partition(":")
            other = "http" if scheme == "https" else "https"
            value = rng.choice((f"{other}://{host_port}", f"{scheme}://{host}:{int(port or 443) + 1}",
                                f"{scheme}://{host}.invalid", f"{scheme}://{label}.{host}{colon}{port}",
                                f"{scheme}://{label}{host}{colon}{port}", f"{scheme}://{host}.{colon}{port}",
                                f"{scheme}://{host_port}@{label}.invalid", f"{scheme}://{label}.invalid#{host_port}",
                                f"{scheme}://{host_port}/{label}", f"{allowed}, https://{label}.invalid",
                                f"https://{label}.invalid {allowed}", f"{scheme}://{host[:-1]}{colon}{port}",
                                f"{scheme}:/{host_port}", f"{allowed}\x00", f"{scheme}://а{host[1:]}{colon}{port}",
                                f"{scheme}://{host_port}.",
                                f"*.{host}", f"{scheme}://*"))
            out.append(("near miss", value.encode("utf-8")))
        elif kind < 0.7:
            out.append(("other site", rng.choice((f"https://{label}.invalid", f"http://{label}.invalid:8080",
                                                  f"http://127.0.0.1.invalid", f"file://{label}.invalid",
                                                  f"chrome-extension://{label}", f"https://[::1].invalid")).encode()))
        elif kind < 0.8:
            out.append(("null", rng.choice((b"null", b"NULL", b"null ", b"Null"))))
        else:
            out.append(("not an origin", rng.choice((b"", b"*", b" ", b"\x00", b"https://\x00.invalid", b"\xff\xfe",
                                                     "https://\u00e9.invalid".encode(), b"https://" + b"a" * 9000,
                                                     b"https://" + b"a." * 2000 + b"invalid", b"%68ttps://a.invalid",
                                                     b"https://a.invalid\x7f", b"\\x"))))
    return out
