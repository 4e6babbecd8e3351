"""Every audio format the gateway sends, with its content type and sample rates, and which API offers which: the one
table the encoders, the HTTP endpoints, the WebSocket config and the WebRTC codecs read.

The engine's audio is always mono s16le at ``engine.protocol.SAMPLE_RATE``; a format either takes any of
``PCM_RATES`` (resampled) or has a rate of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.protocol import SAMPLE_RATE

PCM_RATES = (8000, 16000, 22050, SAMPLE_RATE, 32000, 44100, 48000)


@dataclass(frozen=True)
class OutputFormat:
    name: str
    content_type: str
    rates: tuple[int, ...] = PCM_RATES  # the first of one is the format's own
    sample_bytes: int | None = 2  # bytes per sample on the wire; None for compressed formats

    @property
    def default_rate(self) -> int:
        return SAMPLE_RATE if SAMPLE_RATE in self.rates else self.rates[0]


FORMATS: dict[str, OutputFormat] = {f.name: f for f in (
    OutputFormat("pcm", "audio/pcm"),
    OutputFormat("pcm_f32le", "audio/pcm", sample_bytes=4),  # float32 samples (Cartesia's pcm_f32le)
    OutputFormat("wav", "audio/wav"),
    OutputFormat("mulaw", "audio/basic", (8000,), sample_bytes=1),
    OutputFormat("alaw", "audio/x-alaw-basic", (8000,), sample_bytes=1),
    OutputFormat("opus", "audio/ogg; codecs=opus", (48000,), sample_bytes=None),
    OutputFormat("mp3", "audio/mpeg", sample_bytes=None),
    OutputFormat("aac", "audio/aac", sample_bytes=None),
    OutputFormat("flac", "audio/flac", sample_bytes=None),
)}
# Other names of the same formats (the WebSocket's "pcm_s16le", the RTP names of G.711).
ALIASES = {"pcm_s16le": "pcm", "ulaw": "mulaw", "pcmu": "mulaw", "pcma": "alaw"}

# What each API offers, as that API names it.
TTS_FORMATS = ("pcm", "wav", "opus", "mulaw", "mp3")  # POST /v1/tts
OPENAI_FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")  # POST /v1/audio/speech
OPENAI_PCM_RATE = 24000  # OpenAI defines its "pcm" as 24 kHz, whatever the engine's rate
WEBSOCKET_FORMATS = ("pcm_s16le", "mulaw")  # "config" on /v1/stream
WEBSOCKET_DEFAULT_FORMAT = "pcm_s16le"  # at SAMPLE_RATE
# ElevenLabs' output_format names (the stream-input query) as (format, rate).
ELEVENLABS_FORMATS = {
    **{f"pcm_{rate}": ("pcm", rate) for rate in PCM_RATES},
    "ulaw_8000": ("mulaw", 8000),
    **{f"mp3_{rate}_{kbps}": ("mp3", rate) for rate, kbps in ((22050, 32), (44100, 32), (44100, 64), (44100, 96),
                                                               (44100, 128), (44100, 192))},
    "opus": ("opus", 48000),
    **{f"opus_48000_{kbps}": ("opus", 48000) for kbps in (32, 64, 96, 128, 192)},
}
ELEVENLABS_DEFAULT_FORMAT = "mp3_44100_128"  # theirs, when the query names none
WEBRTC_CODECS = ("opus", "pcmu", "pcma")  # what the paced track can feed, in the server's order of preference


def output_format(name: str) -> OutputFormat:
    """The format called ``name`` (or one of its aliases); raises ValueError for an unknown one."""
    try:
        return FORMATS[ALIASES.get(name, name)]
    except KeyError:
        raise ValueError(f"unknown audio format {name!r}; expected one of {', '.join(FORMATS)}") from None


def websocket_rates() -> dict[str, list[int]]:
    """What ``config`` on /v1/stream takes: each of ``WEBSOCKET_FORMATS`` with its sample rates (``ready`` says so)."""
    return {name: list(output_format(name).rates) for name in WEBSOCKET_FORMATS}


def codec_rate(codec: str) -> int:
    """The sample rate the paced WebRTC track feeds ``codec`` (one of ``WEBRTC_CODECS``) at."""
    return output_format(codec).default_rate
