"""Middleware interrupts: deterministic ids, read-only resolution, stored answers win."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from stageware import (
    AgentStreamContext,
    ExecuteToolContext,
    Interrupt,
    InterruptException,
    MiddlewareInterruptResult,
)
from stageware.runtime import CallInterrupts, resolve_middleware_interrupt


class _Agent:
    name = "tester"
    agent_id = "tester"


def _tool_context(interrupts: Mapping[str, Interrupt] | None = None) -> ExecuteToolContext:
    return ExecuteToolContext.from_host(
        agent=_Agent(),
        tool=None,
        tool_use={"toolUseId": "tooluse_42", "name": "refund", "input": {"amount": 500}},
        invocation_state={},
        cancel_signal=anyio.Event(),
        interrupts=interrupts,
    )


def _stream_context(interrupts: Mapping[str, Interrupt] | None = None) -> AgentStreamContext:
    return AgentStreamContext.from_host(
        agent=_Agent(), messages=[], invocation_state={}, interrupts=interrupts
    )


TOOL_ID = (
    f"v2:middleware_execute_tool:tester:tooluse_42:{uuid.uuid5(uuid.NAMESPACE_OID, 'approve')}"
)
STREAM_ID = f"v2:middleware_agent_stream:tester:{uuid.uuid5(uuid.NAMESPACE_OID, 'gate')}"


def test_a_first_call_raises_with_the_deterministic_tool_id() -> None:
    with pytest.raises(InterruptException) as info:
        _tool_context().interrupt("approve", reason={"amount": 500})

    assert info.value.interrupt == Interrupt(id=TOOL_ID, name="approve", reason={"amount": 500})


def test_a_first_call_raises_with_the_deterministic_agent_stream_id() -> None:
    with pytest.raises(InterruptException) as info:
        _stream_context().interrupt("gate")

    assert info.value.interrupt.id == STREAM_ID


def test_a_resumed_context_returns_the_stored_answer() -> None:
    answered = {TOOL_ID: Interrupt(id=TOOL_ID, name="approve", response="yes")}

    assert _tool_context(answered).interrupt("approve") == MiddlewareInterruptResult(response="yes")


def test_a_stored_answer_beats_a_preemptive_response() -> None:
    answered = {STREAM_ID: Interrupt(id=STREAM_ID, name="gate", response="DENIED")}

    result = _stream_context(answered).interrupt("gate", response="auto-approve")

    assert result == MiddlewareInterruptResult(response="DENIED")


def test_a_preemptive_response_skips_the_interrupt() -> None:
    assert _tool_context().interrupt("approve", response=True) == MiddlewareInterruptResult(
        response=True
    )


def test_a_falsy_answer_is_still_an_answer() -> None:
    answered = {TOOL_ID: Interrupt(id=TOOL_ID, name="approve", response=False)}

    assert _tool_context(answered).interrupt("approve") == MiddlewareInterruptResult(response=False)


def test_an_unanswered_stored_interrupt_raises_again() -> None:
    pending = {TOOL_ID: Interrupt(id=TOOL_ID, name="approve", reason="first ask")}

    with pytest.raises(InterruptException):
        _tool_context(pending).interrupt("approve", reason="second ask")


def test_interrupt_is_read_only() -> None:
    interrupts: dict[str, Interrupt] = {}
    context = _tool_context(interrupts)

    with pytest.raises(InterruptException):
        context.interrupt("approve")

    assert interrupts == {}


def test_the_id_is_scoped_to_the_tool_call_and_the_name() -> None:
    other_call = ExecuteToolContext.from_host(
        agent=_Agent(),
        tool=None,
        tool_use={"toolUseId": "tooluse_43", "name": "refund", "input": {}},
        invocation_state={},
        cancel_signal=anyio.Event(),
    )
    ids: set[str] = set()
    for context, name in [
        (_tool_context(), "approve"),
        (other_call, "approve"),
        (_tool_context(), "audit"),
    ]:
        with pytest.raises(InterruptException) as info:
            context.interrupt(name)
        ids.add(info.value.interrupt.id)

    assert len(ids) == 3


def test_replace_carries_the_interrupt_answers_over() -> None:
    answered: Any = {TOOL_ID: Interrupt(id=TOOL_ID, name="approve", response="ok")}

    replaced = _tool_context(answered).replace(invocation_state={"new": True})

    assert replaced.interrupt("approve").response == "ok"


def test_the_context_record_keeps_the_first_interrupt_raised_and_only_that() -> None:
    context = _tool_context()
    record = context._interrupts
    assert record.raised is None

    with pytest.raises(InterruptException) as first:
        context.interrupt("approve")
    with pytest.raises(InterruptException):
        context.interrupt("audit")

    assert record.raised is first.value


def test_answers_and_preemptive_responses_record_nothing() -> None:
    answered = {TOOL_ID: Interrupt(id=TOOL_ID, name="approve", response="yes")}
    context = _tool_context(answered)

    assert context.interrupt("approve").response == "yes"
    assert context.interrupt("audit", response="auto").response == "auto"
    assert context._interrupts.raised is None


def test_a_plain_mapping_of_answers_records_nothing() -> None:
    # What hosts pass for their own interrupt() (tool and hook contexts): read, never written.
    answers: dict[str, Interrupt] = {}

    with pytest.raises(InterruptException):
        resolve_middleware_interrupt(answers, TOOL_ID, "approve", None, None)

    assert answers == {}


def test_the_record_is_a_read_only_snapshot_of_the_answers() -> None:
    answers = {TOOL_ID: Interrupt(id=TOOL_ID, name="approve", response="yes")}
    record = CallInterrupts(answers)
    answers.clear()

    assert dict(record) == {TOOL_ID: Interrupt(id=TOOL_ID, name="approve", response="yes")}
    assert len(CallInterrupts()) == 0
    assert "raised=None" in repr(record)
