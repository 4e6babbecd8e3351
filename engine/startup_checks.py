"""Start-up failures that no restart can fix, said in one sentence with the fix.

The worker checks the cheap things first (the CUDA device asked for, the weights and tokenizer on disk), so a wrong
``--model-dir`` costs a second, not a model load; then it loads, and an out-of-memory or a missing watermark while
loading is turned into the same kind of sentence. ``chatterbox-fast engine`` exits with its own code on these, and
the gateway's supervisor stops restarting a worker that says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from pathlib import Path
from typing import Any, Callable, Iterator

from engine.settings import EngineSettings
from engine.weights import TOKENIZER, DownloadFailed, WeightsReport, cached_snapshot, download, hub_cache_dir, inspect

log = logging.getLogger("chatterbox_fast.engine")
WEIGHTS_FIX = ("fetch them with `chatterbox-fast weights download --to DIR` (on any machine with network access) and "
               "pass --model-dir DIR (CBF_MODEL_DIR); `chatterbox-fast doctor` checks the result")
CUDA_FIX = ("check `nvidia-smi -L` and the driver (>= 580 for CUDA 13), set CUDA_VISIBLE_DEVICES to the card's UUID, "
            "or use --device cpu / auto")
GRAPHS_FIX = "use {flag} auto (falls back to eager, /health says why) or {flag} eager ({env})"
GRAPH_FLAGS = {"--decode": "CBF_DECODE", "--vocode": "CBF_VOCODE"}
WATERMARK_FIX = "reinstall the engine packages (`make venv`: resemble-perth 1.0.1 with setuptools<81)"


class Misconfigured(Exception):
    """Something the operator must change before the engine can start."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}. Fix: {fix}.")
        self.problem, self.fix = problem, fix


def cuda_problem(device: str) -> str | None:
    """Why ``device`` (one, or a list: engine/placement.py) cannot be used, naming CUDA_VISIBLE_DEVICES and what
    torch sees; None when it can. A UUID is checked against the cards when the worker is placed."""
    items = device.split(",")
    if not any(item.startswith(("cuda", "GPU-", "MIG-")) for item in items):
        return None
    import torch

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    shown = "unset" if visible is None else repr(visible)
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    indexes = [int(item.partition(":")[2] or 0) for item in items if item.startswith("cuda")]
    if count and all(index < count for index in indexes):
        return None
    build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "CPU-only build"
    return (f"--device {device} asks for a CUDA device, but torch {torch.__version__} ({build}) sees "
            f"{count or 'none'} (CUDA_VISIBLE_DEVICES is {shown})")


def check_device(device: str) -> None:
    problem = cuda_problem(device)
    if problem is not None:
        raise Misconfigured(problem, CUDA_FIX)


def check_decode(decode: str, batch_slots: int, device: str, prompt_cache_voices: int = 64,
                 vocode: str = "auto") -> None:
    """``--decode graph`` and ``--vocode graph`` need CUDA (``device`` is known to be usable by now); ``--batch-slots``
    is not negative, ``--prompt-cache-voices`` positive."""
    if batch_slots < 0:
        raise Misconfigured(f"--batch-slots {batch_slots} is negative",
                            "pass 0 (64 slots on CUDA, 8 elsewhere) or a positive count (CBF_BATCH_SLOTS)")
    if prompt_cache_voices < 1:
        raise Misconfigured(f"--prompt-cache-voices {prompt_cache_voices} keeps no voice",
                            "pass a positive count (CBF_PROMPT_CACHE_VOICES; 64 by default)")
    graphs = [flag for flag, mode in (("--decode", decode), ("--vocode", vocode)) if mode == "graph"]
    if not graphs or device not in ("auto", "cpu"):  # one card or a list of them (cuda_problem checked it)
        return
    import torch

    if device == "auto" and torch.cuda.is_available():
        return
    where = "no CUDA device is visible" if device == "auto" else f"--device is {device}"
    flag = graphs[0]
    raise Misconfigured(f"{flag} graph replays CUDA graphs, but {where}",
                        f"use {flag} auto or eager ({GRAPH_FLAGS[flag]}), or a CUDA --device")


def weights_problem(report: WeightsReport) -> Misconfigured | None:
    """The missing or damaged files, with the directory looked in."""
    if report.complete:
        return None
    only_tokenizer = [f.name for f in report.problems] == [TOKENIZER]
    what = "no tokenizer" if only_tokenizer else "incomplete Chatterbox-Turbo weights"
    return Misconfigured(f"{what} in {report.where}: {report.summary()}", WEIGHTS_FIX)


def require_complete(model_dir: Path) -> Path:
    problem = weights_problem(inspect(model_dir))
    if problem is not None:
        raise problem
    return model_dir


