"""How soon a caller talking over the gateway early in a call is heard (``python -m cbf_tools.bench.aec_onsets``):
offline, deterministic, in seconds, the caller's side alone (gateway/listen/caller.py's ``CallerSide``: the canceller,
the VAD, barge-in) on the deploy gate's recordings through the bench's line models (cbf_tools/bench/line.py).

Each trial is a fresh call: the gateway's voice plays from 0 (sent as the outbox sends it), its echo comes back on the
line, and the caller starts ``ONSETS_S`` into it at ``caller_db`` below the gateway's level. Figure: the caller's
onset to barge-in's interrupt (ms; None: none came; -1: one came before the caller spoke, on the echo). Rows: the
level rule alone (no canceller), the canceller finding the line's delay itself (a call's first module, as on the
gateway), and the canceller told the delay before its first block (what no fresh call knows: the bound on what
telling AEC3 earlier could give).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from cbf_tools.bench import line
from cbf_tools.bench.barge_in_lines import clip_pair
from gateway.audio import g711_encode
from gateway.listen import aec
from gateway.listen.barge_in import Act
from gateway.listen.caller import CallerSide
from gateway.listen.detector import VadConfig

ONSETS_S = tuple(np.round(np.arange(1.0, 3.01, 0.25), 2))
AFTER_S = 2.5  # each call lasts this long past the caller's onset
FRAME = 160  # 20 ms at 8 kHz
LEAD = 8000  # the far end is sent up to 1 s ahead of its playout, 100 ms at a time


def onset_to_interrupt(model: line.LineModel, onset_s: float, cancel_echo: bool,
                       setup: Callable[[CallerSide], None] = lambda side: None, suppressed: bool = False) -> int | None:
    """One fresh call on ``model``'s line (its caller ``onset_s`` in; ``caller_db`` None: nobody speaks);
    ``suppressed``: the carrier sends no frames until the caller speaks (its silence suppressed)."""
    gateway, caller = clip_pair()
    n = round((onset_s + AFTER_S) * line.RATE)
    far = np.resize(gateway, n)
    voice, start = np.zeros(n), round(onset_s * line.RATE)
    if model.caller_db is not None:
        said = line.caller_at(caller, model, line.active_dbfs(gateway))[:n - start]
        voice[start:start + said.size] = said
    near = g711_encode(line.to_s16(line.echo_of(far, model) + voice).tobytes(), "pcm_mulaw")
    clock = [0.0]
    side = CallerSide("mulaw", line.RATE, VadConfig(), "vad", lambda: True, clock=lambda: clock[0],
                      cancel_echo=cancel_echo)
    setup(side)
    sent = 0
    for i in range(0, n - FRAME + 1, FRAME):
        clock[0] = 100.0 + (i + FRAME) / line.RATE
        while sent < min(n, i + LEAD):
            side.played(100.0 + sent / line.RATE, far[sent:sent + LEAD // 10], line.RATE)
            sent += LEAD // 10
        if suppressed and i < start:
            continue
        if Act.INTERRUPT in side.hear(near[i:i + FRAME], 1000 * i / line.RATE):
            ms = round(1000 * ((i + FRAME) / line.RATE - onset_s))
            return ms if ms >= 0 else -1
    return None


def _told(model: line.LineModel) -> Callable[[CallerSide], None]:
    def setup(side: CallerSide) -> None:
        assert side.aec is not None
        side.aec.delay_ms = round(model.delay_ms)
        side.aec._agreeing = aec.SURE  # and sure of it: the canceller's output alone from the start

    return setup


ROWS = {"level rule": (False, None), "canceller": (True, None), "canceller told the delay": (True, _told)}


def measure(models: tuple[line.LineModel, ...], onsets: tuple[float, ...] = ONSETS_S) -> dict[str, dict[str, list]]:
    """{line model: {row: [onset to interrupt per onset]}}."""
    out: dict[str, dict[str, list]] = {}
    for model in models:
        out[model.name] = {}
        for row, (cancel, setup) in ROWS.items():
            out[model.name][row] = [onset_to_interrupt(model, at, cancel, setup(model) if setup else lambda s: None)
                                    for at in onsets]
    return out


def render(figures: dict[str, dict[str, list]], onsets: tuple[float, ...] = ONSETS_S) -> str:
    lines = [f"onset to interrupt (ms), a fresh call, the caller starting {', '.join(f'{o:g}' for o in onsets)} s "
             "into the gateway's speech (None: not heard; -1: interrupted on the echo first)"]
    for name, rows in figures.items():
        lines.append(name)
        for row, got in rows.items():
            heard = [ms for ms in got if ms is not None and ms >= 0]
            lines.append(f"  {row:26s} {got}: {sum(ms <= 600 for ms in heard)}/{len(got)} within 600 ms, p50 "
                         f"{np.median(heard) if heard else '-'}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(measure(tuple(m for m in line.MODELS if m.caller_db is not None and not m.double_talk))))
