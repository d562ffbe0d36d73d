"""Phase order, handler order within a phase, sync and async handlers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from stageware import MiddlewareRegistry

from .stage_fixture import (
    Chunk,
    Done,
    EchoContext,
    EchoEvent,
    EchoResult,
    EchoStage,
    collect,
    echo_terminal,
)

pytestmark = pytest.mark.anyio


def _input(log: list[str], label: str) -> Callable[[EchoContext], EchoContext]:
    def handler(context: EchoContext) -> EchoContext:
        log.append(f"input {label}")
        return context.replace(text=f"{context.text} {label}")

    return handler


def _wrap(
    log: list[str], label: str
) -> Callable[
    [EchoContext, Callable[[EchoContext], AsyncIterator[EchoEvent]]], AsyncIterator[EchoEvent]
]:
    async def handler(
        context: EchoContext, next_fn: Callable[[EchoContext], AsyncIterator[EchoEvent]]
    ) -> AsyncIterator[EchoEvent]:
        log.append(f"wrap {label} in")
        async for event in next_fn(context):
            yield event
        log.append(f"wrap {label} out")

    return handler


def _output(log: list[str], label: str) -> Callable[[EchoResult], EchoResult]:
    def handler(result: EchoResult) -> EchoResult:
        log.append(f"output {label}")
        return result.replace(result=Done(f"{result.result.text} {label}"))

    return handler


async def test_phases_run_input_wrap_output_whatever_the_registration_order() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()
    registry.add_middleware(EchoStage.Output, _output(log, "o1"))
    registry.add_middleware(EchoStage.Wrap, _wrap(log, "w1"))
    registry.add_middleware(EchoStage.Input, _input(log, "i1"))
    registry.add_middleware(EchoStage.Output, _output(log, "o2"))
    registry.add_middleware(EchoStage, _wrap(log, "w2"))
    registry.add_middleware(EchoStage.Input, _input(log, "i2"))

    events = await collect(registry.invoke(EchoStage, EchoContext(text="go"), echo_terminal))

    assert log == [
        "input i1",
        "input i2",
        "wrap w1 in",
        "wrap w2 in",
        "wrap w2 out",
        "wrap w1 out",
        # Output runs last; within it the first registered handler has the last word.
        "output o2",
        "output o1",
    ]
    assert events[-1] == Done("go i1 i2 o2 o1")
    assert events[:-1] == [Chunk("go"), Chunk("i1"), Chunk("i2")]


async def test_wrap_handlers_see_plain_events_and_output_sees_the_final_result() -> None:
    seen: list[EchoEvent] = []
    registry = MiddlewareRegistry()

    async def observe(
        context: EchoContext, next_fn: Callable[[EchoContext], AsyncIterator[EchoEvent]]
    ) -> AsyncIterator[EchoEvent]:
        async for event in next_fn(context):
            seen.append(event)
            yield event

    registry.add_middleware(EchoStage.Wrap, observe)
    registry.add_middleware(EchoStage.Output, lambda r: r.replace(result=Done("rewritten")))

    events = await collect(registry.invoke(EchoStage, EchoContext(text="a"), echo_terminal))

    assert seen == [Chunk("a"), Done("a")]
    assert events == [Chunk("a"), Done("rewritten")]


async def test_async_input_and_output_handlers_are_awaited() -> None:
    registry = MiddlewareRegistry()

    async def shout(context: EchoContext) -> EchoContext:
        return context.replace(text=context.text.upper())

    async def mark(result: EchoResult) -> EchoResult:
        return result.replace(result=Done(result.result.text + "!"))

    registry.add_middleware(EchoStage.Input, shout)
    registry.add_middleware(EchoStage.Output, mark)

    events = await collect(registry.invoke(EchoStage, EchoContext(text="hi"), echo_terminal))

    assert events == [Chunk("HI"), Done("HI!")]


async def test_a_lambda_returning_an_awaitable_is_awaited() -> None:
    registry = MiddlewareRegistry()

    async def lower(context: EchoContext) -> EchoContext:
        return context.replace(text=context.text.lower())

    handler: Callable[[EchoContext], Awaitable[EchoContext]] = lambda c: lower(c)  # noqa: E731
    registry.add_middleware(EchoStage.Input, handler)

    events = await collect(registry.invoke(EchoStage, EchoContext(text="HEY"), echo_terminal))

    assert events[-1] == Done("hey")


async def test_input_handler_must_return_the_context() -> None:
    registry = MiddlewareRegistry()

    def forgets_to_return(context: EchoContext) -> None:
        context.trail.append("oops")

    registry.add_middleware(EchoStage.Input, forgets_to_return)  # type: ignore[arg-type]

    with pytest.raises(
        TypeError, match=r"EchoStage\.Input handler .*forgets_to_return returned NoneType"
    ):
        await collect(registry.invoke(EchoStage, EchoContext(text="x"), echo_terminal))


async def test_a_wrap_handler_can_short_circuit_without_calling_next() -> None:
    registry = MiddlewareRegistry()
    context = EchoContext(text="never sent")

    async def cached(
        context: EchoContext, next_fn: Callable[[EchoContext], AsyncIterator[EchoEvent]]
    ) -> AsyncIterator[EchoEvent]:
        yield Done("from cache")

    registry.add_middleware(EchoStage, cached)
    registry.add_middleware(
        EchoStage.Output, lambda r: r.replace(result=Done(r.result.text + "+out"))
    )

    events = await collect(registry.invoke(EchoStage, context, echo_terminal))

    assert events == [Done("from cache+out")]  # Output still runs on the short-circuit result.
    assert context.trail == []


async def test_a_wrap_handler_can_call_next_more_than_once_and_output_runs_once() -> None:
    registry = MiddlewareRegistry()
    outputs: list[str] = []

    async def twice(
        context: EchoContext, next_fn: Callable[[EchoContext], AsyncIterator[EchoEvent]]
    ) -> AsyncIterator[EchoEvent]:
        async for _ in next_fn(context):
            pass
        async for event in next_fn(context.replace(text="second")):
            yield event

    def record(result: EchoResult) -> EchoResult:
        outputs.append(result.result.text)
        return result

    registry.add_middleware(EchoStage, twice)
    registry.add_middleware(EchoStage.Output, record)
    context = EchoContext(text="first")

    events = await collect(registry.invoke(EchoStage, context, echo_terminal))

    assert events == [Chunk("second"), Done("second")]
    assert context.trail == ["terminal", "terminal"]
    assert outputs == ["second"]
