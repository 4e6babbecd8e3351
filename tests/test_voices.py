"""The voice store against real audio files and a fake engine that stands in for the model."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
import soundfile as sf
from hypothesis import given
from hypothesis import strategies as st

from engine.engines.base import Engine, EngineError, EngineInfo
from engine.voices import TEMP_PREFIX, VoiceInfo, VoiceStore, sanitize_name

F0 = 140.0  # fundamental of the synthetic voice, in Hz


class FakeEngine(Engine):
    """Stands in for the model (no torch, no weights): its "conditionals" are a deterministic vector measured from
    the reference audio (dominant frequency, RMS, duration), and it counts how often it had to compute them."""

    sample_rate = 24000
    info = EngineInfo("fake", "cpu", "float32", "none (test stand-in)")
    conditionals_suffix = ".fake.cond"
    _MAGIC = b"FAKECOND"

    def __init__(self) -> None:
        self.prepare_calls = 0
        self.fail_saves = False  # when set, save_conditionals writes half its file and then raises
        self.reject: EngineError | None = None  # when set, prepare_voice raises it
        self.gate: threading.Event | None = None  # when set, prepare_voice waits for it (after setting `entered`)
        self.entered = threading.Event()
        self._count_lock = threading.Lock()

    def warmup(self) -> None:
        """Nothing to warm."""

    def default_voice(self) -> np.ndarray:
        return np.zeros(3)

    def prepare_voice(self, wav: np.ndarray, sample_rate: int) -> np.ndarray:
        with self._count_lock:
            self.prepare_calls += 1
        self.entered.set()
        if self.gate is not None:
            self.gate.wait()
        if self.reject is not None:
            raise self.reject
        assert wav.dtype == np.float32 and wav.ndim == 1
        spectrum = np.abs(np.fft.rfft(wav))
        dominant_hz = float(np.argmax(spectrum)) * sample_rate / wav.size
        return np.array([dominant_hz, float(np.sqrt(np.mean(wav**2))), wav.size / sample_rate])

    def save_conditionals(self, conds: Any, path: Path) -> None:
        payload = self._MAGIC + np.asarray(conds, dtype="<f8").tobytes()
        if self.fail_saves:
            path.write_bytes(payload[: len(payload) // 2])
            raise OSError("simulated crash half-way through writing conditionals")
        path.write_bytes(payload)

    def load_conditionals(self, path: Path) -> np.ndarray:
        raw = path.read_bytes()
        if not raw.startswith(self._MAGIC) or len(raw) != len(self._MAGIC) + 3 * 8:
            raise ValueError(f"{path} is not a conditionals file")
        return np.frombuffer(raw[len(self._MAGIC) :], dtype="<f8").copy()

    def synthesize(self, text: str, voice: Any, cancel: threading.Event) -> np.ndarray:
        return np.zeros(self.sample_rate // 10, dtype=np.float32)


def speechlike(seconds: float, rate: int = 24000, f0: float = F0, channels: int = 1) -> np.ndarray:
    """A voiced, speech-like signal: decaying harmonics of ``f0`` with slight vibrato, syllable-rate loudness."""
    t = np.arange(int(seconds * rate)) / rate
    phase = 2 * np.pi * f0 * t + 0.5 * np.sin(2 * np.pi * 5 * t)
    tone = sum(np.sin(k * phase) / k for k in range(1, 9))
    envelope = 0.55 + 0.45 * np.sin(2 * np.pi * 4 * t)
    mono = (0.3 * tone * envelope / np.max(np.abs(tone))).astype(np.float32)
    return mono if channels == 1 else np.stack([mono] * channels, axis=1)


def wav_bytes(samples: np.ndarray, rate: int, subtype: str = "PCM_16") -> bytes:
    out = io.BytesIO()
    sf.write(out, samples, rate, format="WAV", subtype=subtype)
    return out.getvalue()


def encode(samples: np.ndarray, rate: int, codec: str, container: str) -> bytes:
    """Encode mono float samples with PyAV, as a browser or phone would send them."""
    out = io.BytesIO()
    with av.open(out, "w", format=container) as c:
        stream = c.add_stream(codec, rate=48000 if "opus" in codec else rate)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(samples[np.newaxis, :], format="fltp", layout="mono")
        frame.sample_rate = rate
        resampler = av.AudioResampler(format=stream.codec_context.format.name, layout="mono", rate=stream.rate)
        for resampled in [*resampler.resample(frame), *resampler.resample(None), None]:
            for packet in stream.encode(resampled):
                c.mux(packet)
    return out.getvalue()


def visible_files(root: Path) -> set[str]:
    return {p.name for p in root.iterdir() if not p.name.startswith(".")}


def temp_files(root: Path) -> list[Path]:
    return list(root.glob(TEMP_PREFIX + "*"))


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "voices"


@pytest.fixture
def clip() -> bytes:
    return wav_bytes(speechlike(6.0, 16000, channels=2), 16000)


def test_empty_directory_has_only_the_builtin_voice(root: Path, engine: FakeEngine) -> None:
    store = VoiceStore(root, engine)
    assert store.list() == [VoiceInfo("default", "builtin", None, None)]
    assert np.array_equal(store.conditionals("default"), np.zeros(3))
    assert engine.prepare_calls == 0


def test_predefined_files_are_listed_by_stem(root: Path, engine: FakeEngine) -> None:
    root.mkdir()
    (root / "alice.wav").write_bytes(wav_bytes(speechlike(6.0, 22050), 22050))
    (root / "bob.mp3").write_bytes(encode(speechlike(8.0, 44100), 44100, "libmp3lame", "mp3"))
    (root / "notes.txt").write_text("not a voice")
    (root / ".hidden.wav").write_bytes(wav_bytes(speechlike(6.0, 16000), 16000))
    voices = {v.name: v for v in VoiceStore(root, engine).list()}
    assert sorted(voices) == ["alice", "bob", "default"]
    assert voices["alice"].kind == "file" and voices["alice"].duration_s == pytest.approx(6.0, abs=0.01)
    assert voices["bob"].duration_s == pytest.approx(8.0, abs=0.1)
    assert voices["alice"].created == pytest.approx((root / "alice.wav").stat().st_mtime)


def test_undecodable_predefined_file_is_skipped_but_kept(root: Path, engine: FakeEngine) -> None:
    root.mkdir()
    (root / "broken.wav").write_bytes(b"RIFF" + bytes(40))
    assert [v.name for v in VoiceStore(root, engine).list()] == ["default"]
    assert (root / "broken.wav").exists()


def test_add_stores_normalised_wav_and_cached_conditionals(root: Path, engine: FakeEngine, clip: bytes) -> None:
    store = VoiceStore(root, engine)
    info = store.add("  Carol_2 ", clip)
    assert (info.name, info.kind) == ("carol_2", "file")
    assert info.duration_s == pytest.approx(6.0, abs=0.01)
    assert visible_files(root) == {"carol_2.wav", "carol_2.fake.cond"}
    stored = sf.info(str(root / "carol_2.wav"))
    assert (stored.samplerate, stored.channels, stored.subtype) == (24000, 1, "PCM_16")
    assert store.list() == sorted([info, VoiceInfo("default", "builtin", None, None)], key=lambda v: v.name)
    conds = store.conditionals("carol_2")
    assert conds[0] == pytest.approx(F0, abs=3) and conds[2] == pytest.approx(6.0, abs=0.01)
    assert engine.prepare_calls == 1


@pytest.mark.parametrize(
    ("codec", "container"),
    [("libopus", "ogg"), ("libopus", "webm"), ("libmp3lame", "mp3"), ("aac", "ipod"), ("flac", "flac")],
)
def test_add_decodes_browser_and_phone_formats(
    root: Path, engine: FakeEngine, codec: str, container: str
) -> None:
    data = encode(speechlike(7.0, 44100), 44100, codec, container)
    info = VoiceStore(root, engine).add("clip", data)
    assert info.duration_s == pytest.approx(7.0, abs=0.1)
    samples, rate = sf.read(str(root / "clip.wav"), dtype="float32")
    assert rate == 24000
    dominant = np.argmax(np.abs(np.fft.rfft(samples))) * rate / samples.size
    assert dominant == pytest.approx(F0, abs=3)


def test_delete_removes_audio_and_cache(root: Path, engine: FakeEngine, clip: bytes) -> None:
    store = VoiceStore(root, engine)
    store.add("dave", clip)
    store.add("erin", clip)
    store.delete("dave")
    assert visible_files(root) == {"erin.wav", "erin.fake.cond"}
    assert [v.name for v in store.list()] == ["default", "erin"]
    with pytest.raises(EngineError) as err:
        store.conditionals("dave")
    assert err.value.code == "unknown_voice"
    assert [v.name for v in VoiceStore(root, FakeEngine()).list()] == ["default", "erin"]


@pytest.mark.parametrize(("name", "code"), [("default", "bad_name"), ("ghost", "unknown_voice")])
def test_delete_refusals(root: Path, engine: FakeEngine, name: str, code: str) -> None:
    with pytest.raises(EngineError) as err:
        VoiceStore(root, engine).delete(name)
    assert err.value.code == code


def test_unknown_voice(root: Path, engine: FakeEngine) -> None:
    with pytest.raises(EngineError) as err:
        VoiceStore(root, engine).conditionals("nobody")
    assert err.value.code == "unknown_voice"


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"", "bad_audio"),
        (b"this is not audio at all" * 20, "bad_audio"),
        (wav_bytes(np.zeros(8000 * 6, dtype=np.float32), 8000), "bad_audio"),  # silence
        (wav_bytes(speechlike(3.0, 8000), 8000), "too_short"),
        (wav_bytes(speechlike(31.0, 8000), 8000), "too_long"),
        (bytes(10 * 1024 * 1024 + 1), "too_large"),
    ],
    ids=["empty", "garbage", "silent", "too_short", "too_long", "too_large"],
)
def test_bad_uploads_are_refused_and_leave_nothing(root: Path, engine: FakeEngine, data: bytes, code: str) -> None:
    store = VoiceStore(root, engine)
    with pytest.raises(EngineError) as err:
        store.add("frank", data)
    assert err.value.code == code
    assert visible_files(root) == set() and temp_files(root) == []
    assert [v.name for v in store.list()] == ["default"] and engine.prepare_calls == 0


def test_existing_names_are_refused(root: Path, engine: FakeEngine, clip: bytes) -> None:
    root.mkdir()
    (root / "gina.mp3").write_bytes(encode(speechlike(6.0, 24000), 24000, "libmp3lame", "mp3"))
    store = VoiceStore(root, engine)
    store.add("hank", clip)
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    for name in ("gina", "hank", "HANK"):
        with pytest.raises(EngineError) as err:
            store.add(name, clip)
        assert err.value.code == "exists"
    assert {p.name: p.read_bytes() for p in root.iterdir()} == before


def test_engine_refusal_leaves_no_voice(root: Path, engine: FakeEngine, clip: bytes) -> None:
    engine.reject = EngineError("the model cannot use this clip", "bad_audio")
    store = VoiceStore(root, engine)
    with pytest.raises(EngineError):
        store.add("ivy", clip)
    assert visible_files(root) == set() and [v.name for v in store.list()] == ["default"]


@pytest.mark.parametrize(
    "name",
    ["../x", "/abs", ".hidden", "default", " Default ", "", "a" * 65, "a/b", "a\\b", "x\x00", "é", "-x", "a b", ".."],
)
def test_bad_names_are_refused(root: Path, engine: FakeEngine, clip: bytes, name: str) -> None:
    with pytest.raises(EngineError) as err:
        VoiceStore(root, engine).add(name, clip)
    assert err.value.code == "bad_name"
    assert visible_files(root) == set()


def test_path_tricks_cannot_reach_files_outside_root(root: Path, engine: FakeEngine) -> None:
    outside = root.parent / "outside.wav"
    outside.write_bytes(wav_bytes(speechlike(6.0, 16000), 16000))
    store = VoiceStore(root, engine)
    for name in ("../outside", str(outside.with_suffix(""))):
        for call in (store.conditionals, store.delete):
            with pytest.raises(EngineError) as err:
                call(name)
            assert err.value.code == "unknown_voice"
    assert outside.exists()


@given(st.one_of(st.text(), st.text(alphabet="aZ09._-/\\ ~\x00é")))
def test_sanitised_names_stay_inside_the_root(raw: str) -> None:
    root = Path("/srv/voices")
    try:
        name = sanitize_name(raw)
    except EngineError as err:
        assert err.code == "bad_name"
        return
    target = Path(os.path.normpath(root / f"{name}.wav"))
    assert target.parent == root and not target.name.startswith(".")
    assert name != "default" and 1 <= len(name) <= 64


def test_conditionals_are_computed_once_and_survive_a_restart(root: Path, engine: FakeEngine, clip: bytes) -> None:
    root.mkdir()
    (root / "jane.wav").write_bytes(clip)
    store = VoiceStore(root, engine)
    store.add("kate", clip)
    jane = store.conditionals("jane")
    store.conditionals("jane")
    assert engine.prepare_calls == 2  # kate at upload, jane once
    restarted = FakeEngine()
    store2 = VoiceStore(root, restarted)
    assert np.array_equal(store2.conditionals("jane"), jane)
    assert store2.conditionals("kate")[0] == pytest.approx(F0, abs=3)
    assert restarted.prepare_calls == 0


def test_concurrent_requests_compute_a_voice_once(root: Path, engine: FakeEngine, clip: bytes) -> None:
    root.mkdir()
    for name in ("lea", "max"):
        (root / f"{name}.wav").write_bytes(clip)
    store = VoiceStore(root, engine)
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda n=n: results.append(store.conditionals(n))) for n in ["lea", "max"] * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and engine.prepare_calls == 2


def test_delete_waits_for_a_computation_in_flight(root: Path, engine: FakeEngine, clip: bytes) -> None:
    root.mkdir()
    (root / "sam.wav").write_bytes(clip)
    store = VoiceStore(root, engine)
    engine.gate = threading.Event()
    computing = threading.Thread(target=store.conditionals, args=("sam",))
    computing.start()
    engine.entered.wait()
    deleting = threading.Thread(target=store.delete, args=("sam",))
    deleting.start()
    deleting.join(0.2)  # a store without per-voice locks would delete now, and the cache written next would be orphaned
    engine.gate.set()
    computing.join()
    deleting.join()
    assert visible_files(root) == set()
    with pytest.raises(EngineError):
        store.conditionals("sam")


def test_corrupt_cache_is_recomputed(root: Path, engine: FakeEngine, clip: bytes) -> None:
    VoiceStore(root, engine).add("nora", clip)
    (root / "nora.fake.cond").write_bytes(b"\x00garbage")
    again = FakeEngine()
    assert VoiceStore(root, again).conditionals("nora")[0] == pytest.approx(F0, abs=3)
    assert again.prepare_calls == 1
    third = FakeEngine()
    VoiceStore(root, third).conditionals("nora")
    assert third.prepare_calls == 0  # the recomputed cache was written back


def test_cache_older_than_its_audio_is_recomputed(root: Path, engine: FakeEngine) -> None:
    root.mkdir()
    voice = root / "otto.wav"
    voice.write_bytes(wav_bytes(speechlike(6.0, 16000, f0=140.0), 16000))
    assert VoiceStore(root, engine).conditionals("otto")[0] == pytest.approx(140.0, abs=3)
    voice.write_bytes(wav_bytes(speechlike(6.0, 16000, f0=220.0), 16000))  # the operator replaces the recording
    cache = root / "otto.fake.cond"
    os.utime(cache, ns=(voice.stat().st_mtime_ns - 10**9,) * 2)
    assert VoiceStore(root, FakeEngine()).conditionals("otto")[0] == pytest.approx(220.0, abs=3)


def test_interrupted_cache_write_keeps_the_old_file(root: Path, engine: FakeEngine, clip: bytes) -> None:
    VoiceStore(root, engine).add("pia", clip)
    cache = root / "pia.fake.cond"
    cache.write_bytes(b"old, unreadable")
    crashing = FakeEngine()
    crashing.fail_saves = True
    assert VoiceStore(root, crashing).conditionals("pia")[0] == pytest.approx(F0, abs=3)  # still served
    assert cache.read_bytes() == b"old, unreadable"  # never half a file at the real path
    assert temp_files(root) == []


def test_interrupted_upload_leaves_the_previous_state(
    root: Path, engine: FakeEngine, clip: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = VoiceStore(root, engine)
    store.add("quin", clip)
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    listed = store.list()

    def crash(fd: int) -> None:
        raise OSError("simulated crash before the data reached the disk")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError):
        store.add("rita", clip)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in root.iterdir()} == before
    assert store.list() == listed
    assert VoiceStore(root, FakeEngine()).list() == listed


def test_leftover_temp_files_are_ignored_and_removed(root: Path, engine: FakeEngine, clip: bytes) -> None:
    root.mkdir()
    (root / f"{TEMP_PREFIX}crashed").write_bytes(clip[: len(clip) // 2])  # what a killed writer leaves
    (root / f"{TEMP_PREFIX}other.wav").write_bytes(clip)
    (root / ".keep").write_text("someone else's hidden file")
    store = VoiceStore(root, engine)
    assert [v.name for v in store.list()] == ["default"]
    assert temp_files(root) == [] and (root / ".keep").exists()


def test_stores_sharing_a_directory_find_each_others_voices(root: Path, clip: bytes) -> None:
    first, second = VoiceStore(root, FakeEngine()), VoiceStore(root, FakeEngine())
    first.add("gina", clip)
    with pytest.raises(EngineError) as err:
        second.add("gina", clip)
    assert err.value.code == "exists"
    assert np.array_equal(second.conditionals("gina"), first.conditionals("gina"))
    assert [v.name for v in second.list()] == ["default", "gina"]  # indexed once found on disk
    first.delete("gina")
    second.delete("gina")  # its file is already gone: the second store just forgets it
    assert [v.name for v in second.list()] == ["default"]
    assert visible_files(root) == set()
    for store in (first, second):
        with pytest.raises(EngineError) as err:
            store.conditionals("gina")
        assert err.value.code == "unknown_voice"


def test_a_voice_deleted_by_a_sharing_store_is_unknown_before_it_is_used(root: Path, clip: bytes) -> None:
    first = VoiceStore(root, FakeEngine())
    first.add("hank", clip)
    second = VoiceStore(root, FakeEngine())  # indexes hank at start, has not computed it yet
    first.delete("hank")
    with pytest.raises(EngineError) as err:
        second.conditionals("hank")
    assert err.value.code == "unknown_voice"
    assert [v.name for v in second.list()] == ["default"]
    with pytest.raises(EngineError) as err:
        second.delete("hank")
    assert err.value.code == "unknown_voice"
