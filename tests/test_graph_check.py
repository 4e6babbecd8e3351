"""The CUDA-graph start-up self-check (engine/engines/graph_check.py) on this CPU, tiny checkpoint.

There is no CUDA here, so ``StandInReplay`` stands in for the captured graphs: each "replay" runs the eager step and
then, where asked, spoils what it did the way a broken graph would (a wrong token, a wrong key, nothing at all). The
comparison logic, the fallback to eager and the refusal of ``--decode graph`` are the real ones."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("chatterbox.tts_turbo")

import torch  # noqa: E402
from turbo_checkpoint import write_tiny_checkpoint  # noqa: E402

from engine.cost import CostModel  # noqa: E402
from engine.engines.base import GraphCheckFailed  # noqa: E402
from engine.engines.graph_check import STEPS, SelfCheck, check_buckets, check_slots  # noqa: E402
from engine.engines.t3_batch import BatchDecoder  # noqa: E402
from engine.engines.turbo import CHECK_TEXTS, TurboEngine, check_voices  # noqa: E402
from engine.settings import EngineSettings  # noqa: E402
from engine.startup_checks import Misconfigured, loading  # noqa: E402
from engine.voices import VoiceStore  # noqa: E402
from engine.worker import Synthesizer, Worker, serve_worker  # noqa: E402
from gateway.engine_link.client import EngineClient  # noqa: E402

pytestmark = pytest.mark.slow


class StandInReplay:
    """Stands in for ``GraphedSteps`` (no CUDA graphs on this CPU): a replay is the eager step, then ``spoil``."""

    def __init__(self, decoder: BatchDecoder, spoil: str | None = None) -> None:
        self.decoder, self.spoil = decoder, spoil
        self.graphs: dict = {}
        self.replays = 0

    def capture_all(self, buckets: tuple[int, ...]) -> None:
        pass

    def __call__(self, batch: int, attend: int) -> None:
        self.replays += 1
        if self.spoil == "nothing":  # an empty graph: it runs and changes nothing
            return
        self.decoder.step(batch, attend)
        if self.spoil == "token":
            self.decoder.tokens[1] = (self.decoder.tokens[1] + 1) % 6561
        elif self.spoil == "key":
            self.decoder.kv.k[0, 1, 0, 0, 0] += 0.5


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_checkpoint(tmp_path_factory.mktemp("tiny"), stop_bias=4.0)


@pytest.fixture(scope="module")
def engine(checkpoint: Path) -> TurboEngine:
    engine = TurboEngine.load(model_dir=checkpoint, device="cpu", slots=8)
    yield engine
    engine.loop.close()


def run_check(engine: TurboEngine, spoil: str | None):
    replay = StandInReplay(engine.decoder, spoil)
    texts = [engine.tokenizer(text, return_tensors="pt").input_ids for text in CHECK_TEXTS]
    result = SelfCheck(engine.t3, engine.decoder, replay, check_voices(engine.default_voice().t3), texts,
                       timing=False).run()
    return result, replay


def test_buckets_and_slots_checked_avoid_slot_zero_where_there_is_room() -> None:
    assert check_buckets(64) == [2, 64] and check_buckets(8) == [2, 8] and check_buckets(1) == [1]
    assert check_slots(64) == [1, 32, 63] and check_slots(8) == [1, 4, 7] and check_slots(2) == [0, 1]


def test_a_faithful_replay_passes_and_leaves_no_slot_taken(engine: TurboEngine) -> None:
    result, replay = run_check(engine, None)
    assert result.ok, result.problems
    assert replay.replays == 2 * STEPS  # both buckets compared
    assert {"b2_eager_step_ms", "b8_replay_ms", "logits_max_diff", "check_s"} <= set(result.figures)
    assert result.figures["logits_max_diff"] < 1e-4  # fp32: our body equals transformers' forward to rounding
    assert not engine.decoder.live and not bool(engine.decoder.active.any())


@pytest.mark.parametrize("spoil, says", [
    ("token", "differ from 4 eager steps in tokens"),
    ("key", "differ from 4 eager steps in k"),
    ("nothing", "moved the slots by [0, 0] positions, not 4 (an empty graph?)"),
])
def test_a_broken_replay_is_named(engine: TurboEngine, spoil: str, says: str) -> None:
    result, _ = run_check(engine, spoil)
    assert not result.ok and says in result.reason(), result.problems


def test_the_check_guards_noise_drawn_inside_the_step(engine: TurboEngine) -> None:
    """Under graphs ``step`` draws its own noise (``noise_in_step``): replays drawing it pass; a replay whose noise
    came from somewhere else (here: the generator path's buffer) is caught."""
    engine.decoder.noise_in_step = True
    try:
        assert run_check(engine, None)[0].ok
        replay = StandInReplay(engine.decoder)

        def outside_noise(batch: int, attend: int) -> None:
            engine.decoder.noise_in_step = False
            try:
                replay(batch, attend)
            finally:
                engine.decoder.noise_in_step = True

        texts = [engine.tokenizer(text, return_tensors="pt").input_ids for text in CHECK_TEXTS]
        result = SelfCheck(engine.t3, engine.decoder, outside_noise, check_voices(engine.default_voice().t3), texts,
                           timing=False).run()
    finally:
        engine.decoder.noise_in_step = False
    assert not result.ok and "differ from 4 eager steps in tokens" in result.reason(), result.problems


def stand_in_graphs(checkpoint: Path, asked: str, spoil: str | None) -> TurboEngine:
    """A CPU engine made to believe it decodes with (stand-in) graphs, as ``--decode asked`` on CUDA would."""
    engine = TurboEngine.load(model_dir=checkpoint, device="cpu", slots=8)
    engine.max_tokens = 20
    engine.graphs = engine.decoder.run_step = StandInReplay(engine.decoder, spoil)
    engine.decode_asked = asked
    engine.info = dataclasses.replace(engine.info, decode="graph",
                                      notes=engine.info.notes.replace("eager decode", "graph decode"))
    return engine


async def test_decode_auto_falls_back_to_eager_and_the_ready_message_says_why(checkpoint: Path, tmp_path: Path,
                                                                               watermarker) -> None:
    engine = stand_in_graphs(checkpoint, "auto", "token")
    try:
        engine.warmup()
        assert engine.graphs is None and engine.decoder.run_step == engine.decoder.step
        assert engine.info.decode == "eager" and "differ from 4 eager steps" in engine.info.decode_fallback
        assert engine.graph_check["ok"] is False
        worker = Worker(Synthesizer(engine, watermarker), VoiceStore(tmp_path / "voices", engine), EngineSettings(),
                        CostModel())
        stop = asyncio.Event()
        sock = tmp_path / "engine.sock"
        server = asyncio.create_task(serve_worker(worker, f"unix:{sock}", stop))
        while not sock.exists():
            await asyncio.sleep(0.05)
        client = EngineClient(f"unix:{sock}")
        client.start_background()
        assert await client.wait_ready(30)
        ready = client.ready
        await client.close()
        stop.set()
        await server
    finally:
        engine.loop.close()
    assert ready.decode == "eager" and ready.decode_fallback == engine.info.decode_fallback
    assert "eager decode (graphs failed their self-check)" in ready.notes


def test_decode_graph_asked_is_a_start_up_refusal_in_one_sentence(checkpoint: Path) -> None:
    engine = stand_in_graphs(checkpoint, "graph", "nothing")
    try:
        with pytest.raises(GraphCheckFailed):
            engine.warmup()
        engine.graph_check = None
        with pytest.raises(Misconfigured) as err, loading(EngineSettings(device="cpu"), on_gpu=False):
            engine.warmup()
    finally:
        engine.loop.close()
    message = str(err.value)
    assert message.startswith("--decode graph was asked for, but the CUDA graphs failed their start-up self-check (")
    assert "not 4 (an empty graph?)" in message and message.endswith("or --decode eager (CBF_DECODE).")
    assert message.count(". ") == 1  # the problem, then "Fix: ..."


def test_in_bf16_logits_agree_within_its_tolerance_and_the_check_passes(checkpoint: Path) -> None:
    """bf16 (the CUDA default) on this CPU: our body's logits need not equal transformers' forward bit for bit, but
    they stay within the bf16 tolerance the self-check allows (as does prefix reuse against a full prefill); replays
    of a faithful stand-in still equal the eager steps bitwise."""
    engine = TurboEngine.load(model_dir=checkpoint, device="cpu", dtype="bfloat16", slots=4)
    try:
        result, _ = run_check(engine, None)
    finally:
        engine.loop.close()
    assert result.ok, result.problems
    assert engine.dtype == torch.bfloat16 and result.figures["logits_max_diff"] < 0.5
