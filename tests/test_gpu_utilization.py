"""engine/gpu_utilization.py: a CUDA worker's card utilisation, read from nvidia-smi in a thread. This CPU machine has
no card and no nvidia-smi: a stand-in script answers as nvidia-smi does (its arguments checked), and says so."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from engine.gpu_utilization import UtilizationReader, card_id, moved, parse


@pytest.mark.parametrize(("answer", "ratio"), [("37\n", 0.37), ("0", 0.0), ("100\n", 1.0), ("[N/A]\n", None),
                                               ("[Not Supported]", None), ("", None), ("12\n40\n", None),
                                               ("150", None), ("-3", None)])
def test_nvidia_smis_answer_becomes_a_ratio_or_nothing(answer: str, ratio: float | None) -> None:
    assert parse(answer) == ratio


def test_the_card_is_named_by_its_uuid_where_placement_knows_it() -> None:
    assert card_id("cuda:1", {"uuid": "GPU-8f3a", "device": "cuda:1"}) == "GPU-8f3a"
    assert card_id("cuda:1", None) == "1" and card_id("cuda", {}) == "0"


def test_it_is_said_again_when_it_appears_vanishes_or_moves_by_a_step() -> None:
    assert moved(None, 0.2) and moved(0.2, None) and moved(0.2, 0.26) and not moved(0.2, 0.23)
    assert not moved(None, None)


def stand_in(tmp_path: Path, body: str) -> str:
    """An executable standing in for nvidia-smi (no card here): ``body`` is its shell script."""
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_the_reader_keeps_the_cards_latest_answer(tmp_path: Path) -> None:
    command = stand_in(tmp_path, 'if [ "$*" = "--query-gpu=utilization.gpu --format=csv,noheader,nounits -i '
                                 'GPU-8f3a" ]; then echo 64; else echo "unexpected: $*" >&2; exit 6; fi\n')
    reader = UtilizationReader("GPU-8f3a", command, every=0.05).start()
    try:
        waited = time.monotonic()
        while reader.latest is None and time.monotonic() - waited < 30:  # a busy host: the thread's first look
            time.sleep(0.02)
        assert reader.latest == 0.64
    finally:
        reader.stop()
    assert UtilizationReader("GPU-other", command).look() is None  # it failed (exit 6): nothing reported


def test_no_nvidia_smi_reports_nothing_and_stops_looking(tmp_path: Path) -> None:
    reader = UtilizationReader("GPU-8f3a", str(tmp_path / "absent"), every=0.05).start()
    reader._thread.join(timeout=30)
    assert not reader._thread.is_alive() and reader.latest is None


def test_an_nvidia_smi_that_hangs_is_given_up_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("engine.gpu_utilization.TIMEOUT_S", 0.2)
    assert UtilizationReader("GPU-8f3a", stand_in(tmp_path, "sleep 5\n")).look() is None
