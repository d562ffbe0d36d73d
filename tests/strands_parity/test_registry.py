"""Port of Strands 1.62 ``tests/strands/middleware/test_registry.py`` (compose and invoke).

Strands Agents is Apache-2.0; this is a rewrite of its test scenarios in stageware's idiom,
not a copy. Strands tests its private ``MiddlewareRegistry`` on a fake
``MiddlewareStage[dict, _DoneResult, str]`` whose result event is a ``str`` subclass; the
port declares the same fake stage with stageware's public ``MiddlewareStage`` (the result
wrapper is a ``MiddlewareResult`` subclass, as stageware requires) and drives the public
``stageware.MiddlewareRegistry``. Strands' ``alist`` fixture is the ``alist`` helper below.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import pytest

from stageware import (
    Interrupt,
    InterruptException,
    MiddlewareRegistry,
    MiddlewareResult,
    MiddlewareStage,
)

pytestmark = pytest.mark.anyio


class Done(str):
    """The fake stage's result event: a string the registry recognises by its type."""


class DoneResult(MiddlewareResult[Done]):
    """What the fake stage's Output handlers receive and return."""


Ctx = dict[str, Any]
Next = Callable[[Ctx], AsyncIterator[str]]

STAGE: Final[MiddlewareStage[Ctx, DoneResult, str]] = MiddlewareStage(
    "Test", result_type=DoneResult, result_event=Done
)


@pytest.fixture
def registry() -> MiddlewareRegistry:
    return MiddlewareRegistry()


def make_terminal(*events: str, result: str = "terminal_result") -> Next:
    """A terminal that yields *events*, then the result event."""

    async def terminal(context: Ctx) -> AsyncIterator[str]:
        for event in events:
            yield event
        yield Done(result)

    return terminal


async def alist(events: AsyncIterator[str]) -> list[str]:
    return [event async for event in events]


