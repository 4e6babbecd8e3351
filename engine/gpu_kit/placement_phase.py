"""The GPU kit's placement phase (issue 50): placement by fit on the measurement host's own cards.

What the tests can only do on a hand-written inventory, on real cards: the inventory torch sees (UUID, name, free and
total memory), the need estimated for the kit's settings, ``auto``'s order; the start's refusal of a list naming a
UUID this host does not have, and of a budget no card has free (each one sentence, no load); then a reload placed
over a list of that bad UUID and a good one, as after an idle unload whose card went away: the bad one passed over, the
engine loaded on the good one (the time it took, the memory it took and gave back when freed).
"""

from __future__ import annotations

import dataclasses
import gc
import time
from typing import Any

from engine.placement import GIB, Card, Need, order, visible_cards
from engine.settings import EngineSettings

ABSENT_UUID = "GPU-00000000-0000-0000-0000-000000000000"  # no card has it
SLOTS = 8  # the probe engine's batch slots: a real load, not the kit's whole sweep


class _Placed:
    """Stands in for the worker: records where the reload was placed."""

    card: Card | None = None

    def placed(self, card: Card, need: Need, others: list[Card], budget_gib: float | None = None) -> None:
        self.card = card


def placement_figures(settings: EngineSettings) -> dict[str, Any]:
    """The phase's figures; ``{"skipped": ...}`` with no CUDA card or ``--device cpu``."""
    import torch

    from engine.engines.turbo import estimated_need
    from engine.startup_checks import Misconfigured, _placed, _reload_by_fit

    cards = visible_cards() if settings.device != "cpu" else []
    if not cards:
        return {"skipped": "no CUDA device"}
    probe = dataclasses.replace(settings, batch_slots=SLOTS, decode="eager", vocode="eager")
    need = estimated_need(probe)
    good = order(("auto",), cards)[0]
    figures: dict[str, Any] = {
        "cards": [{"device": c.device, "uuid": c.uuid, "name": c.name, "free_gib": round(c.free / GIB, 2),
                   "total_gib": round(c.total / GIB, 2)} for c in cards],
        "need": need.describe(), "need_gib": round(need.total / GIB, 2),
        "auto_order": [c.uuid for c in order(("auto",), cards)]}
    try:
        order((ABSENT_UUID, good.uuid), cards)
        figures["start_with_an_absent_uuid"] = "accepted (expected a refusal)"
    except ValueError as exc:
        figures["start_with_an_absent_uuid"] = f"refused: {exc}"
    too_much = dataclasses.replace(probe, gpu_memory_gib=float(max(c.total for c in cards) // GIB + 1))
    try:
        _placed(too_much, cards, lambda placed: None)
        figures["start_with_no_room"] = "accepted (expected a refusal)"
    except Misconfigured as exc:
        figures["start_with_no_room"] = f"refused: {exc.problem}"
    listed = dataclasses.replace(probe, device=f"{ABSENT_UUID},{good.uuid}")
    worker = _Placed()
    torch.cuda.synchronize()
    free_before = torch.cuda.mem_get_info(good.index)[0]
    started = time.monotonic()
    engine = _reload_by_fit(listed, need, None, worker)
    loaded_s = time.monotonic() - started
    free_loaded = torch.cuda.mem_get_info(good.index)[0]
    engine.close()
    del engine
    gc.collect()
    torch.cuda.empty_cache()
    free_after = torch.cuda.mem_get_info(good.index)[0]
    figures["reload_past_an_absent_card"] = {
        "device_list": listed.device, "placed_on": worker.card.uuid if worker.card else None,
        "load_s": round(loaded_s, 2), "taken_gib": round((free_before - free_loaded) / GIB, 2),
        "given_back_gib": round((free_after - free_loaded) / GIB, 2)}
    return figures
