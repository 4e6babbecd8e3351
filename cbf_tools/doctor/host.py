"""``doctor``'s checks of the host: Python and packages against requirements/lock.txt, torch's CUDA build against the
driver, and every GPU torch can see (by UUID, with its memory and bf16)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from cbf_tools.doctor.check import Check

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "lock.txt"
LOCK_FIX = "recreate the environment from the lock: `make venv` (the image pins the same: `-c requirements/lock.txt`)"
MIN_DRIVER = {12: 525, 13: 580}  # CUDA major version -> the oldest NVIDIA driver that runs it (Linux)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def python_check() -> Check:
    header = re.search(r"Python (\d+\.\d+)", LOCK.read_text()) if LOCK.exists() else None
    have = ".".join(map(str, sys.version_info[:3]))
    if header is None:
        return Check("python", "skip", f"Python {have}; no requirements/lock.txt to compare with")
    if have.rsplit(".", 1)[0] != header.group(1):
        return Check("python", "fail", f"Python {have}, the lock was made with {header.group(1)}",
                     f"use Python {header.group(1)} for the venv")
    return Check("python", "ok", f"Python {have} (lock: {header.group(1)})")


def _runtime_packages() -> set[str]:
    """What the gateway and the engine need: pyproject's dependencies, its ``engine`` extra, the --no-deps ones
    (test-only packages in the lock are never installed in the image, so their absence is no fault)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = project["dependencies"] + project["optional-dependencies"]["engine"]
    specs += [line for line in (ROOT / "requirements" / "engine-nodeps.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    return {_norm(re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]) for spec in specs}


def packages_check() -> Check:
    if not LOCK.exists():
        return Check("packages", "skip", "no requirements/lock.txt here")
    installed = {_norm(d.metadata["Name"]): d.version for d in metadata.distributions()}
    locked = dict(line.split("==", 1) for line in LOCK.read_text().splitlines() if "==" in line
                  and not line.startswith("#"))
    locked = {_norm(name): version.strip() for name, version in locked.items()}
    wrong = [f"{name} {installed[name]} (lock {want})" for name, want in sorted(locked.items())
             if name in installed and installed[name].split("+")[0] != want.split("+")[0]]
    missing = sorted(_runtime_packages() & locked.keys() - installed.keys())
    if wrong or missing:
        detail = "; ".join(filter(None, [", ".join(wrong), missing and "missing: " + ", ".join(missing)]))
        return Check("packages", "fail", detail, LOCK_FIX)
    present = len(locked.keys() & installed.keys())
    return Check("packages", "ok", f"{present} installed packages as pinned in requirements/lock.txt")


def _driver_version() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    result = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True, timeout=30)
    return result.stdout.split()[0] if result.returncode == 0 and result.stdout.strip() else None


def cuda_check(device: str, needs_gpu: bool) -> Check:
    """torch's build against the driver. ``needs_gpu``: the engine asked for (or would pick) a CUDA device."""
    import torch

    from engine.startup_checks import CUDA_FIX, cuda_problem

    driver, build = _driver_version(), torch.version.cuda
    seen = torch.cuda.device_count() if torch.cuda.is_available() else 0
    detail = f"torch {torch.__version__} ({f'CUDA {build}' if build else 'CPU-only'} build), " \
             f"NVIDIA driver {driver or 'not found'}, {seen} GPU(s) visible"
    if build and driver:
        need = MIN_DRIVER.get(int(build.split(".")[0]))
        if need is not None and int(driver.split(".")[0]) < need:
            return Check("torch/CUDA", "fail", detail + f"; CUDA {build} needs driver >= {need}",
                         f"update the NVIDIA driver to >= {need}, or install a torch built for an older CUDA")
    if needs_gpu and driver and seen == 0:
        return Check("torch/CUDA", "fail", detail + "; the driver is there but torch sees no GPU", CUDA_FIX)
    problem = cuda_problem(device) if needs_gpu else None
    if problem:
        return Check("torch/CUDA", "fail", problem, CUDA_FIX)
    return Check("torch/CUDA", "ok", detail)


def gpu_check() -> Check:
    import torch

    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return Check("GPU", "skip", "no GPU visible: the engine runs on the CPU (fine for espeak, slow for Turbo)")
    gpus = []
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        free, total = torch.cuda.mem_get_info(i)
        gpus.append(f"cuda:{i} {props.name} GPU-{props.uuid}, {free / 1024**3:.1f} of {total / 1024**3:.1f} GiB "
                    f"free, bf16 {'yes' if props.major >= 8 else 'no'}")
    return Check("GPU", "ok", "; ".join(gpus))
