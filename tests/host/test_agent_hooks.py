"""Lifecycle hooks, end to end: order, writable fields, retries and cancellation of tool calls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from stageware import (
    AfterInvocationEvent,
    AfterModelCallEvent,
    AfterToolCallEvent,
    Agent,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamStage,
    AgentTool,
    BeforeInvocationEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolStage,
    LifecycleEvent,
    MessageAddedEvent,
    ModelMessageEvent,
    ScriptedModel,
    ToolResultEvent,
    tool,
)

from .agent_helpers import calls, result_text, tool_results

attempts: list[str] = []

# Stops a hung host; not a timing assertion.
DEADLOCK_GUARD = 5


@tool
def flaky(label: str) -> str:
    """Run once per attempt.

    Args:
        label: A label.
    """
    attempts.append(label)
    return f"attempt {len(attempts)}"


@tool
def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: What to echo.
    """
    return f"echo: {text}"


@tool
def shout(text: str) -> str:
    """Shout the text back.

    Args:
        text: What to shout.
    """
    return text.upper()


@pytest.fixture(autouse=True)
def _reset_attempts() -> None:
    attempts.clear()


def _logger(log: list[str], label: str) -> Any:
    def record(event: LifecycleEvent) -> None:
        if isinstance(event, MessageAddedEvent):
            log.append(f"{label}:{event.message['role']}")
        else:
            log.append(label)

    return record


@pytest.mark.anyio
async def test_hooks_fire_in_lifecycle_order() -> None:
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])
    log: list[str] = []
    for event_type, label in [
        (BeforeInvocationEvent, "before-invocation"),
        (AfterInvocationEvent, "after-invocation"),
        (MessageAddedEvent, "added"),
        (BeforeModelCallEvent, "before-model"),
        (AfterModelCallEvent, "after-model"),
        (BeforeToolCallEvent, "before-tool"),
        (AfterToolCallEvent, "after-tool"),
    ]:
        agent.add_hook(_logger(log, label), event_type)

    await agent.invoke_async("go")

    assert log == [
        "before-invocation",
        "added:user",
        "before-model",
        "after-model",
        "added:assistant",
        "before-tool",
        "after-tool",
        "added:user",
        "before-model",
        "after-model",
        "added:assistant",
        "after-invocation",
    ]


@pytest.mark.anyio
async def test_after_hooks_run_in_reverse_registration_order() -> None:
    agent = Agent(ScriptedModel(["ok"]))
    log: list[str] = []
    agent.add_hook(lambda e: log.append("before-1"), BeforeInvocationEvent)
    agent.add_hook(lambda e: log.append("before-2"), BeforeInvocationEvent)
    agent.add_hook(lambda e: log.append("after-1"), AfterInvocationEvent)
    agent.add_hook(lambda e: log.append("after-2"), AfterInvocationEvent)

    await agent.invoke_async("hi")

    assert log == ["before-1", "before-2", "after-2", "after-1"]


@pytest.mark.anyio
async def test_async_hooks_are_awaited_and_see_the_invocation_state() -> None:
    agent = Agent(ScriptedModel(["ok"]))
    states: list[dict[str, Any]] = []

    async def remember(event: BeforeModelCallEvent) -> None:
        states.append(event.invocation_state)

    agent.add_hook(remember, BeforeModelCallEvent)
    state: dict[str, Any] = {"k": 1}
    await agent.invoke_async("hi", invocation_state=state)

    assert states == [state]
    assert states[0] is state


def test_a_swapped_add_hook_is_a_type_error() -> None:
    agent = Agent(ScriptedModel([]))
    bad: Any = agent.add_hook
    with pytest.raises(TypeError):
        bad(BeforeModelCallEvent, lambda e: None)


@pytest.mark.anyio
async def test_read_only_fields_refuse_writes() -> None:
    agent = Agent(ScriptedModel(["ok"]))
    errors: list[str] = []

    def tamper(event: AfterModelCallEvent) -> None:
        target: Any = event
        try:
            target.stop_response = None
        except AttributeError as error:
            errors.append(str(error))

    agent.add_hook(tamper, AfterModelCallEvent)
    result = await agent.invoke_async("hi")

    assert result.text == "ok"
    assert len(errors) == 1


