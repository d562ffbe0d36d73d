"""Every generated annotation, pinned: a loosening to Any anywhere fails one of these."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, assert_type

from stageware import (
    AgentHandle,
    AgentStreamAsyncInputHandler,
    AgentStreamAsyncOutputHandler,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamInputHandler,
    AgentStreamNext,
    AgentStreamOutputHandler,
    AgentStreamResult,
    AgentStreamStage,
    AgentStreamWrapHandler,
    AgentTool,
    CancelSignal,
    EventLoopStopEvent,
    ExecuteToolAsyncInputHandler,
    ExecuteToolAsyncOutputHandler,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolInputHandler,
    ExecuteToolNext,
    ExecuteToolOutputHandler,
    ExecuteToolResult,
    ExecuteToolWrapHandler,
    Interrupt,
    InvokeModelAsyncInputHandler,
    InvokeModelAsyncOutputHandler,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelInputHandler,
    InvokeModelNext,
    InvokeModelOutputHandler,
    InvokeModelResult,
    InvokeModelWrapHandler,
    Message,
    Messages,
    MiddlewareStage,
    Model,
    ModelMessageEvent,
    ModelStopReason,
    ModelStreamChunkEvent,
    StopReason,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolInterruptEvent,
    ToolResult,
    ToolResultEvent,
    ToolResultMessageEvent,
    ToolResultStatus,
    ToolSpec,
    ToolStreamEvent,
    ToolUse,
    Usage,
)


def handler_aliases(
    im_next: InvokeModelNext,
    im_input: InvokeModelInputHandler,
    im_async_input: InvokeModelAsyncInputHandler,
    im_wrap: InvokeModelWrapHandler,
    im_output: InvokeModelOutputHandler,
    im_async_output: InvokeModelAsyncOutputHandler,
    et_next: ExecuteToolNext,
    et_input: ExecuteToolInputHandler,
    et_async_input: ExecuteToolAsyncInputHandler,
    et_wrap: ExecuteToolWrapHandler,
    et_output: ExecuteToolOutputHandler,
    et_async_output: ExecuteToolAsyncOutputHandler,
    as_next: AgentStreamNext,
    as_input: AgentStreamInputHandler,
    as_async_input: AgentStreamAsyncInputHandler,
    as_wrap: AgentStreamWrapHandler,
    as_output: AgentStreamOutputHandler,
    as_async_output: AgentStreamAsyncOutputHandler,
) -> None:
    assert_type(im_next, Callable[[InvokeModelContext], AsyncGenerator[InvokeModelEvent, None]])
    assert_type(im_input, Callable[[InvokeModelContext], InvokeModelContext])
    assert_type(im_async_input, Callable[[InvokeModelContext], Awaitable[InvokeModelContext]])
    assert_type(
        im_wrap,
        Callable[
            [
                InvokeModelContext,
                Callable[[InvokeModelContext], AsyncGenerator[InvokeModelEvent, None]],
            ],
            AsyncIterator[InvokeModelEvent],
        ],
    )
    assert_type(im_output, Callable[[InvokeModelResult], InvokeModelResult])
    assert_type(im_async_output, Callable[[InvokeModelResult], Awaitable[InvokeModelResult]])
    assert_type(et_next, Callable[[ExecuteToolContext], AsyncGenerator[ExecuteToolEvent, None]])
    assert_type(et_input, Callable[[ExecuteToolContext], ExecuteToolContext])
    assert_type(et_async_input, Callable[[ExecuteToolContext], Awaitable[ExecuteToolContext]])
    assert_type(
        et_wrap,
        Callable[
            [
                ExecuteToolContext,
                Callable[[ExecuteToolContext], AsyncGenerator[ExecuteToolEvent, None]],
            ],
            AsyncIterator[ExecuteToolEvent],
        ],
    )
    assert_type(et_output, Callable[[ExecuteToolResult], ExecuteToolResult])
    assert_type(et_async_output, Callable[[ExecuteToolResult], Awaitable[ExecuteToolResult]])
    assert_type(as_next, Callable[[AgentStreamContext], AsyncGenerator[AgentStreamEvent, None]])
    assert_type(as_input, Callable[[AgentStreamContext], AgentStreamContext])
    assert_type(as_async_input, Callable[[AgentStreamContext], Awaitable[AgentStreamContext]])
    assert_type(
        as_wrap,
        Callable[
            [
                AgentStreamContext,
                Callable[[AgentStreamContext], AsyncGenerator[AgentStreamEvent, None]],
            ],
            AsyncIterator[AgentStreamEvent],
        ],
    )
    assert_type(as_output, Callable[[AgentStreamResult], AgentStreamResult])
    assert_type(as_async_output, Callable[[AgentStreamResult], Awaitable[AgentStreamResult]])


def event_unions(im: InvokeModelEvent, et: ExecuteToolEvent, stream: AgentStreamEvent) -> None:
    assert_type(im, ModelStreamChunkEvent | ModelStopReason)
    assert_type(et, ToolStreamEvent | ToolInterruptEvent | ToolResultEvent)
    assert_type(
        stream,
        ModelStreamChunkEvent
        | ModelMessageEvent
        | ToolStreamEvent
        | ToolInterruptEvent
        | ToolResultEvent
        | ToolResultMessageEvent
        | EventLoopStopEvent,
    )


def the_internal_stage_token() -> None:
    assert_type(
        AgentStreamStage,
        MiddlewareStage[AgentStreamContext, AgentStreamResult, AgentStreamEvent],
    )


def results(im: InvokeModelResult, et: ExecuteToolResult, stream: AgentStreamResult) -> None:
    assert_type(im.result, ModelStopReason)
    assert_type(et.result, ToolResultEvent)
    assert_type(stream.result, EventLoopStopEvent)
    assert_type(stream.value, EventLoopStopEvent)


def context_fields(
    im: InvokeModelContext, et: ExecuteToolContext, stream: AgentStreamContext
) -> None:
    assert_type(im.agent, AgentHandle)
    assert_type(im.messages, Messages)
    assert_type(im.system_prompt, str | list[SystemContentBlock] | None)
    assert_type(im.tool_specs, list[ToolSpec])
    assert_type(im.tool_choice, ToolChoice | None)
    assert_type(im.invocation_state, dict[str, Any])
    assert_type(im.model, Model)
    assert_type(im.projected_input_tokens, int | None)
    assert_type(im.dynamic_trailing_blocks, int)
    assert_type(et.agent, AgentHandle)
    assert_type(et.tool, AgentTool | None)
    assert_type(et.tool_use, ToolUse)
    assert_type(et.invocation_state, dict[str, Any])
    assert_type(et.cancel_signal, CancelSignal)
    assert_type(stream.agent, AgentHandle)
    assert_type(stream.messages, Messages)
    assert_type(stream.invocation_state, dict[str, Any])


def event_fields(
    chunk: ModelStreamChunkEvent,
    stop: ModelStopReason,
    message: ModelMessageEvent,
    tool_stream: ToolStreamEvent,
    interrupt: ToolInterruptEvent,
    tool_result: ToolResultEvent,
    tool_message: ToolResultMessageEvent,
    loop: EventLoopStopEvent,
) -> None:
    assert_type(chunk.chunk, StreamEvent)
    assert_type(stop.stop_reason, StopReason)
    assert_type(stop.message, Message)
    assert_type(stop.usage, Usage)
    assert_type(message.message, Message)
    assert_type(tool_stream.tool_use, ToolUse)
    assert_type(interrupt.tool_use, ToolUse)
    assert_type(interrupt.interrupts, list[Interrupt])
    assert_type(tool_result.tool_result, ToolResult)
    assert_type(tool_message.message, Message)
    assert_type(loop.stop_reason, StopReason)
    assert_type(loop.message, Message)
    assert_type(loop.request_state, dict[str, Any])
    assert_type(loop.interrupts, list[Interrupt] | None)


def payload_keys(tool_use: ToolUse, result: ToolResult, message: Message, usage: Usage) -> None:
    assert_type(tool_use["toolUseId"], str)
    assert_type(tool_use["name"], str)
    assert_type(result["toolUseId"], str)
    assert_type(result["status"], ToolResultStatus)
    assert_type(message["content"][0].get("text"), str | None)
    assert_type(usage["totalTokens"], int)


def from_host_keeps_the_context_type(
    agent: AgentHandle, model: Model, signal: CancelSignal, interrupts: Mapping[str, Interrupt]
) -> None:
    assert_type(
        InvokeModelContext.from_host(
            agent=agent,
            messages=[],
            system_prompt=None,
            tool_specs=[],
            tool_choice=None,
            invocation_state={},
            model=model,
        ),
        InvokeModelContext,
    )
    assert_type(
        ExecuteToolContext.from_host(
            agent=agent,
            tool=None,
            tool_use={"toolUseId": "t", "name": "n", "input": {}},
            invocation_state={},
            cancel_signal=signal,
            interrupts=interrupts,
        ),
        ExecuteToolContext,
    )
    assert_type(
        AgentStreamContext.from_host(agent=agent, messages=[], invocation_state={}),
        AgentStreamContext,
    )


# Expected errors: each replace() and from_host() parameter keeps its type.


def replace_parameters_are_typed(
    im: InvokeModelContext, et: ExecuteToolContext, stream: AgentStreamContext
) -> None:
    im.replace(messages=[1])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
    im.replace(system_prompt=3)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    im.replace(tool_specs="x")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    im.replace(tool_choice="auto")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    im.replace(invocation_state=[])  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    im.replace(model="gpt")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    im.replace(projected_input_tokens="9")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    et.replace(tool="search")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    et.replace(invocation_state=None)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    stream.replace(invocation_state=None)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def from_host_parameters_are_typed(agent: AgentHandle, model: Model, signal: CancelSignal) -> None:
    InvokeModelContext.from_host(
        agent=agent,
        messages="hi",  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
        system_prompt=None,
        tool_specs=[],
        tool_choice=None,
        invocation_state={},
        model=model,
    )
    InvokeModelContext.from_host(
        agent=agent,
        messages=[],
        system_prompt=None,
        tool_specs=[],
        tool_choice=None,
        invocation_state={},
        model="gpt",  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    )
    ExecuteToolContext.from_host(
        agent=agent,
        tool=None,
        tool_use={"name": "n"},  # type: ignore[typeddict-item]  # pyright: ignore[reportArgumentType]
        invocation_state={},
        cancel_signal=signal,
    )
    ExecuteToolContext.from_host(
        agent=agent,
        tool=None,
        tool_use={"toolUseId": "t", "name": "n", "input": {}},
        invocation_state={},
        cancel_signal=True,  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    )
    AgentStreamContext.from_host(
        agent="me",  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
        messages=[],
        invocation_state={},
    )
