"""The device queue runs the most urgent generation first (earliest deadline), one at a time."""

from __future__ import annotations

import threading

import pytest

from engine.scheduler import DeviceQueue


def test_earliest_deadline_first_and_arrival_order_on_ties() -> None:
    queue = DeviceQueue()
    gate, started, order = threading.Event(), threading.Event(), []
    busy = queue.submit(0.0, lambda: (started.set(), gate.wait(5)))
    assert started.wait(5)  # the device is busy: everything below queues up behind it
    futures = [queue.submit(deadline, order.append, name)
               for deadline, name in ((3.0, "late"), (1.0, "first chunk"), (2.0, "low buffer"), (1.0, "another first"))]
    gate.set()
    for future in (busy, *futures):
        future.result(5)
    assert order == ["first chunk", "another first", "low buffer", "late"]
    queue.close()


def test_errors_reach_the_caller_and_the_queue_goes_on() -> None:
    queue = DeviceQueue()

    def fail() -> None:
        raise ValueError("model exploded")

    with pytest.raises(ValueError, match="exploded"):
        queue.submit(0.0, fail).result(5)
    assert queue.submit(0.0, lambda: 42).result(5) == 42
    queue.close()


def test_a_cancelled_job_never_runs() -> None:
    queue = DeviceQueue()
    gate, ran = threading.Event(), []
    queue.submit(0.0, gate.wait, 5)
    skipped = queue.submit(1.0, ran.append, "skipped")
    assert skipped.cancel()
    gate.set()
    queue.submit(2.0, ran.append, "kept").result(5)
    assert ran == ["kept"]
    queue.close()
    with pytest.raises(RuntimeError):
        queue.submit(0.0, print)


def test_a_queue_with_two_threads_runs_two_at_once_and_reports_the_oldest() -> None:
    """For an engine in another server that takes two requests at a time (engine/engines/http.py)."""
    queue = DeviceQueue(threads=2)
    gate, both = threading.Event(), threading.Barrier(2, timeout=5)
    first = queue.submit(0.0, lambda: (both.wait(), gate.wait(5)))
    second = queue.submit(0.0, lambda: (both.wait(), gate.wait(5)))
    third = queue.submit(0.0, lambda: "after")
    while queue.busy_since is None:  # the two have met at the barrier: both ran at once, the third waits
        threading.Event().wait(0.01)
    assert not third.done()
    gate.set()
    assert [f.result(5)[1] for f in (first, second)] == [True, True] and third.result(5) == "after"
    queue.close()
    assert queue.busy_since is None
