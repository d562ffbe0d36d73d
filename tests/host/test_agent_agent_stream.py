"""The AgentStream stage, end to end: input appended first, short-circuits, the stop event."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest

from stageware import (
    AfterInvocationEvent,
    Agent,
    AgentResult,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamResult,
    AgentStreamStage,
    BeforeInvocationEvent,
    EventLoopStopEvent,
    InvokeModelContext,
    InvokeModelStage,
    Message,
    MessageAddedEvent,
    ModelMessageEvent,
    ScriptedModel,
    ToolContext,
    tool,
)

from .agent_helpers import calls, collect, texts


@pytest.mark.anyio
async def test_the_input_is_in_the_history_and_announced_before_the_chain_runs() -> None:
    model = ScriptedModel(["ok"])
    agent = Agent(model)
    log: list[str] = []
    agent.add_hook(lambda e: log.append(f"added:{e.message['role']}"), MessageAddedEvent)
    agent.add_hook(lambda e: log.append("before-invocation"), BeforeInvocationEvent)
    shared: list[bool] = []

    def observe(ctx: AgentStreamContext) -> AgentStreamContext:
        log.append("chain")
        assert texts(agent.messages[-1]) == ["hello"]
        # The context's messages are the very dicts in the history.
        shared.append(ctx.messages[0] is agent.messages[-1])
        return ctx

    agent.add_middleware(AgentStreamStage.Input, observe)
    await agent.invoke_async("hello")

    assert log == ["before-invocation", "added:user", "chain", "added:assistant"]
    assert shared == [True]


@pytest.mark.anyio
async def test_a_short_circuit_still_records_the_input_and_fires_the_hooks() -> None:
    model = ScriptedModel([])
    agent = Agent(model)
    added: list[Message] = []
    results: list[AgentResult | None] = []
    agent.add_hook(lambda e: added.append(e.message), MessageAddedEvent)
    agent.add_hook(lambda e: results.append(e.result), AfterInvocationEvent)
    canned: Message = {"role": "assistant", "content": [{"text": "Closed for maintenance."}]}

    async def maintenance(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        yield EventLoopStopEvent(
            stop_reason="end_turn",
            message=canned,
            metrics={"latencyMs": 0},
            request_state={"short": True},
        )

    agent.add_middleware(AgentStreamStage, maintenance)
    result = await agent.invoke_async("help")

    assert model.requests == []
    assert result.stop_reason == "end_turn"
    assert result.message == canned
    assert result.state == {"short": True}
    assert agent.messages == [{"role": "user", "content": [{"text": "help"}]}]
    assert added == [{"role": "user", "content": [{"text": "help"}]}]
    assert results == [result]


@pytest.mark.anyio
async def test_mutating_the_input_in_place_reaches_the_model() -> None:
    model = ScriptedModel(["ok"])
    agent = Agent(model)

    def rewrite(ctx: AgentStreamContext) -> AgentStreamContext:
        ctx.messages[0]["content"] = [{"text": "rewritten in place"}]
        return ctx

    agent.add_middleware(AgentStreamStage.Input, rewrite)
    await agent.invoke_async("original")

    assert texts(model.requests[0].messages[0]) == ["rewritten in place"]
    assert texts(agent.messages[0]) == ["rewritten in place"]


@pytest.mark.anyio
async def test_replacing_the_messages_is_a_clear_error_not_silently_dropped() -> None:
    model = ScriptedModel(["ok"])
    agent = Agent(model)

    def replace_messages(ctx: AgentStreamContext) -> AgentStreamContext:
        return dataclasses.replace(
            ctx, messages=[{"role": "user", "content": [{"text": "never seen"}]}]
        )

    agent.add_middleware(AgentStreamStage.Input, replace_messages)

    with pytest.raises(RuntimeError, match="messages"):
        await agent.invoke_async("original")
    assert model.requests == []


def test_the_typed_replace_cannot_set_the_messages() -> None:
    ctx = AgentStreamContext.from_host(
        agent=Agent(ScriptedModel([])), messages=[], invocation_state={}
    )
    replace: Any = ctx.replace
    with pytest.raises(TypeError):
        replace(messages=[])


@pytest.mark.anyio
async def test_a_replaced_invocation_state_reaches_the_model_stage_and_the_tools() -> None:
    tool_states: list[dict[str, Any]] = []
    model_states: list[dict[str, Any]] = []

    @tool
    def peek(context: ToolContext) -> str:
        """Look at the invocation state."""
        tool_states.append(context.invocation_state)
        return "ok"

    model = ScriptedModel([calls(("peek", {}, "t1")), "done"])
    agent = Agent(model, tools=[peek])
    replacement: dict[str, Any] = {"request_state": {"trace": "abc"}}

    def swap(ctx: AgentStreamContext) -> AgentStreamContext:
        return ctx.replace(invocation_state=replacement)

    def observe(ctx: InvokeModelContext) -> InvokeModelContext:
        model_states.append(ctx.invocation_state)
        return ctx

    agent.add_middleware(AgentStreamStage.Input, swap)
    agent.add_middleware(InvokeModelStage.Input, observe)
    result = await agent.invoke_async("go", invocation_state={"request_state": {"trace": "x"}})

    assert [s is replacement for s in model_states] == [True, True]
    assert [s is replacement for s in tool_states] == [True]
    assert result.state == {"trace": "abc"}


@pytest.mark.anyio
async def test_the_result_comes_from_the_last_stop_event_even_with_trailing_events() -> None:
    model = ScriptedModel(["model answer"])
    agent = Agent(model)
    trailer = ModelMessageEvent(message={"role": "assistant", "content": [{"text": "trailer"}]})

    async def restate(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(ctx):
            yield event
            if isinstance(event, EventLoopStopEvent):
                yield dataclasses.replace(
                    event,
                    stop_reason="max_tokens",
                    message={"role": "assistant", "content": [{"text": "restated"}]},
                )
        yield trailer

    agent.add_middleware(AgentStreamStage, restate)
    events, result = await collect(agent, "hi")

    assert result.stop_reason == "max_tokens"
    assert result.text == "restated"
    assert events[-1] is trailer
    assert sum(isinstance(e, EventLoopStopEvent) for e in events) == 2


@pytest.mark.anyio
async def test_a_dropped_stop_event_raises() -> None:
    model = ScriptedModel(["answer"])
    agent = Agent(model)
    results: list[AgentResult | None] = []
    agent.add_hook(lambda e: results.append(e.result), AfterInvocationEvent)

    async def drop(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(ctx):
            if not isinstance(event, EventLoopStopEvent):
                yield event

    agent.add_middleware(AgentStreamStage, drop)

    with pytest.raises(RuntimeError, match="EventLoopStopEvent"):
        async for _ in agent.stream_async("hi"):
            pass
    assert results == [None]


@pytest.mark.anyio
async def test_an_output_handler_replaces_the_stop_event() -> None:
    model = ScriptedModel(["raw answer"])
    agent = Agent(model)

    def annotate(result: AgentStreamResult) -> AgentStreamResult:
        stop = result.result
        return result.replace(result=dataclasses.replace(stop, request_state={"annotated": True}))

    agent.add_middleware(AgentStreamStage.Output, annotate)
    result = await agent.invoke_async("hi")

    assert result.state == {"annotated": True}
    assert result.text == "raw answer"
