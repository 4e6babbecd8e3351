"""The GPU kit's unload phase (issue 50): a Turbo worker unloaded and reloaded on the card, as ``--unload-after`` or
``POST /v1/admin/unload`` does it, with the time the reload cost the first utterance after it and the memory the
unload gave back to the card.

A probe worker of its own (``SLOTS`` batch slots, the kit's decode and vocode modes: the reload passes the same
CUDA-graph self-checks as a cold start) is built as the server builds one (``build_worker``: a reload loads as the
cold start did), served on a Unix socket, and spoken to over the engine protocol: one utterance loaded, then the
model unloaded (``Residency.unload``, the worker's own path), then one utterance that reloads it (its ``done``'s
``reload_s`` and its first audio). Memory: on CUDA torch's reserved bytes on the card and the card's free memory
(loaded, unloaded, loaded again); on the CPU (the tests only: the kit skips the phase there, as the others) the
process's resident memory.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from engine.placement import GIB
from engine.settings import EngineSettings

SLOTS = 8  # the probe worker's batch slots: a real load, not the kit's whole sweep
TEXT = "Hello there, thanks for calling."


class Spoken(Protocol):
    """What the kit's ``speak`` returns (turbo_bench.Stream): the first chunk's time, the ``done``, an error code."""

    first_chunk_s: float | None
    done: Any
    error: str | None


Speak = Callable[[str, str], Awaitable[Spoken]]


def held(device: str) -> dict[str, float]:
    """The memory the worker holds now, in GiB: on CUDA torch's reserved bytes and the card's free memory; on the CPU
    the process's resident memory (``/proc/self/statm``: no psutil on the GPU host's list)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)
        free, _ = torch.cuda.mem_get_info(device)
        return {"reserved_gib": round(torch.cuda.memory_reserved(device) / GIB, 3), "card_free_gib": round(free / GIB, 3)}
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return {"rss_gib": round(pages * os.sysconf("SC_PAGE_SIZE") / GIB, 3)}


def unload_figures(settings: EngineSettings, speak: Speak, on_cpu: bool = False) -> dict[str, Any]:
    """The phase's figures; ``{"skipped": ...}`` with no CUDA card or ``--device cpu`` (unless ``on_cpu``: the
    tests' run of it on random weights)."""
    import torch

    if not on_cpu and (settings.device == "cpu" or not torch.cuda.is_available()):
        return {"skipped": "no CUDA device"}
    probe = dataclasses.replace(settings, engine="chatterbox-turbo", batch_slots=SLOTS)
    if not on_cpu:  # one card: the first of --device's list (auto: the most free memory) that is there
        from engine.placement import device_list, order, visible_cards

        probe = dataclasses.replace(probe, device=order(device_list(settings.device), visible_cards())[0].device)
    with tempfile.TemporaryDirectory(prefix="cbf-unload-") as tmp:  # short: Unix socket paths are ~100 bytes
        probe = dataclasses.replace(probe, voices_dir=Path(tmp) / "voices")
        return asyncio.run(unload_reload(probe, Path(tmp) / "engine.sock", speak))


async def unload_reload(settings: EngineSettings, sock: Path, speak: Speak) -> dict[str, Any]:
    """Build and serve a worker, speak, unload it, speak again (the reload); its figures, the probe closed after."""
    from engine.residency import LOADED, UNLOADED, release_memory
    from engine.worker import build_worker, serve_worker

    worker = await asyncio.to_thread(build_worker, settings)
    device = worker.ready.device
    stop = asyncio.Event()
    server = asyncio.create_task(serve_worker(worker, f"unix:{sock}", stop))
    try:
        while not sock.exists():
            await asyncio.sleep(0.05)
        loaded = await speak(str(sock), TEXT)
        memory_loaded = held(device)
        started = time.monotonic()
        unloaded = await worker.residency.unload()
        unload_s = time.monotonic() - started
        memory_unloaded = held(device)
        state_unloaded = worker.residency.state
        again = await speak(str(sock), TEXT)
        memory_again = held(device)
        returned = {key: round(memory_loaded[key] - memory_unloaded[key], 3) for key in memory_loaded
                    if key != "card_free_gib"}
        if "card_free_gib" in memory_loaded:
            returned["card_free_gib"] = round(memory_unloaded["card_free_gib"] - memory_loaded["card_free_gib"], 3)
        return {"device": device, "slots": SLOTS, "decode": worker.ready.decode, "vocode": worker.ready.vocode,
                "first_audio_loaded_s": _round(loaded.first_chunk_s), "error_loaded": loaded.error,
                "unloaded": unloaded and state_unloaded == UNLOADED, "unload_s": round(unload_s, 3),
                "reload_s": again.done.reload_s if again.done is not None else None,
                "first_audio_after_reload_s": _round(again.first_chunk_s), "error_after_reload": again.error,
                "memory_loaded": memory_loaded, "memory_unloaded": memory_unloaded, "memory_returned": returned,
                "memory_loaded_again": memory_again, "state_at_end": worker.residency.state}
    finally:
        stop.set()
        await server
        if worker.residency.state == LOADED:  # (unloaded: closed already)
            worker.synth.engine.close()
        del worker
        gc.collect()
        release_memory()


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
