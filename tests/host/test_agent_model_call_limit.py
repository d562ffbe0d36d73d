"""The invocation limit on model calls: ``Agent(max_model_calls=...)``.

A model that calls a tool for ever ends with ``stop_reason="limit_model_calls"`` instead
of looping; the history it leaves is complete and valid for the next call.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from stageware import (
    AfterModelCallEvent,
    Agent,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamStage,
    EventLoopStopEvent,
    ModelRequest,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    tool,
)

from .agent_helpers import collect, texts, tool_results
from .converse_history import assert_valid_converse

pytestmark = pytest.mark.anyio

runs: list[str] = []


@tool
async def again() -> str:
    """Report that there is more to do."""
    runs.append("again")
    return "call me again"


def forever(request: ModelRequest) -> ScriptedTurn:
    """A model turn that always asks for the tool, with a fresh id each time."""
    return ScriptedTurn(tool_calls=[ScriptedToolCall("again", id=f"t{len(request.messages)}")])


def looping_model(calls: int, *then: str) -> ScriptedModel:
    return ScriptedModel([*[forever] * calls, *then])


@pytest.fixture(autouse=True)
def _clear_runs() -> None:
    runs.clear()


async def test_a_tool_loop_stops_at_the_limit_with_a_clear_stop_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = looping_model(10)
    agent = Agent(model, tools=[again], max_model_calls=3)

    with caplog.at_level(logging.WARNING):
        result = await agent.invoke_async("loop")

    assert result.stop_reason == "limit_model_calls"
    assert result.metrics.model_calls == 3
    assert result.metrics.cycles == 3
    assert len(model.requests) == 3
    assert runs == ["again"] * 3
    # Every tool call has its result: the history ends on the last round's results,
    # which is also the result's message (the last message of the history, as Strands
    # 1.62 reports its limits).
    assert_valid_converse(agent.messages)
    assert result.message == agent.messages[-1]
    assert [r["toolUseId"] for r in tool_results(result.message)] == ["t5"]
    assert "max_model_calls" in caplog.text


async def test_the_next_call_continues_on_a_valid_history_with_a_fresh_budget() -> None:
    model = looping_model(2, "finally done")
    agent = Agent(model, tools=[again], max_model_calls=2)
    assert (await agent.invoke_async("loop")).stop_reason == "limit_model_calls"

    result = await agent.invoke_async("please finish")

    assert result.stop_reason == "end_turn"
    assert result.text == "finally done"
    assert result.metrics.model_calls == 1
    sent = model.requests[-1].messages
    assert_valid_converse(sent)
    # The new prompt joins the last round's results in one user turn.
    assert [r["toolUseId"] for r in tool_results(sent[-1])] == ["t3"]
    assert texts(sent[-1]) == ["please finish"]


async def test_calling_again_with_no_prompt_continues_the_work() -> None:
    model = looping_model(2, "finished")
    agent = Agent(model, tools=[again], max_model_calls=2)
    await agent.invoke_async("loop")

    result = await agent.invoke_async()

    assert result.text == "finished"
    assert_valid_converse(model.requests[-1].messages)


async def test_the_default_limit_is_fifty_calls() -> None:
    model = looping_model(60)
    agent = Agent(model, tools=[again])

    result = await agent.invoke_async("loop")

    assert agent.max_model_calls == 50
    assert result.stop_reason == "limit_model_calls"
    assert len(model.requests) == 50


async def test_none_means_no_limit() -> None:
    model = looping_model(60, "done at last")
    agent = Agent(model, tools=[again], max_model_calls=None)

    result = await agent.invoke_async("loop")

    assert result.stop_reason == "end_turn"
    assert len(model.requests) == 61


async def test_a_retry_counts_and_is_refused_past_the_limit() -> None:
    model = ScriptedModel(["first", "second", "third"])
    agent = Agent(model, max_model_calls=2)
    retried: list[int] = []

    def retry_always(event: AfterModelCallEvent) -> None:
        retried.append(1)
        event.retry = True

    agent.add_hook(retry_always, AfterModelCallEvent)

    result = await agent.invoke_async("hi")

    assert result.stop_reason == "limit_model_calls"
    assert result.metrics.model_calls == 2
    assert len(model.requests) == 2
    # The retried answers never entered the history; the prompt is what is left.
    assert agent.messages == [{"role": "user", "content": [{"text": "hi"}]}]
    assert result.message == agent.messages[-1]


async def test_agent_stream_middleware_sees_the_limit_stop() -> None:
    seen: list[str] = []

    async def observe(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(context):
            if isinstance(event, EventLoopStopEvent):
                seen.append(event.stop_reason)
            yield event

    agent = Agent(looping_model(5), tools=[again], max_model_calls=1)
    agent.add_middleware(AgentStreamStage.Wrap, observe)

    _, result = await collect(agent, "loop")

    assert seen == ["limit_model_calls"]
    assert result.stop_reason == "limit_model_calls"


async def test_the_limit_can_be_changed_between_invocations() -> None:
    model = looping_model(5, "done")
    agent = Agent(model, tools=[again], max_model_calls=1)
    assert (await agent.invoke_async("loop")).metrics.model_calls == 1

    agent.max_model_calls = 2
    result = await agent.invoke_async("more")

    assert result.metrics.model_calls == 2


@pytest.mark.parametrize("bad", [0, -3])
def test_a_limit_below_one_is_a_value_error(bad: int) -> None:
    with pytest.raises(ValueError, match="max_model_calls must be at least 1"):
        Agent(ScriptedModel([]), max_model_calls=bad)


@pytest.mark.parametrize("bad", ["50", 5.0, True])
def test_a_limit_that_is_not_an_int_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match="max_model_calls must be a positive int or None"):
        Agent(ScriptedModel([]), max_model_calls=bad)  # type: ignore[arg-type] # pyright: ignore[reportArgumentType]


def test_the_setter_checks_too() -> None:
    agent = Agent(ScriptedModel([]))

    with pytest.raises(ValueError, match="max_model_calls"):
        agent.max_model_calls = 0
    with pytest.raises(TypeError, match="max_model_calls"):
        agent.max_model_calls = "3"  # type: ignore[assignment] # pyright: ignore[reportAttributeAccessIssue]
    assert agent.max_model_calls == 50
