"""``serve --engine-devices``: the embedded workers to start, one per entry (issue 50 item 4).

An entry is ``cuda:N`` (torch's index, under this process's CUDA_VISIBLE_DEVICES), ``GPU-<uuid>`` (``MIG-<uuid>``
too: the same card whatever the index order, the team's lesson on mixed hosts) or ``cpu`` (``cpu,cpu`` is several
CPU workers: how CI runs several workers for real); or ``auto`` alone: every card nvidia-smi lists, those
CUDA_VISIBLE_DEVICES leaves visible where it is set; where nvidia-smi lists none, the one worker ``serve`` starts
anyway, on its own ``--device auto`` (the CPU on a host without a GPU; a GPU torch sees even where nvidia-smi is
missing). Each entry becomes its worker's ``--device``. Pure but for ``nvidia_smi_listing``, which runs the command
(no torch in the gateway).
"""

from __future__ import annotations

import subprocess
from typing import Callable, Mapping

GPU_PREFIXES = ("GPU-", "MIG-")


def parse(value: str) -> tuple[str, ...]:
    """The entries of ``value``; a ValueError says in one sentence what is wrong (unknown, repeated, auto in a list)."""
    entries = tuple(entry.strip() for entry in value.split(",") if entry.strip())
    if not entries:
        raise ValueError("expected auto, or a list of cuda:N, GPU-<uuid> and cpu, got nothing")
    if "auto" in entries and len(entries) > 1:
        raise ValueError(f"auto stands alone, not in a list: {value!r}")
    for entry in entries:
        if entry not in ("auto", "cpu") and not (
                entry.startswith("cuda:") and entry[5:].isdigit() or entry.startswith(GPU_PREFIXES) and len(entry) > 8):
            raise ValueError(f"expected auto, cpu, cuda:N or GPU-<uuid>, got {entry!r}")
    repeated = sorted({entry for entry in entries if entry != "cpu" and entries.count(entry) > 1})
    if repeated:  # two workers on one card would each budget for the whole of it
        raise ValueError(f"{', '.join(repeated)} named twice in {value!r} (one worker per card; cpu may repeat)")
    return entries


def nvidia_smi_listing() -> str | None:
    """``nvidia-smi``'s cards as CSV lines ``index, uuid``; None where there is no nvidia-smi or it fails (no GPU)."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def listed_cards(listing: str | None) -> list[tuple[int, str]]:
    """The (nvidia-smi index, UUID) of each card in ``nvidia_smi_listing``'s text."""
    cards = []
    for line in (listing or "").splitlines():
        index, _, uuid = line.partition(",")
        if index.strip().isdigit() and uuid.strip().startswith(GPU_PREFIXES):
            cards.append((int(index), uuid.strip()))
    return cards


def visible(cards: list[tuple[int, str]], cuda_visible_devices: str | None) -> tuple[str, ...]:
    """The worker entries for ``cards`` under CUDA_VISIBLE_DEVICES: unset, every card by UUID; set, the cards it
    names in its order, as CUDA reads it (up to the first entry naming no card): a UUID (or its prefix) as that card's
    UUID, an index as ``cuda:N`` by its place in the list (CUDA's index order may differ from nvidia-smi's: an
    index is never translated to a UUID through nvidia-smi's numbering)."""
    if cuda_visible_devices is None:
        return tuple(uuid for _, uuid in cards)
    entries: list[str] = []
    for token in (t.strip() for t in cuda_visible_devices.split(",")):
        if token.isdigit() and int(token) < len(cards):
            entries.append(f"cuda:{len(entries)}")
            continue
        match = [uuid for _, uuid in cards if token.startswith(GPU_PREFIXES) and uuid.startswith(token)]
        if len(match) != 1 or match[0] in entries:
            break
        entries.append(match[0])
    return tuple(entries)


def resolve(entries: tuple[str, ...], environ: Mapping[str, str],
            listing: Callable[[], str | None] = nvidia_smi_listing) -> tuple[str, ...]:
    """The workers' devices: ``entries`` as given, or for ``auto`` the visible cards; none listed: () (one worker on
    the engine flags' own device)."""
    if entries != ("auto",):
        return entries
    return visible(listed_cards(listing()), environ.get("CUDA_VISIBLE_DEVICES"))
