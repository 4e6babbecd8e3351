"""A WebSocket /v1/stream listener that plays what it receives at a rate of its own and may report its position
(``playout``): the client side of the closed loop (benchmarks, tests).

``Playback`` (pure) is the player: it starts at the first audio and plays at ``rate`` times real time; its buffer
running empty before the utterance is complete (``done`` came and all of it played) is one underrun, and the time it
then waits is starved time. ``play`` drives one utterance of an open socket through it.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import ClientConnection

REPORT_EVERY_S = 0.1  # how often a reporting listener sends ``playout``


class Refused(RuntimeError):
    """The server answered the utterance with an ``error`` event."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class Playback:
    """One utterance's player, on any monotonic clock (seconds)."""

    def __init__(self, rate: float = 1.0) -> None:
        if not rate > 0:
            raise ValueError(f"a playback rate is > 0, not {rate}")
        self.rate = rate
        self.received = 0.0  # audio seconds received
        self.position = 0.0  # audio seconds played
        self.complete = False  # no more audio will come
        self.underruns = 0
        self.starved_s = 0.0
        self.first_at: float | None = None
        self._clock: float | None = None
        self._dry = False

    def receive(self, seconds: float, now: float) -> None:
        """``seconds`` more audio arrived at ``now``."""
        self.advance(now)
        if self.first_at is None:
            self.first_at = self._clock = now
        self.received += seconds
        self._dry = False

    def end(self, now: float) -> None:
        """The utterance is complete (``done``): what is buffered plays out, and then it is over, not starved."""
        self.advance(now)
        self.complete = True

    def advance(self, now: float) -> None:
        """Play on to ``now``."""
        if self._clock is None or now <= self._clock:
            return
        elapsed, self._clock = now - self._clock, now
        if self._dry:
            self.starved_s += elapsed
            return
        left = (self.received - self.position) / self.rate
        if elapsed < left:
            self.position += elapsed * self.rate
            return
        self.position = self.received
        if not self.complete:
            self.underruns += 1
            self._dry = True
            self.starved_s += elapsed - left

    def remaining_s(self) -> float:
        """Wall seconds until what is buffered has played."""
        return (self.received - self.position) / self.rate


@dataclass
class Played:
    """One utterance as a playing listener got it."""

    ttfa_s: float | None  # text sent -> first audio
    audio_s: float
    underruns: int
    starved_s: float
    reports: int  # ``playout`` messages sent
    done: dict[str, Any]  # the server's ``done`` event


async def play(ws: ClientConnection, text: str, *, rate: float = 1.0, report: bool = False, cache: bool = False,
               bytes_per_second: int = 48000, timeout: float = 60.0) -> Played:
    """Speak ``text`` on ``ws`` (an open /v1/stream past its ``ready``, raw 16-bit PCM at ``bytes_per_second``),
    play the audio at ``rate``, reporting where it is every REPORT_EVERY_S when ``report``, until it has all played
    (``cache``: whether the prompt cache may answer it; off by default, so that what plays is paced by the engine).
    Raises ``Refused`` on an ``error`` event."""
    player = Playback(rate)
    deadline = time.monotonic() + timeout
    sent = time.monotonic()
    await ws.send(json.dumps({"type": "speak", "text": text, "cache": cache}))
    utterance: str | None = None
    reports, next_report = 0, sent
    done: dict[str, Any] | None = None
    while done is None or player.remaining_s() > 0:
        now = time.monotonic()
        if now > deadline:
            raise TimeoutError(f"the utterance took more than {timeout:g} s")
        if report and player.first_at is not None and now >= next_report:
            player.advance(now)
            await ws.send(json.dumps({"type": "playout", "played": round(player.position, 3),
                                      **({"utterance": utterance} if utterance else {})}))
            reports, next_report = reports + 1, now + REPORT_EVERY_S
        reporting = report and player.first_at is not None
        wait = max(0.0, min(next_report, deadline) - now) if reporting else deadline - now
        if done is not None:
            await asyncio.sleep(min(wait, player.remaining_s()))
            player.advance(time.monotonic())
            continue
        try:
            frame = await asyncio.wait_for(ws.recv(), wait or 1e-3)
        except TimeoutError:
            continue
        if isinstance(frame, bytes):
            player.receive(len(frame) / bytes_per_second, time.monotonic())
            continue
        event = json.loads(frame)
        if event["type"] == "chunk":
            utterance = event["utterance"]
        elif event["type"] == "error":
            raise Refused(event["code"], event["message"])
        elif event["type"] == "done":
            done = event
            player.end(time.monotonic())
    return Played(None if player.first_at is None else player.first_at - sent, player.received, player.underruns,
                  player.starved_s, reports, done)
