"""A bare aiortc + Starlette peer that answers our client protocol with an instant tone: ``bench edge``'s yardstick.

Not product code: a benchmark fixture. It speaks just enough of docs/protocol.md for ``bench gateway``'s clients --
``WebSocket /v1/stream`` (``ready``, then a ``speak`` answered at once by a 0.5 s tone as 24 kHz PCM and ``done``) and
``POST /v1/webrtc/offer`` (a paced 20 ms track at the codec's rate, silent until a ``speak`` on the data channel
starts the tone; ``done`` once it has played) -- with no engine, planner, watermark or jitter buffer behind it, so
what the product adds to first audio over the same transports shows as the difference. It also serves the product's
page (``web/``, with ``/health`` and a one-voice ``/v1/voices``), so a browser measures both the same way.

Run: ``python -m cbf_tools.peers.edge --port 8199`` (127.0.0.1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from pathlib import Path

import numpy as np
import uvicorn
from aiortc import RTCConfiguration, RTCPeerConnection, RTCRtpSender, RTCSessionDescription
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from cbf_tools.peers.rtc_listener import PacedSource

TONE_S = 0.5
TONE_HZ = 440.0
RATES = {"opus": 48000, "pcmu": 8000, "pcma": 8000}
WEB_DIR = Path(__file__).resolve().parents[2] / "web"


def tone(rate: int, seconds: float = TONE_S) -> bytes:
    """A sine at a third of full scale, s16le mono."""
    t = np.arange(round(rate * seconds)) / rate
    return (np.sin(2 * np.pi * TONE_HZ * t) * 32767 / 3).astype("<i2").tobytes()


async def stream(ws: WebSocket) -> None:
    await ws.accept()
    await ws.send_json({"type": "ready", "engine": {"engine": "tone"}})
    pcm = tone(24000)
    try:
        while True:
            message = json.loads(await ws.receive_text())
            if message.get("type") == "speak":
                started, uid = time.monotonic(), uuid.uuid4().hex[:12]
                await ws.send_json(_chunk(uid, message))
                await ws.send_bytes(pcm)
                await ws.send_json({"type": "done", "utterance": uid, "ttfa": round(time.monotonic() - started, 4),
                                    "audio_seconds": TONE_S, "chunks": 1})
    except WebSocketDisconnect:
        pass


PEERS: set[RTCPeerConnection] = set()


async def offer(request: Request) -> JSONResponse:
    body = await request.json()
    codec = str(body.get("codec") or "opus").lower()
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    PEERS.add(pc)
    track = PacedSource(RATES.get(codec, 48000))
    transceiver = pc.addTransceiver(track, direction="sendonly")
    transceiver.setCodecPreferences([c for c in RTCRtpSender.getCapabilities("audio").codecs
                                     if c.mimeType.lower() == f"audio/{codec}"])

    @pc.on("datachannel")
    def on_channel(channel) -> None:
        channel.send(json.dumps({"type": "ready", "engine": {"engine": "tone"}}))

        @channel.on("message")
        def on_message(raw: str) -> None:
            if (message := json.loads(raw)).get("type") == "speak":
                asyncio.ensure_future(speak(channel, track, message))

    @pc.on("connectionstatechange")
    async def on_state() -> None:
        if pc.connectionState in ("failed", "closed"):
            PEERS.discard(pc)
            await pc.close()

    await pc.setRemoteDescription(RTCSessionDescription(sdp=body["sdp"], type="offer"))
    await pc.setLocalDescription(await pc.createAnswer())
    return JSONResponse({"sdp": pc.localDescription.sdp, "type": "answer", "codec": codec})


def _chunk(uid: str, speak: dict) -> dict:
    return {"type": "chunk", "utterance": uid, "seq": 0, "text": speak.get("text", ""), "offset": 0.0,
            "duration": TONE_S, "gen_time": 0.0, "words": []}


async def speak(channel, track: PacedSource, message: dict) -> None:
    uid = uuid.uuid4().hex[:12]
    played = track.play(tone(track.rate))
    channel.send(json.dumps(_chunk(uid, message)))
    await played.wait()
    channel.send(json.dumps({"type": "done", "utterance": uid, "ttfa": 0.0, "audio_seconds": TONE_S, "chunks": 1,
                             "underruns": 0}))


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok", "engine": {"engine": "tone"}})


async def voices(request: Request) -> JSONResponse:
    return JSONResponse({"voices": [{"name": "default", "kind": "builtin"}]})


def app() -> Starlette:
    return Starlette(routes=[WebSocketRoute("/v1/stream", stream), Route("/v1/webrtc/offer", offer, methods=["POST"]),
                             Route("/health", health), Route("/v1/voices", voices),
                             Mount("/", StaticFiles(directory=WEB_DIR, html=True))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
