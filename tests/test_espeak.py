"""The embedded eSpeak NG engine: real speech, tags unspoken, cancellable, voices from reference clips."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from engine.engines.base import Cancelled, EngineError
from engine.engines.espeak import EspeakEngine, EspeakVoice
from engine.text import strip_tags
from engine.engines.voice_features import estimate_voice_features

TEN_WORDS = "The quick brown fox jumps over the lazy dog again today."


def speak(engine: EspeakEngine, text: str, voice: EspeakVoice | None = None) -> np.ndarray:
    return engine.synthesize(text, voice or engine.default_voice(), threading.Event())


def active_rms_db(wav: np.ndarray) -> float:
    frames = wav[: wav.size // 240 * 240].reshape(-1, 240)
    level = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-20)
    return float(10 * np.log10(np.mean(10 ** (level[level > level.max() - 30] / 10))))


def test_speaks_a_sentence_as_audible_float32_at_24k(espeak_engine: EspeakEngine) -> None:
    wav = speak(espeak_engine, TEN_WORDS)
    assert espeak_engine.sample_rate == 24000
    assert wav.dtype == np.float32 and wav.ndim == 1 and np.isfinite(wav).all()
    assert np.abs(wav).max() <= 1.0
    assert active_rms_db(wav) > -35.0
    seconds = wav.size / 24000
    assert 10 * 0.15 < seconds < 10 * 0.6  # 100-400 words per minute: plausible speech for ten words


def test_longer_text_gives_longer_speech(espeak_engine: EspeakEngine) -> None:
    one = speak(espeak_engine, "Hello there.").size
    three = speak(espeak_engine, "Hello there. Hello there. Hello there.").size
    assert 2.5 * one < three < 4.5 * one  # three times the words, plus the pauses between sentences


def test_tags_are_not_spoken(espeak_engine: EspeakEngine) -> None:
    plain = speak(espeak_engine, "Well, that is funny. I did not expect it.")
    tagged = speak(espeak_engine, "Well, [laugh] that is funny. [sigh] I did not [chuckle] expect it.")
    assert abs(tagged.size - plain.size) < 0.05 * 24000  # "laugh sigh chuckle" read out would add about a second
    assert strip_tags("[laugh] Oh [clear throat]  no.") == "Oh no."


def test_text_of_only_tags_gives_no_audio(espeak_engine: EspeakEngine) -> None:
    assert speak(espeak_engine, " [laugh] [sigh] ").size == 0


def test_cancel_before_start_raises(espeak_engine: EspeakEngine) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        espeak_engine.synthesize(TEN_WORDS, espeak_engine.default_voice(), cancel)


class CancelAfterChecks(threading.Event):
    """A cancel event that becomes set on its ``n``-th check: cancels deterministically mid-synthesis."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n, self.checks = n, 0

    def is_set(self) -> bool:
        self.checks += 1
        if self.checks >= self.n:
            self.set()
        return super().is_set()


def test_cancel_during_synthesis_stops_it_and_the_engine_recovers(espeak_engine: EspeakEngine) -> None:
    long_text = " ".join([TEN_WORDS] * 6)
    full = speak(espeak_engine, long_text)
    cancel = CancelAfterChecks(5)
    with pytest.raises(Cancelled):
        espeak_engine.synthesize(long_text, espeak_engine.default_voice(), cancel)
    blocks = full.size / 24000 / 0.020  # the callback checks cancel once per 20 ms block
    assert cancel.checks < blocks / 4  # it stopped early instead of running to the end
    again = speak(espeak_engine, long_text)  # eSpeak adds a little randomness: equal up to a few samples
    assert abs(again.size - full.size) < 0.01 * full.size


def test_concurrent_calls_do_not_mix_voices(espeak_engine: EspeakEngine) -> None:
    voices = [EspeakVoice("m3", 20, 50, 140), EspeakVoice("f2", 80, 70, 220)]
    alone = [speak(espeak_engine, TEN_WORDS, v) for v in voices]
    pitch = [estimate_voice_features(wav, 24000).median_f0 for wav in alone]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda i: speak(espeak_engine, TEN_WORDS, voices[i % 2]), range(8)))
    for i, wav in enumerate(together):  # each call kept its own voice's rate and pitch, and got all its samples
        assert abs(wav.size - alone[i % 2].size) < 0.01 * wav.size
        assert abs(estimate_voice_features(wav, 24000).median_f0 / pitch[i % 2] - 1) < 0.05


def test_different_reference_voices_give_different_conditionals(espeak_engine: EspeakEngine, tmp_path) -> None:
    passage = " ".join([TEN_WORDS, "Then it ran into the forest, quite pleased with itself, and slept."])
    low_slow = speak(espeak_engine, passage, EspeakVoice("m3", 25, 50, 140))
    high_fast = speak(espeak_engine, passage, EspeakVoice("f2", 75, 50, 230))
    a = espeak_engine.prepare_voice(low_slow, 24000)
    b = espeak_engine.prepare_voice(high_fast, 24000)
    assert (a.variant, b.variant) == ("m3", "f2")
    assert a.rate < b.rate
    # The cloned voices really sound different: their speech differs in pitch as the references did.
    f0_a = estimate_voice_features(speak(espeak_engine, TEN_WORDS, a), 24000).median_f0
    f0_b = estimate_voice_features(speak(espeak_engine, TEN_WORDS, b), 24000).median_f0
    assert f0_b > 1.5 * f0_a
    path = tmp_path / f"voice{espeak_engine.conditionals_suffix}"
    espeak_engine.save_conditionals(b, path)
    assert espeak_engine.load_conditionals(path) == b


def test_reference_without_speech_is_rejected(espeak_engine: EspeakEngine) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(EngineError) as err:
        espeak_engine.prepare_voice(np.zeros(24000 * 5, dtype=np.float32), 24000)
    assert err.value.code == "bad_audio"
    with pytest.raises(EngineError):
        espeak_engine.prepare_voice((0.1 * rng.standard_normal(24000 * 5)).astype(np.float32), 24000)


def test_corrupt_conditionals_file_is_an_engine_error(espeak_engine: EspeakEngine, tmp_path) -> None:
    path = tmp_path / "bad.espeak.json"
    path.write_text('{"pitch": 50, "colour": "blue"}')
    with pytest.raises(EngineError):
        espeak_engine.load_conditionals(path)


def test_sentences_of_every_length_leave_no_ctypes_types_behind(espeak_engine: EspeakEngine) -> None:
    """Texts and eSpeak's audio blocks come in every length; a ctypes array type per length (and its pointer type),
    which ctypes caches for the life of the process, would grow the worker's memory with every new length."""
    import ctypes
    import gc

    kinds = (type(ctypes.c_char * 1), type(ctypes.POINTER(ctypes.c_char)))  # the metaclasses of both

    def ctypes_types() -> int:
        return sum(type(o) in kinds for o in gc.get_objects())

    speak(espeak_engine, TEN_WORDS)
    before = ctypes_types()
    for i in range(30):
        text = f"Caller number {i} asked about order {i * 37 + 11}, shipped on day {i % 28 + 1}."
        speak(espeak_engine, text + "!" * i)
    assert ctypes_types() == before
