"""Every generator a layer opened is closed, inner first, however the chain ends.

A stream a Wrap handler's ``next_fn`` opened and left unfinished (read halfway, a first
attempt a retry left, one a failing or cancelled handler abandoned) is closed when the
whole chain finishes, however it finishes, last opened first: the Wrap layers are the
handlers' own generators, with nothing of the runtime's around each of them.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import cast

import anyio
import pytest

from stageware import Interrupt, InterruptException, MiddlewareRegistry

from .stage_fixture import Chunk, Done, EchoContext, EchoEvent, EchoResult, EchoStage, collect

pytestmark = pytest.mark.anyio

Next = Callable[[EchoContext], AsyncGenerator[EchoEvent, None]]
Terminal = Callable[[EchoContext], AsyncIterator[EchoEvent]]


def _layer(log: list[str], label: str) -> Callable[[EchoContext, Next], AsyncIterator[EchoEvent]]:
    async def handler(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        try:
            async for event in next_fn(context):
                yield event
        finally:
            log.append(f"closed {label}")

    return handler


def _registry(log: list[str]) -> MiddlewareRegistry:
    """Two Wrap layers and an Output pass, so every kind of layer is in the chain."""
    registry = MiddlewareRegistry()
    registry.add_middleware(EchoStage.Wrap, _layer(log, "outer"))
    registry.add_middleware(EchoStage.Wrap, _layer(log, "inner"))
    registry.add_middleware(EchoStage.Output, lambda result: result)
    return registry


def _terminal(log: list[str], body: Callable[[], AsyncIterator[EchoEvent]]) -> Terminal:
    async def terminal(context: EchoContext) -> AsyncIterator[EchoEvent]:
        try:
            async for event in body():
                yield event
        finally:
            log.append("closed terminal")

    return terminal


async def _endless() -> AsyncIterator[EchoEvent]:
    yield Chunk("first")
    await anyio.sleep_forever()
    yield Done("unreachable")


async def test_an_early_aclose_closes_every_layer_inner_first() -> None:
    log: list[str] = []
    registry = _registry(log)
    events = registry.invoke(EchoStage, EchoContext(text=""), _terminal(log, _endless))

    assert await anext(events) == Chunk("first")
    assert log == []
    await events.aclose()

    assert log == ["closed terminal", "closed inner", "closed outer"]


async def test_an_error_closes_every_layer_inner_first_and_propagates() -> None:
    log: list[str] = []
    registry = _registry(log)

    async def failing() -> AsyncIterator[EchoEvent]:
        yield Chunk("ok")
        raise ValueError("model exploded")

    with pytest.raises(ValueError, match="model exploded"):
        await collect(registry.invoke(EchoStage, EchoContext(text=""), _terminal(log, failing)))

    assert log == ["closed terminal", "closed inner", "closed outer"]


async def test_cancellation_passes_through_and_closes_every_layer() -> None:
    log: list[str] = []
    registry = _registry(log)
    received: list[EchoEvent] = []

    with anyio.move_on_after(0.05) as scope:
        async for event in registry.invoke(
            EchoStage, EchoContext(text=""), _terminal(log, _endless)
        ):
            received.append(event)

    assert scope.cancelled_caught
    assert received == [Chunk("first")]
    assert log == ["closed terminal", "closed inner", "closed outer"]


async def test_a_generator_the_outermost_handler_abandoned_is_closed_when_the_chain_ends() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()

    async def peek_then_answer(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        inner = next_fn(context)
        first = await anext(inner)
        assert first == Chunk("first")
        # Deliberately neither exhausts nor closes `inner`: the chain must.
        yield Done("answered early")

    registry.add_middleware(EchoStage.Wrap, peek_then_answer)

    events = await collect(
        registry.invoke(EchoStage, EchoContext(text=""), _terminal(log, _endless))
    )

    assert events == [Done("answered early")]
    assert log == ["closed terminal"]


def _outer(log: list[str]) -> Callable[[EchoContext, Next], AsyncIterator[EchoEvent]]:
    """A pass-through layer that logs when the stream of the layer inside it has ended."""

    async def outer(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        async for event in next_fn(context):
            yield event
        log.append("outer: inner layer finished")

    return outer


async def test_a_stream_a_handler_stopped_reading_is_closed_when_the_chain_finishes() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()

    async def peek(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        await anext(next_fn(context))
        yield Done("enough")

    registry.add_middleware(EchoStage, _outer(log))
    registry.add_middleware(EchoStage, peek)

    events = await collect(
        registry.invoke(EchoStage, EchoContext(text=""), _terminal(log, _endless))
    )

    assert events == [Done("enough")]
    # Not when `peek` finished, but by the chain as it finished.
    assert log == ["outer: inner layer finished", "closed terminal"]


async def test_a_first_attempt_a_retry_left_half_read_is_closed_when_the_chain_finishes() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()
    attempts = 0

    async def model(context: EchoContext) -> AsyncIterator[EchoEvent]:
        nonlocal attempts
        attempts += 1
        attempt = attempts
        try:
            yield Chunk(f"attempt {attempt}")
            yield Done(f"attempt {attempt}")
        finally:
            log.append(f"closed attempt {attempt}")

    async def retry(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        await anext(next_fn(context))  # the first attempt looks bad: try again
        async for event in next_fn(context):
            yield event

    registry.add_middleware(EchoStage, _outer(log))
    registry.add_middleware(EchoStage, retry)

    events = await collect(registry.invoke(EchoStage, EchoContext(text=""), model))

    assert events == [Chunk("attempt 2"), Done("attempt 2")]
    assert log == ["closed attempt 2", "outer: inner layer finished", "closed attempt 1"]


async def test_leftovers_are_closed_innermost_first_when_the_chain_finishes() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()

    async def peek(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        await anext(next_fn(context))
        yield Done("enough")

    registry.add_middleware(EchoStage, _outer(log))
    registry.add_middleware(EchoStage, peek)
    registry.add_middleware(EchoStage, _layer(log, "inner"))

    await collect(registry.invoke(EchoStage, EchoContext(text=""), _terminal(log, _endless)))

    assert log == ["outer: inner layer finished", "closed terminal", "closed inner"]


async def test_a_stream_a_failing_handler_abandoned_is_closed_when_the_chain_finishes() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()

    async def recover(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        try:
            async for event in next_fn(context):
                yield event
        except ValueError:
            log.append("outer: caught the error")
            yield Done("recovered")

    async def peek_then_fail(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        await anext(next_fn(context))
        raise ValueError("bad chunk")
        yield Done("unreachable")

    registry.add_middleware(EchoStage, recover)
    registry.add_middleware(EchoStage, peek_then_fail)

    events = await collect(
        registry.invoke(EchoStage, EchoContext(text=""), _terminal(log, _endless))
    )

    assert events == [Done("recovered")]
    assert log == ["outer: caught the error", "closed terminal"]


async def test_a_layer_the_handler_outside_it_closed_leaves_its_streams_to_the_chain() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()

    async def close_early(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        inner = next_fn(context)
        yield await anext(inner)
        await inner.aclose()
        log.append("outer: closed the inner layer")
        yield Done("closed early")

    registry.add_middleware(EchoStage, close_early)
    registry.add_middleware(EchoStage, _layer(log, "inner"))

    events = await collect(
        registry.invoke(EchoStage, EchoContext(text=""), _terminal(log, _endless))
    )

    assert events == [Chunk("first"), Done("closed early")]
    assert log == ["closed inner", "outer: closed the inner layer", "closed terminal"]


async def test_a_stream_a_cancelled_layer_left_open_is_closed_when_the_chain_finishes() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()
    attempts = 0

    async def model(context: EchoContext) -> AsyncIterator[EchoEvent]:
        nonlocal attempts
        attempts += 1
        attempt = attempts
        try:
            yield Chunk(f"attempt {attempt}")
            await anyio.sleep_forever()
            yield Done("unreachable")
        finally:
            log.append(f"closed attempt {attempt}")

    async def deadline(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        seen: list[EchoEvent] = []
        with anyio.move_on_after(0.05):
            async for event in next_fn(context):
                seen.append(event)
        log.append("outer: deadline passed")
        for event in seen:
            yield event
        yield Done("timed out")

    async def hedge(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        await anext(next_fn(context))  # slow to start: ask again, leaving this one open
        async for event in next_fn(context):
            yield event

    registry.add_middleware(EchoStage, deadline)
    registry.add_middleware(EchoStage, hedge)

    events = await collect(registry.invoke(EchoStage, EchoContext(text=""), model))

    assert events == [Chunk("attempt 2"), Done("timed out")]
    assert log == ["closed attempt 2", "outer: deadline passed", "closed attempt 1"]


async def test_an_interrupt_passes_through_unchanged() -> None:
    log: list[str] = []
    registry = _registry(log)
    raised = InterruptException(Interrupt(id="v1:test:gate", name="gate", reason="approve?"))

    async def gate(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        raise raised
        yield Done("unreachable")

    registry.add_middleware(EchoStage.Wrap, gate)

    async def never_called(context: EchoContext) -> AsyncIterator[EchoEvent]:
        log.append("terminal ran")
        yield Done("")

    with pytest.raises(InterruptException) as info:
        await collect(registry.invoke(EchoStage, EchoContext(text=""), never_called))

    assert info.value is raised
    assert log == ["closed inner", "closed outer"]  # the terminal never ran


async def test_output_handlers_run_after_the_inner_chain_closed_and_their_errors_propagate() -> (
    None
):
    log: list[str] = []
    registry = _registry(log)

    def broken(result: EchoResult) -> EchoResult:
        log.append("output ran")
        raise KeyError("no such field")

    registry.add_middleware(EchoStage.Output, broken)

    async def finite() -> AsyncIterator[EchoEvent]:
        yield Done("x")

    with pytest.raises(KeyError, match="no such field"):
        await collect(registry.invoke(EchoStage, EchoContext(text=""), _terminal(log, finite)))

    assert log == ["closed terminal", "closed inner", "closed outer", "output ran"]


async def test_a_timeout_closes_the_chain_and_raises_timeout_error() -> None:
    log: list[str] = []
    registry = _registry(log)

    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.05):
            await collect(
                registry.invoke(EchoStage, EchoContext(text=""), _terminal(log, _endless))
            )

    assert log == ["closed terminal", "closed inner", "closed outer"]


async def test_cleanup_errors_do_not_stop_the_other_layers_from_closing() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()

    async def fails_on_close(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        try:
            async for event in next_fn(context):
                yield event
        finally:
            log.append("closing inner")
            raise OSError("flush failed")

    registry.add_middleware(EchoStage.Wrap, _layer(log, "outer"))
    registry.add_middleware(EchoStage.Wrap, fails_on_close)
    events = registry.invoke(EchoStage, EchoContext(text=""), _terminal(log, _endless))
    await anext(events)

    with pytest.raises(OSError, match="flush failed"):
        await events.aclose()

    assert log == ["closed terminal", "closing inner", "closed outer"]


async def test_overlapping_calls_of_one_chain_each_close_only_their_own_streams() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()
    both_peeked = anyio.Event()
    peeked = 0

    async def peek(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        nonlocal peeked
        await anext(next_fn(context))
        peeked += 1
        if peeked == 2:
            both_peeked.set()
        await both_peeked.wait()  # both calls hold a half-read stream at once
        yield Done(f"enough {context.text}")

    def terminal(context: EchoContext) -> AsyncIterator[EchoEvent]:
        return _terminal(log, _endless)(context)

    registry.add_middleware(EchoStage, _outer(log))
    registry.add_middleware(EchoStage, peek)
    chain = registry.compose(EchoStage, terminal)
    results: dict[str, list[EchoEvent]] = {}

    async def call(text: str) -> None:
        results[text] = await collect(chain(EchoContext(text=text)))
        log.append(f"call {text} returned")

    async with anyio.create_task_group() as group:
        group.start_soon(call, "a")
        group.start_soon(call, "b")

    assert results == {"a": [Done("enough a")], "b": [Done("enough b")]}
    # Each call closed its own terminal stream as it finished, and only its own.
    assert log.count("closed terminal") == 2
    for text in ("a", "b"):
        returned = log.index(f"call {text} returned")
        assert log[returned - 1] == "closed terminal"

    # A later call reuses what a finished one handed back, and still closes what it left.
    log.clear()
    peeked = 1
    assert await collect(chain(EchoContext(text="c"))) == [Done("enough c")]
    assert log == ["outer: inner layer finished", "closed terminal"]


def _wraps_only(log: list[str], body: Callable[[], AsyncIterator[EchoEvent]]) -> Terminal:
    """A composed chain of two Wrap layers and nothing else: the chain's lightest layer."""
    registry = MiddlewareRegistry()
    registry.add_middleware(EchoStage.Wrap, _layer(log, "outer"))
    registry.add_middleware(EchoStage.Wrap, _layer(log, "inner"))
    return registry.compose(EchoStage, _terminal(log, body))