async def passthrough(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
    async for event in next_fn(context):
        yield event


async def raising_terminal(context: Ctx) -> AsyncIterator[str]:
    raise ValueError("boom")
    yield  # pragma: no cover - makes this an async generator


# --- compose: no handlers ---


async def test_compose_no_handlers_returns_terminal_directly(registry: MiddlewareRegistry) -> None:
    terminal = make_terminal("e1", "e2", result="done")
    chain = registry.compose(STAGE, terminal)
    assert chain is terminal


async def test_compose_no_handlers_events_and_result_pass_through(
    registry: MiddlewareRegistry,
) -> None:
    terminal = make_terminal("e1", "e2", result="done")
    *events, result = await alist(registry.invoke(STAGE, {}, terminal))
    assert events == ["e1", "e2"]
    assert result == "done"


# --- wrap handler ---


async def test_wrap_passthrough_forwards_events_and_result(registry: MiddlewareRegistry) -> None:
    registry.add_middleware(STAGE, passthrough)
    *events, result = await alist(registry.invoke(STAGE, {}, make_terminal("e1", result="done")))
    assert events == ["e1"]
    assert result == "done"


async def test_wrap_phase_token_registers_wrap_handler(registry: MiddlewareRegistry) -> None:
    """Registering on the explicit .Wrap token behaves like passing the bare stage."""
    seen: list[str] = []

    async def handler(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        seen.append("wrap")
        async for event in next_fn(context):
            yield event

    registry.add_middleware(STAGE.Wrap, handler)
    *events, result = await alist(registry.invoke(STAGE, {}, make_terminal("e1", result="done")))
    assert seen == ["wrap"]
    assert events == ["e1"]
    assert result == "done"


async def test_wrap_context_modification_reaches_terminal(registry: MiddlewareRegistry) -> None:
    received_context: Ctx = {}

    async def terminal(context: Ctx) -> AsyncIterator[str]:
        received_context.update(context)
        yield Done("done")

    async def modifier(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        async for event in next_fn({**context, "added": True}):
            yield event

    registry.add_middleware(STAGE, modifier)
    await alist(registry.invoke(STAGE, {"original": True}, terminal))
    assert received_context == {"original": True, "added": True}


async def test_wrap_short_circuit_skips_terminal(registry: MiddlewareRegistry) -> None:
    terminal_called = False

    async def terminal(context: Ctx) -> AsyncIterator[str]:
        nonlocal terminal_called
        terminal_called = True
        yield Done("should not reach")

    async def short_circuit(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        yield "cached_event"
        yield Done("cached_result")

    registry.add_middleware(STAGE, short_circuit)
    *events, result = await alist(registry.invoke(STAGE, {}, terminal))
    assert not terminal_called
    assert events == ["cached_event"]
    assert result == "cached_result"


async def test_wrap_event_filtering(registry: MiddlewareRegistry) -> None:
    async def filter_middleware(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        async for event in next_fn(context):
            if event != "skip_me":
                yield event

    registry.add_middleware(STAGE, filter_middleware)
    terminal = make_terminal("keep", "skip_me", "also_keep", result="done")
    *events, result = await alist(registry.invoke(STAGE, {}, terminal))
    assert events == ["keep", "also_keep"]
    assert result == "done"


async def test_wrap_event_injection(registry: MiddlewareRegistry) -> None:
    async def before_after_injector(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        yield "before"
        last: str | None = None
        async for event in next_fn(context):
            if last is not None:
                yield last
            last = event
        yield "after"
        assert last is not None
        yield last

    registry.add_middleware(STAGE, before_after_injector)
    *events, result = await alist(registry.invoke(STAGE, {}, make_terminal("inner", result="done")))
    assert events == ["before", "inner", "after"]
    assert result == "done"


async def test_wrap_retry_calls_next_multiple_times(registry: MiddlewareRegistry) -> None:
    call_count = 0

    async def terminal(context: Ctx) -> AsyncIterator[str]:
        nonlocal call_count
        call_count += 1
        if call_count < 3:
            raise ValueError("not yet")
        yield "success"
        yield Done("done")

    async def retry_middleware(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        for attempt in range(3):
            try:
                async for event in next_fn(context):
                    yield event
                return
            except ValueError:
                if attempt == 2:
                    raise

    registry.add_middleware(STAGE, retry_middleware)
    *events, result = await alist(registry.invoke(STAGE, {}, terminal))
    assert call_count == 3
    assert events == ["success"]
    assert result == "done"


# --- composition order ---


async def test_first_registered_is_outermost(registry: MiddlewareRegistry) -> None:
    order: list[str] = []

    async def outer(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        order.append("outer_before")
        async for event in next_fn(context):
            yield event
        order.append("outer_after")

    async def inner(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        order.append("inner_before")
        async for event in next_fn(context):
            yield event
        order.append("inner_after")

    registry.add_middleware(STAGE, outer)
    registry.add_middleware(STAGE, inner)
    await alist(registry.invoke(STAGE, {}, make_terminal(result="done")))
    assert order == ["outer_before", "inner_before", "inner_after", "outer_after"]


async def test_multiple_handlers_all_see_events(registry: MiddlewareRegistry) -> None:
    seen_by: dict[str, list[str]] = {"a": [], "b": []}

    def observer(name: str) -> Callable[[Ctx, Next], AsyncIterator[str]]:
        async def handler(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
            async for event in next_fn(context):
                seen_by[name].append(event)
                yield event

        return handler

    registry.add_middleware(STAGE, observer("a"))
    registry.add_middleware(STAGE, observer("b"))
    await alist(registry.invoke(STAGE, {}, make_terminal("e1", "e2", result="done")))
    # Both handlers see every event, the result (the last event) included.
    assert seen_by["b"] == ["e1", "e2", "done"]
    assert seen_by["a"] == ["e1", "e2", "done"]


# --- input phase ---


def capturing_terminal(received_context: Ctx) -> Next:
    async def terminal(context: Ctx) -> AsyncIterator[str]:
        received_context.update(context)
        yield Done("done")

    return terminal


async def test_input_transforms_context(registry: MiddlewareRegistry) -> None:
    received_context: Ctx = {}

    def input_handler(context: Ctx) -> Ctx:
        return {**context, "injected": True}

    registry.add_middleware(STAGE.Input, input_handler)
    await alist(registry.invoke(STAGE, {"original": True}, capturing_terminal(received_context)))
    assert received_context == {"original": True, "injected": True}


async def test_input_async_handler(registry: MiddlewareRegistry) -> None:
    received_context: Ctx = {}

    async def async_input(context: Ctx) -> Ctx:
        return {**context, "async": True}

    registry.add_middleware(STAGE.Input, async_input)
    await alist(registry.invoke(STAGE, {}, capturing_terminal(received_context)))
    assert received_context == {"async": True}


async def test_input_runs_before_wrap(registry: MiddlewareRegistry) -> None:
    order: list[str] = []

    async def terminal(context: Ctx) -> AsyncIterator[str]:
        order.append(f"terminal(injected={context.get('injected')})")
        yield Done("done")

    def input_handler(context: Ctx) -> Ctx:
        order.append("input")
        return {**context, "injected": True}

    async def wrap_handler(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        order.append(f"wrap(injected={context.get('injected')})")
        async for event in next_fn(context):
            yield event

    # Wrap registered first, then Input: Input still runs first, by phase.
    registry.add_middleware(STAGE, wrap_handler)
    registry.add_middleware(STAGE.Input, input_handler)
    await alist(registry.invoke(STAGE, {}, terminal))
    assert order == ["input", "wrap(injected=True)", "terminal(injected=True)"]


async def test_input_multiple_compose_in_order(registry: MiddlewareRegistry) -> None:
    received_context: Ctx = {}

    def first_input(context: Ctx) -> Ctx:
        return {**context, "first": True}

    def second_input(context: Ctx) -> Ctx:
        return {**context, "second": True, "saw_first": context.get("first")}

    registry.add_middleware(STAGE.Input, first_input)
    registry.add_middleware(STAGE.Input, second_input)
    await alist(registry.invoke(STAGE, {}, capturing_terminal(received_context)))
    assert received_context["first"] is True
    assert received_context["second"] is True
    assert received_context["saw_first"] is True


# --- output phase ---


async def test_output_transforms_result(registry: MiddlewareRegistry) -> None:
    def output_handler(result: DoneResult) -> DoneResult:
        return DoneResult(result=Done(result.result + "_transformed"))

    registry.add_middleware(STAGE.Output, output_handler)
    *_, result = await alist(registry.invoke(STAGE, {}, make_terminal(result="original")))
    assert result == "original_transformed"


async def test_output_receives_stage_result_wrapper(registry: MiddlewareRegistry) -> None:
    received: list[DoneResult] = []

    def output_handler(result: DoneResult) -> DoneResult:
        received.append(result)
        return result

    registry.add_middleware(STAGE.Output, output_handler)
    await alist(registry.invoke(STAGE, {}, make_terminal(result="original")))
    assert received == [DoneResult(result=Done("original"))]
    assert type(received[0]) is DoneResult


async def test_output_async_handler(registry: MiddlewareRegistry) -> None:
    async def async_output(result: DoneResult) -> DoneResult:
        return DoneResult(result=Done(result.result + "_async"))

    registry.add_middleware(STAGE.Output, async_output)
    *_, result = await alist(registry.invoke(STAGE, {}, make_terminal(result="base")))
    assert result == "base_async"


async def test_output_does_not_affect_events(registry: MiddlewareRegistry) -> None:
    def output_handler(result: DoneResult) -> DoneResult:
        return DoneResult(result=Done("transformed"))

    registry.add_middleware(STAGE.Output, output_handler)
    terminal = make_terminal("e1", "e2", result="original")
    *events, result = await alist(registry.invoke(STAGE, {}, terminal))
    assert events == ["e1", "e2"]
    assert result == "transformed"


async def test_output_runs_after_wrap(registry: MiddlewareRegistry) -> None:
    order: list[str] = []

    async def wrap_handler(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        order.append("wrap_before")
        async for event in next_fn(context):
            yield event
        order.append("wrap_after")

    def output_handler(result: DoneResult) -> DoneResult:
        order.append("output")
        return DoneResult(result=Done(result.result + "_out"))

    registry.add_middleware(STAGE.Output, output_handler)
    registry.add_middleware(STAGE, wrap_handler)
    *_, result = await alist(registry.invoke(STAGE, {}, make_terminal(result="base")))
    assert order == ["wrap_before", "wrap_after", "output"]
    assert result == "base_out"


async def test_output_handler_must_return_stage_result_type(registry: MiddlewareRegistry) -> None:
    def bad_handler(result: DoneResult) -> Any:
        return result.result

    registry.add_middleware(STAGE.Output, bad_handler)
    with pytest.raises(TypeError, match="returned Done, expected DoneResult"):
        await alist(registry.invoke(STAGE, {}, make_terminal(result="base")))


async def test_output_handler_not_called_when_chain_yields_nothing(
    registry: MiddlewareRegistry,
) -> None:
    """A chain that yields no events never reaches the Output handler."""
    called = False

    def output_handler(result: DoneResult) -> DoneResult:
        nonlocal called
        called = True
        return result

    async def empty_terminal(context: Ctx) -> AsyncIterator[str]:
        return
        yield  # pragma: no cover - makes this an async generator

    registry.add_middleware(STAGE.Output, output_handler)
    # Deliberate difference (issue 7): Strands returns an empty stream; stageware's
    # registry.invoke() raises RuntimeError for a chain with neither a result nor an interrupt.
    with pytest.raises(RuntimeError, match="without yielding a Done"):
        await alist(registry.invoke(STAGE, {}, empty_terminal))
    assert not called


async def test_output_handler_skipped_when_chain_yields_no_result_event(
    registry: MiddlewareRegistry,
) -> None:
    """Events that are not the stage's result event flow through and never reach the handler."""
    received: list[DoneResult] = []
    events: list[str] = []

    def output_handler(result: DoneResult) -> DoneResult:
        received.append(result)
        return result

    async def terminal(context: Ctx) -> AsyncIterator[str]:
        yield "stream_chunk"
        yield "halted"

    registry.add_middleware(STAGE.Output, output_handler)

    # Deliberate difference (issue 7): the events still stream through, then stageware's
    # registry.invoke() raises RuntimeError because no result (nor interrupt) was yielded.
    async def consume() -> None:
        async for event in registry.invoke(STAGE, {}, terminal):
            events.append(event)

    with pytest.raises(RuntimeError, match="without yielding a Done"):
        await consume()

    assert events == ["stream_chunk", "halted"]
    assert received == []


async def test_output_yields_transformed_result_after_trailing_events(
    registry: MiddlewareRegistry,
) -> None:
    """The result is selected by type; events after it stream through and the result comes last."""

    def output_handler(result: DoneResult) -> DoneResult:
        return DoneResult(result=Done(result.result + "_out"))

    async def terminal(context: Ctx) -> AsyncIterator[str]:
        yield "before"
        yield Done("result")
        yield "after"

    registry.add_middleware(STAGE.Output, output_handler)
    events = await alist(registry.invoke(STAGE, {}, terminal))

    assert events == ["before", "after", "result_out"]


async def test_output_runs_once_on_the_last_result(registry: MiddlewareRegistry) -> None:
    """A Wrap handler that forwards two attempts gets one Output call, on the final result."""
    received: list[str] = []

    def output_handler(result: DoneResult) -> DoneResult:
        received.append(str(result.result))
        return DoneResult(result=Done(result.result + "_out"))

    async def retry_twice(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        async for event in next_fn(context):
            yield event
        async for event in next_fn(context):
            yield event

    attempts = iter(["first", "second"])

    async def terminal(context: Ctx) -> AsyncIterator[str]:
        yield "chunk"
        yield Done(next(attempts))

    registry.add_middleware(STAGE.Output, output_handler)
    registry.add_middleware(STAGE, retry_twice)
    events = await alist(registry.invoke(STAGE, {}, terminal))

    assert received == ["second"]
    assert events == ["chunk", "chunk", "second_out"]


async def test_output_not_called_when_wrap_raises_after_the_result(
    registry: MiddlewareRegistry,
) -> None:
    called = False

    def output_handler(result: DoneResult) -> DoneResult:
        nonlocal called
        called = True
        return result

    async def reject_after(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        async for event in next_fn(context):
            yield event
        raise ValueError("rejected")

    registry.add_middleware(STAGE.Output, output_handler)
    registry.add_middleware(STAGE, reject_after)

    with pytest.raises(ValueError, match="rejected"):
        await alist(registry.invoke(STAGE, {}, make_terminal(result="base")))
    assert not called


async def test_output_handler_must_wrap_the_stage_result_event(
    registry: MiddlewareRegistry,
) -> None:
    def bad_payload(result: DoneResult) -> DoneResult:
        plain: Any = "plain string"  # Not a Done: the stage's result event type.
        return DoneResult(result=plain)

    registry.add_middleware(STAGE.Output, bad_payload)

    with pytest.raises(TypeError, match="returned a DoneResult holding str, expected Done"):
        await alist(registry.invoke(STAGE, {}, make_terminal(result="base")))


# --- error propagation ---


async def test_terminal_error_propagates_through_middleware(registry: MiddlewareRegistry) -> None:
    async def terminal(context: Ctx) -> AsyncIterator[str]:
        raise ValueError("terminal_error")
        yield  # pragma: no cover - makes this an async generator

    registry.add_middleware(STAGE, passthrough)
    with pytest.raises(ValueError, match="terminal_error"):
        await alist(registry.invoke(STAGE, {}, terminal))


async def test_middleware_error_propagates_to_caller(registry: MiddlewareRegistry) -> None:
    async def broken_middleware(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        raise RuntimeError("middleware_error")
        yield  # pragma: no cover - makes this an async generator

    registry.add_middleware(STAGE, broken_middleware)
    with pytest.raises(RuntimeError, match="middleware_error"):
        await alist(registry.invoke(STAGE, {}, make_terminal(result="done")))


async def test_try_finally_in_middleware_runs_on_error(registry: MiddlewareRegistry) -> None:
    finally_ran = False

    async def guarded(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        nonlocal finally_ran
        try:
            async for event in next_fn(context):
                yield event
        finally:
            finally_ran = True

    registry.add_middleware(STAGE, guarded)
    with pytest.raises(ValueError, match="boom"):
        await alist(registry.invoke(STAGE, {}, raising_terminal))
    assert finally_ran


async def test_try_finally_runs_on_generator_close(registry: MiddlewareRegistry) -> None:
    finally_ran = False

    async def guarded(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        nonlocal finally_ran
        try:
            async for event in next_fn(context):
                yield event
        finally:
            finally_ran = True

    registry.add_middleware(STAGE, guarded)
    events = registry.invoke(STAGE, {}, make_terminal("e1", "e2", "e3", result="done"))
    await events.__anext__()
    await events.aclose()
    assert finally_ran


# --- additional coverage ---


async def test_chained_context_modification_across_wrap_handlers(
    registry: MiddlewareRegistry,
) -> None:
    """Several Wrap handlers each modify the context; the terminal sees all the changes."""
    received_context: Ctx = {}

    async def add_a(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        async for event in next_fn({**context, "a": True}):
            yield event

    async def add_b(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        async for event in next_fn({**context, "b": True}):
            yield event

    registry.add_middleware(STAGE, add_a)
    registry.add_middleware(STAGE, add_b)
    await alist(registry.invoke(STAGE, {"original": True}, capturing_terminal(received_context)))
    assert received_context == {"original": True, "a": True, "b": True}


async def test_error_transformation_by_middleware(registry: MiddlewareRegistry) -> None:
    """A middleware can catch an error and raise a different one."""

    async def terminal(context: Ctx) -> AsyncIterator[str]:
        raise ValueError("original")
        yield  # pragma: no cover - makes this an async generator

    async def transformer(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        try:
            async for event in next_fn(context):
                yield event
        except ValueError as error:
            raise RuntimeError(f"Wrapped: {error}") from error

    registry.add_middleware(STAGE, transformer)
    with pytest.raises(RuntimeError, match="Wrapped: original"):
        await alist(registry.invoke(STAGE, {}, terminal))


async def interrupting_terminal(context: Ctx) -> AsyncIterator[str]:
    raise InterruptException(Interrupt(id="int-1", name="test"))
    yield  # pragma: no cover - makes this an async generator


async def test_interrupt_exception_propagates_through_passthrough(
    registry: MiddlewareRegistry,
) -> None:
    """InterruptException passes through a passthrough middleware without being swallowed."""
    registry.add_middleware(STAGE, passthrough)
    with pytest.raises(InterruptException):
        await alist(registry.invoke(STAGE, {}, interrupting_terminal))


async def test_multi_layer_finally_ordering_on_error(registry: MiddlewareRegistry) -> None:
    """Every finally block runs, innermost first, when the terminal raises."""
    order: list[str] = []

    def guarded(name: str) -> Callable[[Ctx, Next], AsyncIterator[str]]:
        async def handler(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
            try:
                async for event in next_fn(context):
                    yield event
            finally:
                order.append(f"{name}_finally")

        return handler

    registry.add_middleware(STAGE, guarded("outer"))
    registry.add_middleware(STAGE, guarded("inner"))
    with pytest.raises(ValueError, match="boom"):
        await alist(registry.invoke(STAGE, {}, raising_terminal))
    assert order == ["inner_finally", "outer_finally"]


async def test_two_layer_finally_on_generator_close(registry: MiddlewareRegistry) -> None:
    """Both middleware finally blocks run when the consumer calls aclose."""
    order: list[str] = []

    def guarded(name: str) -> Callable[[Ctx, Next], AsyncIterator[str]]:
        async def handler(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
            try:
                async for event in next_fn(context):
                    yield event
            finally:
                order.append(f"{name}_finally")

        return handler

    registry.add_middleware(STAGE, guarded("outer"))
    registry.add_middleware(STAGE, guarded("inner"))
    events = registry.invoke(STAGE, {}, make_terminal("e1", "e2", "e3", result="done"))
    await events.__anext__()
    await events.aclose()
    assert "inner_finally" in order
    assert "outer_finally" in order


async def cancelled_terminal(context: Ctx) -> AsyncIterator[str]:
    # As in Strands, the cancellation exception is raised by hand: what is tested is that the
    # chain lets a BaseException through untouched (on trio it is just a BaseException too).
    raise asyncio.CancelledError()
    yield  # pragma: no cover - makes this an async generator


async def test_cancelled_error_propagates_through_middleware(registry: MiddlewareRegistry) -> None:
    """CancelledError is a BaseException: a middleware's ``except Exception`` must not catch it."""

    async def swallow_exceptions(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        try:
            async for event in next_fn(context):
                yield event
        except Exception:  # deliberately broad: must NOT catch CancelledError
            yield "swallowed"

    registry.add_middleware(STAGE, swallow_exceptions)
    with pytest.raises(asyncio.CancelledError):
        await alist(registry.invoke(STAGE, {}, cancelled_terminal))


async def test_cancelled_error_propagates_through_multiple_layers(
    registry: MiddlewareRegistry,
) -> None:
    registry.add_middleware(STAGE, passthrough)
    registry.add_middleware(STAGE, passthrough)
    with pytest.raises(asyncio.CancelledError):
        await alist(registry.invoke(STAGE, {}, cancelled_terminal))


async def test_interrupt_exception_propagates_through_multiple_layers(
    registry: MiddlewareRegistry,
) -> None:
    registry.add_middleware(STAGE, passthrough)
    registry.add_middleware(STAGE, passthrough)
    with pytest.raises(InterruptException):
        await alist(registry.invoke(STAGE, {}, interrupting_terminal))


async def test_outer_finally_runs_when_inner_middleware_throws(
    registry: MiddlewareRegistry,
) -> None:
    """The outer middleware's finally runs when an inner middleware (not the terminal) raises."""
    order: list[str] = []

    async def outer(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        try:
            async for event in next_fn(context):
                yield event
        finally:
            order.append("outer_finally")

    async def inner(context: Ctx, next_fn: Next) -> AsyncIterator[str]:
        raise ValueError("inner boom")
        yield  # pragma: no cover - makes this an async generator

    registry.add_middleware(STAGE, outer)
    registry.add_middleware(STAGE, inner)
    with pytest.raises(ValueError, match="inner boom"):
        await alist(registry.invoke(STAGE, {}, make_terminal(result="done")))
    assert order == ["outer_finally"]