def locate_weights(model_dir: Path | None) -> Path:
    """A directory with complete weights: ``model_dir``, else the HF cache, else a download (where the network
    allows). Raises ``Misconfigured`` naming what is missing and where it looked."""
    if model_dir is not None:
        if not model_dir.is_dir():
            raise Misconfigured(f"no Chatterbox-Turbo weights: --model-dir {model_dir} is not a directory",
                                WEIGHTS_FIX)
        return require_complete(model_dir)
    cached = cached_snapshot()
    if cached is not None and inspect(cached).complete:
        return cached
    try:
        return require_complete(download())
    except DownloadFailed as exc:
        raise Misconfigured(f"no Chatterbox-Turbo weights in the Hugging Face cache ({hub_cache_dir()}), and {exc}",
                            WEIGHTS_FIX) from exc


def check_http(settings: EngineSettings) -> None:
    """``--engine http`` names a server URL, at least one request at a time and a positive timeout."""
    if not settings.http_url or not settings.http_url.startswith(("http://", "https://")):
        raise Misconfigured(f"--engine http needs the TTS server's URL, got {settings.http_url!r}",
                            "pass --engine-http-url http://HOST:PORT (CBF_ENGINE_HTTP_URL)")
    if settings.http_concurrency < 1 or not settings.http_timeout_s > 0:
        raise Misconfigured(f"--engine-http-concurrency {settings.http_concurrency} and --engine-http-timeout "
                            f"{settings.http_timeout_s:g}", "use at least 1 request and a timeout above 0 s")


def preflight(settings: EngineSettings, engine: str) -> EngineSettings:
    """The cheap checks for ``engine`` (what ``settings`` resolve to); the settings with the weights found."""
    if engine == "http":
        check_http(settings)
    if engine != "chatterbox-turbo":
        return settings
    check_device(settings.device)
    check_decode(settings.decode, settings.batch_slots, settings.device, settings.prompt_cache_voices,
                 settings.vocode)
    if settings.weights != "pretrained":
        return settings
    return dataclasses.replace(settings, model_dir=locate_weights(settings.model_dir))


@contextlib.contextmanager
def loading(settings: EngineSettings, on_gpu: bool, out_of_memory_raises: bool = False) -> Iterator[None]:
    """Around loading and warming the engine: out of device memory, no watermark, and CUDA graphs asked for with
    ``--decode graph`` that fail their start-up self-check become ``Misconfigured``.
    ``on_gpu``: the engine will load onto ``settings.device`` (its free memory is measured first);
    ``out_of_memory_raises``: an out-of-memory is left to the caller (placement tries the next card)."""
    from engine.heap import collector_paused

    with collector_paused():
        import torch

    from engine.engines.base import GraphCheckFailed
    from engine.watermark import WatermarkUnavailable

    measure = on_gpu and settings.device != "cpu" and torch.cuda.is_available()
    free, total = torch.cuda.mem_get_info(None if settings.device == "auto" else settings.device) if measure else (0, 0)
    try:
        yield
    except torch.OutOfMemoryError as exc:
        if out_of_memory_raises:
            raise
        raise Misconfigured(out_of_memory(settings.model_dir, free, total),
                            "free the card (`nvidia-smi` lists what holds it) or pin a larger one by UUID "
                            "(CUDA_VISIBLE_DEVICES / CBF_GPU_UUID)") from exc
    except GraphCheckFailed as exc:
        raise Misconfigured(f"{exc.flag} graph was asked for, but the CUDA graphs failed their start-up self-check "
                            f"({exc})", GRAPHS_FIX.format(flag=exc.flag, env=GRAPH_FLAGS[exc.flag])) from exc
    except WatermarkUnavailable as exc:
        raise Misconfigured(str(exc).rstrip("."), WATERMARK_FIX) from exc


def out_of_memory(model_dir: Path | None, free: int, total: int) -> str:
    gib = 1024 ** 3
    weights = sum(f.size or 0 for f in inspect(model_dir).files) if model_dir is not None else 0
    need = f"its weights alone are {weights / gib:.1f} GiB" if weights else "the model did not fit"
    return f"out of GPU memory while loading the engine: {need}, and {free / gib:.1f} of {total / gib:.1f} GiB " \
           f"were free before loading"


def start_worker(settings: EngineSettings):  # -> Worker (imported here: the checks above stay light)
    """Check, load, warm: the worker, or ``Misconfigured``. Chatterbox-Turbo on CUDA is placed by fit: the cards of
    ``--device`` in order (engine/placement.py), the first with room for it that loads it."""
    from engine.engines import choose_engine
    from engine.worker import build_worker

    engine, _ = choose_engine(settings)
    settings = preflight(settings, engine)
    cards = _cards(settings) if engine == "chatterbox-turbo" else []
    if not cards:
        with loading(settings, on_gpu=engine == "chatterbox-turbo"):
            return build_worker(settings)
    return _placed(settings, cards, build_worker)


