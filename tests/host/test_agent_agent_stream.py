"""The AgentStream stage, end to end: the terminal appends the input, short-circuits, the stop.

The input contract is Strands 1.62's: the pass's input enters the history inside the
AgentStream terminal, so a replaced input reaches the history and the model, and a
short-circuit appends nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
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
    Messages,
    ModelMessageEvent,
    ScriptedModel,
    ToolContext,
    tool,
)

from .agent_helpers import calls, collect, texts, tool_results


@pytest.mark.anyio
async def test_the_terminal_appends_the_input_and_announces_it_inside_the_chain() -> None:
    model = ScriptedModel(["ok"])
    agent = Agent(model)
    log: list[str] = []
    agent.add_hook(lambda e: log.append(f"added:{e.message['role']}"), MessageAddedEvent)
    agent.add_hook(lambda e: log.append("before-invocation"), BeforeInvocationEvent)
    contexts: list[AgentStreamContext] = []

    def observe(ctx: AgentStreamContext) -> AgentStreamContext:
        log.append(f"input-handler, history of {len(agent.messages)}")
        contexts.append(ctx)
        return ctx

    async def around(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        log.append("wrap, before next_fn")
        async for event in next_fn(ctx):
            yield event

    agent.add_middleware(AgentStreamStage.Input, observe)
    agent.add_middleware(AgentStreamStage.Wrap, around)
    await agent.invoke_async("hello")

    assert log == [
        "before-invocation",
        "input-handler, history of 0",
        "wrap, before next_fn",
        "added:user",
        "added:assistant",
    ]
    # The terminal appended the context's own messages.
    assert contexts[0].messages[0] is agent.messages[0]
    assert texts(agent.messages[0]) == ["hello"]


@pytest.mark.anyio
async def test_a_short_circuit_appends_nothing_but_the_invocation_hooks_fire() -> None:
    model = ScriptedModel(["back again"])
    agent = Agent(model)
    added: list[Message] = []
    results: list[AgentResult | None] = []
    agent.add_hook(lambda e: added.append(e.message), MessageAddedEvent)
    agent.add_hook(lambda e: results.append(e.result), AfterInvocationEvent)
    canned: Message = {"role": "assistant", "content": [{"text": "Closed for maintenance."}]}
    closed = [True]

    async def maintenance(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        if closed:
            yield EventLoopStopEvent(
                stop_reason="end_turn",
                message=canned,
                metrics={"latencyMs": 0},
                request_state={"short": True},
            )
            return
        async for event in next_fn(ctx):
            yield event

    agent.add_middleware(AgentStreamStage, maintenance)
    result = await agent.invoke_async("help")

    assert model.requests == []
    assert result.stop_reason == "end_turn"
    assert result.message == canned
    assert result.state == {"short": True}
    assert agent.messages == []
    assert added == []
    assert results == [result]

    # No user turn was left behind, so the next one does not follow another.
    closed.clear()
    await agent.invoke_async("help now")

    assert [(m["role"], texts(m)) for m in agent.messages] == [
        ("user", ["help now"]),
        ("assistant", ["back again"]),
    ]


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
@pytest.mark.parametrize("how", ["typed", "dataclasses"])
async def test_a_replaced_input_is_what_the_history_and_the_model_get(how: str) -> None:
    model = ScriptedModel(["ok"])
    agent = Agent(model)
    added: list[Message] = []
    agent.add_hook(lambda e: added.append(e.message), MessageAddedEvent)
    replacement: list[Message] = [
        {"role": "user", "content": [{"text": "Answer in French."}, {"text": "original"}]}
    ]

    def replace_messages(ctx: AgentStreamContext) -> AgentStreamContext:
        if how == "typed":
            return ctx.replace(messages=replacement)
        return dataclasses.replace(ctx, messages=replacement)

    agent.add_middleware(AgentStreamStage.Input, replace_messages)
    await agent.invoke_async("original")

    assert texts(model.requests[0].messages[0]) == ["Answer in French.", "original"]
    assert agent.messages[0] is replacement[0]
    assert added[0] is replacement[0]


@pytest.mark.anyio
async def test_the_input_the_chain_sees_is_a_copy_of_the_prompt() -> None:
    agent = Agent(ScriptedModel(["ok"]))
    prompt: list[Message] = [{"role": "user", "content": [{"text": "mine"}]}]

    def scribble(ctx: AgentStreamContext) -> AgentStreamContext:
        ctx.messages[0]["content"].append({"text": "added by middleware"})
        return ctx

    agent.add_middleware(AgentStreamStage.Input, scribble)
    await agent.invoke_async(prompt)

    assert prompt == [{"role": "user", "content": [{"text": "mine"}]}]
    assert texts(agent.messages[0]) == ["mine", "added by middleware"]


@pytest.mark.anyio
async def test_no_prompt_runs_the_model_on_the_history_as_it_is() -> None:
    model = ScriptedModel(["first", "second"])
    agent = Agent(model)
    inputs: list[Messages] = []

    def observe(ctx: AgentStreamContext) -> AgentStreamContext:
        inputs.append(ctx.messages)
        return ctx

    agent.add_middleware(AgentStreamStage.Input, observe)
    await agent.invoke_async("hi")
    result = await agent.invoke_async()

    assert inputs[1] == []
    assert result.text == "second"
    assert [m["role"] for m in model.requests[1].messages] == ["user", "assistant"]
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "assistant"]


@pytest.mark.anyio
async def test_results_for_unfinished_tool_calls_lead_a_replaced_input() -> None:
    model = ScriptedModel([calls(("noop", {}, "t1")), "fine"])
    never = anyio.Event()

    @tool
    async def noop() -> str:
        """Wait until the caller leaves."""
        await never.wait()
        return "unreachable"

    agent = Agent(model, tools=[noop])
    async with aclosing(agent.stream_async("start")) as stream:
        async for event in stream:
            if isinstance(event, ModelMessageEvent):
                break  # leaves the tool call without a result

    def replace_messages(ctx: AgentStreamContext) -> AgentStreamContext:
        return ctx.replace(messages=[{"role": "user", "content": [{"text": "replaced"}]}])

    agent.add_middleware(AgentStreamStage.Input, replace_messages)
    await agent.invoke_async("continue")

    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    follow_up = agent.messages[2]
    assert [r["toolUseId"] for r in tool_results(follow_up)] == ["t1"]
    assert texts(follow_up) == ["replaced"]


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
