"""The device queue runs the most urgent generation first (earliest deadline), one at a time; ``Gathered`` runs items
that arrive close together as one call on it."""

from __future__ import annotations

import threading
import time

import pytest

from engine.scheduler import DeviceQueue, Gathered, closes_at


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


# ----- Gathered: items arriving close together run as one call -----

def test_a_call_closes_a_window_after_its_first_item_or_after_an_overdue_deadline() -> None:
    assert closes_at(arrived=10.0, earliest_deadline=12.0, window_s=0.01) == pytest.approx(10.01)
    assert closes_at(arrived=10.0, earliest_deadline=9.0, window_s=0.01) == pytest.approx(9.01)  # overdue
    assert closes_at(arrived=10.0, earliest_deadline=12.0, window_s=0.0) == 10.0


def test_items_queued_behind_a_busy_device_run_together_earliest_deadline_first() -> None:
    queue, calls = DeviceQueue(), []
    gathered = Gathered(queue, lambda items: calls.append(list(items)) or [i * 10 for i in items], max_items=3,
                        window_s=0.0)
    gate, started = threading.Event(), threading.Event()
    queue.submit(-1.0, lambda: (started.set(), gate.wait(5)))
    assert started.wait(5)
    futures = [gathered.submit(deadline, value) for deadline, value in ((3.0, 3), (1.0, 1), (2.0, 2), (0.5, 0))]
    gate.set()
    assert [f.result(5) for f in futures] == [30, 10, 20, 0]
    assert calls == [[0, 1, 2], [3]]  # at most max_items per call, the most urgent first
    assert gathered.sizes == [3, 1]
    queue.close()


def test_an_idle_device_waits_the_window_for_company_and_no_longer() -> None:
    queue, calls = DeviceQueue(), []
    gathered = Gathered(queue, lambda items: calls.append(list(items)) or list(items), max_items=8, window_s=0.5)
    started = time.monotonic()
    first = gathered.submit(started, "a")
    second = gathered.submit(started, "b")
    assert (first.result(5), second.result(5)) == ("a", "b")
    assert calls == [["a", "b"]]
    assert time.monotonic() - started >= 0.5  # nobody else came: it waited out its window, then ran
    full = [gathered.submit(time.monotonic(), n) for n in range(8)]  # a full call does not wait
    assert [f.result(5) for f in full] == list(range(8)) and calls[-1] == list(range(8))
    queue.close()


def test_a_failing_call_is_retried_item_by_item_so_one_bad_item_fails_alone() -> None:
    queue = DeviceQueue()

    def run(items: list[int]) -> list[int]:
        if -1 in items:
            raise ValueError("bad chunk")
        return [i + 1 for i in items]

    gathered = Gathered(queue, run, max_items=4, window_s=0.0)
    gate, started = threading.Event(), threading.Event()
    queue.submit(-1.0, lambda: (started.set(), gate.wait(5)))
    assert started.wait(5)
    futures = [gathered.submit(0.0, value) for value in (1, -1, 2)]
    gate.set()
    assert futures[0].result(5) == 2 and futures[2].result(5) == 3
    with pytest.raises(ValueError, match="bad chunk"):
        futures[1].result(5)
    assert gathered.sizes == [3]
    queue.close()
