"""Chatterbox-Turbo's weight files: the ``from_local`` layout, where they are, whether they are whole, fetching them.

Imports nothing heavy (no torch), so ``weights verify``, ``doctor`` and the worker's start-up checks can say what is
missing in a moment. A ``.safetensors`` file is checked against its own header: a download cut short is caught here,
not as a cryptic error minutes into loading.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

REPO_ID = "ResembleAI/chatterbox-turbo"
HF_PATTERNS = ["*.safetensors", "*.json", "*.txt", "*.pt", "*.model"]
T3_FILE = "t3_turbo_v1.safetensors"
S3GEN_FILE = "s3gen_meanflow.safetensors"
VE_FILE = "ve.safetensors"
CONDS_FILE = "conds.pt"
WEIGHT_FILES = (VE_FILE, T3_FILE, S3GEN_FILE)
TOKENIZER = "tokenizer (tokenizer.json, or vocab.json + merges.txt)"


@dataclass(frozen=True)
class FileState:
    name: str
    size: int | None  # bytes; None when absent
    problem: str | None = None  # "missing", "truncated ...": None when whole


@dataclass(frozen=True)
class WeightsReport:
    """Every file of the layout in one directory, each with its size and what is wrong with it."""

    where: Path
    files: tuple[FileState, ...]

    @property
    def problems(self) -> list[FileState]:
        return [f for f in self.files if f.problem is not None]

    @property
    def complete(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """One line: what is wrong, or every file with its size."""
        if self.problems:
            return "; ".join(f"{f.name} {f.problem}" for f in self.problems)
        return ", ".join(f"{f.name} {human_size(f.size or 0)}" for f in self.files if f.size is not None)


def inspect(model_dir: Path) -> WeightsReport:
    """Check every file of the ``from_local`` layout in ``model_dir`` (conds.pt is optional: it is the built-in
    voice, and the engine prepares one without it)."""
    files = [_safetensors_state(model_dir / name) for name in WEIGHT_FILES]
    files.append(_tokenizer_state(model_dir))
    conds = model_dir / CONDS_FILE
    if conds.is_file():
        files.append(FileState(CONDS_FILE, conds.stat().st_size))
    return WeightsReport(model_dir, tuple(files))


def has_tokenizer(model_dir: Path) -> bool:
    return _tokenizer_state(model_dir).problem is None


def is_complete(model_dir: Path) -> bool:
    return inspect(model_dir).complete


def _tokenizer_state(model_dir: Path) -> FileState:
    names = ["tokenizer.json"] if (model_dir / "tokenizer.json").is_file() else ["vocab.json", "merges.txt"]
    present = [model_dir / name for name in names if (model_dir / name).is_file()]
    if len(present) < len(names):
        return FileState(TOKENIZER, None, "missing")
    return FileState(" + ".join(names), sum(p.stat().st_size for p in present))


def _safetensors_state(path: Path) -> FileState:
    """Whole when the file is as long as its header says: 8 bytes of header length, the JSON header, the tensors."""
    if not path.is_file():
        return FileState(path.name, None, "missing")
    size = path.stat().st_size
    try:
        with path.open("rb") as f:
            (header_len,) = struct.unpack("<Q", f.read(8))
            if header_len > size:
                raise ValueError("header longer than the file")
            header = json.loads(f.read(header_len))
        data = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
    except (struct.error, ValueError, KeyError, TypeError, IndexError):
        return FileState(path.name, size, "is not a readable safetensors file")
    expected = 8 + header_len + data
    if size < expected:
        return FileState(path.name, size, f"is truncated ({human_size(size)} of {human_size(expected)})")
    return FileState(path.name, size)


def human_size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def hub_cache_dir() -> Path:
    """Where the Hugging Face cache keeps this repository (``HF_HOME`` / ``HF_HUB_CACHE`` decide)."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE) / ("models--" + REPO_ID.replace("/", "--"))


def cached_snapshot() -> Path | None:
    """The newest snapshot of the repository in the HF cache, whole or not; None when there is none. Never downloads."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=REPO_ID, allow_patterns=HF_PATTERNS, local_files_only=True))
    except Exception:  # any miss (not cached, offline, no hub config) means "not here"
        return None


def find_weights(model_dir: Path | None) -> Path | None:
    """A directory with complete weights: ``model_dir`` if given, else the HF cache's. Never downloads."""
    found = model_dir if model_dir is not None else cached_snapshot()
    return found if found is not None and is_complete(found) else None


class DownloadFailed(RuntimeError):
    """The Hub could not be reached or refused; the message is one line."""


def download(to: Path | None = None) -> Path:
    """Fetch the repository into ``to`` (else the HF cache); files already there, whole or partial, are resumed."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id=REPO_ID, local_dir=to, allow_patterns=HF_PATTERNS,
                                      token=os.getenv("HF_TOKEN") or None))
    except Exception as exc:  # offline, DNS, proxy, 401/404, disk full: all are "could not download", said once
        from huggingface_hub import constants

        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0].removeprefix("Got: ")
        raise DownloadFailed(f"cannot download {REPO_ID} from {constants.ENDPOINT}: {reason}") from exc
