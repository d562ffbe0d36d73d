"""Nothing in the ExecuteTool chain ends the run: every failure becomes an error result.

As in Strands 1.62: a middleware raising in any phase, a chain that drops its result and
a tool that yields nothing each give the model ``"Error: <message>"``, are logged, and
reach ``AfterToolCallEvent.exception`` so a hook can retry. Interrupts and cancellation
still pass through (tests/host/test_agent_interrupts.py, test_agent_cancellation.py).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest

from stageware import (
    AfterToolCallEvent,
    Agent,
    CancelToken,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolResult,
    ExecuteToolStage,
    ScriptedModel,
    ToolContext,
    ToolResultEvent,
    ToolStreamEvent,
    ToolUse,
    tool,
)

from .agent_helpers import PlainTool, calls, collect, result_text, tool_results

LOGGER = "stageware._host._tool_executor"


class Boom(Exception):
    """What the failing middleware raise."""


@tool
def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: What to echo.
    """
    return f"echo: {text}"


def _raise_in_input(agent: Agent) -> None:
    def handler(ctx: ExecuteToolContext) -> ExecuteToolContext:
        raise Boom("input handler failed")

    agent.add_middleware(ExecuteToolStage.Input, handler)


def _raise_before_next(agent: Agent) -> None:
    async def handler(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        raise Boom("wrap handler failed before next_fn")
        yield  # pragma: no cover - makes this an async generator

    agent.add_middleware(ExecuteToolStage.Wrap, handler)


def _raise_after_next(agent: Agent) -> None:
    async def handler(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(ctx):
            yield event
        raise Boom("wrap handler failed after next_fn")

    agent.add_middleware(ExecuteToolStage.Wrap, handler)


def _raise_in_output(agent: Agent) -> None:
    def handler(result: ExecuteToolResult) -> ExecuteToolResult:
        raise Boom("output handler failed")

    agent.add_middleware(ExecuteToolStage.Output, handler)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("install", "message"),
    [
        (_raise_in_input, "input handler failed"),
        (_raise_before_next, "wrap handler failed before next_fn"),
        (_raise_after_next, "wrap handler failed after next_fn"),
        (_raise_in_output, "output handler failed"),
    ],
    ids=["input", "wrap-before-next", "wrap-after-next", "output"],
)
async def test_a_middleware_error_in_any_phase_becomes_an_error_result(
    install: Callable[[Agent], None], message: str, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "I read the error."])
    agent = Agent(model, tools=[echo])
    install(agent)
    exceptions: list[Exception | None] = []
    agent.add_hook(lambda e: exceptions.append(e.exception), AfterToolCallEvent)

    with caplog.at_level(logging.ERROR, logger=LOGGER):
        events, result = await collect(agent, "go")

    assert result.stop_reason == "end_turn"
    assert result.text == "I read the error."
    expected = {"toolUseId": "t1", "status": "error", "content": [{"text": f"Error: {message}"}]}
    assert tool_results(agent.messages[2]) == [expected]
    # The model read it in its next request.
    assert tool_results(model.requests[1].messages[2]) == [expected]
    assert [type(e) for e in exceptions] == [Boom]
    streamed = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [e.tool_result for e in streamed] == [expected]
    assert isinstance(streamed[0].exception, Boom)
    logged = [r for r in caplog.records if r.name == LOGGER and r.exc_info is not None]
    assert [type(r.exc_info[1]) for r in logged if r.exc_info] == [Boom]


@pytest.mark.anyio
async def test_a_hook_can_retry_a_call_whose_middleware_failed() -> None:
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])
    failures = [Boom("rate limiter unavailable")]

    def flaky(ctx: ExecuteToolContext) -> ExecuteToolContext:
        if failures:
            raise failures.pop()
        return ctx

    def retry_on_error(event: AfterToolCallEvent) -> None:
        if isinstance(event.exception, Boom):
            event.retry = True

    agent.add_middleware(ExecuteToolStage.Input, flaky)
    agent.add_hook(retry_on_error, AfterToolCallEvent)
    events, result = await collect(agent, "go")

    assert result.metrics.tool_calls == 2
    success = {"toolUseId": "t1", "status": "success", "content": [{"text": "echo: x"}]}
    assert tool_results(agent.messages[2]) == [success]
    assert [e.tool_result for e in events if isinstance(e, ToolResultEvent)] == [success]


