"""The embedded default voice: eSpeak NG, driven through ctypes.

eSpeak NG is GPL-3.0-or-later. This project does not link or bundle it: the shared library and its voice data come
from the separately installed ``espeakng-loader`` wheel and are loaded with ``ctypes`` at run time, only when this
engine is chosen. Nothing is downloaded. It sounds robotic and cannot clone; a reference clip only steers its pitch,
pitch range, speaking rate and male/female variant, so different uploaded voices still sound different.
"""

from __future__ import annotations

import ctypes
import json
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import soxr

from engine.engines.base import Cancelled, Engine, EngineError, EngineInfo
from engine.protocol import SAMPLE_RATE
from engine.text import strip_tags

ESPEAK_RATE = 22050  # eSpeak NG's native output rate
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000  # report errors instead of calling exit()
_CHARS_UTF8 = 1
_POS_CHARACTER = 1
_PARAM_RATE, _PARAM_PITCH, _PARAM_RANGE = 1, 3, 4
_BLOCK_MS = 20  # length of each callback block: the cancel check granularity

# A voice's median pitch below this (Hz) picks the male variant, above it the female one.
_GENDER_SPLIT_HZ = 165.0
# Measured on eSpeak itself (so a clip of eSpeak maps back to its own settings): the median pitch of each variant at
# pitch 50, the inter-quartile pitch spread at range 50, and the syllable rate at 175 words per minute.
_VARIANT_BASE_HZ = {"m3": 104.0, "f2": 193.0}
_BASE_SPREAD_SEMITONES = 2.7
_BASE_SYLLABLES_PER_SECOND = 4.0
_BASE_RATE_WPM = 175

_EVENT_LIST_TERMINATED, _EVENT_WORD = 0, 1


class _Event(ctypes.Structure):
    """eSpeak NG's ``espeak_EVENT`` (speak_lib.h): the callback gets an array of them ending in LIST_TERMINATED."""

    _fields_ = [("type", ctypes.c_int), ("unique_identifier", ctypes.c_uint), ("text_position", ctypes.c_int),
                ("length", ctypes.c_int), ("audio_position", ctypes.c_int), ("sample", ctypes.c_int),
                ("user_data", ctypes.c_void_p), ("id", ctypes.c_char * 8)]


_SynthCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int,
                                  ctypes.POINTER(_Event))


@dataclass(frozen=True)
class EspeakVoice:
    """The conditionals of this engine: eSpeak voice settings derived from a reference clip."""

    variant: str | None = None  # eSpeak voice variant ("m3", "f2"); None is plain en-us
    pitch: int = 50  # eSpeak pitch parameter, 0-100
    pitch_range: int = 50  # eSpeak intonation range, 0-100
    rate: int = 175  # words per minute, 80-450

    @property
    def voice_name(self) -> str:
        return "en-us" if self.variant is None else f"en-us+{self.variant}"


