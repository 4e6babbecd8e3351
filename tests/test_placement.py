"""Placement by fit (issue 50 part 1): ``--device`` as an ordered list of cards, the worker's need estimated from the
checkpoint's own files, the first card with room tried first, an out-of-memory there moving on to the next, and a
refusal naming every card and the need. This machine has no GPU: the cards are a hand-written inventory (a fake
standing in for cards we do not have), and the loads that run out of memory raise torch's own OutOfMemoryError from a
stand-in loader. The estimate is checked against the real tensors of a tiny checkpoint."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from engine.engines.base import EngineError
from engine.engines.t3_batch import cache_capacity
from engine.engines.t3_static import SlotKV
from engine.engines.turbo import estimated_need
from engine.engines.turbo_arch import S3GEN_FILE, T3_FILE, VE_FILE, TurboArch, build_t3
from engine.placement import GIB, Card, Need, device_list, device_memory, moved, order, plan, slots_within
from engine.settings import EngineSettings
from engine.startup_checks import Misconfigured, _placed
from gateway import cli

A6000 = Card(0, "GPU-aaaa1111-0000-0000-0000-000000000000", "NVIDIA RTX A6000", free=10 * GIB, total=48 * GIB)
RTX3090 = Card(1, "GPU-bbbb2222-0000-0000-0000-000000000000", "NVIDIA GeForce RTX 3090", free=20 * GIB, total=24 * GIB)
BUSY = Card(2, "GPU-cccc3333-0000-0000-0000-000000000000", "NVIDIA L4", free=2 * GIB, total=24 * GIB)
CARDS = [A6000, RTX3090, BUSY]


def test_the_device_list_and_what_it_refuses() -> None:
    assert device_list("cuda:1, cuda:0") == ("cuda:1", "cuda:0")
    assert device_list(f"{RTX3090.uuid},{A6000.uuid}") == (RTX3090.uuid, A6000.uuid)
    assert device_list("auto") == ("auto",) and device_list("cpu") == ("cpu",)
    for bad, said in [("cuda:0,cuda:0", "named twice"), ("auto,cuda:0", "stand alone"), ("gpu0", "expected"),
                      ("", "nothing"), ("cuda:x", "expected")]:
        with pytest.raises(ValueError, match=said):
            device_list(bad)


def test_the_order_tried() -> None:
    assert order(("auto",), CARDS) == [RTX3090, A6000, BUSY]  # the most free first
    assert order((RTX3090.uuid, "cuda:0"), CARDS) == [RTX3090, A6000]  # as listed, a UUID or an index
    assert order(("cuda:0", A6000.uuid), CARDS) == [A6000]  # one card named twice over is tried once
    with pytest.raises(ValueError, match=r"GPU-dead.*not a visible card.*cuda:1 \(GPU-bbbb"):
        order(("GPU-deadbeef",), CARDS)


def test_the_plan_skips_a_card_without_room_and_the_refusal_names_every_card() -> None:
    need = Need(weights=2 * GIB, kv_cache=6 * GIB, prompt_cache=1 * GIB, runtime=3 * GIB)  # 13.2 GiB with margin
    chosen = plan(need, order(("auto",), CARDS))
    assert chosen.fitting == [RTX3090] and [card for card, _ in chosen.passed_over] == [A6000, BUSY]
    said = chosen.refusal([(RTX3090, "out of memory while loading")])
    assert "~13.2 GiB (weights 2.0, batch K/V 6.0, prompt cache 1.0, runtime 3.0, margin 10%)" in said
    assert "cuda:0 (GPU-aaaa1111-0000-0000-0000-000000000000, NVIDIA RTX A6000): 10.0 of 48.0 GiB free, 3.2 GiB short" \
        in said
    assert "cuda:1" in said and "out of memory while loading" in said and "NVIDIA L4): 2.0 of 24.0" in said


def test_the_need_is_what_the_tensors_take(tiny_checkpoint: Path) -> None:
    settings = EngineSettings(model_dir=tiny_checkpoint, batch_slots=3, prompt_cache_voices=5, dtype="bfloat16")
    need = estimated_need(settings)
    stored = {name: load_file(tiny_checkpoint / name) for name in (T3_FILE, S3GEN_FILE, VE_FILE)}
    elements = {name: sum(t.numel() for t in tensors.values()) for name, tensors in stored.items()}
    assert need.weights == elements[T3_FILE] * 2 + (elements[S3GEN_FILE] + elements[VE_FILE]) * 4
    t3 = build_t3(TurboArch.from_dir(tiny_checkpoint)).to(torch.bfloat16)
    capacity = cache_capacity(t3.hp.speech_cond_prompt_len)
    real = SlotKV.empty(t3, slots=3, capacity=capacity)
    assert need.kv_cache == sum(t.numel() * t.element_size() for t in vars(real).values() if torch.is_tensor(t))
    per_voice = SlotKV.empty(t3, slots=1, capacity=1 + t3.hp.speech_cond_prompt_len)
    assert need.prompt_cache == 5 * sum(t.numel() * t.element_size() for t in vars(per_voice).values()
                                        if torch.is_tensor(t))


def test_a_budget_sizes_the_slots_inside_it_and_refuses_what_cannot_fit() -> None:
    per_slot, fixed = 192 * 2 ** 20, Need(weights=2 * GIB, kv_cache=0, prompt_cache=GIB)

    def need_of(slots: int) -> Need:
        return replace(fixed, kv_cache=slots * per_slot)

    assert need_of(64).total > 16 * GIB  # the released model's 64 slots would not fit in 16 GiB...
    fitted = slots_within(16 * GIB, need_of, 0)  # ...so the most that do
    assert need_of(fitted).total <= 16 * GIB < need_of(fitted + 1).total and 0 < fitted < 64
    assert slots_within(16 * GIB, need_of, 8) == 8
    with pytest.raises(ValueError, match="--batch-slots 64 needs ~.* more than --gpu-memory 16 GiB"):
        slots_within(16 * GIB, need_of, 64)
    with pytest.raises(ValueError, match="--gpu-memory 5 GiB is less than one batch slot takes"):
        slots_within(5 * GIB, need_of, 0)


def test_device_memory_is_said_again_only_when_a_figure_moved() -> None:
    said = {"allocated": GIB, "reserved": 2 * GIB, "card_free": 10 * GIB, "card_total": 24 * GIB, "budget": 0}
    assert not moved(said, {**said, "allocated": GIB + 10 * 2 ** 20})  # 10 MiB: not worth a message
    assert moved(said, {**said, "card_free": 9 * GIB}) and moved(None, said) and moved(said, None)
    assert device_memory("cpu", None) is None


class _Loaded:
    """What the stand-in loader returns: a worker that only records where it was placed."""

    def __init__(self, device: str) -> None:
        self.device, self.where = device, None

    def placed(self, card: Card, need: Need, others: list[Card], budget_gib: float | None = None) -> None:
        self.where = (card, others)


def test_an_out_of_memory_on_a_card_tries_the_next(tiny_checkpoint: Path) -> None:
    settings = EngineSettings(model_dir=tiny_checkpoint, device="auto", batch_slots=1, prompt_cache_voices=1)
    roomy = [replace(A6000, free=30 * GIB), RTX3090]
    tried = []

    def load(placed: EngineSettings) -> _Loaded:  # stands in for build_worker on a card this machine does not have
        tried.append(placed.device)
        if placed.device == "cuda:0":
            raise torch.OutOfMemoryError("CUDA out of memory (another tenant took the card meanwhile)")
        return _Loaded(placed.device)

    worker = _placed(settings, roomy, load)
    assert tried == ["cuda:0", "cuda:1"] and worker.device == "cuda:1" and worker.where == (RTX3090, [roomy[0]])
    with pytest.raises(Misconfigured, match=r"no card has room.*cuda:0 .*out of memory while loading.*cuda:1 .*out "
                                            r"of memory while loading"):
        _placed(settings, roomy, lambda placed: (_ for _ in ()).throw(torch.OutOfMemoryError("full")))


def test_a_reload_after_an_idle_unload_is_placed_by_fit_again(tiny_checkpoint: Path) -> None:
    settings = EngineSettings(model_dir=tiny_checkpoint, device="auto", batch_slots=1, prompt_cache_voices=1)
    now = list(CARDS)  # the cards as they are when a reload comes
    full: set[str] = set()  # cards that run out of memory while loading
    tried: list[str] = []

    def load(placed: EngineSettings) -> str:  # stands in for load_engine on a card this machine does not have
        tried.append(placed.device)
        if placed.device in full:
            raise torch.OutOfMemoryError("CUDA out of memory (another tenant took the card meanwhile)")
        return f"engine on {placed.device}"

    worker = _placed(settings, order(("auto",), CARDS), lambda placed: _Loaded(placed.device), inventory=lambda: now,
                     load=load)
    assert worker.device == "cuda:1"  # the 3090: the most free at the start
    now[:] = [replace(A6000, free=30 * GIB), replace(RTX3090, free=1 * GIB), BUSY]  # the 3090 taken while unloaded
    assert worker._load() == "engine on cuda:0" and worker.where[0].device == "cuda:0"  # the card that fits now
    now[:] = [replace(A6000, free=30 * GIB), replace(RTX3090, free=22 * GIB), BUSY]
    full.add("cuda:0")
    tried.clear()
    assert worker._load() == "engine on cuda:1" and tried == ["cuda:0", "cuda:1"]  # out of memory: the next card
    settings_by_uuid = replace(settings, device=f"{RTX3090.uuid},{A6000.uuid}")
    listed = _placed(settings_by_uuid, order((RTX3090.uuid, A6000.uuid), CARDS), lambda placed: _Loaded(placed.device),
                     inventory=lambda: now, load=load)
    now[:] = [replace(A6000, free=30 * GIB), BUSY]  # the 3090 fell off the bus while the model was unloaded
    full.clear()
    assert listed._load() == "engine on cuda:0"  # the next card of the list, not a refusal
    now[:] = [BUSY]
    with pytest.raises(EngineError, match="no card of --device is there to reload on: GPU-bbbb.*, GPU-aaaa.* gone"):
        listed._load()
    now[:] = [replace(card, free=GIB) for card in CARDS]
    with pytest.raises(EngineError, match=r"no card has room.*cuda:0 .*: 1\.0 of 48\.0 GiB free"):
        worker._load()  # none fits now: this reload fails, saying why; the next utterance tries again


def test_with_a_budget_the_slots_fit_inside_it_and_a_card_needs_all_of_it_free(tiny_checkpoint: Path) -> None:
    loaded: list[EngineSettings] = []

    def load(placed: EngineSettings) -> _Loaded:  # stands in for build_worker on a card this machine does not have
        loaded.append(placed)
        return _Loaded(placed.device)

    def placed_with(gib: float) -> _Loaded:
        return _placed(EngineSettings(model_dir=tiny_checkpoint, device="auto", gpu_memory_gib=gib),
                       order(("auto",), CARDS), load)

    worker = placed_with(15.0)  # the 3090 has 20 GiB free; the A6000's 10 and the L4's 2 are short of the budget
    assert worker.device == "cuda:1" and loaded[-1].batch_slots == 64 and loaded[-1].gpu_memory_gib == 15.0
    with pytest.raises(Misconfigured, match=r"cuda:1 .*: 20\.0 of 24\.0 GiB free, 1\.0 GiB short"):
        placed_with(21.0)  # no card has all 21 GiB free
    with pytest.raises(Misconfigured, match="--gpu-memory 3 GiB is less than one batch slot takes"):
        placed_with(3.0)  # the runtime allowance alone is 3 GiB


def test_a_bad_device_list_is_one_sentence_at_start(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.build_parser().parse_args(["engine", "--device", "cuda:0,cuda:0"])
    assert exited.value.code == 2 and "cuda:0 named twice" in capsys.readouterr().err
