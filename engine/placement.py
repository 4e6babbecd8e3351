"""Placement by fit: which card a Chatterbox-Turbo worker loads onto, on a GPU shared with other work (issue 50).

``--device`` takes an ordered list: ``cuda:0,cuda:1``, ``GPU-<uuid>,GPU-<uuid>`` (CUDA's index order can differ from
nvidia-smi's on a mixed host: a UUID always names the same card), or ``auto`` (every visible card, the most free
memory first). Before loading, the worker estimates what it will take (``estimate``: from the checkpoint's own
safetensors headers, the batch slots' K/V cache and the prompt cache, sized from the T3 body's config) and tries the
cards of that order that have it free (``plan``); an out-of-memory while loading on one frees everything and tries the
next (engine/startup_checks.py). Pure: the cards are an inventory (``Card``), read from torch where there is CUDA
(``visible_cards``) and written by hand in the tests, which have no GPU.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

GIB = 1024 ** 3
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
_STORED_BYTES = {"F64": 8, "F32": 4, "BF16": 2, "F16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
# What the estimate cannot read from a file: the CUDA context and allocator's own (about 0.5 GiB a process on
# recent cards), activations of the largest batch and the CUDA graphs' memory pools (T3's decode step and S3Gen's
# buckets). A fixed allowance, kept generous: a card that passes on the estimate and then runs out while loading or
# capturing is still caught, and the next card tried.
RUNTIME_ALLOWANCE = 3 * GIB
MARGIN = 0.10  # on top of everything, for fragmentation


@dataclass(frozen=True)
class Card:
    """One visible CUDA device: torch's index, its UUID, name, and free and total memory in bytes."""

    index: int
    uuid: str
    name: str
    free: int
    total: int

    @property
    def device(self) -> str:
        return f"cuda:{self.index}"

    def describe(self) -> str:
        return f"{self.device} ({self.uuid}, {self.name}): {self.free / GIB:.1f} of {self.total / GIB:.1f} GiB free"


@dataclass(frozen=True)
class Need:
    """What a worker is estimated to take on its card, in bytes, by part."""

    weights: int
    kv_cache: int
    prompt_cache: int
    runtime: int = RUNTIME_ALLOWANCE

    @property
    def total(self) -> int:
        return int((self.weights + self.kv_cache + self.prompt_cache + self.runtime) * (1 + MARGIN))

    def describe(self) -> str:
        return (f"~{self.total / GIB:.1f} GiB (weights {self.weights / GIB:.1f}, batch K/V {self.kv_cache / GIB:.1f}, "
                f"prompt cache {self.prompt_cache / GIB:.1f}, runtime {self.runtime / GIB:.1f}, margin "
                f"{MARGIN:.0%})")


def device_list(value: str) -> tuple[str, ...]:
    """``--device``: ``auto``, ``cpu``, ``cuda``, or an ordered, comma-separated list of ``cuda:N`` and ``GPU-<uuid>``
    (``MIG-<uuid>`` too); a ValueError says what is wrong."""
    items = tuple(item.strip() for item in value.split(",") if item.strip())
    if not items:
        raise ValueError("expected auto, cpu, cuda, or a list of cuda:N and GPU-<uuid>, got nothing")
    if len(items) > 1 and {"auto", "cpu", "cuda"} & set(items):
        raise ValueError(f"auto, cpu and cuda stand alone, not in a list: {value!r}")
    for item in items:
        if item not in ("auto", "cpu", "cuda") and not (
                item.startswith("cuda:") and item[5:].isdigit() or item.startswith(("GPU-", "MIG-")) and len(item) > 8):
            raise ValueError(f"expected auto, cpu, cuda, cuda:N or GPU-<uuid>, got {item!r}")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} named twice in {value!r}")
    return items


def present(devices: tuple[str, ...], cards: list[Card]) -> tuple[tuple[str, ...], list[str]]:
    """``devices`` split into those ``cards`` has (``auto`` and ``cuda`` always) and those it has not: for a reload,
    where a card that went away while the model was unloaded is passed over, not a reason to refuse."""
    seen = [name for name in devices if name in ("auto", "cuda") or any(name in (c.device, c.uuid) for c in cards)]
    return tuple(seen), [name for name in devices if name not in seen]


def order(devices: tuple[str, ...], cards: list[Card]) -> list[Card]:
    """The cards to try, in order: those named (by index or UUID, in the list's order), or for ``auto`` every card,
    the most free memory first. A name no visible card has is a ValueError naming the cards there are."""
    if devices in (("auto",), ("cuda",)):
        return sorted(cards, key=lambda card: -card.free) if devices == ("auto",) else cards[:1]
    chosen = []
    for name in devices:
        card = next((c for c in cards if name in (c.device, c.uuid)), None)
        if card is None:
            seen = "; ".join(c.describe() for c in cards) or "none"
            raise ValueError(f"--device names {name}, which is not a visible card (visible: {seen})")
        if card not in chosen:  # cuda:0 and its own UUID name one card
            chosen.append(card)
    return chosen


