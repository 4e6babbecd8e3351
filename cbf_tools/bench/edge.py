"""``chatterbox-fast bench edge``: the product's first audio against a bare aiortc + Starlette peer's instant tone.

Both answer the same client protocol (``cbf_tools/peers/edge.py`` is the peer, a benchmark fixture); the same clients
as ``bench gateway`` measure each, alternating product and peer round by round (so load from other work on the host
falls on both alike): WebSocket first audio (the first binary frame after ``speak``) and aiortc first audible (the
first decoded 20 ms frame with energy, receiver prefetch 0) over Opus and over PCMU; and, where Playwright and
Chromium are installed, what a real Chromium hears: the product's page (``web/``, which the peer serves too) from
Speak to its first audible sample, over Opus and PCMU. Prints medians, the product / peer ratios against the
targets, and one JSON line. The product runs on ``--engine espeak`` unless told otherwise.

Speech does not start at full level as the tone does: the joins keep a little silence and a fade before it, and its
first sound is often quiet, so a detector finds it a frame or two into the audio. So each round also finds the
speech's own onset inside the audio the WebSocket received (``onsets``: the first 20 ms frame over the aiortc
detector's level, and the first sample over Chromium's page's), and reports each first audible minus it
(``from_onset``: when the utterance's audio began to play, onsets made equal; the WebSocket's first audio is its first
byte, onset-free already).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
from typing import Any, Iterator

import httpx
import numpy as np

from cbf_tools.bench import report
from cbf_tools.bench.gateway import BenchError, Client, WebRTCClient, WebSocketClient
from cbf_tools.peers.rtc_listener import SPEECH_RMS
from cbf_tools.peers.local_server import (ROOT, ServerFailed, free_port, local_server, quiet_client_logs, stop,
                                    wait_healthy)

TEXT = ("Hello there, this is a streaming test of the real-time voice gateway. It should start speaking before the "
        "text is complete.")
MEASURES = ("ws", "opus", "pcmu")  # WebSocket first audio; aiortc first audible over Opus, over PCMU
CHROME = ("chrome_opus", "chrome_pcmu")  # Chromium's page: Speak to the first audible sample
TARGET_RATIO = {"ws": 1.3, "opus": 1.2, "pcmu": 1.2, "chrome_opus": 1.2, "chrome_pcmu": 1.2}  # product / peer, at most
CHROMIUM = os.environ.get("CBF_CHROMIUM", "/usr/bin/chromium")
FRAME_S = 0.020  # the aiortc detector's frame
AUDIBLE_SAMPLE = 0.01 * 32768  # the page's: a sample at |x| >= 0.01 of full scale
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required",
                 "--no-first-run", "--disable-background-networking"]
SPEAK_IN_PAGE = """async (text) => {
    document.getElementById("text").value = text;
    const u = await cbf.speak();
    const t0 = performance.now();
    while (!u.finished && performance.now() - t0 < 30000) await new Promise((r) => setTimeout(r, 20));
    return u.ttfaMs;
}"""


@contextlib.contextmanager
def peer_server(ready_timeout: float = 30.0) -> Iterator[tuple[str, int]]:
    """The bare peer in a process of its own (as the product is); yields (its base URL, pid) once it answers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "cbf_tools.peers.edge", "--port", str(port)], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, url, ready_timeout, "the peer")
        yield url, proc.pid
    finally:
        stop(proc)