@pytest.mark.anyio
async def test_tool_hooks_fire_around_a_short_circuited_call() -> None:
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])
    log: list[str] = []
    agent.add_hook(lambda e: log.append("before-tool"), BeforeToolCallEvent)
    agent.add_hook(lambda e: log.append(f"after-tool:{result_text(e.result)}"), AfterToolCallEvent)

    async def mock(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        log.append("middleware")
        yield ToolResultEvent(
            tool_result={
                "toolUseId": ctx.tool_use["toolUseId"],
                "status": "success",
                "content": [{"text": "mocked"}],
            }
        )

    agent.add_middleware(ExecuteToolStage, mock)
    await agent.invoke_async("go")

    assert log == ["before-tool", "middleware", "after-tool:mocked"]


@pytest.mark.parametrize(
    ("cancel", "expected"), [(True, None), ("not allowed today", "not allowed today")]
)
@pytest.mark.anyio
async def test_cancel_tool_skips_the_chain_and_tells_the_model(
    cancel: bool | str, expected: str | None
) -> None:
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "ok"])
    agent = Agent(model, tools=[echo])
    chain_runs: list[str] = []
    messages: list[str | None] = []

    def cancel_it(event: BeforeToolCallEvent) -> None:
        event.cancel_tool = cancel

    def observe(ctx: ExecuteToolContext) -> ExecuteToolContext:
        chain_runs.append("run")
        return ctx

    agent.add_hook(cancel_it, BeforeToolCallEvent)
    agent.add_hook(lambda e: messages.append(e.cancel_message), AfterToolCallEvent)
    agent.add_middleware(ExecuteToolStage.Input, observe)
    result = await agent.invoke_async("go")

    assert chain_runs == []
    assert result.text == "ok"
    [tool_result] = tool_results(agent.messages[2])
    assert tool_result["status"] == "error"
    assert tool_result["toolUseId"] == "t1"
    assert len(messages) == 1
    assert messages[0] is not None
    if expected is not None:
        assert expected in result_text(tool_result)
        assert messages[0] == expected


