"""S3Gen captured per bucket (engine/engines/s3gen_graphs.py) and its start-up self-check (vocode_check.py) on this
CPU, tiny checkpoint, real S3Gen classes.

There is no CUDA here, so ``stand_in_capture`` stands in for ``cuda_capture``: a "replay" runs the stage eagerly on
the same static buffers and writes the output tensor the capture returned, as a graph's replay rewrites its output;
where asked it then spoils it the way a broken graph would (nothing at all, a wrong sample). Everything else (the
buckets, the static buffers and their views, the per-row work around the stages, the comparison, the fallback and the
refusal) is the real code. That the stages could be captured at all (no host synchronisation, no host data, no random
draws) is proved on the meta device, where an ``.item()`` raises and the rest shows up in the dispatch log."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("chatterbox.tts_turbo")

import torch  # noqa: E402
from s3gen_rows import solo, two_voices  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402
from turbo_checkpoint import write_tiny_checkpoint  # noqa: E402

from engine.cost import CostModel  # noqa: E402
from engine.engines import s3gen_graphs  # noqa: E402
from engine.engines.base import GraphCheckFailed  # noqa: E402
from engine.engines.s3gen_batch import Shape, VocodeRow, graph_safe_chunk_mask  # noqa: E402
from engine.engines.s3gen_graphs import Buckets, GraphedVocoder  # noqa: E402
from engine.engines.turbo import TurboEngine, TurboVoice  # noqa: E402
from engine.settings import EngineSettings  # noqa: E402
from engine.startup_checks import Misconfigured, loading  # noqa: E402
from engine.voices import VoiceStore  # noqa: E402
from engine.worker import Synthesizer, Worker  # noqa: E402

pytestmark = pytest.mark.slow

TOLERANCE = 1e-5  # float32 sums in another order (padded shapes); the audio peaks at ~0.05
SMALL = Buckets(max_prompt_tokens=100, batches=(1, 4), chunk_tokens=(32, 64))  # 2 x 3 x 2 buckets, 10 graphs


def stand_in_capture(spoil: str | None = None) -> s3gen_graphs.Capture:
    """Stands in for ``cuda_capture`` (no CUDA graphs on this CPU), spoiling every replay as ``spoil`` says."""

    def capture(stage: Callable[[], torch.Tensor]) -> tuple[s3gen_graphs.Replay, torch.Tensor]:
        out = stage()

        def replay() -> None:
            if spoil == "nothing":  # an empty graph: it runs and changes nothing
                return
            out.copy_(stage())
            if spoil == "sample":
                out.view(-1)[out.numel() // 3] += 0.5

        return replay, out

    return capture


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TurboEngine]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    engine = TurboEngine.load(model_dir=write_tiny_checkpoint(tmp_path_factory.mktemp("tiny")), device="cpu")
    # A warm-up's "Warming up." would decode 1000 tokens and vocode 40 s of audio (6 s here): a checkpoint on disk is
    # "pretrained" to the engine, which does not stop it at a speech length, and the tiny random model never says stop.
    engine.max_tokens = 30
    try:
        yield engine
    finally:
        engine.loop.close()
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def voices(engine: TurboEngine) -> list[TurboVoice]:
    return two_voices(engine)


@pytest.fixture(scope="module")
def graphed(engine: TurboEngine) -> GraphedVocoder:
    vocoder = GraphedVocoder(engine.s3gen, SMALL, stand_in_capture())
    vocoder.capture_all()
    return vocoder


def test_the_graph_safe_chunk_mask_equals_upstreams() -> None:
    """Equal to upstream's mask; where a row is all false, upstream means to set it true (and, as released, fails on
    the ``logging`` it never imported before doing so), this sets it true."""
    from chatterbox.models.s3gen.utils.mask import add_optional_chunk_mask

    masks = torch.rand(3, 1, 40) > 0.3
    masks[:, :, 0] = True
    xs = torch.zeros(3, 40, 8)
    for static_chunk in (0, 5):
        want = add_optional_chunk_mask(xs, masks.clone(), False, False, 0, static_chunk, -1)
        assert torch.equal(graph_safe_chunk_mask(xs, masks.clone(), False, False, 0, static_chunk, -1), want)
    masks[1] = False
    got = graph_safe_chunk_mask(xs, masks.clone(), False, False, 0, 0, -1)
    assert bool(got[1].all()) and torch.equal(got[[0, 2]], masks[[0, 2]])


def test_buckets_are_the_smallest_that_hold_a_call() -> None:
    assert SMALL.positions == (64, 128, 192) and SMALL.frames == (64, 128)
    assert SMALL.holding(Shape(3, 130, 20)) == Shape(4, 192, 64)
    assert SMALL.holding(Shape(1, 64, 64)) == Shape(1, 64, 64)
    assert SMALL.holding(Shape(5, 64, 64)) is None and SMALL.holding(Shape(1, 64, 129)) is None
    assert len(SMALL.all()) == 12


def test_replayed_rows_equal_their_solo_upstream_runs(engine: TurboEngine, voices: list[TurboVoice],
                                                      graphed: GraphedVocoder) -> None:
    """Three rows (a bucket of 4: the fourth fills it), two voices, three lengths, padded to 192 positions."""
    gen = torch.Generator().manual_seed(0)
    cases = [(8, 0, 11), (40, 1, 12), (15, 0, 13)]  # (tokens, voice, seed)
    rows = [VocodeRow(torch.randint(0, 6561, (n,), generator=gen), voices[v].gen, torch.Generator().manual_seed(s))
            for n, v, s in cases]
    expected = [solo(engine, row.tokens, voices[v], s) for row, (_, v, s) in zip(rows, cases)]
    replays = graphed.captured, graphed.eager_calls
    got = graphed(rows)
    assert (graphed.captured, graphed.eager_calls) == replays  # served by the captures, nothing new
    for (n, _, _), want, wav in zip(cases, expected, got):
        assert wav.shape == want.shape == (n * 960,)
        assert (wav - want).abs().max().item() < TOLERANCE


def test_a_call_past_the_largest_bucket_runs_eagerly(engine: TurboEngine, voices: list[TurboVoice],
                                                     graphed: GraphedVocoder) -> None:
    row = VocodeRow(torch.arange(70), voices[1].gen, torch.Generator().manual_seed(3))  # 70 tokens > 64
    eager_calls = graphed.eager_calls
    [wav] = graphed([row])
    assert graphed.eager_calls == eager_calls + 1
    assert (wav - solo(engine, row.tokens, voices[1], 3)).abs().max().item() < TOLERANCE


RANDOM = ("rand", "normal", "uniform", "bernoulli", "exponential", "multinomial")


class HostData(TorchDispatchMode):
    """Notes every operation that reads a tensor off the meta device (what a capture would copy from the host), and
    every random draw (a replay would draw anew, unlike the eager run it is checked against: the draws belong in the
    per-row work before the stages)."""

    def __init__(self) -> None:
        super().__init__()
        self.operations: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        flat, _ = tree_flatten((args, kwargs or {}))
        if any(isinstance(t, torch.Tensor) and t.device.type != "meta" for t in flat) or \
                any(word in str(func) for word in RANDOM):
            self.operations.add(str(func))
        return func(*args, **(kwargs or {}))


def meta_capture(found: set[str]) -> s3gen_graphs.Capture:
    """A capture on the meta device: the stage once (as the warm-up outside the graph), then again under ``HostData``;
    an ``.item()`` or a data-dependent shape raises there."""

    def capture(stage: Callable[[], torch.Tensor]) -> tuple[s3gen_graphs.Replay, torch.Tensor]:
        stage()
        mode = HostData()
        with mode:
            out = stage()
        found.update(mode.operations)
        return (lambda: None), out

    return capture


def test_the_stages_need_no_host_synchronisation_no_host_data_and_draw_nothing(engine: TurboEngine,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    meta = copy.deepcopy(engine.s3gen).to("meta")
    buckets = Buckets(max_prompt_tokens=100, batches=(2,), chunk_tokens=(32,))
    found: set[str] = set()
    GraphedVocoder(meta, buckets, meta_capture(found)).capture_all()
    assert found == set()
    # the probe fails where upstream's own mask (which asks the host) is used
    from chatterbox.models.s3gen import decoder
    from chatterbox.models.s3gen.utils import mask

    monkeypatch.setattr(decoder, "add_optional_chunk_mask", mask.add_optional_chunk_mask)
    with pytest.raises(RuntimeError, match="item"):
        GraphedVocoder(meta, buckets, meta_capture(found)).capture_all()


def stand_in_engine(engine: TurboEngine, asked: str, spoil: str | None,
                    vocoder: GraphedVocoder | None = None) -> TurboEngine:
    """The CPU engine made to believe it vocodes with (stand-in) graphs, as ``--vocode asked`` on CUDA would: graphs
    spoiled as ``spoil`` says, or ``vocoder``'s (already captured)."""
    graphed = copy.copy(engine)
    graphed.vocoder_graphs = vocoder or GraphedVocoder(engine.s3gen, SMALL, stand_in_capture(spoil))
    graphed.vocode_asked, graphed.vocode_check = asked, None
    graphed.info = dataclasses.replace(engine.info, vocode="graph",
                                       notes=engine.info.notes.replace("S3Gen float32, eager", "S3Gen float32, graph"))
    return graphed


