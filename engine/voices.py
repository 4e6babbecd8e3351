"""The voice store: predefined and uploaded reference clips in one directory, and their cached conditionals.

Layout of ``root`` (the ``--voices-dir``): one audio file per voice, named ``<name>.<ext>``; beside it the engine's
cached conditionals ``<name><engine.conditionals_suffix>``. Every write goes to a hidden temp file in the same
directory, is fsynced and then renamed over its target, so a crash never leaves half a voice; leftover temp files
are ignored and removed when a store opens the directory. Several stores (engine workers) may share one directory:
a name this store has not indexed is looked up on disk before it is called unknown, and deleting a voice whose
file another store already removed just forgets it.
"""

from __future__ import annotations

import io
import logging
import os
import re
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

import numpy as np
import soundfile as sf
import soxr

from engine.audio_decode import decode_audio
from engine.engines.base import Engine, EngineError
from engine.protocol import SAMPLE_RATE, voice_key

log = logging.getLogger(__name__)

DEFAULT_VOICE = "default"
STORE_RATE = SAMPLE_RATE  # uploads are kept as mono PCM16 wav at the engine protocol's rate
AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a", ".webm")  # preference order for one name
TEMP_PREFIX = ".tmp-"
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_SILENCE_PEAK = 1e-4  # a clip whose loudest sample is below this carries no voice


@dataclass(frozen=True)
class VoiceInfo:
    """What a client sees of a voice. ``duration_s``/``created`` (Unix time) are None for the built-in voice."""

    name: str
    kind: Literal["builtin", "file", "backend"]  # backend: a TTS server's own voice (engine/engines/http.py)
    duration_s: float | None
    created: float | None


@dataclass(frozen=True)
class _Entry:
    path: Path
    info: VoiceInfo


def sanitize_name(raw: str) -> str:
    """Return the stored form of an uploaded voice's name (trimmed, lowercased) or raise ``bad_name``.

    Allowed: 1-64 of ``a-z 0-9 - _``, starting with a letter or digit, and not ``default``. Nothing else passes, so
    ``<root>/<name>.wav`` always stays directly inside ``root``.
    """
    name = voice_key(raw)
    if not _NAME.fullmatch(name):
        raise EngineError(
            f"bad voice name {raw!r}: use 1-64 of a-z, 0-9, '-', '_', starting with a letter or digit", "bad_name"
        )
    if name == DEFAULT_VOICE:
        raise EngineError("'default' is the built-in voice and cannot be replaced", "bad_name")
    return name