@pytest.mark.anyio
async def test_a_hook_can_select_another_tool() -> None:
    model = ScriptedModel([calls(("echo", {"text": "quiet"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])
    seen: list[AgentTool | None] = []

    def reroute(event: BeforeToolCallEvent) -> None:
        event.selected_tool = shout

    def observe(ctx: ExecuteToolContext) -> ExecuteToolContext:
        seen.append(ctx.tool)
        return ctx

    agent.add_hook(reroute, BeforeToolCallEvent)
    agent.add_middleware(ExecuteToolStage.Input, observe)
    await agent.invoke_async("go")

    assert seen == [shout]
    assert tool_results(agent.messages[2])[0]["content"] == [{"text": "QUIET"}]


@pytest.mark.anyio
async def test_a_hook_can_rewrite_the_tool_use() -> None:
    model = ScriptedModel([calls(("echo", {"text": "raw"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])

    def rewrite(event: BeforeToolCallEvent) -> None:
        event.tool_use = {**event.tool_use, "input": {"text": "from hook"}}

    agent.add_hook(rewrite, BeforeToolCallEvent)
    await agent.invoke_async("go")

    assert tool_results(agent.messages[2])[0]["content"] == [{"text": "echo: from hook"}]
    assert tool_results(agent.messages[2])[0]["toolUseId"] == "t1"


@pytest.mark.anyio
async def test_an_after_tool_hook_can_rewrite_the_result() -> None:
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])

    def rewrite(event: AfterToolCallEvent) -> None:
        event.result = {**event.result, "content": [{"text": "rewritten by hook"}]}

    agent.add_hook(rewrite, AfterToolCallEvent)
    await agent.invoke_async("go")

    assert tool_results(model.requests[1].messages[2])[0]["content"] == [
        {"text": "rewritten by hook"}
    ]


@pytest.mark.anyio
async def test_a_tool_retry_from_a_hook_reruns_the_whole_chain() -> None:
    model = ScriptedModel([calls(("flaky", {"label": "a"}, "t1")), "done"])
    agent = Agent(model, tools=[flaky])
    log: list[str] = []

    async def count(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        log.append("middleware")
        async for event in next_fn(ctx):
            yield event

    def retry_first(event: AfterToolCallEvent) -> None:
        log.append("after")
        if result_text(event.result) == "attempt 1":
            event.retry = True

    agent.add_middleware(ExecuteToolStage, count)
    agent.add_hook(lambda e: log.append("before"), BeforeToolCallEvent)
    agent.add_hook(retry_first, AfterToolCallEvent)
    result = await agent.invoke_async("go")

    assert log == ["before", "middleware", "after", "before", "middleware", "after"]
    assert attempts == ["a", "a"]
    assert tool_results(agent.messages[2]) == [
        {"toolUseId": "t1", "status": "success", "content": [{"text": "attempt 2"}]}
    ]
    assert result.metrics.tool_calls == 2


@pytest.mark.anyio
async def test_after_invocation_fires_when_the_caller_stops_consuming_the_stream() -> None:
    """Spec: Before/AfterInvocationEvent "bracket the chain from outside and fire regardless"."""
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "never read"])
    agent = Agent(model, tools=[echo])
    log: list[str] = []
    agent.add_hook(lambda e: log.append("before"), BeforeInvocationEvent)
    agent.add_hook(lambda e: log.append("after"), AfterInvocationEvent)

    async with aclosing(agent.stream_async("go")) as stream:
        async for event in stream:
            if isinstance(event, ModelMessageEvent):
                break

    assert log == ["before", "after"]


@pytest.mark.anyio
async def test_a_failing_tool_hook_fails_the_run_without_waiting_for_the_other_calls() -> None:
    never = anyio.Event()

    @tool
    async def hang() -> str:
        """Wait for an event nobody sets."""
        await never.wait()
        return "unreachable"

    model = ScriptedModel([calls(("hang", {}, "t1"), ("echo", {"text": "x"}, "t2"))])
    agent = Agent(model, tools=[hang, echo])

    def explode(event: BeforeToolCallEvent) -> None:
        if event.tool_use["name"] == "echo":
            raise LookupError("policy service unavailable")

    agent.add_hook(explode, BeforeToolCallEvent)

    # The guard only stops a hung host (a correct one fails at once); the host's own
    # docstring promises that the other calls are cancelled when a hook fails.
    with anyio.move_on_after(1) as guard, pytest.raises(LookupError):
        await agent.invoke_async("go")
    assert not guard.cancelled_caught


@pytest.mark.anyio
async def test_a_tool_hook_error_reaches_a_wrap_handler_that_awaits_per_event() -> None:
    # The failing call must not cancel the task consuming the round: an AgentStream Wrap
    # handler that awaits between events would get the cancellation instead of the error.
    @tool
    async def ticking() -> AsyncIterator[str]:
        """Stream a few ticks."""
        for _ in range(20):
            yield "tick"
            await anyio.sleep(0.01)

    async def audit(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(context):
            await anyio.lowlevel.checkpoint()  # an async log write, say
            yield event

    def fail_echo(event: AfterToolCallEvent) -> None:
        if event.tool_use["name"] == "echo":
            raise ValueError("after-hook failed")

    model = ScriptedModel([calls(("ticking", {}, "t1"), ("echo", {"text": "x"}, "t2"))])
    agent = Agent(model, tools=[ticking, echo])
    agent.add_hook(fail_echo, AfterToolCallEvent)
    agent.add_middleware(AgentStreamStage.Wrap, audit)

    with pytest.raises(ValueError, match="after-hook failed"):
        await agent.invoke_async("go")
    await anyio.sleep(0)  # the caller's task is still usable