def test_vocode_auto_falls_back_to_eager_and_the_ready_message_says_why(engine: TurboEngine, watermarker,
                                                                        tmp_path: Path) -> None:
    graphed = stand_in_engine(engine, "auto", "sample")
    graphed.warmup()
    assert graphed.vocoder_graphs is None and graphed.vocode_check["ok"] is False
    assert graphed.info.vocode == "eager" and "replayed differs from the eager call" in graphed.info.vocode_fallback
    assert graphed.vocode_check["graphs"] == 10
    worker = Worker(Synthesizer(graphed, watermarker), VoiceStore(tmp_path / "voices", graphed), EngineSettings(),
                    CostModel())
    assert worker.ready.vocode == "eager" and worker.ready.vocode_fallback == graphed.info.vocode_fallback
    assert "eager (graphs failed their self-check)" in worker.ready.notes


def test_vocode_graph_asked_for_is_a_start_up_refusal(engine: TurboEngine) -> None:
    graphed = stand_in_engine(engine, "graph", "nothing")
    with pytest.raises(Misconfigured) as refused, loading(EngineSettings(device="cpu"), on_gpu=False):
        graphed.warmup()
    assert isinstance(refused.value.__cause__, GraphCheckFailed)
    assert "--vocode graph was asked for" in str(refused.value) and "CBF_VOCODE" in refused.value.fix
    assert "replayed differs from the eager call" in str(refused.value)  # an empty graph: its output never written


def test_a_true_stand_in_passes_the_self_check_and_serves_the_engine(engine: TurboEngine,
                                                                     graphed: GraphedVocoder) -> None:
    """True replays pass the start-up self-check (every bucket already captured by the fixture: the warm-up's
    ``capture_all`` adds none) and serve the engine's calls after it."""
    captured = graphed.captured
    served = stand_in_engine(engine, "auto", None, graphed)
    served.warmup()
    assert served.vocode_check["ok"] and served.info.vocode == "graph", served.vocode_check
    assert served.vocode_check["b4_vs_alone_max_diff"] < TOLERANCE and served.vocode_check["graphs"] == captured
    assert served.vocoder is graphed
    torch.manual_seed(4)
    together = served.vocode_batch([(list(range(30)), engine.default_voice())])
    torch.manual_seed(4)
    eager = engine.vocode_batch([(list(range(30)), engine.default_voice())])
    assert abs(together[0] - eager[0]).max() < TOLERANCE