def onsets(pcm: bytes, rate: int = 24000) -> tuple[float | None, float | None]:
    """Where speech starts in ``pcm`` (s16le mono), in seconds: the start of the first 20 ms frame louder than the
    aiortc detector's SPEECH_RMS, and the first sample at Chromium's page's level; None where there is none."""
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], "<i2").astype(np.float64)
    size = round(rate * FRAME_S)
    frames = samples[: samples.size // size * size].reshape(-1, size)
    loud = np.flatnonzero(np.sqrt(np.mean(frames ** 2, axis=1)) > SPEECH_RMS) if frames.size else []
    audible = np.flatnonzero(np.abs(samples) >= AUDIBLE_SAMPLE)
    return (round(float(loud[0] * FRAME_S), 4) if len(loud) else None,
            round(float(audible[0] / rate), 4) if len(audible) else None)


def _client(measure: str, url: str) -> Client:
    return WebSocketClient(url, None, "default") if measure == "ws" else WebRTCClient(url, None, "default", measure)


def chrome_available() -> bool:
    try:
        import playwright.async_api  # noqa: F401  (the test extra)
    except ImportError:
        return False
    return os.path.exists(CHROMIUM)


async def chrome(urls: dict[str, str], rounds: int, text: str, samples: dict[str, dict[str, list[float]]]) -> None:
    """The page in headless Chromium, one tab per (target, codec), alternating as ``measure`` does."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            pages = {}
            for target, url in urls.items():
                for m in CHROME:
                    page = pages[(target, m)] = await browser.new_page()
                    await page.goto(f"{url}/?transport=webrtc&codec={m.removeprefix('chrome_')}")
                    await page.wait_for_function("window.cbf && window.cbf.state.connected", timeout=30_000)
                    await page.evaluate(SPEAK_IN_PAGE, text)  # warm-up
            for r in range(rounds):
                for target in (list(urls) if r % 2 == 0 else list(reversed(urls))):
                    for m in CHROME:
                        ms = await pages[(target, m)].evaluate(SPEAK_IN_PAGE, text)
                        if ms is not None:
                            samples[target][m].append(ms / 1000)
        finally:
            await browser.close()


async def measure(urls: dict[str, str], rounds: int, text: str, with_chrome: bool = False) -> dict[str, Any]:
    """One connected client per (target, measure); one warm-up utterance each, then ``rounds`` alternating rounds."""
    clients = {(target, m): _client(m, url) for target, url in urls.items() for m in MEASURES}
    samples: dict[str, dict[str, list[float]]] = {t: {m: [] for m in MEASURES + CHROME} for t in urls}
    from_onset: dict[str, dict[str, list[float]]] = {t: {m: [] for m in MEASURES + CHROME} for t in urls}
    found: dict[str, dict[str, list[float]]] = {t: {"frame": [], "sample": []} for t in urls}  # onsets, each round
    server: list[float] = []  # the product's own done.ttfa (text in to first chunk into the session), WebSocket
    try:
        for client in clients.values():
            await client.connect()
            await client.speak(text)
        for r in range(rounds):
            for target in (list(urls) if r % 2 == 0 else list(reversed(urls))):
                onset: float | None = None
                for m in MEASURES:  # the WebSocket first: its audio has this round's onset
                    client = clients[(target, m)]
                    result = await client.speak(text)
                    if isinstance(client, WebSocketClient):
                        onset, sample_onset = onsets(client.audio)
                        for kind, value in (("frame", onset), ("sample", sample_onset)):
                            if value is not None:
                                found[target][kind].append(value)
                    if result.ttfa_s is not None:
                        samples[target][m].append(result.ttfa_s)
                        shift = 0.0 if m == "ws" else onset
                        if shift is not None:
                            from_onset[target][m].append(result.ttfa_s - shift)
                    if target == "product" and m == "ws" and result.server_ttfa_s is not None:
                        server.append(result.server_ttfa_s)
    finally:
        for client in clients.values():
            with contextlib.suppress(Exception):
                await client.close()
    if with_chrome:
        await chrome(urls, rounds, text, samples)
        for target, by in found.items():
            if by["sample"]:
                shift = statistics.median(by["sample"])
                for m in CHROME:
                    from_onset[target][m] = [v - shift for v in samples[target][m]]
    return summarise(samples, server, rounds, from_onset, found)


def _medians(samples: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float | None]]:
    return {t: {m: round(1000 * statistics.median(v), 1) if v else None for m, v in by.items()}
            for t, by in samples.items()}


def _ratios(medians: dict[str, dict[str, float | None]]) -> dict[str, float | None]:
    return {m: round(medians["product"][m] / medians["peer"][m], 2)  # type: ignore[operator]
            if medians["product"][m] and medians["peer"][m] else None for m in MEASURES + CHROME}


def summarise(samples: dict[str, dict[str, list[float]]], server: list[float], rounds: int,
              from_onset: dict[str, dict[str, list[float]]], found: dict[str, dict[str, list[float]]]
              ) -> dict[str, Any]:
    medians, onset_medians = _medians(samples), _medians(from_onset)
    ratios, onset_ratios = _ratios(medians), _ratios(onset_medians)
    return {"bench": "edge", "rounds": rounds, "median_ms": medians, "ratio": ratios,
            "onset_ms": _medians(found), "from_onset_median_ms": onset_medians, "from_onset_ratio": onset_ratios,
            "product_server_ttfa_ms": round(1000 * statistics.median(server), 1) if server else None,
            "targets": TARGET_RATIO, "met": {m: r is not None and r <= TARGET_RATIO[m] for m, r in ratios.items()},
            "met_from_onset": {m: r is not None and r <= TARGET_RATIO[m] for m, r in onset_ratios.items()},
            "samples": {t: {m: len(v) for m, v in by.items()} for t, by in samples.items()},
            "loadavg_1m": round(os.getloadavg()[0], 2)}


def render(s: dict[str, Any]) -> str:
    names = {"ws": "WebSocket first audio", "opus": "aiortc first audible, Opus", "pcmu": "aiortc first audible, PCMU",
             "chrome_opus": "Chromium first audible, Opus", "chrome_pcmu": "Chromium first audible, PCMU"}
    lines = [f"bench edge: product vs bare aiortc + Starlette peer (instant tone), {s['rounds']} alternating rounds, "
             f"load {s['loadavg_1m']}",
             f"{'median':30s}{'product':>10s}{'peer':>10s}{'ratio':>8s}{'target':>9s}"]
    for m in MEASURES + CHROME:
        if not s["samples"]["product"][m] and m in CHROME:
            continue
        product, peer, ratio = s["median_ms"]["product"][m], s["median_ms"]["peer"][m], s["ratio"][m]
        lines.append(f"{names[m]:30s}{_cell(product):>10s}{_cell(peer):>10s}"
                     f"{'-' if ratio is None else f'{ratio:.2f}x':>8s}{f'<= {TARGET_RATIO[m]}x':>9s}"
                     f"  {'met' if s['met'][m] else 'not met'}")
    lines.append(f"the product's own TTFA (done.ttfa, WebSocket): {_cell(s['product_server_ttfa_ms'])}")
    onset = s["onset_ms"]
    lines.append(f"speech onset inside the audio (20 ms frame over RMS {SPEECH_RMS:g} / first sample at |x| >= 0.01): "
                 f"product {_cell(onset['product']['frame'])} / {_cell(onset['product']['sample'])}, "
                 f"peer {_cell(onset['peer']['frame'])} / {_cell(onset['peer']['sample'])}")
    lines.append(f"{'first audible minus onset':30s}{'product':>10s}{'peer':>10s}{'ratio':>8s}")
    for m in MEASURES + CHROME:
        if not s["samples"]["product"][m] and m in CHROME:
            continue
        ratio = s["from_onset_ratio"][m]
        lines.append(f"{names[m]:30s}{_cell(s['from_onset_median_ms']['product'][m]):>10s}"
                     f"{_cell(s['from_onset_median_ms']['peer'][m]):>10s}"
                     f"{'-' if ratio is None else f'{ratio:.2f}x':>8s}  "
                     f"{'met' if s['met_from_onset'][m] else 'not met'}")
    return "\n".join(lines)


def _cell(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.0f} ms"


async def _bench(args: argparse.Namespace, engine_args: list[str]) -> dict[str, Any]:
    with local_server([*engine_args, "--log-level", "warning"], quiet=True) as (product, _), peer_server() as (peer, _):
        return await measure({"product": product, "peer": peer}, args.rounds, args.text or TEXT,
                             chrome_available() and not args.no_chrome)


def run(args: argparse.Namespace, engine_args: list[str]) -> int:
    """Measure, print the table and the JSON line; exit status 2 when it could not run."""
    if args.rounds < 1:
        print("bench edge: --rounds must be at least 1", file=sys.stderr)
        return 2
    quiet_client_logs()
    return report("edge", lambda: asyncio.run(_bench(args, engine_args)),
                  (BenchError, ServerFailed, httpx.HTTPError, OSError, TimeoutError), lambda summary: False, render)
