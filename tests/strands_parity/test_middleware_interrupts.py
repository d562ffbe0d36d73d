"""Port of Strands 1.62 ``tests/strands/middleware/test_middleware_interrupts.py``.

Strands Agents is Apache-2.0; this is a rewrite of its test scenarios in stageware's idiom,
not a copy. Strands runs ``Agent(model=MockedModelProvider([...]), tools=[calculator])``
synchronously and resumes with ``agent([{"interruptResponse": ...}])``; the port runs
``stageware.Agent`` on a ``ScriptedModel`` with ``await agent.invoke_async(...)`` (resumes
alike), on asyncio and trio. Strands' private ``agent._interrupt_state.interrupts`` is read
as the public ``agent.pending_interrupts``; its private ``_resolve_middleware_interrupt``
and ``AgentStreamContext._interrupt_id`` are exercised through the public contexts
(``from_host(interrupts=...)`` and ``interrupt()``). A tool whose ``stream`` Strands replaces
by hand is a ``PlainTool``; ``MockHookProvider`` is a hook on ``LifecycleEvent``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest

from stageware import (
    AfterToolCallEvent,
    Agent,
    AgentResultEvent,
    AgentStreamContext,
    BeforeToolCallEvent,
    CancelToken,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolStage,
    FunctionTool,
    Interrupt,
    InterruptException,
    MiddlewareInterruptResult,
    ScriptedModel,
    ScriptedTurn,
    ToolContext,
    ToolInterruptEvent,
    ToolResultEvent,
    ToolUse,
    tool,
)
from tests.host.agent_helpers import PlainTool

from .support import answer, record_lifecycle, tool_turn

pytestmark = pytest.mark.anyio


def make_calculator(calls: list[str] | None = None) -> FunctionTool[[str], str]:
    @tool(name="calculator")
    def calculator(expression: str) -> str:
        """Evaluate a sum such as 2+2.

        Args:
            expression: Integers joined by '+'.
        """
        if calls is not None:
            calls.append(expression)
        return str(sum(int(term) for term in expression.split("+")))

    return calculator


@pytest.fixture
def calculator_tool() -> FunctionTool[[str], str]:
    return make_calculator()


def tool_use_model(*responses_after_tool: str | ScriptedTurn) -> ScriptedModel:
    """A model that calls the calculator once, then plays *responses_after_tool*."""
    return ScriptedModel(
        [tool_turn("calculator", {"expression": "2+2"}, "tool_1"), *responses_after_tool]
    )


@pytest.fixture
def agent(calculator_tool: FunctionTool[[str], str]) -> Agent:
    return Agent(tool_use_model("The answer is 4."), tools=[calculator_tool])


async def gate(
    context: ExecuteToolContext, next_fn: ExecuteToolNext
) -> AsyncIterator[ExecuteToolEvent]:
    context.interrupt("gate", reason="check")
    async for event in next_fn(context):
        yield event


async def test_middleware_interrupt_halts_agent(agent: Agent) -> None:
    """context.interrupt() raises InterruptException and halts the run."""

    async def approval_gate(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        context.interrupt("approve_calc", reason="Confirm calculation?")
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, approval_gate)
    result = await agent.invoke_async("what is 2+2?")

    assert result.stop_reason == "interrupt"
    assert len(result.interrupts) == 1
    assert result.interrupts[0].name == "approve_calc"
    assert result.interrupts[0].reason == "Confirm calculation?"


async def test_middleware_interrupt_resumes_with_response(
    calculator_tool: FunctionTool[[str], str],
) -> None:
    """Once answered, interrupt() returns the response and execution continues."""
    agent = Agent(tool_use_model("The answer is 4.", "The answer is 4."), tools=[calculator_tool])
    received: list[Any] = []

    async def approval_gate(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        received.append(context.interrupt("approve_calc", reason="Confirm?").response)
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, approval_gate)

    result = await agent.invoke_async("what is 2+2?")
    assert result.stop_reason == "interrupt"

    await agent.invoke_async(answer(result.interrupts[0].id, "yes"))
    assert received == ["yes"]


async def test_middleware_interrupt_returns_middleware_interrupt_result(
    calculator_tool: FunctionTool[[str], str],
) -> None:
    """interrupt() returns a MiddlewareInterruptResult on resume."""
    agent = Agent(tool_use_model("4", "4"), tools=[calculator_tool])
    returned: list[object] = []

    async def result_gate(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        returned.append(context.interrupt("gate", reason="check"))
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, result_gate)

    result = await agent.invoke_async("calc")
    assert result.stop_reason == "interrupt"

    await agent.invoke_async(answer(result.interrupts[0].id, "ok"))
    assert [type(value) for value in returned] == [MiddlewareInterruptResult]


async def test_middleware_interrupt_with_preemptive_response(agent: Agent) -> None:
    """A preemptive response skips the interrupt entirely."""
    skipped: list[bool] = []

    async def gate_with_default(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        outcome = context.interrupt("gate", reason="check", response="pre-approved")
        skipped.append(outcome.response == "pre-approved")
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, gate_with_default)
    result = await agent.invoke_async("what is 2+2?")

    assert result.stop_reason == "end_turn"
    assert skipped == [True]


async def test_middleware_interrupt_short_circuits_tool_execution() -> None:
    """When middleware interrupts, the tool does not run."""
    tool_executed: list[bool] = []

    @tool
    def tracked_tool() -> str:
        """Record that it ran."""
        tool_executed.append(True)
        return "done"

    agent = Agent(ScriptedModel([tool_turn("tracked_tool", {}, "t1"), "ok"]), tools=[tracked_tool])

    async def blocker(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        context.interrupt("block", reason="nope")
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, blocker)
    result = await agent.invoke_async("do it")

    assert result.stop_reason == "interrupt"
    assert not tool_executed


async def test_middleware_interrupt_id_is_deterministic(agent: Agent) -> None:
    """The interrupt id is namespaced by the toolUseId."""

    async def my_gate(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        context.interrupt("my_gate", reason="check")
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, my_gate)

    result = await agent.invoke_async("what is 2+2?")
    assert result.interrupts[0].id.startswith("v2:middleware_execute_tool:agent:tool_1:")


async def test_middleware_interrupt_registered_in_state(
    calculator_tool: FunctionTool[[str], str],
) -> None:
    """A middleware interrupt is registered in the agent's interrupt state."""
    agent = Agent(tool_use_model("4"), tools=[calculator_tool])

    async def blocker(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        context.interrupt("gate", reason="confirm")
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, blocker)

    result = await agent.invoke_async("calc")
    assert result.stop_reason == "interrupt"
    assert len(agent.pending_interrupts) == 1


