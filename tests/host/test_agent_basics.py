"""Agent basics: results, history, prompts, streaming, metrics and the sync entry point."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
import pytest

from stageware import (
    AfterInvocationEvent,
    Agent,
    AgentResult,
    AgentStreamStage,
    ConcurrentInvocationError,
    EventLoopStopEvent,
    ExecuteToolStage,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    Message,
    ModelMessageEvent,
    ModelStopReason,
    ModelStreamChunkEvent,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    ToolContext,
    ToolResultEvent,
    ToolResultMessageEvent,
    Usage,
    tool,
)

from .agent_helpers import answer, calls, collect, event_types, texts, tool_results, usage


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@pytest.mark.anyio
async def test_a_text_turn_ends_the_run_with_its_message() -> None:
    model = ScriptedModel([ScriptedTurn(text="Hello there", usage=usage(3, 2))])
    agent = Agent(model, system_prompt="Be brief.")

    result = await agent.invoke_async("Hi")

    assert result.stop_reason == "end_turn"
    assert result.message == {"role": "assistant", "content": [{"text": "Hello there"}]}
    assert str(result) == "Hello there"
    assert agent.messages == [
        {"role": "user", "content": [{"text": "Hi"}]},
        {"role": "assistant", "content": [{"text": "Hello there"}]},
    ]
    assert result.interrupts == []
    assert (result.metrics.cycles, result.metrics.model_calls, result.metrics.tool_calls) == (
        1,
        1,
        0,
    )
    assert result.metrics.usage == usage(3, 2)


@pytest.mark.anyio
async def test_a_tool_round_runs_the_tool_and_asks_the_model_again() -> None:
    model = ScriptedModel(
        [
            ScriptedTurn(
                tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 3}, id="t1")], usage=usage(10, 4)
            ),
            ScriptedTurn(text="It is 5.", usage=usage(20, 3)),
        ]
    )
    agent = Agent(model, tools=[add])

    result = await agent.invoke_async("What is 2 + 3?")

    assert result.stop_reason == "end_turn"
    assert result.text == "It is 5."
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert agent.messages[1]["content"] == [
        {"toolUse": {"toolUseId": "t1", "name": "add", "input": {"a": 2, "b": 3}}}
    ]
    assert tool_results(agent.messages[2]) == [
        {"toolUseId": "t1", "status": "success", "content": [{"json": 5}]}
    ]
    # The second model call saw the tool result.
    assert len(model.requests) == 2
    assert model.requests[1].messages == agent.messages[:3]
    assert [spec["name"] for spec in model.requests[0].tool_specs] == ["add"]
    metrics = result.metrics
    assert (metrics.cycles, metrics.model_calls, metrics.tool_calls) == (2, 2, 1)
    assert metrics.usage == usage(30, 7)


@pytest.mark.anyio
async def test_usage_keeps_cache_reads_and_writes_summed_over_calls() -> None:
    first: Usage = {**usage(100, 4), "cacheReadInputTokens": 60, "cacheWriteInputTokens": 40}
    # A call that reports no cache counts adds nothing to them.
    second = usage(110, 3)
    third: Usage = {**usage(120, 2), "cacheReadInputTokens": 100}
    model = ScriptedModel(
        [
            ScriptedTurn(tool_calls=[ScriptedToolCall("add", {"a": 1, "b": 1})], usage=first),
            ScriptedTurn(tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 2})], usage=second),
            ScriptedTurn(text="Done.", usage=third),
        ]
    )
    agent = Agent(model, tools=[add])

    result = await agent.invoke_async("Add twice.")

    assert result.metrics.usage == {
        "inputTokens": 330,
        "outputTokens": 9,
        "totalTokens": 339,
        "cacheReadInputTokens": 160,
        "cacheWriteInputTokens": 40,
    }


@pytest.mark.anyio
async def test_stream_async_yields_the_agent_stream_events_and_ends_with_the_result() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 1}, "t1")), "Two."])
    agent = Agent(model, tools=[add])

    events, result = await collect(agent, "1 + 1?")

    assert event_types(events) == [
        "ModelStreamChunkEvent",
        "ModelMessageEvent",
        "ToolResultEvent",
        "ToolResultMessageEvent",
        "ModelStreamChunkEvent",
        "ModelMessageEvent",
        "EventLoopStopEvent",
    ]
    # The model call's own result is not an AgentStream event.
    assert not any(isinstance(event, ModelStopReason) for event in events)
    stops = [event for event in events if isinstance(event, EventLoopStopEvent)]
    assert len(stops) == 1
    assert stops[0].stop_reason == result.stop_reason == "end_turn"
    assert stops[0].message == result.message
    messages = [event.message for event in events if isinstance(event, ModelMessageEvent)]
    assert messages == [agent.messages[1], agent.messages[3]]
    tool_messages = [e.message for e in events if isinstance(e, ToolResultMessageEvent)]
    assert tool_messages == [agent.messages[2]]
    tool_events = [e for e in events if isinstance(e, ToolResultEvent)]
    assert tool_events[0].tool_result["toolUseId"] == "t1"
    chunks = [e.chunk for e in events if isinstance(e, ModelStreamChunkEvent)]
    assert chunks[0] == {"messageStart": {"role": "assistant"}}


@pytest.mark.anyio
async def test_prompts_may_be_blocks_messages_or_none() -> None:
    model = ScriptedModel(["one", "two", "three"])
    agent = Agent(model)
    blocks: list[Any] = [{"text": "first"}, {"text": "second"}]

    await agent.invoke_async(blocks)
    blocks[0]["text"] = "changed by the caller"
    await agent.invoke_async([{"role": "user", "content": [{"text": "as a message"}]}])
    await agent.invoke_async(None)

    assert agent.messages[0] == {"role": "user", "content": [{"text": "first"}, {"text": "second"}]}
    assert agent.messages[2] == {"role": "user", "content": [{"text": "as a message"}]}
    # None continues the conversation without adding a message.
    assert [m["role"] for m in agent.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "assistant",
    ]
    assert len(model.requests[2].messages) == 4


@pytest.mark.anyio
async def test_the_system_prompt_reaches_the_model_as_text_and_as_blocks() -> None:
    model = ScriptedModel(["a", "b"])
    agent = Agent(model, system_prompt="Be brief.")

    await agent.invoke_async("x")
    agent.system_prompt = [{"text": "Rule one."}, {"text": "Rule two."}]
    await agent.invoke_async("y")

    first, second = model.requests
    assert first.system_prompt == "Be brief."
    assert first.system_prompt_content == [{"text": "Be brief."}]
    assert second.system_prompt_content == [{"text": "Rule one."}, {"text": "Rule two."}]
    assert second.system_prompt is not None
    assert "Rule one." in second.system_prompt
    assert "Rule two." in second.system_prompt


@pytest.mark.anyio
async def test_invalid_tool_input_goes_back_to_the_model_as_an_error_result() -> None:
    model = ScriptedModel([calls(("add", {"a": "not a number"}, "t1")), "Sorry."])
    agent = Agent(model, tools=[add])

    result = await agent.invoke_async("go")

    assert result.stop_reason == "end_turn"
    [tool_result] = tool_results(agent.messages[2])
    assert tool_result["status"] == "error"
    assert tool_result["toolUseId"] == "t1"


@pytest.mark.anyio
async def test_a_second_invocation_while_running_is_refused() -> None:
    refused: list[BaseException] = []
    agent: Agent

    @tool
    async def reenter() -> str:
        """Call the agent again from inside a tool."""
        try:
            await agent.invoke_async("nested")
        except ConcurrentInvocationError as error:
            refused.append(error)
        return "ok"

    model = ScriptedModel([calls(("reenter", {}, "t1")), "done"])
    agent = Agent(model, tools=[reenter])

    result = await agent.invoke_async("go")

    assert len(refused) == 1
    assert result.text == "done"
    assert len(model.requests) == 2


@pytest.mark.anyio
async def test_a_model_error_propagates_and_after_invocation_sees_no_result() -> None:
    seen: list[AgentResult | None] = []
    agent = Agent(ScriptedModel([ValueError("provider down")]))
    agent.add_hook(lambda event: seen.append(event.result), AfterInvocationEvent)

    with pytest.raises(ValueError, match="provider down"):
        await agent.invoke_async("hi")

    assert seen == [None]
    # The agent is usable again afterwards.
    agent.model = ScriptedModel(["back"])
    assert (await agent.invoke_async("again")).text == "back"


@pytest.mark.anyio
async def test_initial_messages_are_copied() -> None:
    history: list[Message] = [
        {"role": "user", "content": [{"text": "earlier"}]},
        {"role": "assistant", "content": [{"text": "reply"}]},
    ]
    model = ScriptedModel(["now"])
    agent = Agent(model, messages=history)

    await agent.invoke_async("next")

    assert len(history) == 2
    assert model.requests[0].messages[:2] == history
    assert texts(model.requests[0].messages[2]) == ["next"]


def test_the_sync_call_runs_and_resumes_an_interrupt() -> None:
    @tool
    def confirm(what: str, context: ToolContext) -> str:
        """Ask a human to confirm.

        Args:
            what: What to confirm.
        """
        return f"human said {context.interrupt('confirm', reason=what)}"

    model = ScriptedModel([calls(("confirm", {"what": "deploy"}, "t1")), "Deployed."])
    agent = Agent(model, tools=[confirm])

    first = agent("deploy please")
    assert first.stop_reason == "interrupt"
    [interrupt] = first.interrupts
    assert interrupt.reason == "deploy"

    second = agent(answer((interrupt.id, "yes")))

    assert second.stop_reason == "end_turn"
    assert second.text == "Deployed."
    assert tool_results(agent.messages[2])[0]["content"] == [{"text": "human said yes"}]


def test_the_sync_call_runs_on_trio_too() -> None:
    model = ScriptedModel([calls(("add", {"a": 4, "b": 5}, "t1")), "Nine."])
    agent = Agent(model, tools=[add], backend="trio")

    result = agent("4 + 5")

    assert result.text == "Nine."
    assert tool_results(agent.messages[2])[0]["content"] == [{"json": 9}]


@pytest.mark.anyio
async def test_the_sync_call_inside_a_running_event_loop_runs_in_a_worker_thread() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2}, "t1")), "Three."])
    agent = Agent(model, tools=[add])

    # Blocking here is the caller's choice; the run itself must not collide with this loop.
    result = agent("1 + 2")

    assert result.text == "Three."
    assert tool_results(agent.messages[2])[0]["content"] == [{"json": 3}]


@pytest.mark.anyio
async def test_closing_the_stream_during_a_tool_round_leaves_the_caller_usable() -> None:
    """``stream_async`` says: close it (``contextlib.aclosing``) when stopping early."""
    finish = anyio.Event()

    @tool
    async def slow() -> str:
        """Wait until released."""
        await finish.wait()
        return "slow"

    @tool
    async def quick() -> str:
        """Return at once."""
        return "quick"

    model = ScriptedModel([calls(("quick", {}, "t1"), ("slow", {}, "t2")), "unused"])
    agent = Agent(model, tools=[quick, slow])

    try:
        async with aclosing(agent.stream_async("go")) as stream:
            async for event in stream:
                if isinstance(event, ToolResultEvent):
                    break
    finally:
        finish.set()  # Never leave a tool waiting, even if the host did not cancel it.

    # The caller's task must not be cancelled or left with a corrupted cancel scope.
    other = Agent(ScriptedModel([calls(("add", {"a": 1, "b": 2}, "t1")), "three"]), tools=[add])
    result = await other.invoke_async("1 + 2")
    assert result.text == "three"


@pytest.mark.anyio
async def test_closing_the_stream_closes_the_middleware_it_was_running() -> None:
    """Spec (generator cleanup): every layer is closed with an explicit ``aclose()``.

    ``stream_async`` promises that closing the stream cleans the run up "in the task that
    ran it", so a Wrap handler's ``finally`` has run when ``aclosing`` exits.
    """
    closed: list[str] = []

    async def track(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        try:
            async for event in next_fn(ctx):
                yield event
        finally:
            closed.append("invoke-model wrap")

    agent = Agent(ScriptedModel(["an answer streamed in many chunks"], chunk_size=3))
    agent.add_middleware(InvokeModelStage, track)

    async with aclosing(agent.stream_async("go")) as stream:
        async for event in stream:
            if isinstance(event, ModelStreamChunkEvent):
                break

    assert closed == ["invoke-model wrap"]


@pytest.mark.anyio
async def test_composed_chains_are_reused_across_invocations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import stageware._runtime._chain as chain_module
    import stageware._runtime._registry as registry_module

    built: list[str] = []
    original = chain_module.build_chain

    def counting_build_chain(stage: Any, plan: Any, terminal: Any, **options: Any) -> Any:
        built.append(repr(stage))
        return original(stage, plan, terminal, **options)

    monkeypatch.setattr(registry_module, "build_chain", counting_build_chain)
    model = ScriptedModel([calls(("add", {"a": 1, "b": 1}, "t1")), "Two.", "Again.", "More."])
    agent = Agent(model, tools=[add])
    agent.add_middleware(InvokeModelStage.Input, lambda c: c)
    agent.add_middleware(ExecuteToolStage.Input, lambda c: c)
    agent.add_middleware(AgentStreamStage.Input, lambda c: c)

    for prompt in ("1 + 1", "again", "more"):
        await agent.invoke_async(prompt)

    assert sorted(built) == ["AgentStreamStage", "ExecuteToolStage", "InvokeModelStage"]
