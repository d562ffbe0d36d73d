"""add_middleware validates tokens and handlers when they are registered."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from stageware import (
    MiddlewareHost,
    MiddlewareRegistration,
    MiddlewareRegistry,
    MiddlewareStage,
    Phase,
)

from .stage_fixture import (
    Done,
    EchoContext,
    EchoEvent,
    EchoResult,
    EchoStage,
)

Next = Callable[[EchoContext], AsyncIterator[EchoEvent]]


async def passthrough(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
    async for event in next_fn(context):
        yield event


def keep(context: EchoContext) -> EchoContext:
    return context


def test_an_unknown_token_is_rejected() -> None:
    registry = MiddlewareRegistry()

    with pytest.raises(TypeError, match=r"'Input' is not a stage or phase token"):
        registry.add_middleware("Input", keep)  # type: ignore[call-overload]


def test_a_wrap_handler_must_be_an_async_generator_function() -> None:
    registry = MiddlewareRegistry()

    async def coroutine(context: EchoContext, next_fn: Next) -> EchoContext:
        return context

    with pytest.raises(
        TypeError, match=r"EchoStage.Wrap, .*coroutine\): a Wrap handler must be an async generator"
    ) as info:
        registry.add_middleware(EchoStage.Wrap, coroutine)  # type: ignore[arg-type]
    assert "register it on .Input or .Output" in str(info.value)

    with pytest.raises(TypeError, match=r"add_middleware\(EchoStage, .*keep\): a Wrap handler"):
        registry.add_middleware(EchoStage, keep)  # type: ignore[arg-type]


def test_an_async_generator_is_not_an_input_or_output_handler() -> None:
    registry = MiddlewareRegistry()

    with pytest.raises(
        TypeError,
        match=r"EchoStage.Input, .*passthrough\): an async generator function is a Wrap handler",
    ):
        registry.add_middleware(EchoStage.Input, passthrough)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("token", "handler", "expected"),
    [
        (EchoStage.Input, lambda: None, r"must accept 1 positional argument \(context\)"),
        (EchoStage.Output, lambda a, b: a, r"must accept 1 positional argument \(result\)"),
        (EchoStage.Input, lambda *, context: context, r"its signature is \(\*, context\)"),
    ],
)
def test_a_handler_of_the_wrong_arity_is_rejected(token: Any, handler: Any, expected: str) -> None:
    registry = MiddlewareRegistry()

    with pytest.raises(TypeError, match=expected):
        registry.add_middleware(token, handler)


def test_a_wrap_handler_of_the_wrong_arity_is_rejected() -> None:
    registry = MiddlewareRegistry()

    async def one_argument(context: EchoContext) -> AsyncIterator[EchoEvent]:
        yield EchoResult  # type: ignore[misc]

    with pytest.raises(TypeError, match=r"must accept 2 positional arguments \(context, next_fn\)"):
        registry.add_middleware(EchoStage.Wrap, one_argument)  # type: ignore[arg-type]


def test_a_non_callable_is_rejected() -> None:
    registry = MiddlewareRegistry()

    with pytest.raises(TypeError, match="is not callable"):
        registry.add_middleware(EchoStage.Input, 42)  # type: ignore[call-overload]


def test_nothing_is_registered_when_validation_fails() -> None:
    registry = MiddlewareRegistry()

    with pytest.raises(TypeError):
        registry.add_middleware(EchoStage.Wrap, keep)  # type: ignore[arg-type]

    assert registry.handlers(EchoStage) == {Phase.INPUT: (), Phase.WRAP: (), Phase.OUTPUT: ()}


def test_callable_objects_and_partials_are_classified_by_what_they_call() -> None:
    registry = MiddlewareRegistry()

    class AsyncWrap:
        async def __call__(self, context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
            async for event in next_fn(context):
                yield event

    def tag(label: str, context: EchoContext) -> EchoContext:
        return context.replace(text=label)

    wrap = AsyncWrap()
    partial = functools.partial(tag, "x")
    registry.add_middleware(EchoStage.Wrap, wrap)
    registry.add_middleware(EchoStage.Input, partial)

    handlers = registry.handlers(EchoStage)
    assert handlers[Phase.WRAP] == (wrap,)
    assert handlers[Phase.INPUT] == (partial,)


def test_the_bare_token_registers_a_wrap_handler() -> None:
    registry = MiddlewareRegistry()

    registry.add_middleware(EchoStage, passthrough)

    assert registry.handlers(EchoStage)[Phase.WRAP] == (passthrough,)


def test_a_class_is_not_a_handler() -> None:
    registry = MiddlewareRegistry()

    class Gate:
        async def __call__(self, context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
            async for event in next_fn(context):
                yield event

    with pytest.raises(TypeError, match="a class is not a handler; pass an instance"):
        registry.add_middleware(EchoStage.Wrap, Gate)  # type: ignore[arg-type]


def test_any_host_class_gets_validated_registrations() -> None:
    received: list[MiddlewareRegistration] = []

    class Harness(MiddlewareHost):
        def _register_middleware(self, registration: MiddlewareRegistration) -> None:
            received.append(registration)

    harness = Harness()
    harness.add_middleware(EchoStage, passthrough)
    harness.add_middleware(EchoStage.Input, keep)

    assert [(r.stage, r.phase, r.handler) for r in received] == [
        (EchoStage, Phase.WRAP, passthrough),
        (EchoStage, Phase.INPUT, keep),
    ]
    with pytest.raises(TypeError, match="is not a stage or phase token"):
        harness.add_middleware("bogus", keep)  # type: ignore[call-overload]
    assert len(received) == 2


def test_stage_names_read_like_their_tokens() -> None:
    assert repr(EchoStage) == "EchoStage"
    assert repr(EchoStage.Output) == "EchoStage.Output"
    assert repr(MiddlewareStage("MyStage", result_type=EchoResult, result_event=Done)) == "MyStage"
