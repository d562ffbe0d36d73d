"""An answer is final: ``InterruptState.resume``, the one place every path records answers.

The policy layer's approvals go through it with their check (``tests/policy``); these are
the host's own interrupts, whose answers are any JSON data: the same answer again is a
no-op, a different one is refused, and a refused resume stores none of its answers.
"""

from __future__ import annotations

import pytest

from stageware._host._interrupt_state import InterruptAnsweredError, InterruptState
from stageware._runtime import Interrupt


def _waiting(*ids: str) -> InterruptState:
    state = InterruptState()
    for interrupt_id in ids:
        state.register(Interrupt(id=interrupt_id, name="gate", reason="approve?"))
    state.activate()
    return state


def test_the_same_answer_again_changes_nothing() -> None:
    state = _waiting("a")
    assert state.resume([("a", {"ok": True})]) == ["a"]

    assert state.resume([("a", {"ok": True})]) == []
    assert state.interrupts["a"].response == {"ok": True}


def test_a_different_answer_is_refused_and_stores_nothing_of_its_resume() -> None:
    state = _waiting("a", "b")
    state.resume([("a", "approved")])

    with pytest.raises(InterruptAnsweredError) as refused:
        state.resume([("b", "approved"), ("a", "denied")])

    assert str(refused.value) == (
        "interrupt 'a' was already answered 'approved'; an answer is final, so a different "
        "one is refused and nothing ran"
    )
    assert state.interrupts["a"].response == "approved"
    assert state.interrupts["b"].response is None  # all or nothing


def test_the_cycle_counter_is_kept_with_the_session_and_defaults_for_old_ones() -> None:
    state = _waiting("a")
    state.end_interrupt_cycle()
    state.end_interrupt_cycle()
    assert state.cycle == 2

    assert InterruptState.from_dict(state.to_dict()).cycle == 2
    written_before = {k: v for k, v in state.to_dict().items() if k != "cycle"}
    assert InterruptState.from_dict(written_before).cycle == 0
