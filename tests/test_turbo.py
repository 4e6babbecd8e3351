"""The Chatterbox-Turbo engine on a tiny random-weights checkpoint, through the real loading and synthesis code."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import librosa
import numpy as np
import pytest

pytest.importorskip("chatterbox.tts_turbo")

import torch  # noqa: E402
from chatterbox.models.s3gen import S3Gen  # noqa: E402
from chatterbox.models.t3.llama_configs import LLAMA_CONFIGS  # noqa: E402
from turbo_checkpoint import TINY_GPT2, write_tiny_checkpoint  # noqa: E402

from engine.engines.base import Cancelled, EngineError  # noqa: E402
from engine.engines.turbo import (  # noqa: E402
    RANDOM_WEIGHTS,
    TurboEngine,
    _pick_graphs,
    find_weights,
    synthetic_reference,
)
from engine.engines.turbo_arch import S3GenSize, SizedS3Gen, TurboArch, build_t3, llama_config_name  # noqa: E402

pytestmark = pytest.mark.slow

SAMPLES_PER_TOKEN = 960  # 25 speech tokens per second at 24 kHz
MAX_TOKENS = 20


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_checkpoint(tmp_path_factory.mktemp("turbo-tiny"))


@pytest.fixture(scope="module")
def engine(checkpoint: Path) -> TurboEngine:
    loaded = TurboEngine.load(model_dir=checkpoint, device="cpu")
    loaded.max_tokens = MAX_TOKENS
    return loaded


@pytest.fixture(scope="module")
def voices(engine: TurboEngine) -> tuple[object, object]:
    first = engine.prepare_voice(synthetic_reference(6.0, seed=1), 24000)
    quiet_16k = 0.3 * librosa.resample(synthetic_reference(7.0, seed=2), orig_sr=24000, target_sr=16000)
    second = engine.prepare_voice(quiet_16k, 16000)
    return first, second


def _state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def _same_conditionals(a: object, b: object) -> bool:
    for x, y in [(a.t3.__dict__, b.t3.__dict__), (a.gen, b.gen)]:
        if x.keys() != y.keys():
            return False
        for key in x:
            if torch.is_tensor(x[key]) != torch.is_tensor(y[key]):
                return False
            if torch.is_tensor(x[key]) and not torch.equal(x[key], y[key]):
                return False
    return True


def test_load_reads_the_checkpoint(engine: TurboEngine, checkpoint: Path) -> None:
    assert engine.info.name == "chatterbox-turbo"
    assert engine.info.weights == str(checkpoint)
    assert (engine.info.device, engine.info.dtype, engine.info.decode) == ("cpu", "float32", "eager")
    assert engine.sample_rate == 24000 and engine.conditionals_suffix == ".turbo.pt"
    builtin = engine.load_conditionals(checkpoint / "conds.pt")
    assert _same_conditionals(engine.default_voice(), builtin)


def test_voices_are_separate_objects_and_the_model_is_untouched(engine: TurboEngine, voices: tuple) -> None:
    first, second = voices
    assert not torch.equal(first.t3.speaker_emb, second.t3.speaker_emb)
    assert not torch.equal(first.gen["embedding"], second.gen["embedding"])
    assert first.t3.cond_prompt_speech_tokens.shape == (1, 150)  # 6 s at 25 tokens/s
    assert second.t3.cond_prompt_speech_tokens.shape == (1, 175)
    before = _state(engine.t3), _state(engine.s3gen), _state(engine.ve)
    default = engine.default_voice()
    engine.prepare_voice(synthetic_reference(6.0, seed=3), 24000)
    engine.synthesize("Hi.", first, threading.Event())
    after = _state(engine.t3), _state(engine.s3gen), _state(engine.ve)
    for old, new in zip(before, after):
        assert all(torch.equal(old[k], new[k]) for k in old)
    assert engine.default_voice() is default
    assert first.t3.cond_prompt_speech_emb is None  # T3's cached prompt embedding went to a copy
    assert first.gen["prompt_token"].dtype == torch.long  # S3Gen's in-place casts went to a copy


def test_synthesize_returns_24k_float_audio_one_frame_per_token(engine: TurboEngine, voices: tuple,
                                                                capfd: pytest.CaptureFixture[str]) -> None:
    torch.manual_seed(0)
    audio = engine.synthesize("Hello there, how are you?", voices[0], threading.Event())
    assert capfd.readouterr() == ("", "")  # upstream's "S3 Token -> Mel Inference..." and tqdm bar stay out
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert np.isfinite(audio).all() and np.abs(audio).max() > 0
    tokens, rest = divmod(audio.size, SAMPLES_PER_TOKEN)
    assert rest == 0 and 3 < tokens <= MAX_TOKENS + 1 + 3  # sampled tokens (OOV ones dropped) + three silence


def test_cancel_stops_within_one_token_step(engine: TurboEngine, voices: tuple) -> None:
    engine.max_tokens = 1000
    cancel = threading.Event()
    steps: list[int] = []
    steps_when_set: list[int] = []

    def set_cancel() -> None:
        steps_when_set.append(len(steps))
        cancel.set()

    def on_step(*_: object) -> None:
        steps.append(1)
        if len(steps) == 5:
            threading.Thread(target=set_cancel).start()

    hook = engine.t3.speech_head.register_forward_hook(on_step)  # once per prefill and per decode step
    try:
        torch.manual_seed(1)
        with pytest.raises(Cancelled):
            engine.synthesize("A long sentence that would take many tokens to speak.", voices[0], cancel)
    finally:
        hook.remove()
        engine.max_tokens = MAX_TOKENS
    assert steps_when_set and len(steps) - steps_when_set[0] <= 2


def test_a_set_cancel_event_stops_before_any_step(engine: TurboEngine, voices: tuple) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        engine.synthesize("Hello.", voices[0], cancel)


def test_conditionals_round_trip(engine: TurboEngine, voices: tuple, tmp_path: Path) -> None:
    path = tmp_path / f"voice{engine.conditionals_suffix}"
    engine.save_conditionals(voices[1], path)
    loaded = engine.load_conditionals(path)
    assert _same_conditionals(voices[1], loaded)
    outputs = []
    for voice in (voices[1], loaded):
        torch.manual_seed(7)
        outputs.append(engine.synthesize("Same words.", voice, threading.Event()))
    np.testing.assert_array_equal(outputs[0], outputs[1])


def test_short_or_broken_reference_is_bad_audio(engine: TurboEngine) -> None:
    with pytest.raises(EngineError) as short:
        engine.prepare_voice(synthetic_reference(3.0), 24000)
    broken = synthetic_reference(6.0)
    broken[100] = np.nan
    with pytest.raises(EngineError) as nan:
        engine.prepare_voice(broken, 24000)
    assert short.value.code == nan.value.code == "bad_audio"


def test_random_weights_say_so_and_differ(engine: TurboEngine, checkpoint: Path) -> None:
    random_engine = TurboEngine.load(model_dir=checkpoint, weights="random", device="cpu")
    assert random_engine.info.weights == RANDOM_WEIGHTS
    loaded, fresh = engine.t3.speech_head.weight, random_engine.t3.speech_head.weight
    assert loaded.shape == fresh.shape and not torch.equal(loaded, fresh)
    voice = random_engine.default_voice()  # no conds.pt read: prepared from the 15 s synthetic clip
    assert voice.t3.cond_prompt_speech_tokens.shape == (1, 375)
    text = "Hello there, thanks for calling."  # 32 characters: about 2.3 s of speech, 57 tokens
    torch.manual_seed(3)
    audio = random_engine.synthesize(text, voice, threading.Event())
    assert random_engine.token_budget(text) == 57
    assert audio.size == (1 + 57 + 3) * SAMPLES_PER_TOKEN  # first token + budget + silence: never 1000 tokens


def test_find_weights(tmp_path: Path, checkpoint: Path) -> None:
    assert find_weights(tmp_path) is None
    assert find_weights(checkpoint) == checkpoint


@pytest.mark.parametrize("flag", ["decode", "vocode"])
def test_graph_modes_are_for_cuda_only(checkpoint: Path, flag: str) -> None:
    assert _pick_graphs("auto", torch.device("cpu")) == "eager"
    assert _pick_graphs("auto", torch.device("cuda", 0)) == "graph"
    with pytest.raises(EngineError) as refused:
        TurboEngine.load(model_dir=checkpoint, device="cpu", **{flag: "graph"})
    assert refused.value.code == "bad_config" and f"--{flag} graph" in str(refused.value)


def test_pretrained_without_weights_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EngineError) as refused:
        TurboEngine.load(model_dir=tmp_path, device="cpu")
    assert refused.value.code == "no_weights"


def test_full_size_arch_matches_upstream_shapes() -> None:
    """The sized builders at their defaults give the released model's state-dict keys and shapes."""
    with torch.device("meta"):
        ours, upstream = SizedS3Gen(S3GenSize()).state_dict(), S3Gen(meanflow=True).state_dict()
        t3 = build_t3(TurboArch())
    assert {k: v.shape for k, v in ours.items()} == {k: v.shape for k, v in upstream.items()}
    assert t3.hp.llama_config_name == "GPT2_medium" and t3.cfg.n_layer == 24
    assert sum(p.numel() for p in t3.parameters()) > 400_000_000