def _cards(settings: EngineSettings) -> list:  # -> list[Card], in the order to try them; [] where nothing is placed
    from engine import placement

    devices = placement.device_list(settings.device)
    if devices == ("cpu",):
        return []
    cards = placement.visible_cards()
    if not cards and devices == ("auto",):
        return []  # the CPU
    try:
        return placement.order(devices, cards)
    except ValueError as exc:
        raise Misconfigured(str(exc), CUDA_FIX) from exc


def _placed(settings: EngineSettings, cards: list, build, inventory=None, load=None):  # type: ignore[no-untyped-def]
    """Load onto the first of ``cards`` with room for the estimated need; an out-of-memory there frees what it took
    and tries the next; none: ``Misconfigured`` listing every card, its memory, and the need. With ``--gpu-memory``
    the batch slots are sized inside it and a card must have all of it free (the engine caps its allocator there).
    The worker's reload after an idle unload is placed by fit again (``_reload_by_fit``: the card that fits now,
    read from ``inventory``, loaded by ``load``; by default the visible cards and ``load_engine``)."""
    from engine import placement
    from engine.engines.turbo import estimated_need

    budget = int(settings.gpu_memory_gib * placement.GIB) if settings.gpu_memory_gib else None
    if budget is not None:  # the slots sized inside the budget (or the asked count refused)
        try:
            slots = placement.slots_within(
                budget, lambda n: estimated_need(dataclasses.replace(settings, batch_slots=n)), settings.batch_slots)
        except ValueError as exc:
            raise Misconfigured(str(exc), "raise --gpu-memory (CBF_GPU_MEMORY), or lower --batch-slots and "
                                "--prompt-cache-voices") from exc
        settings = dataclasses.replace(settings, batch_slots=slots)
    need = estimated_need(settings)
    plan = placement.plan(need, cards, budget)
    def build_on(card: Any) -> Any:
        placed = dataclasses.replace(settings, device=card.device)
        with loading(placed, on_gpu=True, out_of_memory_raises=True):
            return build(placed)

    card, worker, failed = _first_that_loads(plan.fitting, build_on)
    if card is None:
        raise Misconfigured(plan.refusal(failed), PLACEMENT_FIX)
    worker.placed(card, need, [c for c in cards if c != card], settings.gpu_memory_gib)
    worker._load = lambda: _reload_by_fit(settings, need, budget, worker, inventory, load)
    return worker


def _first_that_loads(cards: list, load_on: Callable[[Any], Any]) -> tuple[Any, Any, list]:
    """Each card in turn until ``load_on(card)`` loads: an out-of-memory frees what it took and tries the next.
    (card, what it loaded, the cards that failed and why); the card None when none loaded."""
    import gc

    import torch

    failed = []
    for card in cards:
        try:
            return card, load_on(card), failed
        except torch.OutOfMemoryError:
            failed.append((card, "out of memory while loading"))
            gc.collect()
            torch.cuda.empty_cache()
    return None, None, failed


PLACEMENT_FIX = ("free a card (`nvidia-smi` lists what holds it), list another in --device (CBF_DEVICE), or lower "
                 "--batch-slots and --prompt-cache-voices")


def _reload_by_fit(settings: EngineSettings, need: Any, budget: int | None, worker: Any,
                   inventory: Callable[[], list] | None = None, load: Callable[[EngineSettings], Any] | None = None
                   ) -> Any:  # -> Engine; need: placement.Need; worker: Worker (imported lazily: no torch at the top)
    """(A reload after an idle unload.) The engine loaded on the card of ``settings.device``'s list that fits now,
    as at the start: the cards read again (another tenant may have taken the first one meanwhile, or freed a better
    one), an out-of-memory trying the next, a card gone meanwhile (device lost) passed over, the worker's placement
    said anew (/health's ``engine.placement``). No card: an ``EngineError`` listing each card's memory and the need
    (the utterance fails; the next one tries again). The watermarker stays on the card of the cold start."""
    from engine import placement
    from engine.engines import load_engine
    from engine.engines.base import EngineError

    visible = (inventory or placement.visible_cards)()
    names, lost = placement.present(placement.device_list(settings.device), visible)
    if lost:
        log.warning("reloading: %s of --device no longer visible, passed over", ", ".join(lost))
    if not names:
        raise EngineError(f"no card of --device is there to reload on: {', '.join(lost)} gone", "load_failed")
    cards = placement.order(names, visible)
    plan = placement.plan(need, cards, budget)
    card, engine, failed = _first_that_loads(
        plan.fitting, lambda card: (load or load_engine)(dataclasses.replace(settings, device=card.device)))
    if card is None:
        raise EngineError(plan.refusal(failed), "load_failed")
    worker.placed(card, need, [c for c in cards if c != card], settings.gpu_memory_gib)
    return engine
