"""An instrumented registry runs the same handlers rewritten; the original's chains stay plain."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from stageware import MiddlewareRegistry
from stageware.runtime import MiddlewareRegistration, Phase

from .stage_fixture import Done, EchoContext, EchoEvent, EchoStage, collect, echo_terminal

pytestmark = pytest.mark.anyio

Next = Callable[[EchoContext], AsyncIterator[EchoEvent]]


def _noting(log: list[str]) -> Callable[[MiddlewareRegistration], MiddlewareRegistration]:
    """An instrument that logs each call of a rewritten Input handler, by phase."""

    def instrument(registration: MiddlewareRegistration) -> MiddlewareRegistration:
        handler = registration.handler

        def noted(context: Any) -> Any:
            log.append(f"{registration.phase.value} ran")
            return handler(context)

        if registration.phase.value != "Input":
            return registration
        return dataclasses.replace(registration, handler=noted)

    return instrument


async def tag(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
    async for event in next_fn(context):
        yield Done(event.text + "+tag") if isinstance(event, Done) else event


async def test_handlers_added_before_and_after_are_rewritten_and_the_original_is_not() -> None:
    log: list[str] = []
    registry = MiddlewareRegistry()
    registry.add_middleware(EchoStage.Input, lambda c: c.replace(text=c.text + " one"))
    plain = registry.compose(EchoStage, echo_terminal)
    instrumented = registry.instrumented(_noting(log))
    registry.add_middleware(EchoStage, tag)
    registry.add_middleware(EchoStage.Input, lambda c: c.replace(text=c.text + " two"))

    events = await collect(instrumented.invoke(EchoStage, EchoContext(text="hi"), echo_terminal))
    assert events[-1] == Done("hi one two+tag")
    assert log == ["Input ran", "Input ran"]

    log.clear()
    events = await collect(registry.invoke(EchoStage, EchoContext(text="hi"), echo_terminal))
    assert events[-1] == Done("hi one two+tag")
    assert log == []
    # Each keeps a chain of its own; adding a handler rebuilt the original's as usual.
    assert registry.compose(EchoStage, echo_terminal) is not plain
    assert instrumented.compose(EchoStage, echo_terminal) is not registry.compose(
        EchoStage, echo_terminal
    )


def test_an_instrumented_registry_its_host_dropped_is_forgotten() -> None:
    import gc
    import weakref

    registry = MiddlewareRegistry()
    rewritten: list[str] = []

    def instrument(registration: MiddlewareRegistration) -> MiddlewareRegistration:
        rewritten.append(registration.phase.value)
        return registration

    kept = registry.instrumented(instrument)
    dropped = weakref.ref(registry.instrumented(instrument))
    gc.collect()
    assert dropped() is None

    registry.add_middleware(EchoStage.Input, lambda context: context)

    # Only the registry still held was fed the new handler.
    assert rewritten == ["Input"]
    assert len(kept.handlers(EchoStage)[Phase.INPUT]) == 1