class VoiceStore:
    """Thread-safe voice store. One lock guards the index and memory cache (held briefly); a per-voice lock
    serialises work on one voice (computing, adding, deleting) while other voices are read or computed."""

    def __init__(
        self,
        root: Path,
        engine: Engine,
        *,
        max_upload_bytes: int = 10 * 1024 * 1024,
        min_seconds: float = 5.0,
        max_seconds: float = 30.0,
    ) -> None:
        self._root = Path(root)
        self._engine = engine
        self._max_upload_bytes = max_upload_bytes
        self._min_seconds = min_seconds
        self._max_seconds = max_seconds
        self._lock = threading.Lock()
        self._voice_locks: dict[str, threading.Lock] = {}
        self._root.mkdir(parents=True, exist_ok=True)
        _remove_temp_files(self._root)
        self._entries = self._scan()
        self._memory: dict[str, Any] = {DEFAULT_VOICE: engine.default_voice()}

    def rebind(self, engine: Engine, move: Callable[[Any], Any]) -> None:
        """Serve ``engine`` from now on (the model was unloaded or loaded again: engine/residency.py), each voice's
        conditionals in memory passed through ``move`` (to the host while unloaded, back to the device after)."""
        with self._lock:
            self._engine = engine
            self._memory = {name: move(conds) for name, conds in self._memory.items()}

    def list(self) -> list[VoiceInfo]:
        """Every voice, the built-in one included, sorted by name."""
        with self._lock:
            infos = [e.info for e in self._entries.values()]
        infos.append(VoiceInfo(DEFAULT_VOICE, "builtin", None, None))
        files = {info.name for info in infos}
        infos += [VoiceInfo(voice.id, "backend", None, None) for key, voice in self._engine.named_voices().items()
                  if key not in files]
        return sorted(infos, key=lambda info: info.name)

    def conditionals(self, name: str) -> Any:
        """The voice's conditionals: from memory, else the disk cache, else computed (and then cached on disk)."""
        name = voice_key(name)
        with self._lock:
            if name in self._memory:
                return self._memory[name]
            indexed = name in self._entries
        if not indexed and self._file_on_disk(name) is None and name in (named := self._engine.named_voices()):
            with self._lock:
                self._memory[name] = named[name]  # a voice the engine's server knows by this name
            return named[name]
        with self._locked_entry(name) as entry:
            with self._lock:
                if name in self._memory:  # computed while we waited
                    return self._memory[name]
            conds = self._load_cached(entry.path)
            if conds is None:
                conds = self._prepare(self._read(name, entry))
                self._save_cached(entry.path, conds)
            with self._lock:
                self._memory[name] = conds
            return conds

    def audio(self, name: str) -> bytes:
        """A stored voice's audio file as kept (an upload's 24 kHz WAV, or a file put in the directory), which
        ``add`` takes again: ``unknown_voice`` for the built-in voice and a TTS server's own, ``too_large`` for a file
        past the upload limit."""
        name = voice_key(name)
        with self._locked_entry(name) as entry:
            data = self._read(name, entry)
        if len(data) > self._max_upload_bytes:
            raise EngineError(f"the voice file is larger than {self._max_upload_bytes} bytes", "too_large")
        return data

    def add(self, name: str, data: bytes) -> VoiceInfo:
        """Validate an uploaded clip, store it as a 24 kHz mono PCM16 wav and cache its conditionals."""
        name = sanitize_name(name)
        if len(data) > self._max_upload_bytes:
            raise EngineError(f"the upload is larger than {self._max_upload_bytes} bytes", "too_large")
        with self._lock:
            voice_lock = self._voice_lock(name)
        with voice_lock:
            path = self._root / f"{name}.wav"
            with self._lock:
                taken = name in self._entries
            if taken or path.exists():
                raise EngineError(f"a voice named {name!r} already exists", "exists")
            wav, seconds = self._normalised_wav(data)
            conds = self._prepare(wav)
            _atomic_write(path, lambda tmp: tmp.write_bytes(wav))
            self._save_cached(path, conds)
            entry = _Entry(path, self._file_info(name, path, seconds))
            with self._lock:
                self._entries[name] = entry
                self._memory[name] = conds
            return entry.info

    def delete(self, name: str) -> None:
        """Remove a voice's cached conditionals, then its audio file."""
        name = voice_key(name)
        if name == DEFAULT_VOICE:
            raise EngineError("the built-in voice cannot be deleted", "bad_name")
        with self._locked_entry(name) as entry:
            self._cache_path(entry.path).unlink(missing_ok=True)
            entry.path.unlink(missing_ok=True)
            with self._lock:
                del self._entries[name]
                self._memory.pop(name, None)

    @contextmanager
    def _locked_entry(self, name: str) -> Iterator[_Entry]:
        """Hold the voice's own lock and yield its entry; ``unknown_voice`` if there is none (or it just went).

        A name not in the index is looked for on disk (another store sharing the directory may have added it)."""
        with self._lock:
            voice_lock = self._voice_lock(name) if name in self._entries else None
        if voice_lock is None and self._file_on_disk(name) is not None:
            with self._lock:
                voice_lock = self._voice_lock(name)
        if voice_lock is None:
            raise EngineError(f"unknown voice {name!r}", "unknown_voice")
        with voice_lock:
            with self._lock:
                entry = self._entries.get(name)
            if entry is None:
                entry = self._index_from_disk(name)
            if entry is None:  # deleted while we waited for the lock
                raise EngineError(f"unknown voice {name!r}", "unknown_voice")
            yield entry

    def _read(self, name: str, entry: _Entry) -> bytes:
        """The voice's audio file (call with its lock held); ``unknown_voice`` if another store sharing the directory
        deleted it."""
        try:
            return entry.path.read_bytes()
        except FileNotFoundError:
            with self._lock:
                self._entries.pop(name, None)
            raise EngineError(f"unknown voice {name!r}", "unknown_voice") from None

    def _file_on_disk(self, name: str) -> Path | None:
        """The audio file ``<name>.<suffix>`` in ``root`` (first in AUDIO_SUFFIXES order), for a valid name only."""
        if name == DEFAULT_VOICE or not _NAME.fullmatch(name):
            return None
        for suffix in AUDIO_SUFFIXES:
            path = self._root / f"{name}{suffix}"
            if path.is_file():
                return path
        return None

    def _index_from_disk(self, name: str) -> _Entry | None:
        """Index a voice file another store added to the shared directory (call with the voice's lock held)."""
        path = self._file_on_disk(name)
        if path is None:
            return None
        try:
            samples, rate = decode_audio(path.read_bytes())
            entry = _Entry(path, self._file_info(name, path, samples.size / rate))
        except (EngineError, OSError) as exc:
            log.warning("voice file %s ignored: %s", path, exc)
            return None
        with self._lock:
            self._entries[name] = entry
        return entry

    def _voice_lock(self, name: str) -> threading.Lock:
        """The lock for one voice name (call with ``self._lock`` held)."""
        return self._voice_locks.setdefault(name, threading.Lock())

    def _scan(self) -> dict[str, _Entry]:
        """Index the audio files in ``root``; undecodable ones are skipped (and kept on disk), with a warning."""
        entries: dict[str, _Entry] = {}
        rank = {suffix: i for i, suffix in enumerate(AUDIO_SUFFIXES)}
        paths = [
            p for p in self._root.iterdir() if p.suffix.lower() in rank and not p.name.startswith(".") and p.is_file()
        ]
        for path in sorted(paths, key=lambda p: (p.stem, rank[p.suffix.lower()])):
            name = voice_key(path.stem)
            if name == DEFAULT_VOICE or name in entries:
                log.warning("voice file %s ignored: the name %r is taken", path, name)
                continue
            try:
                samples, rate = decode_audio(path.read_bytes())
            except (EngineError, OSError) as exc:
                log.warning("voice file %s ignored: %s", path, exc)
                continue
            entries[name] = _Entry(path, self._file_info(name, path, samples.size / rate))
        return entries

    def _file_info(self, name: str, path: Path, seconds: float) -> VoiceInfo:
        return VoiceInfo(name, "file", round(seconds, 3), path.stat().st_mtime)

    def _normalised_wav(self, data: bytes) -> tuple[bytes, float]:
        """Check an upload's audio; return it as 24 kHz mono PCM16 wav bytes, and its duration in seconds."""
        samples, rate = decode_audio(data, max_seconds=self._max_seconds)  # raises too_long
        seconds = samples.size / rate
        if seconds < self._min_seconds:
            raise EngineError(f"the clip is {seconds:.2f} s; at least {self._min_seconds:g} s needed", "too_short")
        if float(np.abs(samples).max()) < _SILENCE_PEAK:
            raise EngineError("the clip is silent", "bad_audio")
        if rate != STORE_RATE:
            samples = soxr.resample(samples, rate, STORE_RATE, quality="HQ")
        out = io.BytesIO()
        sf.write(out, np.clip(samples, -1.0, 1.0), STORE_RATE, format="WAV", subtype="PCM_16")
        return out.getvalue(), seconds

    def _prepare(self, audio_file: bytes) -> Any:
        """Compute conditionals from an audio file's bytes: the same path for uploads and for stored files."""
        samples, rate = decode_audio(audio_file)
        return self._engine.prepare_voice(samples, rate)

    def _cache_path(self, audio_path: Path) -> Path:
        return audio_path.with_name(audio_path.stem + self._engine.conditionals_suffix)

    def _load_cached(self, audio_path: Path) -> Any | None:
        """Conditionals from the disk cache, or None when absent, older than the audio file, or unreadable."""
        cache = self._cache_path(audio_path)
        try:
            if cache.stat().st_mtime_ns < audio_path.stat().st_mtime_ns:
                return None
        except FileNotFoundError:
            return None
        try:
            return self._engine.load_conditionals(cache)
        except Exception as exc:  # any failure to read a cache means: compute again
            log.warning("cached conditionals %s unreadable (%s); computing them again", cache, exc)
            return None

    def _save_cached(self, audio_path: Path, conds: Any) -> None:
        """Write the disk cache; a failure only costs a recomputation after the next restart."""
        cache = self._cache_path(audio_path)
        try:
            _atomic_write(cache, lambda tmp: self._engine.save_conditionals(conds, tmp))
        except Exception as exc:
            log.warning("could not cache conditionals at %s: %s", cache, exc)


def _atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Have ``write`` fill a temp file beside ``path``, fsync it, rename it over ``path`` and fsync the directory.

    If anything fails, the temp file is removed and ``path`` is untouched.
    """
    fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        with tmp.open("rb+") as f:
            os.fsync(f.fileno())
        tmp.chmod(0o644)  # mkstemp creates 0600; stored voices are ordinary readable files
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_temp_files(root: Path) -> None:
    """Delete temp files a crashed writer left behind."""
    for leftover in filter(Path.is_file, root.glob(TEMP_PREFIX + "*")):
        log.info("removing leftover temp file %s", leftover)
        leftover.unlink(missing_ok=True)
