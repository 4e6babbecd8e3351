"""FreeSWITCH's mod_audio_stream (the open-source module, github.com/amigniter/mod_audio_stream), as the gateway speaks
it (pure).

FreeSWITCH dials ``WS /v1/freeswitch?call=<id>&rate=8000&api_key=<key>`` (``uuid_audio_stream <uuid> start <url> mono
8k``): nothing in the stream names the call or its rate, so the URL does (``opening``), and its rate must be the one
the ``8k``/``16k`` argument asks for. In: binary frames of the caller's audio, 16-bit linear little-endian mono at
that rate (20 ms, or what the module buffers); a text frame is the optional metadata argument, sent first, and is
ignored. Out: ``{"type": "streamAudio", "data": {"audioDataType": "raw", "sampleRate": N, "audioData": base64}}``;
the module writes each to a file and fires ``mod_audio_stream::play`` for the dialplan's event listener to play it.
There is no mark and no clear: the gateway sends pieces of 100 ms at most ``lead_s`` ahead of real time, counts what
was heard by the clock, and on barge-in stops sending (what was sent still plays).
"""

from __future__ import annotations

import base64
import json
from typing import Mapping

from gateway.telephony import events
from gateway.telephony.events import CallerMedia, Ignored, Inbound, Start

RATES = {"8000": 8000, "8k": 8000, "16000": 16000, "16k": 16000}
MAX_CALL_CHARS = 128
PARAMETERS = ("key", "voice", "text", "barge_in")  # from the URL, as a Twilio call's <Parameter>s


def opening(query: Mapping[str, str]) -> Start:
    """The call, from the URL FreeSWITCH dialled; raises ProtocolError for one without a usable ``call`` or ``rate``.
    Its stream id is its rate (mod_audio_stream has no stream id; ``Outbound`` needs the rate)."""
    call = events.string(query.get("call"), "the 'call' parameter (the FreeSWITCH channel's uuid)")
    if len(call) > MAX_CALL_CHARS or not call.isprintable():
        raise events.bad(f"the 'call' parameter is at most {MAX_CALL_CHARS} printable characters")
    rate = RATES.get(query.get("rate") or "8000")
    if rate is None:
        raise events.bad("the 'rate' parameter is 8000 or 16000 (8k or 16k), as uuid_audio_stream's argument")
    params = {name: query[name] for name in PARAMETERS if query.get(name)}
    if "key" not in params and query.get("api_key"):
        params["key"] = query["api_key"]
    return Start(call, str(rate), params, "pcm", "slin" if rate == 8000 else "slin16", rate)


def parse(raw: str | bytes) -> Inbound:
    """One frame from mod_audio_stream: binary audio, or its metadata (text, ignored)."""
    if isinstance(raw, bytes):
        return CallerMedia(raw)
    return Ignored("metadata")


class Outbound:
    """The gateway's frames for one stream: ``streamAudio`` messages of raw L16 at the call's rate."""

    heard_from = "clock"
    lead_s = 0.12  # each piece is a file its listener must queue before the last ends: what barge-in cannot stop

    def __init__(self, rate: str) -> None:
        self.rate = int(rate)

    def media(self, payload: bytes) -> str:
        return json.dumps({"type": "streamAudio", "data": {"audioDataType": "raw", "sampleRate": self.rate,
                                                           "audioData": base64.b64encode(payload).decode()}})

    def mark(self, name: str) -> None:
        return None

    def clear(self) -> None:
        return None
