"""The controller's messages about the caller's side (pure): ``listen`` and ``barge_in``.

``{"type": "listen", "format": "native" | "pcm16" | "off", "aec"?: true | false}``: the caller's audio to this
controller, in the call's own encoding (``native``: a phone call's mu-law, a-law or linear PCM) or as PCM16 at
16 kHz; ``off`` stops it. ``aec`` (default true): with the gateway's echo cancelled (gateway/listen/aec.py; byte for
byte where there was none to cancel), or false: exactly as received. ``{"type": "barge_in", "mode": "vad" | "pause" | "off", "threshold"?, "min_speech_ms"?,
"min_silence_ms"?, "echo_margin_db"?}``: what the caller's speech does (gateway/listen/barge_in.py) and the VAD's
settings (gateway/listen/detector.py) for this session.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from engine.protocol import ProtocolError
from gateway.listen.barge_in import MODES
from gateway.listen.detector import VadConfig

LISTEN_FORMATS = ("native", "pcm16", "off")
TYPES = ("listen", "barge_in")


@dataclass(frozen=True)
class Listen:
    format: str
    aec: bool = True


@dataclass(frozen=True)
class SetBargeIn:
    mode: str | None
    vad: dict[str, float]  # VadConfig fields to change


CallerMessage = Listen | SetBargeIn


def parse(message: dict[str, Any]) -> CallerMessage:
    """``message`` (a JSON object whose ``type`` is in TYPES) as typed; ProtocolError (``bad_config``) when bad."""
    if message["type"] == "listen":
        fmt = message.get("format", "native")
        if fmt not in LISTEN_FORMATS:
            raise ProtocolError(f"'listen' format is one of {', '.join(LISTEN_FORMATS)}", "bad_config")
        aec = message.get("aec", True)
        if not isinstance(aec, bool):
            raise ProtocolError("'listen' aec is true or false", "bad_config")
        return Listen(fmt, aec)
    mode = message.get("mode")
    if mode is not None and mode not in MODES:
        raise ProtocolError(f"'barge_in' mode is one of {', '.join(MODES)}", "bad_config")
    vad: dict[str, float] = {}
    for field in fields(VadConfig):
        value = message.get(field.name)
        if value is None:
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ProtocolError(f"'barge_in' {field.name} must be a number", "bad_config")
        vad[field.name] = float(value)
    return SetBargeIn(mode, vad)


def configured(config: VadConfig, changes: dict[str, float]) -> VadConfig:
    """``config`` with ``changes``; ProtocolError when a value is out of range."""
    try:
        return replace(config, **changes)
    except ValueError as exc:
        raise ProtocolError(str(exc), "bad_config") from None