def test_t3_configs_are_added_never_replaced(tmp_path: Path) -> None:
    medium = dict(LLAMA_CONFIGS["GPT2_medium"])
    config_file = tmp_path / "tiny.json"
    config_file.write_text(json.dumps(TINY_GPT2))
    from_file, from_dict = llama_config_name(str(config_file)), llama_config_name(TINY_GPT2)
    assert from_file == from_dict != "GPT2_medium" and LLAMA_CONFIGS[from_dict] == TINY_GPT2
    eager = llama_config_name("GPT2_medium", attn_implementation="eager")
    assert LLAMA_CONFIGS[eager]["attn_implementation"] == "eager"
    assert LLAMA_CONFIGS["GPT2_medium"] == medium and llama_config_name("GPT2_medium") == "GPT2_medium"
    with pytest.raises(ValueError):
        llama_config_name("no-such-config")


@pytest.fixture(scope="module")
def ending_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Utterances that end by themselves after 2-7 s of audio (a stop bias of 3; conftest's 4 ends some chunks after
    0.2 s), so a whole worker warms up, calibrates and speaks in seconds rather than at the 1000-token cap."""
    return write_tiny_checkpoint(tmp_path_factory.mktemp("turbo-ending"), stop_bias=3.0)


async def test_the_worker_serves_turbo_chunks_planned_and_watermarked(ending_checkpoint: Path, tmp_path: Path) -> None:
    """The real adapter behind the real worker process: loading from the model directory, chunks cut by the planner
    (at a flush here: on this CPU the tiny model is slower than real time, so the planner would rightly not split
    whole text), and PerTh on every chunk (random tiny weights make noise-like audio, not speech).

    How long each chunk is is not asserted: the worker draws its sampling seeds unseeded and random weights sample the
    stop token at random, so a chunk may end at its first token (S3Gen's three silence tokens, 0.12 s). PerTh reads
    even that shortest chunk marked (about 0.96, against under 0.05 unmarked), so every chunk is checked on its own."""
    from engine.watermark import Watermarker
    from engine.protocol import Chunk
    from cbf_tools.say import worker_client

    flags = ["--engine", "chatterbox-turbo", "--model-dir", str(ending_checkpoint), "--device", "cpu",
             "--voices-dir", str(tmp_path), "--log-level", "warning"]
    async with worker_client(flags, timeout=300) as client:
        assert client.ready and client.ready.engine == "chatterbox-turbo" and client.ready.device == "cpu"
        assert client.ready.weights == str(ending_checkpoint) and client.ready.watermark
        utterance = await client.start("default")
        await utterance.text("Hello there, how are")
        await utterance.flush()
        await utterance.text(" you today? Fine, thanks.")
        await utterance.end()
        chunks = [event async for event in utterance.events() if isinstance(event, Chunk)]
    # The flush ends the first chunk (punc_norm's full stop); the rest may come as one chunk or be cut where the
    # planner's measured cost says (a loaded machine makes shorter ones), but it is all spoken, in order.
    texts = [c.header.text for c in chunks]
    assert texts[0] == "Hello there, how are." and " ".join(texts[1:]) == "You today? Fine, thanks.", texts
    assert [c.header.seq for c in chunks] == list(range(len(chunks)))
    assert all(later.header.offset == pytest.approx(earlier.header.offset + earlier.header.duration, abs=1e-3)
               for earlier, later in zip(chunks, chunks[1:]))
    watermarker = Watermarker()
    for chunk in chunks:
        audio = np.frombuffer(chunk.pcm, dtype=np.int16).astype(np.float32) / 32768
        assert chunk.header.sample_rate == 24000
        assert audio.size / 24000 == pytest.approx(chunk.header.duration, abs=1e-4)
        assert np.abs(audio).max() > 0
        assert watermarker.detect(audio, 24000) >= 0.5, chunk.header


def test_trim_silence_equals_librosa_effects_trim() -> None:
    """Our copy of the voice encoder's trim (librosa.effects needs scikit-learn, absent on the GPU host)."""
    import librosa.effects

    from engine.engines.turbo import trim_silence

    clip = synthetic_reference(6.0, seed=2)[::3]
    padded = np.concatenate([np.zeros(9000, np.float32), clip, 1e-4 * np.ones(7000, np.float32)])
    for wav in (padded, clip, np.zeros(5000, np.float32)):
        np.testing.assert_array_equal(trim_silence(wav), librosa.effects.trim(wav, top_db=20)[0])
    assert 0 < trim_silence(padded).size < padded.size
