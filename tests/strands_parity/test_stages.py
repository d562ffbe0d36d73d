"""Port of Strands 1.62 ``tests/strands/middleware/test_stages.py`` (the public stage contexts).

Strands Agents is Apache-2.0; this is a rewrite of its test scenarios in stageware's idiom,
not a copy. Strands builds the contexts directly around an ``Agent`` on a
``MockedModelProvider([])``; here they are built around an ``Agent`` on an empty
``ScriptedModel``, and Strands' private ``_InterruptState`` becomes the answered interrupts
a context is built with (``ExecuteToolContext.from_host(interrupts=...)``), observed through
``interrupt()`` rather than through a private attribute.
"""

from __future__ import annotations

import pytest

import stageware
from stageware import (
    Agent,
    CancelToken,
    ExecuteToolContext,
    Interrupt,
    InterruptException,
    InvokeModelContext,
    MiddlewareInterruptResult,
    ScriptedModel,
    ToolUse,
)


@pytest.fixture
def agent() -> Agent:
    return Agent(ScriptedModel([]))


@pytest.fixture
def invoke_context(agent: Agent) -> InvokeModelContext:
    return InvokeModelContext(
        agent=agent,
        messages=[{"role": "user", "content": [{"text": "hi"}]}],
        system_prompt="original",
        tool_specs=[],
        tool_choice=None,
        invocation_state={},
        model=agent.model,
    )


@pytest.fixture
def tool_context(agent: Agent) -> ExecuteToolContext:
    return ExecuteToolContext(
        agent=agent,
        tool=None,
        tool_use={"toolUseId": "t1", "name": "calc", "input": {"x": 1}},
        invocation_state={},
        cancel_signal=CancelToken(),
    )


def test_agent_stream_stage_is_not_exported() -> None:
    # Deliberate difference (issue 7): stageware exports AgentStreamStage (and its context)
    # publicly, where Strands keeps them internal.
    assert "AgentStreamStage" in stageware.__all__
    assert "AgentStreamContext" in stageware.__all__


def test_invoke_model_context_replace_changes_only_named_fields(
    invoke_context: InvokeModelContext,
) -> None:
    tru_context = invoke_context.replace(system_prompt="new", projected_input_tokens=10)

    exp_context = InvokeModelContext(
        agent=invoke_context.agent,
        messages=invoke_context.messages,
        system_prompt="new",
        tool_specs=invoke_context.tool_specs,
        tool_choice=None,
        invocation_state=invoke_context.invocation_state,
        model=invoke_context.model,
        projected_input_tokens=10,
    )
    assert tru_context == exp_context
    assert tru_context is not invoke_context
    assert tru_context.messages is invoke_context.messages
    assert invoke_context.system_prompt == "original"


def test_invoke_model_context_replace_honors_explicit_none(
    invoke_context: InvokeModelContext,
) -> None:
    tru_context = invoke_context.replace(system_prompt=None)

    assert tru_context.system_prompt is None


def test_invoke_model_context_replace_without_arguments_copies(
    invoke_context: InvokeModelContext,
) -> None:
    tru_context = invoke_context.replace()

    assert tru_context == invoke_context
    assert tru_context is not invoke_context


def test_execute_tool_context_replace_changes_tool_use(tool_context: ExecuteToolContext) -> None:
    tool_use: ToolUse = {"toolUseId": "t1", "name": "calc", "input": {"x": 2}}

    tru_context = tool_context.replace(tool_use=tool_use)

    assert tru_context.tool_use == tool_use
    assert tool_context.tool_use["input"] == {"x": 1}


def test_execute_tool_context_replace_carries_executor_owned_fields(agent: Agent) -> None:
    tool_use: ToolUse = {"toolUseId": "t1", "name": "calc", "input": {"x": 1}}
    gate = ExecuteToolContext.from_host(
        agent=agent,
        tool=None,
        tool_use={**tool_use},
        invocation_state={},
        cancel_signal=CancelToken(),
    )
    # The interrupt id a gate named "gate" gets on this call; answered in the captured state.
    try:
        gate.interrupt("gate")
    except InterruptException as pending:
        interrupt_id = pending.interrupt.id
    else:  # pragma: no cover - an unanswered gate always raises
        pytest.fail("interrupt() did not raise")
    tool_context = ExecuteToolContext.from_host(
        agent=agent,
        tool=None,
        tool_use={**tool_use},
        invocation_state={},
        cancel_signal=CancelToken(),
        interrupts={interrupt_id: Interrupt(id=interrupt_id, name="gate", response="ok")},
    )

    tru_context = tool_context.replace(tool_use={"toolUseId": "t1", "name": "calc", "input": {}})

    assert tru_context.agent is tool_context.agent
    assert tru_context.cancel_signal is tool_context.cancel_signal
    # Strands compares the private _interrupt_state; the observable equivalent is that the
    # replaced context still resolves the answer captured for the original one.
    assert tru_context.interrupt("gate") == MiddlewareInterruptResult(response="ok")