@pytest.mark.anyio
async def test_a_chain_that_drops_the_result_gives_the_model_an_error_result() -> None:
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "done"])
    agent = Agent(model, tools=[echo])
    exceptions: list[Exception | None] = []

    async def drop(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(ctx):
            if not isinstance(event, ToolResultEvent):
                yield event

    agent.add_middleware(ExecuteToolStage.Wrap, drop)
    agent.add_hook(lambda e: exceptions.append(e.exception), AfterToolCallEvent)
    result = await agent.invoke_async("go")

    assert result.text == "done"
    [tool_result] = tool_results(agent.messages[2])
    assert tool_result["status"] == "error"
    assert result_text(tool_result).startswith("Error: ")
    assert "ToolResultEvent" in result_text(tool_result)
    assert [type(e) for e in exceptions] == [RuntimeError]


async def _nothing(tool_use: ToolUse, context: ToolContext) -> AsyncIterator[ExecuteToolEvent]:
    return
    yield  # pragma: no cover - makes this an async generator


async def _progress_only(
    tool_use: ToolUse, context: ToolContext
) -> AsyncIterator[ExecuteToolEvent]:
    yield ToolStreamEvent(tool_use=tool_use, data="working")


@pytest.mark.anyio
@pytest.mark.parametrize("body", [_nothing, _progress_only], ids=["nothing", "progress-only"])
async def test_a_tool_stream_without_a_result_gives_the_model_an_error_result(
    body: Any, caplog: pytest.LogCaptureFixture
) -> None:
    silent = PlainTool("silent", body)
    model = ScriptedModel([calls(("silent", {}, "t1")), "done"])
    agent = Agent(model, tools=[silent])
    observed: list[ToolResultEvent] = []
    exceptions: list[Exception | None] = []

    def record(result: ExecuteToolResult) -> ExecuteToolResult:
        observed.append(result.result)
        return result

    agent.add_middleware(ExecuteToolStage.Output, record)
    agent.add_hook(lambda e: exceptions.append(e.exception), AfterToolCallEvent)
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        result = await agent.invoke_async("go")

    assert result.text == "done"
    expected = {
        "toolUseId": "t1",
        "status": "error",
        "content": [{"text": "Error: the tool 'silent' finished without a result"}],
    }
    assert tool_results(agent.messages[2]) == [expected]
    # The terminal produced it, so middleware observed a result, not an exception.
    assert [o.tool_result for o in observed] == [expected]
    assert [type(e) for e in exceptions] == [RuntimeError]
    assert any("without a result" in r.getMessage() for r in caplog.records if r.name == LOGGER)


@pytest.mark.anyio
async def test_a_tool_that_raises_is_logged() -> None:
    async def explode(tool_use: ToolUse, context: ToolContext) -> AsyncIterator[ExecuteToolEvent]:
        raise OSError("disk on fire")
        yield  # pragma: no cover - makes this an async generator

    model = ScriptedModel([calls(("explode", {}, "t1")), "done"])
    agent = Agent(model, tools=[PlainTool("explode", explode)])
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep(logging.ERROR)
    logging.getLogger(LOGGER).addHandler(keep)
    try:
        await agent.invoke_async("go")
    finally:
        logging.getLogger(LOGGER).removeHandler(keep)

    assert [type(r.exc_info[1]) for r in records if r.exc_info] == [OSError]
    assert result_text(tool_results(agent.messages[2])[0]) == "Error: disk on fire"


@pytest.mark.anyio
async def test_a_replaced_cancel_signal_becomes_an_error_result_and_the_tool_does_not_run() -> None:
    ran: list[str] = []

    @tool
    def job() -> str:
        """Do the job."""
        ran.append("ran")
        return "done"

    model = ScriptedModel([calls(("job", {}, "t1")), "understood"])
    agent = Agent(model, tools=[job])

    def swap(ctx: ExecuteToolContext) -> ExecuteToolContext:
        return dataclasses.replace(ctx, cancel_signal=CancelToken())

    agent.add_middleware(ExecuteToolStage.Input, swap)
    result = await agent.invoke_async("go")

    assert result.text == "understood"
    assert ran == []
    [tool_result] = tool_results(agent.messages[2])
    assert tool_result["status"] == "error"
    assert result_text(tool_result).startswith("Error: ExecuteToolContext.cancel_signal was")


@pytest.mark.anyio
async def test_a_failing_call_leaves_the_other_calls_of_its_round_alone() -> None:
    model = ScriptedModel(
        [calls(("echo", {"text": "a"}, "t1"), ("echo", {"text": "b"}, "t2")), "done"]
    )
    agent = Agent(model, tools=[echo])

    async def fail_t1(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        if ctx.tool_use["toolUseId"] == "t1":
            await anyio.sleep(0)  # the sibling is running meanwhile
            raise Boom("t1 refused")
        async for event in next_fn(ctx):
            yield event

    agent.add_middleware(ExecuteToolStage.Wrap, fail_t1)
    result = await agent.invoke_async("go")

    assert result.text == "done"
    assert [(r["status"], result_text(r)) for r in tool_results(agent.messages[2])] == [
        ("error", "Error: t1 refused"),
        ("success", "echo: b"),
    ]
