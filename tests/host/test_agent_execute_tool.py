"""The ExecuteTool stage, end to end: context copies, unknown tools, tool errors, the signal."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from stageware import (
    AfterToolCallEvent,
    Agent,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamStage,
    AgentTool,
    BeforeToolCallEvent,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolResult,
    ExecuteToolStage,
    ScriptedModel,
    ToolContext,
    ToolResult,
    ToolResultEvent,
    ToolStreamEvent,
    ToolUse,
    tool,
)

from .agent_helpers import PlainTool, calls, collect, result_text, tool_results


@tool
def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: What to echo.
    """
    return f"echo: {text}"


@pytest.mark.anyio
async def test_a_replaced_tool_use_reaches_the_tool_but_not_the_history() -> None:
    model = ScriptedModel([calls(("echo", {"text": "original"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])

    def clean(ctx: ExecuteToolContext) -> ExecuteToolContext:
        return ctx.replace(tool_use={**ctx.tool_use, "input": {"text": "cleaned"}})

    agent.add_middleware(ExecuteToolStage.Input, clean)
    await agent.invoke_async("go")

    assert agent.messages[1]["content"][0]["toolUse"]["input"] == {"text": "original"}
    assert tool_results(agent.messages[2])[0]["content"] == [{"text": "echo: cleaned"}]


@pytest.mark.anyio
async def test_the_tool_use_on_the_context_is_a_shallow_copy() -> None:
    model = ScriptedModel([calls(("echo", {"text": "original"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])
    inputs: list[Any] = []

    def reassign(ctx: ExecuteToolContext) -> ExecuteToolContext:
        inputs.append(ctx.tool_use["input"])
        ctx.tool_use["name"] = "renamed"
        ctx.tool_use["input"] = {"text": "reassigned"}
        return ctx

    agent.add_middleware(ExecuteToolStage.Input, reassign)
    await agent.invoke_async("go")

    history_use = agent.messages[1]["content"][0]["toolUse"]
    assert history_use == {"toolUseId": "t1", "name": "echo", "input": {"text": "original"}}
    # The nested input is the host's own object (shared by reference), the dict is not.
    assert inputs[0] is history_use["input"]
    assert tool_results(agent.messages[2])[0]["toolUseId"] == "t1"


@pytest.mark.anyio
async def test_an_unknown_tool_runs_the_chain_with_no_tool() -> None:
    model = ScriptedModel([calls(("missing", {"x": 1}, "t1")), "ok"])
    agent = Agent(model, tools=[echo])
    seen_tools: list[AgentTool | None] = []
    selected: list[AgentTool | None] = []
    outputs: list[ToolResultEvent] = []

    def observe(ctx: ExecuteToolContext) -> ExecuteToolContext:
        seen_tools.append(ctx.tool)
        return ctx

    def record(result: ExecuteToolResult) -> ExecuteToolResult:
        outputs.append(result.result)
        return result

    agent.add_middleware(ExecuteToolStage.Input, observe)
    agent.add_middleware(ExecuteToolStage.Output, record)
    agent.add_hook(lambda e: selected.append(e.selected_tool), BeforeToolCallEvent)
    result = await agent.invoke_async("go")

    assert seen_tools == [None]
    assert selected == [None]
    assert result.text == "ok"
    [tool_result] = tool_results(agent.messages[2])
    assert tool_result["status"] == "error"
    assert tool_result["toolUseId"] == "t1"
    assert "missing" in result_text(tool_result)
    assert [o.tool_result for o in outputs] == [tool_result]


@pytest.mark.anyio
async def test_middleware_can_mock_an_unknown_tool() -> None:
    model = ScriptedModel([calls(("weather", {"city": "Oslo"}, "t1")), "It is cold."])
    agent = Agent(model)

    async def mock_weather(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        if ctx.tool is None and ctx.tool_use["name"] == "weather":
            yield ToolResultEvent(
                tool_result={
                    "toolUseId": ctx.tool_use["toolUseId"],
                    "status": "success",
                    "content": [{"text": "-5C"}],
                }
            )
            return
        async for event in next_fn(ctx):
            yield event

    agent.add_middleware(ExecuteToolStage, mock_weather)
    await agent.invoke_async("weather?")

    assert tool_results(agent.messages[2]) == [
        {"toolUseId": "t1", "status": "success", "content": [{"text": "-5C"}]}
    ]


@pytest.mark.anyio
async def test_a_raising_tool_becomes_an_error_result_the_middleware_observes() -> None:
    async def explode(tool_use: ToolUse, context: ToolContext) -> AsyncIterator[ExecuteToolEvent]:
        raise OSError("disk on fire")
        yield  # pragma: no cover - makes this an async generator

    raising = PlainTool("explode", explode)
    model = ScriptedModel([calls(("explode", {}, "t1")), "I see an error."])
    agent = Agent(model, tools=[raising])
    outputs: list[ToolResultEvent] = []
    exceptions: list[Exception | None] = []

    def record(result: ExecuteToolResult) -> ExecuteToolResult:
        outputs.append(result.result)
        return result

    agent.add_middleware(ExecuteToolStage.Output, record)
    agent.add_hook(lambda e: exceptions.append(e.exception), AfterToolCallEvent)
    result = await agent.invoke_async("go")

    assert result.text == "I see an error."
    [tool_result] = tool_results(agent.messages[2])
    assert tool_result["status"] == "error"
    assert "disk on fire" in result_text(tool_result)
    assert len(outputs) == 1
    assert isinstance(outputs[0].exception, OSError)
    assert outputs[0].tool_result == tool_result
    assert len(exceptions) == 1
    assert isinstance(exceptions[0], OSError)


@pytest.mark.anyio
async def test_a_decorated_tool_that_raises_reports_the_error_to_the_model() -> None:
    @tool
    def divide(a: int, b: int) -> float:
        """Divide a by b.

        Args:
            a: Dividend.
            b: Divisor.
        """
        return a / b

    model = ScriptedModel([calls(("divide", {"a": 1, "b": 0}, "t1")), "cannot"])
    agent = Agent(model, tools=[divide])
    exceptions: list[Exception | None] = []
    agent.add_hook(lambda e: exceptions.append(e.exception), AfterToolCallEvent)

    await agent.invoke_async("1/0")

    [tool_result] = tool_results(agent.messages[2])
    assert tool_result["status"] == "error"
    assert "division by zero" in result_text(tool_result)
    assert [type(e) for e in exceptions] == [ZeroDivisionError]


@pytest.mark.anyio
async def test_the_tool_receives_the_executor_signal_that_middleware_observes() -> None:
    signals: list[object] = []

    @tool
    def probe(context: ToolContext) -> str:
        """Report the cancel signal."""
        signals.append(context.cancel_signal)
        return "probed"

    model = ScriptedModel([calls(("probe", {}, "t1")), "done"])
    agent = Agent(model, tools=[probe])

    def observe(ctx: ExecuteToolContext) -> ExecuteToolContext:
        signals.append(ctx.cancel_signal)
        assert not ctx.cancel_signal.is_set()
        return ctx

    agent.add_middleware(ExecuteToolStage.Input, observe)
    await agent.invoke_async("go")

    assert len(signals) == 2
    assert signals[0] is signals[1]


def test_the_typed_replace_cannot_set_the_cancel_signal() -> None:
    assert "cancel_signal" not in inspect.signature(ExecuteToolContext.replace).parameters


@pytest.mark.anyio
async def test_an_output_handler_replaces_the_tool_result() -> None:
    model = ScriptedModel([calls(("echo", {"text": "secret"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])
    after_results: list[str] = []

    def redact(result: ExecuteToolResult) -> ExecuteToolResult:
        event = result.result
        return result.replace(
            result=ToolResultEvent(
                tool_result={**event.tool_result, "content": [{"text": "[redacted]"}]}
            )
        )

    agent.add_middleware(ExecuteToolStage.Output, redact)
    agent.add_hook(lambda e: after_results.append(result_text(e.result)), AfterToolCallEvent)
    await agent.invoke_async("go")

    assert tool_results(agent.messages[2])[0]["content"] == [{"text": "[redacted]"}]
    assert after_results == ["[redacted]"]
    assert "secret" not in str(model.requests[1].messages[2])


@pytest.mark.anyio
async def test_a_streaming_tool_streams_through_the_chain_and_the_agent() -> None:
    @tool
    async def count(to: int) -> AsyncIterator[str]:
        """Count up.

        Args:
            to: Where to stop.
        """
        for n in range(1, to + 1):
            yield f"n={n}"

    model = ScriptedModel([calls(("count", {"to": 3}, "t1")), "counted"])
    agent = Agent(model, tools=[count])
    wrapped: list[str] = []

    async def observe(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(ctx):
            wrapped.append(type(event).__name__)
            yield event

    agent.add_middleware(ExecuteToolStage, observe)
    events, result = await collect(agent, "count")

    streamed = [e.data for e in events if isinstance(e, ToolStreamEvent)]
    assert streamed[:2] == ["n=1", "n=2"]
    assert wrapped[-1] == "ToolResultEvent"
    assert "ToolStreamEvent" in wrapped
    assert result.text == "counted"
    assert "n=3" in result_text(tool_results(agent.messages[2])[0])


@pytest.mark.anyio
async def test_the_tool_sees_the_context_invocation_state() -> None:
    states: list[dict[str, Any]] = []

    @tool
    def peek(context: ToolContext) -> str:
        """Look at the invocation state."""
        states.append(context.invocation_state)
        return "ok"

    model = ScriptedModel([calls(("peek", {}, "t1")), "done"])
    agent = Agent(model, tools=[peek])
    replacement: dict[str, Any] = {"from": "middleware"}

    def swap(ctx: ExecuteToolContext) -> ExecuteToolContext:
        return ctx.replace(invocation_state=replacement)

    agent.add_middleware(ExecuteToolStage.Input, swap)
    await agent.invoke_async("go", invocation_state={"from": "caller"})

    assert states == [replacement]
    assert states[0] is replacement


@pytest.mark.anyio
async def test_middleware_can_supply_the_tool_for_an_unknown_name() -> None:
    model = ScriptedModel([calls(("legacy_echo", {"text": "old"}, "t1")), "done"])
    agent = Agent(model, tools=[])

    def alias(ctx: ExecuteToolContext) -> ExecuteToolContext:
        if ctx.tool is None and ctx.tool_use["name"] == "legacy_echo":
            return ctx.replace(tool=echo)
        return ctx

    agent.add_middleware(ExecuteToolStage.Input, alias)
    await agent.invoke_async("go")

    assert tool_results(agent.messages[2]) == [
        {"toolUseId": "t1", "status": "success", "content": [{"text": "echo: old"}]}
    ]


@pytest.mark.anyio
async def test_a_malformed_result_from_middleware_reaches_the_model_as_an_error_naming_where() -> (
    None
):
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])

    def break_it(result: ExecuteToolResult) -> ExecuteToolResult:
        broken: Any = {**result.result.tool_result, "content": [{"text": 5}]}
        return result.replace(result=ToolResultEvent(tool_result=broken))

    agent.add_middleware(ExecuteToolStage.Output, break_it)
    await agent.invoke_async("go")

    [tool_result] = tool_results(agent.messages[2])
    assert tool_result["status"] == "error"
    assert "invalid ToolResult (content[0].text: Input should be a valid string)" in result_text(
        tool_result
    )


# -- The stream carries each call's final result -------------------------------------------


def _streamed_results(events: list[AgentStreamEvent]) -> list[ToolResult]:
    return [e.tool_result for e in events if isinstance(e, ToolResultEvent)]


@pytest.mark.anyio
async def test_the_stream_carries_the_result_an_after_tool_hook_rewrote() -> None:
    model = ScriptedModel([calls(("echo", {"text": "secret"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])

    def redact(event: AfterToolCallEvent) -> None:
        event.result = {**event.result, "content": [{"text": "[redacted]"}]}

    agent.add_hook(redact, AfterToolCallEvent)
    events, _ = await collect(agent, "go")

    final = {"toolUseId": "t1", "status": "success", "content": [{"text": "[redacted]"}]}
    assert _streamed_results(events) == [final]
    assert tool_results(agent.messages[2]) == [final]
    assert "echo: secret" not in repr(events)


@pytest.mark.anyio
async def test_a_hook_retry_streams_only_the_final_attempt() -> None:
    attempts: list[int] = []

    @tool
    def flaky() -> str:
        """Fail the first time."""
        attempts.append(len(attempts) + 1)
        return f"attempt {len(attempts)}"

    model = ScriptedModel([calls(("flaky", {}, "t1")), "done"])
    agent = Agent(model, tools=[flaky])

    def retry_first(event: AfterToolCallEvent) -> None:
        event.retry = result_text(event.result) == "attempt 1"

    agent.add_hook(retry_first, AfterToolCallEvent)
    events, _ = await collect(agent, "go")

    assert attempts == [1, 2]
    assert [result_text(r) for r in _streamed_results(events)] == ["attempt 2"]


@pytest.mark.anyio
async def test_a_middleware_retry_streams_only_the_result_the_chain_ends_with() -> None:
    attempts: list[int] = []

    @tool
    def flaky() -> str:
        """Count the attempts."""
        attempts.append(len(attempts) + 1)
        return f"attempt {len(attempts)}"

    model = ScriptedModel([calls(("flaky", {}, "t1")), "done"])
    agent = Agent(model, tools=[flaky])

    async def retry_once(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        for _ in range(2):  # forwards both attempts; the last result is the chain's
            async for event in next_fn(ctx):
                yield event

    agent.add_middleware(ExecuteToolStage, retry_once)
    events, _ = await collect(agent, "go")

    assert attempts == [1, 2]
    assert [result_text(r) for r in _streamed_results(events)] == ["attempt 2"]
    assert result_text(tool_results(agent.messages[2])[0]) == "attempt 2"


@pytest.mark.anyio
async def test_agent_stream_middleware_sees_the_final_tool_result_once() -> None:
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])
    seen: list[ToolResult] = []

    async def watch(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(ctx):
            if isinstance(event, ToolResultEvent):
                seen.append(event.tool_result)
            yield event

    def stamp(event: AfterToolCallEvent) -> None:
        event.result = {**event.result, "content": [{"text": "stamped"}]}

    agent.add_middleware(AgentStreamStage, watch)
    agent.add_hook(stamp, AfterToolCallEvent)
    await agent.invoke_async("go")

    assert [result_text(r) for r in seen] == ["stamped"]


@pytest.mark.anyio
async def test_a_hook_cancelled_call_streams_the_result_the_after_hook_left() -> None:
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])

    def cancel(event: BeforeToolCallEvent) -> None:
        event.cancel_tool = "not today"

    def explain(event: AfterToolCallEvent) -> None:
        event.result = {**event.result, "content": [{"text": f"skipped: {event.cancel_message}"}]}

    agent.add_hook(cancel, BeforeToolCallEvent)
    agent.add_hook(explain, AfterToolCallEvent)
    events, _ = await collect(agent, "go")

    assert [result_text(r) for r in _streamed_results(events)] == ["skipped: not today"]
    assert result_text(tool_results(agent.messages[2])[0]) == "skipped: not today"


@pytest.mark.anyio
async def test_tool_stream_events_stream_live_while_the_tool_runs() -> None:
    seen_progress = anyio.Event()

    @tool
    async def slow() -> AsyncIterator[str]:
        """Report progress, then wait until the caller has seen it."""
        yield "halfway"
        with anyio.fail_after(5):  # guards a hang: the progress was held back
            await seen_progress.wait()
        yield "finished"

    model = ScriptedModel([calls(("slow", {}, "t1")), "done"])
    agent = Agent(model, tools=[slow])
    order: list[str] = []

    async for event in agent.stream_async("go"):
        if isinstance(event, ToolStreamEvent):
            order.append(f"progress:{event.data}")
            seen_progress.set()
        elif isinstance(event, ToolResultEvent):
            order.append("result")

    assert order == ["progress:halfway", "progress:finished", "result"]