async def test_context_replace_preserves_interrupt(
    calculator_tool: FunctionTool[[str], str],
) -> None:
    """dataclasses.replace() on ExecuteToolContext keeps interrupt() working."""
    agent = Agent(tool_use_model("4", "4"), tools=[calculator_tool])
    interrupt_worked: list[bool] = []

    async def replace_then_interrupt(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        new_context = dataclasses.replace(
            context, tool_use={**context.tool_use, "input": {"expression": "3+3"}}
        )
        # interrupt() still works on the replaced context: it carries the interrupt state.
        new_context.interrupt("gate", reason="check")
        interrupt_worked.append(True)
        async for event in next_fn(new_context):
            yield event

    agent.add_middleware(ExecuteToolStage, replace_then_interrupt)

    result = await agent.invoke_async("calc")
    assert result.stop_reason == "interrupt"
    assert not interrupt_worked

    await agent.invoke_async(answer(result.interrupts[0].id, "yes"))
    assert interrupt_worked


async def approval_gate_denying(
    context: ExecuteToolContext, next_fn: ExecuteToolNext
) -> AsyncIterator[ExecuteToolEvent]:
    if context.interrupt("approve", reason="Allow?").response != "yes":
        yield ToolResultEvent(
            {
                "toolUseId": context.tool_use["toolUseId"],
                "status": "error",
                "content": [{"text": "Denied by middleware"}],
            }
        )
        return
    async for event in next_fn(context):
        yield event


async def test_middleware_interrupt_denial_returns_error_result() -> None:
    """Middleware can deny the call based on the interrupt response."""
    calls: list[str] = []
    agent = Agent(tool_use_model("denied", "denied"), tools=[make_calculator(calls)])
    agent.add_middleware(ExecuteToolStage, approval_gate_denying)

    result = await agent.invoke_async("calc")
    assert result.stop_reason == "interrupt"

    await agent.invoke_async(answer(result.interrupts[0].id, "no"))
    assert not calls


async def test_middleware_interrupt_approval_executes_tool() -> None:
    """When middleware gets an approval, the tool actually runs."""
    calls: list[str] = []
    agent = Agent(tool_use_model("4", "4"), tools=[make_calculator(calls)])
    agent.add_middleware(ExecuteToolStage, approval_gate_denying)

    result = await agent.invoke_async("calc")
    assert result.stop_reason == "interrupt"

    await agent.invoke_async(answer(result.interrupts[0].id, "yes"))
    assert calls == ["2+2"]


async def test_middleware_interrupt_yields_interrupt_event_on_stream(
    calculator_tool: FunctionTool[[str], str],
) -> None:
    """The stream surfaces the interrupt as a named ToolInterruptEvent, then an interrupt stop."""
    agent = Agent(tool_use_model("4"), tools=[calculator_tool])
    agent.add_middleware(ExecuteToolStage, gate)

    events: list[object] = []
    async for event in agent.stream_async("calc"):
        events.append(event)

    interrupt_events = [event for event in events if isinstance(event, ToolInterruptEvent)]
    assert len(interrupt_events) == 1
    assert [interrupt.name for interrupt in interrupt_events[0].interrupts] == ["gate"]

    result_events = [event for event in events if isinstance(event, AgentResultEvent)]
    assert any(event.result.stop_reason == "interrupt" for event in result_events)


# --- tool-originated interrupts through the middleware chain ---


async def test_tool_originated_interrupt_flows_through_chain() -> None:
    """A ToolInterruptEvent from the tool halts the agent even with middleware present."""

    @tool
    def interrupting_tool(tool_context: ToolContext) -> Any:
        """Interrupt on the first call."""
        return tool_context.interrupt("confirm", reason="approve?")

    agent = Agent(
        ScriptedModel([tool_turn("interrupting_tool", {}, "t1"), "done"]), tools=[interrupting_tool]
    )
    saw_interrupt_event: list[bool] = []

    async def observer(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(context):
            if isinstance(event, ToolInterruptEvent):
                saw_interrupt_event.append(True)
            yield event

    agent.add_middleware(ExecuteToolStage, observer)
    result = await agent.invoke_async("go")

    assert result.stop_reason == "interrupt"
    assert saw_interrupt_event
    assert len(result.interrupts) == 1
    assert result.interrupts[0].name == "confirm"


async def test_tool_originated_multiple_interrupts_all_registered() -> None:
    """One ToolInterruptEvent carrying several interrupts registers and surfaces them all."""
    interrupts = [
        Interrupt(id="v1:sub:a", name="first", reason="r1"),
        Interrupt(id="v1:sub:b", name="second", reason="r2"),
    ]

    async def multi_stream(
        tool_use: ToolUse, context: ToolContext
    ) -> AsyncIterator[ExecuteToolEvent]:
        yield ToolInterruptEvent(tool_use, interrupts)

    multi_tool = PlainTool("multi_tool", multi_stream)
    agent = Agent(ScriptedModel([tool_turn("multi_tool", {}, "t1"), "done"]), tools=[multi_tool])

    async def passthrough(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, passthrough)
    result = await agent.invoke_async("go")

    assert result.stop_reason == "interrupt"
    assert {interrupt.name for interrupt in result.interrupts} == {"first", "second"}
    assert {"v1:sub:a", "v1:sub:b"} <= {interrupt.id for interrupt in agent.pending_interrupts}


# --- hook interaction on interrupt ---


async def test_before_hook_fires_but_after_hook_skipped_on_interrupt(
    calculator_tool: FunctionTool[[str], str],
) -> None:
    """On a middleware interrupt, BeforeToolCallEvent fires but AfterToolCallEvent does not."""
    agent = Agent(tool_use_model("4"), tools=[calculator_tool])
    events = record_lifecycle(agent)
    agent.add_middleware(ExecuteToolStage, gate)

    result = await agent.invoke_async("calc")

    assert result.stop_reason == "interrupt"
    assert any(isinstance(event, BeforeToolCallEvent) for event in events)
    assert not any(isinstance(event, AfterToolCallEvent) for event in events)


# --- interrupt resolution precedence ---


def interrupt_id_of(context: ExecuteToolContext | AgentStreamContext, name: str) -> str:
    """The id ``context.interrupt(name)`` raises with, read from the exception."""
    try:
        context.interrupt(name)
    except InterruptException as pending:
        return pending.interrupt.id
    raise AssertionError("interrupt() did not raise")


def test_stored_human_response_takes_precedence_over_preemptive() -> None:
    """A stored human response wins over a middleware's preemptive response=."""
    agent = Agent(ScriptedModel([]))
    tool_use: ToolUse = {"toolUseId": "tool_1", "name": "calculator", "input": {}}
    fresh = ExecuteToolContext.from_host(
        agent=agent, tool=None, tool_use=tool_use, invocation_state={}, cancel_signal=CancelToken()
    )
    interrupt_id = interrupt_id_of(fresh, "gate")
    resumed = ExecuteToolContext.from_host(
        agent=agent,
        tool=None,
        tool_use=tool_use,
        invocation_state={},
        cancel_signal=CancelToken(),
        interrupts={interrupt_id: Interrupt(id=interrupt_id, name="gate", response="DENIED")},
    )

    result = resumed.interrupt("gate", response="auto-approve")

    assert result == MiddlewareInterruptResult(response="DENIED")


# --- AgentStreamContext interrupt coverage ---


def test_agent_stream_context_interrupt_id_and_resolution() -> None:
    """AgentStreamContext.interrupt raises, resolves, and has a stable namespaced id."""
    agent = Agent(ScriptedModel([]))
    ctx = AgentStreamContext.from_host(agent=agent, messages=[], invocation_state={})

    interrupt_id = interrupt_id_of(ctx, "gate")
    assert interrupt_id.startswith("v2:middleware_agent_stream:agent:")
    assert interrupt_id == interrupt_id_of(ctx, "gate")

    with pytest.raises(InterruptException):
        ctx.interrupt("gate")

    resumed = AgentStreamContext.from_host(
        agent=agent,
        messages=[],
        invocation_state={},
        interrupts={interrupt_id: Interrupt(id=interrupt_id, name="gate", response="ok")},
    )
    assert resumed.interrupt("gate") == MiddlewareInterruptResult(response="ok")
