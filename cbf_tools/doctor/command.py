"""``chatterbox-fast doctor``: is this host ready to serve, and if not, what to do. Exit 0 only when every check passes.

The host (Python, packages, torch/CUDA, GPUs), then what the chosen engine needs (weights and tokenizer, or the TTS
server that ``--engine http`` drives; the PerTh watermark, the voices directory), then one utterance through a real
worker, as ``serve`` would start it. The checks share their code with the worker's own start-up checks, so doctor and
``serve`` never disagree.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cbf_tools.doctor.check import Check, passed, render_json, render_table
from cbf_tools.doctor.host import cuda_check, gpu_check, packages_check, python_check
from cbf_tools.doctor.warnings import explained

if TYPE_CHECKING:
    from engine.settings import EngineSettings

SMOKE_TEXT = "Hello! This is a quick check that the engine speaks."


def weights_checks(model_dir: Path | None) -> list[Check]:
    """Every file of the ``from_local`` layout where the engine would look, then whether the tokenizer loads."""
    from engine.startup_checks import WEIGHTS_FIX, weights_problem
    from engine.weights import cached_snapshot, hub_cache_dir, inspect

    where = model_dir if model_dir is not None else cached_snapshot()
    if where is None or not where.is_dir():
        looked = f"--model-dir {model_dir}" if model_dir is not None else f"the Hugging Face cache ({hub_cache_dir()})"
        found = Check("weights", "fail", f"no Chatterbox-Turbo weights in {looked}", WEIGHTS_FIX)
    elif (problem := weights_problem(report := inspect(where))) is not None:
        found = Check("weights", "fail", problem.problem, problem.fix)
    else:
        return [Check("weights", "ok", f"complete in {where}: {report.summary()}"), tokenizer_check(where)]
    return [found, Check("tokenizer", "skip", "the weights are incomplete")]


def tokenizer_check(model_dir: Path) -> Check:
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    except Exception as exc:  # whatever transformers says, the tokenizer cannot be used
        from engine.startup_checks import WEIGHTS_FIX

        return Check("tokenizer", "fail", f"cannot load the tokenizer in {model_dir}: {exc}", WEIGHTS_FIX)
    return Check("tokenizer", "ok", f"{type(tokenizer).__name__}, {len(tokenizer)} tokens")


def perth_check() -> Check:
    from engine.startup_checks import WATERMARK_FIX
    from engine.watermark import Watermarker, WatermarkUnavailable

    t0 = time.monotonic()
    try:
        Watermarker()
    except WatermarkUnavailable as exc:
        return Check("PerTh", "fail", str(exc), WATERMARK_FIX)
    return Check("PerTh", "ok", f"watermark self-test passed (marked probe read back) in {time.monotonic() - t0:.1f} s")


def voices_check(voices_dir: Path) -> Check:
    """Writable where it will be created: cloned voices and their cached conditionals are written there."""
    existing = next(p for p in (voices_dir, *voices_dir.absolute().parents) if p.exists())
    fix = f"make {voices_dir} writable by this user, or point --voices-dir (CBF_VOICES_DIR) elsewhere"
    if not existing.is_dir():
        return Check("voices dir", "fail", f"{existing} is not a directory", fix)
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("voices dir", "fail", f"cannot write in {existing}: {exc.strerror}", fix)
    created = "" if existing == voices_dir else " (created at start)"
    return Check("voices dir", "ok", f"{voices_dir} writable{created}")


def backend_check(settings: EngineSettings) -> Check:
    """``--engine http``: the flags make sense and the TTS server answers (its voices, where it lists them)."""
    from engine.engines.http import HttpEngine
    from engine.startup_checks import Misconfigured, check_http

    try:
        check_http(settings)
    except Misconfigured as exc:
        return Check("TTS backend", "fail", exc.problem, exc.fix)
    engine = HttpEngine.from_settings(settings, timeout_s=min(settings.http_timeout_s, 10.0))
    engine.probe()
    state = engine.backend()
    if state["state"] != "up":
        return Check("TTS backend", "fail", state["error"] or f"{settings.http_url} did not answer",
                     "start the TTS server, or correct --engine-http-url / --engine-http-dialect "
                     "(CBF_ENGINE_HTTP_URL, CBF_ENGINE_HTTP_DIALECT)")
    voices = sorted(voice.id for voice in engine.named_voices().values())
    shown = ", ".join(voices[:8]) + (", ..." if len(voices) > 8 else "") if voices else "none named"
    return Check("TTS backend", "ok", f"{settings.http_dialect} server at {settings.http_url} answers; voices: {shown}")


async def smoke_check(engine_args: list[str], said: list[str]) -> Check:
    """One utterance through a worker process started like ``serve``'s; what the worker writes to its stderr goes to
    ``said`` (and on to this process's stderr)."""
    from gateway.engine_link.process import WorkerRefused
    from cbf_tools.say import speak, worker_client

    def heard(line: str) -> None:
        said.append(line)
        print(line, file=sys.stderr)

    try:
        async with worker_client(engine_args + ["--log-level", "warning"], on_stderr=heard) as client:
            pcm, stats = await speak(client, SMOKE_TEXT)
    except WorkerRefused as exc:
        reason, _, fix = str(exc).partition(" Fix: ")
        return Check("smoke test", "fail", f"the worker refuses to start: {reason}", fix.rstrip("."))
    except Exception as exc:  # any failure to speak is this check's answer, not a crash of doctor
        return Check("smoke test", "fail", f"{type(exc).__name__}: {exc}", "run `chatterbox-fast say \"Hello\"` "
                                                                          "with --log-level debug to see why")
    if not pcm:
        return Check("smoke test", "fail", "the worker answered without audio", "see the worker's log above")
    return Check("smoke test", "ok", f"time to first chunk {stats.first_chunk_s:.3f} s, real-time factor "
                                     f"{stats.rtf:.1f}x ({stats.audio_s:.2f} s of audio)")


class _Collecting(logging.Handler):
    """This process's own WARNING and ERROR lines while doctor runs, for the table to explain."""

    def __init__(self, said: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.said = said

    def emit(self, record: logging.LogRecord) -> None:
        self.said.append(f"{record.levelname} {record.name}: {record.getMessage()}")


def run(args: argparse.Namespace, settings: EngineSettings, engine_args: list[str]) -> int:
    """``settings`` and ``engine_args``: the engine flags, as settings (for the checks here) and as a command line
    (for the smoke test's worker)."""
    from engine.engines import choose_engine

    if args.log_level != "debug":  # the table says it all; the worker's start-up chatter would only bury it
        logging.getLogger("chatterbox_fast").setLevel(logging.WARNING)
    said: list[str] = []  # the warnings met on the way: explained in the table (cbf_tools/doctor/warnings.py)
    collecting = _Collecting(said)
    logging.getLogger("chatterbox_fast").addHandler(collecting)

    engine, why = choose_engine(settings)
    turbo = engine == "chatterbox-turbo"
    checks = [python_check(), packages_check(), cuda_check(settings.device, turbo and settings.device != "cpu"),
              gpu_check()]
    if turbo and settings.weights == "pretrained":
        checks += weights_checks(settings.model_dir)
    elif engine == "http":
        checks.append(backend_check(settings))
    else:
        checks.append(Check("weights", "skip", f"{engine} uses none" if not turbo else "random weights asked for"))
    checks += [perth_check(), voices_check(settings.voices_dir)]
    if passed(checks[2:]):  # the host's packages may differ from the lock and the engine still run
        checks.append(asyncio.run(smoke_check(engine_args, said)))
    else:
        checks.append(Check("smoke test", "skip", "fix the failures above first"))
    logging.getLogger("chatterbox_fast").removeHandler(collecting)
    checks += explained(said)
    print(render_json(checks, engine=engine, why=why) if args.json else f"engine: {engine} ({why})\n"
          + render_table(checks))
    return 0 if passed(checks) else 1

