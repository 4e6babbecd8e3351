"""gateway/sessions/control.py: who drives a session from outside, and what answers an input (pure)."""

from __future__ import annotations

from gateway.sessions.control import ControlSeat, is_answer, refusal_status


class Agent:
    def send(self, event: dict) -> None: ...

    def end(self, reason: str, code: int = 1000) -> None: ...


def test_a_second_controller_takes_over_and_only_the_driver_leaving_counts() -> None:
    seat, first, second = ControlSeat(), Agent(), Agent()
    assert seat.attach(first) is None and seat.current is first
    assert seat.attach(second) is first and seat.current is second
    assert seat.detach(first) is False and seat.current is second  # the replaced one leaving stops nothing
    assert seat.detach(second) is True and seat.current is None
    assert seat.detach(second) is False


def test_attaching_the_same_controller_twice_replaces_nobody() -> None:
    seat, agent = ControlSeat(), Agent()
    seat.attach(agent)
    assert seat.attach(agent) is None


def test_what_answers_an_input() -> None:
    assert is_answer({"type": "error", "code": "text_too_long", "message": "..."})
    assert is_answer({"type": "cancelled", "utterance": "u1"})
    assert not is_answer({"type": "error", "code": "engine_error", "message": "...", "utterance": "u1"})  # later
    assert not is_answer({"type": "chunk", "utterance": "u1"})
    assert not is_answer({"type": "done", "utterance": "u1"})


def test_refusals_as_http_statuses() -> None:
    assert refusal_status("too_many_utterances") == 429
    assert refusal_status("engine_unavailable") == 503
    assert refusal_status("text_too_long") == 413
    assert refusal_status("bad_message") == 400
