"""Cost of the engine-side chunk path on the CPU: eSpeak synthesis, the join, PerTh apply and detect. Prints figures.

Wall and CPU (process) time are both printed: on a shared machine the CPU time is the steadier figure.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.engines.espeak import EspeakEngine  # noqa: E402
from engine.joins import Joiner  # noqa: E402
from engine.watermark import Watermarker  # noqa: E402

TEN_WORDS = "The quick brown fox jumps over the lazy dog again today."
PASSAGE = " ".join([TEN_WORDS, "Then it ran into the forest, quite pleased with itself, and slept until noon."] * 3)


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``fn``."""
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    engine = EspeakEngine()
    voice = engine.default_voice()
    engine.warmup()
    wav = engine.synthesize(TEN_WORDS, voice, threading.Event())
    wall, cpu = timed(lambda: engine.synthesize(TEN_WORDS, voice, threading.Event()), 20)
    print(f"espeak, 10 words ({wav.size / 24000:.2f} s of audio): {wall * 1e3:.1f} ms wall, {cpu * 1e3:.1f} ms CPU")
    wall, cpu = timed(lambda: Joiner().process(wav, 24000, "sentence"), 20)
    print(f"join, same chunk: {wall * 1e3:.2f} ms wall, {cpu * 1e3:.2f} ms CPU")

    import torch

    marker = Watermarker()
    print(f"torch threads: {torch.get_num_threads()} (set OMP_NUM_THREADS to change)")
    speech = Joiner().process(engine.synthesize(PASSAGE, voice, threading.Event()), 24000, None)
    for seconds in (0.5, 1.0, 2.0, 4.0):
        chunk = speech[: int(seconds * 24000)]
        marked = marker.apply(chunk, 24000)
        aw, ac = timed(lambda: marker.apply(chunk, 24000), 5)
        dw, dc = timed(lambda: marker.detect(marked, 24000), 5)
        print(f"PerTh on {seconds:.1f} s: apply {aw * 1e3:.0f} ms wall ({aw / seconds * 1e3:.0f} ms per audio second), "
              f"CPU {ac * 1e3:.0f} ms; detect {dw * 1e3:.0f} ms wall ({dw / seconds * 1e3:.0f} ms/s), "
              f"CPU {dc * 1e3:.0f} ms; reads {marker.detect(marked, 24000):.2f}")


if __name__ == "__main__":
    main()