@dataclass(frozen=True)
class Plan:
    """The cards to try in order (those with room for ``need`` first) and why each was passed over."""

    need: Need
    fitting: list[Card]
    passed_over: list[tuple[Card, str]]

    def refusal(self, failed: list[tuple[Card, str]] = ()) -> str:  # type: ignore[assignment]
        """Why no card took the worker: every card tried, with its memory, and what it needed."""
        tried = [*self.passed_over, *failed]
        return (f"no card has room for Chatterbox-Turbo's {self.need.describe()}: "
                + "; ".join(f"{card.describe()}, {why}" for card, why in tried))


def plan(need: Need, cards: list[Card], budget: int | None = None) -> Plan:
    """``cards`` (in ``order``'s order) split into those with ``need`` free (the whole ``budget``, where one is set),
    to be tried in turn, and the rest."""
    room = budget or need.total
    fitting = [card for card in cards if card.free >= room]
    short = [(card, f"{(room - card.free) / GIB:.1f} GiB short") for card in cards if card not in fitting]
    return Plan(need, fitting, short)


MOST_SLOTS = 64  # --batch-slots 0 on CUDA


def slots_within(budget: int, need_of: Callable[[int], Need], asked: int) -> int:
    """The batch slots a worker may have inside ``budget`` bytes (``--gpu-memory``): ``asked`` if it fits, else for 0
    (auto) the most up to MOST_SLOTS that fit. A ValueError says why none fit: an asked count too many, or a budget
    under the weights, the prompt cache and one slot."""
    if asked:
        if need_of(asked).total > budget:
            raise ValueError(f"--batch-slots {asked} needs {need_of(asked).describe()}, more than --gpu-memory "
                             f"{budget / GIB:g} GiB")
        return asked
    fitting = [n for n in range(MOST_SLOTS, 0, -1) if need_of(n).total <= budget]
    if not fitting:
        raise ValueError(f"--gpu-memory {budget / GIB:g} GiB is less than one batch slot takes with the weights: "
                         f"{need_of(1).describe()}")
    return fitting[0]


def chosen_line(card: Card, need: Need, others: list[Card]) -> str:
    """The log line (and /health's ``placement.why``) for the card taken."""
    rest = "; ".join(c.describe() for c in others if c != card)
    return f"placed on {card.describe()} for an estimated {need.describe()}" + (f"; also seen: {rest}" if rest else "")


def parameter_bytes(path: Path, as_bytes: int | None = None) -> int:
    """The bytes of every tensor in a safetensors file, as stored, or at ``as_bytes`` per element (read from the
    file's own header: no tensor is loaded)."""
    with path.open("rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    total = 0
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        count = 1
        for dim in tensor["shape"]:
            count *= dim
        total += count * (as_bytes or _STORED_BYTES.get(tensor["dtype"], 4))
    return total


def estimate(files: dict[str, int | None], layers: int, width: int, capacity: int, slots: int, dtype_bytes: int,
             prompt_voices: int, prompt_positions: int) -> Need:
    """The need of a worker: ``files`` (each weights file, and the bytes per element it is held at on the card:
    None for as stored), a T3 body of ``layers`` and ``width`` (n_embd) with ``slots`` K/V rows of ``capacity``
    positions, and a prompt cache of ``prompt_voices`` prefixes of ``prompt_positions`` positions."""
    weights = sum(parameter_bytes(Path(path), per) for path, per in files.items() if Path(path).exists())
    per_position = 2 * layers * width * dtype_bytes  # a key and a value in every layer
    return Need(weights=weights, kv_cache=slots * capacity * per_position,
                prompt_cache=prompt_voices * prompt_positions * per_position)


MEMORY_STEP = 64 * 2 ** 20  # a worker's device memory is said again once a figure moved this much


def device_memory(device: str, budget_gib: float | None) -> dict[str, int] | None:
    """A CUDA worker's memory now, in bytes: what torch has allocated and reserved on its card, the card's free and
    total, and its ``--gpu-memory`` budget (0: none); None off CUDA."""
    import torch

    if not device.startswith("cuda") or not torch.cuda.is_available():
        return None
    free, total = torch.cuda.mem_get_info(device)
    return {"allocated": torch.cuda.memory_allocated(device), "reserved": torch.cuda.memory_reserved(device),
            "card_free": free, "card_total": total, "budget": int((budget_gib or 0) * GIB)}


def moved(old: dict[str, int] | None, new: dict[str, int] | None) -> bool:
    """Whether ``new`` differs from ``old`` enough to be said again (a figure by MEMORY_STEP or more)."""
    if old is None or new is None:
        return old != new
    return any(abs(new[k] - old.get(k, 0)) >= MEMORY_STEP for k in new)


def visible_cards() -> list[Card]:
    """Every CUDA device torch sees that answers, with its free memory now (none without CUDA)."""
    import torch

    if not torch.cuda.is_available():
        return []
    cards = []
    for index in range(torch.cuda.device_count()):
        try:
            props = torch.cuda.get_device_properties(index)
            free, total = torch.cuda.mem_get_info(index)
        except RuntimeError:  # a card that no longer answers (fallen off the bus, reset): not a place to load
            continue
        uuid = str(getattr(props, "uuid", "") or "")
        cards.append(Card(index, uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}", props.name, free, total))
    return cards