async def test_a_chain_of_wrap_handlers_only_closes_every_layer_on_an_early_aclose() -> None:
    log: list[str] = []
    stream = _wraps_only(log, _endless)(EchoContext(text=""))
    assert inspect.isasyncgen(stream)
    events = cast("AsyncGenerator[EchoEvent, None]", stream)

    assert await anext(events) == Chunk("first")
    await events.aclose()

    assert log == ["closed terminal", "closed inner", "closed outer"]


async def test_a_chain_of_wrap_handlers_only_closes_every_layer_on_cancellation() -> None:
    log: list[str] = []
    chain = _wraps_only(log, _endless)

    with anyio.move_on_after(0.05) as scope:
        async for _event in chain(EchoContext(text="")):
            pass

    assert scope.cancelled_caught
    assert log == ["closed terminal", "closed inner", "closed outer"]


async def test_a_chain_of_wrap_handlers_only_closes_what_a_failing_handler_left_open() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()

    async def failing(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        yield await anext(next_fn(context))
        raise ValueError("handler exploded")

    registry.add_middleware(EchoStage.Wrap, failing)
    registry.add_middleware(EchoStage.Wrap, _layer(log, "inner"))
    chain = registry.compose(EchoStage, _terminal(log, _endless))

    with pytest.raises(ValueError, match="handler exploded"):
        await collect(chain(EchoContext(text="")))

    assert log == ["closed terminal", "closed inner"]


async def test_a_chain_of_wrap_handlers_only_closes_leftovers_when_it_finishes_each_call() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()

    async def peek(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        await anext(next_fn(context))
        log.append("peek answered")
        yield Done("enough")

    registry.add_middleware(EchoStage, peek)
    registry.add_middleware(EchoStage.Wrap, _layer(log, "inner"))
    chain = registry.compose(EchoStage, _terminal(log, _endless))

    # Twice: the second call runs on the next_fns the first one handed back.
    for _ in range(2):
        assert await collect(chain(EchoContext(text=""))) == [Done("enough")]
    once = ["peek answered", "closed terminal", "closed inner"]
    assert log == once + once
