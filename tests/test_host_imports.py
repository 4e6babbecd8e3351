"""The Turbo engine, the worker and the GPU kit import and decode uploads without PyAV, espeakng-loader and
scikit-learn, as on the GPU measurement host (they are not there, and their wheels do not fit in what a device run may
carry). The packages are hidden in a child Python by tests/blocked/sitecustomize.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCKED_ENV = {"PYTHONPATH": f"{ROOT / 'tests' / 'blocked'}{os.pathsep}{ROOT}", "CBF_BLOCK_MODULES": "av,espeakng_loader,sklearn"}

CHILD = """
import io, sys
import numpy as np, soundfile as sf
try:
    import av
except ModuleNotFoundError:
    pass
else:
    raise SystemExit("the blocker did not block av")
import engine.worker, engine.gpu_kit.turbo_bench, engine.engines.turbo  # noqa: F401
from engine.audio_decode import decode_audio
from engine.engines.base import EngineError
out = io.BytesIO()
sf.write(out, np.full(1600, 0.25, dtype=np.float32), 16000, format="WAV", subtype="PCM_16")
samples, rate = decode_audio(out.getvalue())
assert rate == 16000 and samples.size == 1600 and abs(float(samples[0]) - 0.25) < 1e-3
try:
    decode_audio(b"ID3 not an mp3 libsndfile reads")
except EngineError as exc:
    assert exc.code == "bad_audio" and "without PyAV" in str(exc), exc
else:
    raise SystemExit("junk decoded")
print(sorted(m for m in sys.modules if m.split(".")[0] in ("av", "espeakng_loader", "sklearn")))
"""


def test_the_worker_and_the_kit_import_and_decode_wav_without_pyav_or_espeakng_loader() -> None:
    result = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env={**os.environ, **BLOCKED_ENV},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