class _Library:
    """The process-wide eSpeak NG library. Its state is global, so every use holds ``lock``."""

    _instance: _Library | None = None
    _create_lock = threading.Lock()

    def __init__(self) -> None:
        try:
            import espeakng_loader
        except ImportError as exc:  # an optional, separately installed GPL component
            raise EngineError(
                "the espeak engine needs the espeakng-loader package (GPL-3.0 eSpeak NG): pip install espeakng-loader",
                "engine_unavailable",
            ) from exc
        self.lock = threading.Lock()
        self._lib = ctypes.CDLL(espeakng_loader.get_library_path())
        self._lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        self._lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        self._lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self._lib.espeak_SetSynthCallback.argtypes = [_SynthCallback]
        self._lib.espeak_Synth.argtypes = [
            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint, ctypes.c_uint,
            ctypes.POINTER(ctypes.c_uint), ctypes.c_void_p,
        ]
        data = espeakng_loader.get_data_path().encode()
        rate = self._lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, _BLOCK_MS, data, _INITIALIZE_DONT_EXIT)
        if rate != ESPEAK_RATE:
            raise EngineError(f"eSpeak NG failed to initialise (returned {rate})", "engine_unavailable")
        # One callback for the life of the process; it appends to whatever buffer the current call installed.
        self._blocks: list[np.ndarray] = []
        self._words: list[tuple[int, float]] = []  # (character index, seconds) of each word the current call spoke
        self._cancel: threading.Event | None = None
        self._callback = _SynthCallback(self._on_samples)
        self._lib.espeak_SetSynthCallback(self._callback)

    @classmethod
    def get(cls) -> _Library:
        with cls._create_lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def _on_samples(self, wav: ctypes.POINTER(ctypes.c_short), count: int, events: ctypes.POINTER(_Event)) -> int:
        if wav and count > 0:  # copied as bytes: np.ctypeslib.as_array would make a ctypes type per block length,
            # which ctypes caches for the life of the process (the worker's memory grew with every new length)
            self._blocks.append(np.frombuffer(ctypes.string_at(wav, count * 2), dtype=np.int16))
        i = 0
        while events and events[i].type != _EVENT_LIST_TERMINATED:
            if events[i].type == _EVENT_WORD:  # text_position counts characters from 1; sample is the output's
                self._words.append((events[i].text_position - 1, events[i].sample / ESPEAK_RATE))
            i += 1
        return 1 if self._cancel is not None and self._cancel.is_set() else 0  # non-zero aborts synthesis

    def synthesize(self, text: str, voice: EspeakVoice,
                   cancel: threading.Event) -> tuple[np.ndarray, list[tuple[int, float]]]:
        """int16 samples at 22050 Hz and where each word starts ``(character index, seconds)``; raises ``Cancelled``
        if ``cancel`` is set before or during synthesis."""
        encoded = text.encode("utf-8") + b"\0"
        with self.lock:
            if cancel.is_set():
                raise Cancelled()
            if self._lib.espeak_SetVoiceByName(voice.voice_name.encode()) != 0:
                raise EngineError(f"eSpeak NG has no voice {voice.voice_name!r}")
            self._lib.espeak_SetParameter(_PARAM_RATE, voice.rate, 0)
            self._lib.espeak_SetParameter(_PARAM_PITCH, voice.pitch, 0)
            self._lib.espeak_SetParameter(_PARAM_RANGE, voice.pitch_range, 0)
            self._blocks, self._words, self._cancel = [], [], cancel
            try:
                # The bytes themselves (eSpeak only reads them): create_string_buffer would make, and ctypes keep for
                # good, an array type per text length.
                err = self._lib.espeak_Synth(encoded, len(encoded), 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
                blocks, words = self._blocks, self._words
            finally:
                self._blocks, self._words, self._cancel = [], [], None
        if cancel.is_set():
            raise Cancelled()
        if err != 0:
            raise EngineError(f"eSpeak NG synthesis failed (error {err})")
        return (np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int16)), words


class EspeakEngine(Engine):
    sample_rate = SAMPLE_RATE
    info = EngineInfo("espeak", "cpu", "int16", "embedded (eSpeak NG, GPL-3.0, loaded at run time)")
    conditionals_suffix = ".espeak.json"

    def __init__(self) -> None:
        self._lib = _Library.get()

    def warmup(self) -> None:
        self.synthesize("Warming up.", self.default_voice(), threading.Event())

    def default_voice(self) -> EspeakVoice:
        return EspeakVoice()

    def prepare_voice(self, wav: np.ndarray, sample_rate: int) -> EspeakVoice:
        from engine.engines.voice_features import (
            estimate_voice_features,  # librosa import is slow: only when used
        )

        features = estimate_voice_features(wav, sample_rate)
        variant = "m3" if features.median_f0 < _GENDER_SPLIT_HZ else "f2"
        # One octave away from the variant's own pitch moves the parameter by 50.
        pitch = 50 + 50 * np.log2(features.median_f0 / _VARIANT_BASE_HZ[variant])
        pitch_range = 50 * features.f0_spread_semitones / _BASE_SPREAD_SEMITONES
        rate = _BASE_RATE_WPM * features.syllables_per_second / _BASE_SYLLABLES_PER_SECOND
        return EspeakVoice(
            variant=variant,
            pitch=int(np.clip(round(pitch), 0, 100)),
            pitch_range=int(np.clip(round(pitch_range), 10, 100)),
            rate=int(np.clip(round(rate), 120, 260)),
        )

    def save_conditionals(self, conds: EspeakVoice, path: Path) -> None:
        path.write_text(json.dumps(asdict(conds)))

    def load_conditionals(self, path: Path) -> EspeakVoice:
        try:
            return EspeakVoice(**json.loads(path.read_text()))
        except (ValueError, TypeError) as exc:
            raise EngineError(f"bad eSpeak conditionals in {path}: {exc}", "bad_conditionals") from exc

    def synthesize(self, text: str, voice: EspeakVoice, cancel: threading.Event) -> np.ndarray:
        return self.synthesize_timed(text, voice, cancel)[0]

    def synthesize_timed(self, text: str, voice: EspeakVoice,
                         cancel: threading.Event) -> tuple[np.ndarray, list[tuple[int, float]] | None]:
        spoken = strip_tags(text)
        if cancel.is_set():
            raise Cancelled()
        if not spoken:
            return np.zeros(0, dtype=np.float32), None
        pcm, words = self._lib.synthesize(spoken, voice, cancel)
        wav = pcm.astype(np.float32) / 32768.0
        return soxr.resample(wav, ESPEAK_RATE, self.sample_rate).astype(np.float32, copy=False), words
