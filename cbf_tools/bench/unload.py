"""``chatterbox-fast bench engine --unload-after S``: the idle unload's figures (issue 50) on a worker started here.

Each cycle speaks a sentence, waits for the worker to say ``unloaded``, and speaks again: how long after the
utterance's end the unload began (the idle clock's lateness: it looks every 0.1 s) and ended (that, and the unload
itself: ``late_s``), the worker's resident memory loaded and unloaded (psutil; a worker started by this bench only), and what the
next utterance paid for the reload (``done.reload_s``) and its first audio. Prints a line per cycle and a summary."""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from cbf_tools.say import speak
from gateway.engine_link.client import EngineClient

TEXT = "Hello there, thanks for calling."
AGAIN = "And here I am again, loaded once more."
GIVE_UP_S = 120.0  # a worker that does not unload in this long past --unload-after: the bench fails


def worker_rss(url: str) -> int | None:
    """The resident bytes of the engine worker this process started to listen on ``url`` (None: none here, or no
    psutil). Known by its ``--listen`` address: other workers may be this process's descendants too (a test's
    server's)."""
    try:
        import psutil
    except ImportError:
        return None
    workers = [p for p in psutil.Process().children(recursive=True) if "engine" in p.cmdline() and url in p.cmdline()]
    return workers[0].memory_info().rss if len(workers) == 1 else None


async def _unloaded(client: EngineClient, within: float) -> tuple[float | None, float]:
    """Seconds until the worker's ``ready`` said ``unloading`` (None: not seen, it was quicker than a look) and
    ``unloaded``."""
    t0, began = time.monotonic(), None
    while client.ready is None or client.ready.state != "unloaded":
        if time.monotonic() - t0 > within:
            raise SystemExit(f"bench engine: the worker did not unload within {within:.0f} s")
        if began is None and client.ready is not None and client.ready.state == "unloading":
            began = time.monotonic() - t0
        await asyncio.sleep(0.005)
    return began, time.monotonic() - t0


async def cycle(client: EngineClient, unload_after: float) -> dict[str, Any]:
    """One speak, idle unload, speak-again cycle's figures."""
    pcm, loaded = await speak(client, TEXT)
    rss_loaded = worker_rss(client.url)
    began_s, idle_s = await _unloaded(client, unload_after + GIVE_UP_S)
    rss_unloaded = worker_rss(client.url)
    pcm_again, again = await speak(client, AGAIN)
    return {"unloading_after_s": None if began_s is None else round(began_s, 3),
            "unloaded_after_s": round(idle_s, 3), "late_s": round(idle_s - unload_after, 3),
            "rss_loaded_mib": _mib(rss_loaded), "rss_unloaded_mib": _mib(rss_unloaded),
            "rss_fall": round(1 - rss_unloaded / rss_loaded, 3) if rss_loaded and rss_unloaded else None,
            "reload_s": again.done.reload_s if again.done else None,
            "first_audio_loaded_s": loaded.first_chunk_s,  # the baseline: the same machine, no reload
            "first_audio_after_reload_s": again.first_chunk_s, "spoke": bool(pcm) and len(pcm_again) > 0}


def _mib(value: int | None) -> float | None:
    return None if value is None else round(value / 2 ** 20, 1)


def summarise(cycles: list[dict[str, Any]], unload_after: float, engine: str | None = None) -> dict[str, Any]:
    """The cycles' figures against the issue's targets: unloaded within 1 s of --unload-after; Turbo's resident
    memory down 40 % (None for other engines: eSpeak's is built in, with little to free)."""
    late = [c["late_s"] for c in cycles]
    began = [c["unloading_after_s"] - unload_after for c in cycles if c["unloading_after_s"] is not None]
    falls = [c["rss_fall"] for c in cycles if c["rss_fall"] is not None]
    reloads = [c["reload_s"] for c in cycles if c["reload_s"] is not None]
    firsts = [c["first_audio_after_reload_s"] for c in cycles if c["first_audio_after_reload_s"] is not None]
    baseline = [c["first_audio_loaded_s"] for c in cycles if c["first_audio_loaded_s"] is not None]
    return {"bench": "engine-unload", "unload_after_s": unload_after, "cycles": len(cycles),
            "late_max_s": max(late), "late_p50_s": round(statistics.median(late), 3),
            "unloading_began_late_max_s": round(max(began), 3) if began else None,
            "rss_fall_min": min(falls) if falls else None,
            "reload_p50_s": round(statistics.median(reloads), 3) if reloads else None,
            "reload_max_s": max(reloads) if reloads else None,
            "first_audio_after_reload_p50_s": round(statistics.median(firsts), 3) if firsts else None,
            "first_audio_loaded_p50_s": round(statistics.median(baseline), 3) if baseline else None,
            "every_reload_spoke": all(c["spoke"] and c["reload_s"] is not None for c in cycles),
            "unloaded_within_1s": max(late) <= 1.0,
            "rss_fell_40pct": (bool(falls) and min(falls) >= 0.4) if engine == "chatterbox-turbo" else None}


async def measure(client: EngineClient, unload_after: float, runs: int) -> dict[str, Any]:
    await speak(client, TEXT)  # warm-up
    cycles = []
    for _ in range(runs):
        figures = await cycle(client, unload_after)
        cycles.append(figures)
        print(f"unloading began {figures['unloading_after_s']} s, ended {figures['unloaded_after_s']:6.3f} s after the "
              f"utterance (late {figures['late_s']:+.3f} s)  "
              f"RSS {figures['rss_loaded_mib']} -> {figures['rss_unloaded_mib']} MiB "
              f"(fall {figures['rss_fall']})  reload {figures['reload_s']} s  "
              f"first audio after it {figures['first_audio_after_reload_s']:.3f} s "
              f"(loaded: {figures['first_audio_loaded_s']:.3f} s)")
    return summarise(cycles, unload_after, client.ready.engine if client.ready else None)
