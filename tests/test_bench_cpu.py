"""``chatterbox-fast bench cpu``: both servers pinned to one core, the listeners' packets counted, one row per codec
and stream count with the gateway's and the peer's CPU per stream-second (a short run: the figures are the command's,
in docs/figures.md; no CPU threshold here, as the machine is shared)."""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from cbf_tools.bench.cpu import lower_priority, pin
from cbf_tools.bench.procs import threads
from gateway.cli import build_parser

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to pin to")


def test_pin_moves_every_thread() -> None:
    cores = sorted(os.sched_getaffinity(0))
    pin(os.getpid(), cores[-1])
    try:
        assert threads(os.getpid()) and all(os.sched_getaffinity(t) == {cores[-1]} for t in threads(os.getpid()))
    finally:
        for tid in threads(os.getpid()):
            os.sched_setaffinity(tid, set(cores))


def test_a_short_run_measures_both_servers(capsys: pytest.CaptureFixture[str]) -> None:
    cores = sorted(os.sched_getaffinity(0))
    args = build_parser().parse_args(["bench", "cpu", "--streams", "2", "--codecs", "pcmu", "--seconds", "2",
                                      "--warm-up", "1", "--server-core", str(cores[0]),
                                      "--client-core", str(cores[1]),
                                      "--client-nice", "0"])  # in a busy suite, listeners that gave way would lag
    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        status = args.run(args)
    finally:
        os.sched_setaffinity(0, set(cores))
    assert os.getpriority(os.PRIO_PROCESS, 0) == niceness  # only the listeners' thread gave way
    lines = capsys.readouterr().out.strip().splitlines()
    result = json.loads(lines[-1])
    assert status == 0, lines
    [row] = result["rows"]
    assert row["codec"] == "pcmu" and row["streams"] == 2
    for side in ("gateway", "peer"):
        assert row[side]["errors"] == 0 and row[side]["cpu_ms_per_stream_s"] > 0
        assert 40 <= row[side]["packets_per_stream_s"] <= 60  # 20 ms packets reached the listeners
    assert isinstance(row["gateway"]["underruns_in_gateway"], int)  # read from the gateway's /metrics
    assert row["peer"]["underruns_in_gateway"] is None  # the bare peer has no /metrics
    assert row["gateway"]["utterances"] >= 1 and row["ratio"] > 0
    assert set(result["met"]) == {"opus_ratio_at_20", "pcmu_ratio_at_20", "opus_underruns_at_40"}
    assert all(v is None for v in result["met"].values())  # no point at 20 or 40 streams in this run
    assert "CPU-ms per stream-second" in lines[0]


def test_the_listeners_thread_gives_way_and_the_rest_of_the_process_does_not() -> None:
    own = os.getpriority(os.PRIO_PROCESS, 0)
    with ThreadPoolExecutor(1, initializer=lower_priority, initargs=(5,)) as pool:
        theirs = pool.submit(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())).result()
    assert theirs == min(own + 5, 19) and os.getpriority(os.PRIO_PROCESS, 0) == own


def test_bad_flags_exit_2() -> None:
    args = build_parser().parse_args(["bench", "cpu", "--server-core", "1", "--client-core", "1"])
    assert args.run(args) == 2
