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
DOUBLE_TALK_ONSETS_S = tuple(np.round(np.arange(0.2, 1.01, 0.1), 2))  # double talk: from the first second
ECHO_ALONE_S = 8.0  # an echo-alone call lasts this long and AFTER_S, ...
# ... the gateway's voice starting this far into its clip (a call each; 1.95: the hot line's echo, zeroed by AEC3's
# suppressor before the line's delay was sure, was voiced by Silero's primed state until detector.SILENCE; 0.5: there
# too, and still, 0.94 s in, the first module let a loud onset's echo through for 100 ms, -42 to -60 dBFS,
# correlating 0.4-0.65 with what the gateway sent: the hot line's one false barge-in in 64 starts 0.1 s apart)
ECHO_FROM_S = (0.0, 0.5, 1.3, 1.95, 2.6, 3.9, 5.2)
AFTER_S = 2.5  # each call lasts this long past the caller's onset
FRAME = 160  # 20 ms at 8 kHz
LEAD = 8000  # the far end is sent up to 1 s ahead of its playout, 100 ms at a time


def onset_to_interrupt(model: line.LineModel, onset_s: float, cancel_echo: bool,
                       setup: Callable[[CallerSide], None] = lambda side: None, suppressed: bool = False,
                       far_from_s: float = 0.0) -> int | None:
    """One fresh call on ``model``'s line (its caller ``onset_s`` in; ``caller_db`` None: nobody speaks);
    ``suppressed``: the carrier sends no frames until the caller speaks (its silence suppressed); ``far_from_s``: the
    gateway's voice starts this far into its clip."""
    gateway, caller = clip_pair()
    n = round((onset_s + AFTER_S) * line.RATE)
    far = np.resize(np.roll(gateway, -round(far_from_s * line.RATE)), n)
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
    """{line model: {row: [onset to interrupt per onset]}}: a double-talk model's onsets ``DOUBLE_TALK_ONSETS_S``; an
    echo-alone model's calls (``ECHO_FROM_S``) give -1 where the echo alone interrupted, None where it did not."""
    out: dict[str, dict[str, list]] = {}
    for model in models:
        out[model.name] = {}
        for row, (cancel, setup) in ROWS.items():
            told = setup(model) if setup else lambda s: None
            if model.caller_db is None:
                got = [onset_to_interrupt(model, ECHO_ALONE_S, cancel, told, far_from_s=at) for at in ECHO_FROM_S]
            else:
                got = [onset_to_interrupt(model, at, cancel, told)
                       for at in (DOUBLE_TALK_ONSETS_S if model.double_talk else onsets)]
            out[model.name][row] = got
    return out


def render(figures: dict[str, dict[str, list]], onsets: tuple[float, ...] = ONSETS_S) -> str:
    lines = [f"onset to interrupt (ms), a fresh call, the caller starting {', '.join(f'{o:g}' for o in onsets)} s "
             "into the gateway's speech (double talk: 0.2-1 s; None: not heard; -1: interrupted on the echo first; "
             f"echo alone: {len(ECHO_FROM_S)} calls of {ECHO_ALONE_S + AFTER_S:g} s)"]
    for name, rows in figures.items():
        lines.append(name)
        for row, got in rows.items():
            if name.startswith("echo alone"):
                lines.append(f"  {row:26s} {sum(ms == -1 for ms in got)}/{len(got)} false barge-ins")
                continue
            heard = [ms for ms in got if ms is not None and ms >= 0]
            lines.append(f"  {row:26s} {got}: {sum(ms <= 600 for ms in heard)}/{len(got)} within 600 ms, p50 "
                         f"{np.median(heard) if heard else '-'}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(measure(line.MODELS)))
