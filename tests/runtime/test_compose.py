"""Composed chains are cached until the registry changes; an empty stage is just its terminal."""

from __future__ import annotations

import dataclasses
import gc
import inspect
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import pytest

from stageware import MiddlewareRegistry
from stageware.runtime import MiddlewareRegistration

from .stage_fixture import Chunk, Done, EchoContext, EchoEvent, EchoStage, collect, echo_terminal

pytestmark = pytest.mark.anyio

Next = Callable[[EchoContext], AsyncIterator[EchoEvent]]


async def tag(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
    async for event in next_fn(context):
        yield Done(event.text + "+tag") if isinstance(event, Done) else event


def test_a_stage_without_handlers_composes_to_its_terminal() -> None:
    registry = MiddlewareRegistry()

    assert registry.compose(EchoStage, echo_terminal) is echo_terminal


def test_a_composed_chain_is_reused_until_the_registry_changes() -> None:
    registry = MiddlewareRegistry()
    registry.add_middleware(EchoStage, tag)

    first = registry.compose(EchoStage, echo_terminal)
    assert registry.compose(EchoStage, echo_terminal) is first

    registry.add_middleware(EchoStage.Input, lambda c: c)
    second = registry.compose(EchoStage, echo_terminal)
    assert second is not first
    assert registry.compose(EchoStage, echo_terminal) is second


def test_another_terminal_gets_its_own_chain() -> None:
    registry = MiddlewareRegistry()
    registry.add_middleware(EchoStage, tag)

    async def other(context: EchoContext) -> AsyncIterator[EchoEvent]:
        yield Done("other")

    assert registry.compose(EchoStage, echo_terminal) is not registry.compose(EchoStage, other)


async def test_a_running_chain_keeps_the_handlers_it_started_with() -> None:
    registry = MiddlewareRegistry()
    registry.add_middleware(EchoStage, tag)

    events = registry.invoke(EchoStage, EchoContext(text="a b"), echo_terminal)
    first = await anext(events)
    registry.add_middleware(EchoStage, tag)  # Registered mid-run: applies to the next run only.
    rest = await collect(events)

    assert [first, *rest][-1] == Done("a b+tag")
    again = await collect(registry.invoke(EchoStage, EchoContext(text="c"), echo_terminal))
    assert again[-1] == Done("c+tag+tag")


async def test_registries_are_independent() -> None:
    tagged = MiddlewareRegistry()
    plain = MiddlewareRegistry()
    tagged.add_middleware(EchoStage, tag)

    assert (await collect(plain.invoke(EchoStage, EchoContext(text="x"), echo_terminal)))[
        -1
    ] == Done("x")
    assert (await collect(tagged.invoke(EchoStage, EchoContext(text="x"), echo_terminal)))[
        -1
    ] == Done("x+tag")


def test_a_bound_method_terminal_reuses_its_chain() -> None:
    registry = MiddlewareRegistry()
    registry.add_middleware(EchoStage, tag)

    class Host:
        async def terminal(self, context: EchoContext) -> AsyncIterator[EchoEvent]:
            yield Done(context.text)

    host = Host()
    assert host.terminal is not host.terminal  # A new bound-method object per access.

    assert registry.compose(EchoStage, host.terminal) is registry.compose(EchoStage, host.terminal)
    assert registry.compose(EchoStage, host.terminal) is not registry.compose(
        EchoStage, Host().terminal
    )


class _Countdown:
    """A terminal's stream that is a plain async iterator, not an async generator."""

    def __init__(self, text: str) -> None:
        self.events: list[EchoEvent] = [Chunk(text), Done(text)]
        self.closed = False

    def __aiter__(self) -> _Countdown:
        return self

    async def __anext__(self) -> EchoEvent:
        if not self.events:
            raise StopAsyncIteration
        return self.events.pop(0)

    async def aclose(self) -> None:
        self.closed = True


async def test_next_fn_hands_over_an_async_generator_even_for_a_plain_iterator() -> None:
    registry = MiddlewareRegistry()
    streams: list[_Countdown] = []
    seen: list[object] = []

    def terminal(context: EchoContext) -> AsyncIterator[EchoEvent]:
        streams.append(_Countdown(context.text))
        return streams[-1]

    async def strands_style(
        context: EchoContext, next_fn: Callable[[EchoContext], AsyncGenerator[EchoEvent, None]]
    ) -> AsyncGenerator[EchoEvent, None]:
        events = next_fn(context)
        seen.append(inspect.isasyncgen(events))
        yield await events.asend(None)
        await events.aclose()
        yield Done("stopped after one")

    registry.add_middleware(EchoStage, strands_style)

    events = await collect(registry.invoke(EchoStage, EchoContext(text="hi"), terminal))

    assert events == [Chunk("hi"), Done("stopped after one")]
    assert seen == [True]
    assert streams[0].closed  # aclose() on the generator closes the iterator it wraps


class _Relay:
    """A Wrap layer's stream that is a plain async iterator: *inner*'s events, then *after*."""

    def __init__(self, inner: AsyncIterator[EchoEvent], after: EchoEvent) -> None:
        self.inner: AsyncIterator[EchoEvent] | None = inner
        self.after: EchoEvent | None = after

    def __aiter__(self) -> _Relay:
        return self

    async def __anext__(self) -> EchoEvent:
        if self.inner is not None:
            try:
                return await self.inner.__anext__()
            except StopAsyncIteration:
                self.inner = None
        if self.after is None:
            raise StopAsyncIteration
        event, self.after = self.after, None
        return event


async def test_wrap_layers_that_return_plain_iterators_run_through_invoke() -> None:
    # Registration refuses such handlers, but an instrument may rewrite a handler into one:
    # the chain must still hand each handler an async generator, and invoke() must pass on
    # what follows the result from an outermost stream that is not a generator.
    kinds: list[bool] = []

    def relaying(registration: MiddlewareRegistration) -> MiddlewareRegistration:
        def relay(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
            inner = next_fn(context)
            kinds.append(inspect.isasyncgen(inner))
            return _Relay(inner, Chunk("after"))

        return dataclasses.replace(registration, handler=relay)

    registry = MiddlewareRegistry()
    registry.add_middleware(EchoStage, tag)
    registry.add_middleware(EchoStage, tag)
    relayed = registry.instrumented(relaying)

    events = await collect(relayed.invoke(EchoStage, EchoContext(text="hi"), echo_terminal))

    assert events == [Chunk("hi"), Done("hi"), Chunk("after"), Chunk("after")]
    assert kinds == [True, True]  # the inner layer's plain iterator was handed over wrapped


async def test_a_chain_keeps_a_bounded_number_of_event_classes_alive() -> None:
    # A chain learns which event types need no result or interrupt test; classes made on
    # the fly, one per event, must not all be kept alive by it.
    registry = MiddlewareRegistry()
    registry.add_middleware(EchoStage, tag)
    made: list[weakref.ref[type]] = []

    async def one_class_per_event(context: EchoContext) -> AsyncIterator[Any]:
        for index in range(200):
            event_type = type(f"Note{index}", (), {"__slots__": ()})
            made.append(weakref.ref(event_type))
            yield event_type()
        yield Done(context.text)

    events = await collect(registry.invoke(EchoStage, EchoContext(text="x"), one_class_per_event))
    assert events[-1] == Done("x+tag")
    del events
    gc.collect()

    alive = sum(ref() is not None for ref in made)
    assert 0 < alive <= 64  # learnt up to the bound, then no more
