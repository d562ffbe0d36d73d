"""add_middleware: handler types are inferred from the stage token and checked."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, assert_type

from stageware import (
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolResult,
    ExecuteToolStage,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelResult,
    InvokeModelStage,
    MiddlewareRegistry,
    MiddlewareStage,
    ModelStopReason,
    ToolResultEvent,
)

registry = MiddlewareRegistry()


def stage_tokens_carry_their_types() -> None:
    assert_type(
        InvokeModelStage, MiddlewareStage[InvokeModelContext, InvokeModelResult, InvokeModelEvent]
    )
    assert_type(
        ExecuteToolStage, MiddlewareStage[ExecuteToolContext, ExecuteToolResult, ExecuteToolEvent]
    )


# Positive cases: annotated handlers of every phase, sync and async.


def concise(context: InvokeModelContext) -> InvokeModelContext:
    return context.replace(system_prompt="Be concise.")


async def fetch_policy(context: InvokeModelContext) -> InvokeModelContext:
    return context.replace(tool_choice=None)


async def passthrough(
    context: InvokeModelContext, next_fn: InvokeModelNext
) -> AsyncIterator[InvokeModelEvent]:
    async for event in next_fn(context):
        yield event


def keep_result(result: InvokeModelResult) -> InvokeModelResult:
    assert_type(result.result, ModelStopReason)
    return result


async def audit_result(result: ExecuteToolResult) -> ExecuteToolResult:
    assert_type(result.result, ToolResultEvent)
    return result


def every_phase_accepts_its_handler() -> None:
    registry.add_middleware(InvokeModelStage.Input, concise)
    registry.add_middleware(InvokeModelStage.Input, fetch_policy)
    registry.add_middleware(InvokeModelStage, passthrough)
    registry.add_middleware(InvokeModelStage.Wrap, passthrough)
    registry.add_middleware(InvokeModelStage.Output, keep_result)
    registry.add_middleware(ExecuteToolStage.Output, audit_result)


# Wrap handlers annotated as Strands annotates them: next_fn returns an AsyncGenerator.


async def strands_style(
    ctx: InvokeModelContext, next_fn: Callable[[InvokeModelContext], AsyncGenerator[Any, None]]
) -> AsyncGenerator[Any, None]:
    async for event in next_fn(ctx):
        yield event


async def strands_style_typed(
    ctx: InvokeModelContext,
    next_fn: Callable[[InvokeModelContext], AsyncGenerator[InvokeModelEvent, None]],
) -> AsyncGenerator[InvokeModelEvent, None]:
    async for event in next_fn(ctx):
        yield event


async def closes_its_stream(
    context: InvokeModelContext, next_fn: InvokeModelNext
) -> AsyncIterator[InvokeModelEvent]:
    events = next_fn(context)
    assert_type(events, AsyncGenerator[InvokeModelEvent, None])
    yield await events.asend(None)
    await events.aclose()


def strands_style_wrap_handlers_are_accepted() -> None:
    registry.add_middleware(InvokeModelStage, strands_style)
    registry.add_middleware(InvokeModelStage.Wrap, strands_style)
    registry.add_middleware(InvokeModelStage, strands_style_typed)
    registry.add_middleware(InvokeModelStage.Wrap, strands_style_typed)
    registry.add_middleware(InvokeModelStage, closes_its_stream)


def lambdas_are_inferred_from_the_token() -> None:
    registry.add_middleware(InvokeModelStage.Input, lambda c: c.replace(messages=c.messages[-10:]))
    registry.add_middleware(ExecuteToolStage.Input, lambda c: c.replace(tool=None))
    registry.add_middleware(InvokeModelStage.Output, lambda r: r.replace(result=r.result))


# Expected errors: each must stay an error, or the run fails.


def a_handler_for_another_stage_is_rejected() -> None:
    registry.add_middleware(ExecuteToolStage.Input, concise)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    registry.add_middleware(ExecuteToolStage, passthrough)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def a_strands_style_handler_for_another_stage_is_rejected() -> None:
    registry.add_middleware(ExecuteToolStage, strands_style)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    registry.add_middleware(ExecuteToolStage.Wrap, strands_style_typed)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def a_next_fn_taking_another_stages_context_is_rejected() -> None:
    async def wrong_next(
        ctx: InvokeModelContext,
        next_fn: Callable[[ExecuteToolContext], AsyncGenerator[Any, None]],
    ) -> AsyncGenerator[Any, None]:
        yield ctx

    async def wrong_next_typed(
        ctx: InvokeModelContext,
        next_fn: Callable[[ExecuteToolContext], AsyncGenerator[InvokeModelEvent, None]],
    ) -> AsyncGenerator[InvokeModelEvent, None]:
        if False:
            yield

    registry.add_middleware(InvokeModelStage, wrong_next)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    registry.add_middleware(InvokeModelStage.Wrap, wrong_next_typed)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def an_input_handler_on_output_is_rejected() -> None:
    registry.add_middleware(InvokeModelStage.Output, concise)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def a_wrong_return_type_is_rejected() -> None:
    def returns_prompt(context: InvokeModelContext) -> str:
        return "Be concise."

    registry.add_middleware(InvokeModelStage.Input, returns_prompt)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def a_typo_inside_an_unannotated_lambda_is_reported() -> None:
    registry.add_middleware(InvokeModelStage.Input, lambda c: c.replace(system_promt="x"))  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue, reportUnknownLambdaType]
    registry.add_middleware(InvokeModelStage.Input, lambda c: c.mesages)  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownLambdaType]


def a_wrap_handler_yielding_another_stages_event_is_rejected() -> None:
    async def yields_tool_result(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[ToolResultEvent]:
        yield ToolResultEvent({"toolUseId": "t1", "status": "success", "content": []})

    registry.add_middleware(InvokeModelStage, yields_tool_result)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def an_output_handler_returning_another_stages_result_is_rejected() -> None:
    def wrong_result(result: InvokeModelResult) -> ExecuteToolResult:
        return ExecuteToolResult(
            result=ToolResultEvent({"toolUseId": "t1", "status": "success", "content": []})
        )

    registry.add_middleware(InvokeModelStage.Output, wrong_result)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def a_coroutine_is_not_a_wrap_handler() -> None:
    async def not_a_generator(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> InvokeModelEvent:
        raise NotImplementedError

    registry.add_middleware(InvokeModelStage.Wrap, not_a_generator)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
