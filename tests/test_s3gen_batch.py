"""S3Gen over several chunks in one call against upstream's ``S3Gen.inference`` run alone (tiny checkpoint, real
classes, CPU): different voices (prompts of different lengths) and different token lengths in one batch. The
full-size architecture's rows are checked the same way by ``python -m engine.gpu_kit.turbo_bench --callers-only`` (slow on a
CPU)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("chatterbox.tts_turbo")

import torch  # noqa: E402
from s3gen_rows import solo, two_voices  # noqa: E402
from turbo_checkpoint import write_tiny_checkpoint  # noqa: E402

from engine.engines.s3gen_batch import VocodeRow, vocode_rows  # noqa: E402
from engine.engines.turbo import TurboEngine, TurboVoice  # noqa: E402

pytestmark = pytest.mark.slow

TOLERANCE = 1e-5  # float32 sums in another order (padded shapes); the audio peaks at ~0.05


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TurboEngine]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on a shared 2-core machine, two threads spin against each other: ~15x the CPU time
    try:
        yield TurboEngine.load(model_dir=write_tiny_checkpoint(tmp_path_factory.mktemp("tiny")), device="cpu")
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def voices(engine: TurboEngine) -> list[TurboVoice]:
    return two_voices(engine)


def test_each_row_of_a_mixed_batch_equals_its_solo_upstream_run(engine: TurboEngine, voices: list[TurboVoice]) -> None:
    gen = torch.Generator().manual_seed(0)
    cases = [(8, 0, 11), (26, 1, 12), (15, 0, 13)]  # (tokens, voice, seed): lengths and voices mixed
    rows = [VocodeRow(torch.randint(0, 6561, (n,), generator=gen), voices[v].gen, torch.Generator().manual_seed(s))
            for n, v, s in cases]
    expected = [solo(engine, row.tokens, voices[v], s) for row, (_, v, s) in zip(rows, cases)]
    batched = vocode_rows(engine.s3gen, rows)
    for (n, _, _), want, got in zip(cases, expected, batched):
        assert got.shape == want.shape == (n * 960,)
        assert (got - want).abs().max().item() < TOLERANCE
    assert (batched[0][:4000] - batched[2][:4000]).abs().max() > 1e-3  # different noise, different audio


def test_engine_vocode_batch_is_reproducible_and_rows_independent_of_neighbours(engine: TurboEngine,
                                                                                voices: list[TurboVoice]) -> None:
    short, long = [5, 17, 300, 6563, 6600] * 2, list(range(100, 112))  # T3's special tokens (>= 6561) are dropped
    torch.manual_seed(7)
    together = engine.vocode_batch([(short, voices[0]), (long, voices[1])])
    torch.manual_seed(7)
    first = engine.vocode(short, voices[0])
    assert together[0].shape == first.shape == ((len(short) - 4 + 3) * 960,)
    assert abs(together[0] - first).max() < TOLERANCE  # the first row's seed is the same draw either way
    assert together[1].shape == ((len(long) + 3) * 960,)
