"""CPU per audio-second of each wire encoder in gateway/audio.py (engine-sized 0.5 s chunks). Prints figures."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.audio import FORMATS, Resampler, make_encoder  # noqa: E402


def speechy(seconds: float) -> bytes:
    t = np.arange(int(seconds * 24000)) / 24000
    voice = np.sin(2 * np.pi * 140 * t) + 0.5 * np.sin(2 * np.pi * 900 * t) + 0.2 * np.random.randn(t.size)
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)
    return (voice * envelope * 6000).astype("<i2").tobytes()


def main(seconds: float = 20.0) -> None:
    pcm = speechy(seconds)
    chunk = 24000  # 0.5 s
    for name in FORMATS:
        enc = make_encoder(name)
        start = time.process_time()
        size = sum(len(enc.encode(pcm[i:i + chunk])) for i in range(0, len(pcm), chunk)) + len(enc.flush())
        cpu = time.process_time() - start
        print(f"{name:6s} {enc.sample_rate:5d} Hz  {1000 * cpu / seconds:6.2f} CPU-ms per audio-s  "
              f"{8 * size / seconds / 1000:7.1f} kbit/s")
    for rate in (8000, 48000):
        r = Resampler(rate)
        start = time.process_time()
        for i in range(0, len(pcm), 960):  # 20 ms pieces
            r.process(pcm[i:i + 960])
        r.flush()
        print(f"resample 24k->{rate} in 20 ms pieces: {1000 * (time.process_time() - start) / seconds:.2f} "
              "CPU-ms per audio-s")


if __name__ == "__main__":
    main()
