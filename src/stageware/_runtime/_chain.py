"""Composing a stage's handlers around its terminal, and running the result.

The composed chain has this shape, outermost first::

    Output handlers ( Input handlers -> Wrap handlers -> terminal )

Input handlers transform the context before anything else runs; Wrap handlers nest
around the terminal; Output handlers run once, after the whole inner chain has finished,
on its final result, so a Wrap handler that retries or short-circuits still ends in
exactly one Output pass. Within a phase the first registered handler is outermost:
Input handlers run in registration order, Wrap handlers nest in registration order, and
the first registered Output handler has the last word.

The result of a stage is the last event of its ``result_event`` type. Every generator
a layer opened is closed, innermost first, before the chain's own generator finishes
unwinding: on success, on error, on cancellation and when the consumer calls
``aclose()`` early. ``InterruptException`` and cancellation are never caught here.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeGuard, TypeVar, cast, final

from ._result import MiddlewareResult
from ._stage import MiddlewareStage, Phase
from ._validation import MiddlewareRegistration, describe_handler

__all__ = ["ResultTracker", "StagePlan", "build_chain", "close_all"]

C = TypeVar("C")
E = TypeVar("E")

Chain = Callable[[C], AsyncIterator[E]]


@final
@dataclass(frozen=True, slots=True)
class StagePlan:
    """The handlers of one stage, by phase, in registration order."""

    inputs: tuple[MiddlewareRegistration, ...] = ()
    wraps: tuple[MiddlewareRegistration, ...] = ()
    outputs: tuple[MiddlewareRegistration, ...] = ()

    def with_registration(self, registration: MiddlewareRegistration) -> StagePlan:
        """Return the plan with *registration* appended to its phase."""
        if registration.phase is Phase.INPUT:
            return StagePlan((*self.inputs, registration), self.wraps, self.outputs)
        if registration.phase is Phase.WRAP:
            return StagePlan(self.inputs, (*self.wraps, registration), self.outputs)
        return StagePlan(self.inputs, self.wraps, (*self.outputs, registration))


def build_chain(
    stage: MiddlewareStage[Any, Any, Any], plan: StagePlan, terminal: Chain[C, E]
) -> Chain[C, E]:
    """Compose *plan* around *terminal*. With no handlers the terminal itself is returned."""
    chain = terminal
    if plan.inputs or plan.wraps:
        chain = _input_and_wrap_layers(stage, plan, terminal)
    if plan.outputs:
        chain = _output_layer(stage, plan.outputs, chain)
    return chain


@final
class ResultTracker:
    """Watches a stage's events for its result, and for an interrupt that replaces it.

    A call halted by an interrupt event (a truthy ``is_interrupt``, such as a tool's
    ``ToolInterruptEvent``) legitimately has no result; any other chain without one has
    dropped it, which is a bug worth an actionable error.
    """

    __slots__ = ("_result_event", "_stage", "has_result", "interrupted")

    def __init__(self, stage: MiddlewareStage[Any, Any, Any]) -> None:
        self._stage = stage
        self._result_event = stage.result_event
        self.has_result = False
        self.interrupted = False

    def see(self, event: object) -> bool:
        """Record *event*; return whether it is a result event."""
        if isinstance(event, self._result_event):
            self.has_result = True
            return True
        if getattr(event, "is_interrupt", False):
            self.interrupted = True
        return False

    def check(self) -> None:
        """Raise if the stream ended with neither a result nor an interrupt."""
        if not self.has_result and not self.interrupted:
            event = self._result_event.__name__
            raise RuntimeError(
                f"the {self._stage!r} chain finished without yielding a {event}. A Wrap "
                f"handler must yield the {event} its next_fn produced, or yield one of its "
                "own to short-circuit."
            )


def _input_and_wrap_layers(
    stage: MiddlewareStage[Any, Any, Any], plan: StagePlan, terminal: Chain[C, E]
) -> Chain[C, E]:
    inputs = plan.inputs
    wraps = tuple(registration.handler for registration in plan.wraps)

    def chain(context: C) -> AsyncIterator[E]:
        return _run(stage, context, inputs, wraps, terminal)

    return chain


async def _run(
    stage: MiddlewareStage[Any, Any, Any],
    context: C,
    inputs: tuple[MiddlewareRegistration, ...],
    wraps: tuple[Callable[..., AsyncIterator[E]], ...],
    inner: Chain[C, E],
) -> AsyncIterator[E]:
    for registration in inputs:
        context = await _apply_input(stage, registration, context)
    # Every iterator opened below, in creation order. Inner iterators are always
    # created after the ones that call them, so closing in reverse is inner first.
    opened: list[AsyncIterator[E]] = []
    outermost = _next_fn(wraps, 0, inner, opened)(context)
    try:
        async for event in outermost:
            yield event
    finally:
        await close_all(opened)


def _next_fn(
    wraps: tuple[Callable[..., AsyncIterator[E]], ...],
    index: int,
    inner: Chain[C, E],
    opened: list[AsyncIterator[E]],
) -> Chain[C, E]:
    """The callable that runs layer *index* and everything inside it, recording what it opens."""
    if index == len(wraps):

        def call_inner(context: C) -> AsyncIterator[E]:
            iterator = inner(context)
            opened.append(iterator)
            return iterator

        return call_inner
    handler = wraps[index]
    rest = _next_fn(wraps, index + 1, inner, opened)

    def call_layer(context: C) -> AsyncIterator[E]:
        iterator = handler(context, rest)
        opened.append(iterator)
        return iterator

    return call_layer


async def close_all(opened: list[AsyncIterator[Any]]) -> None:
    """Close every iterator in *opened*, last opened first, even if one of them fails to close."""
    failure: BaseException | None = None
    for iterator in reversed(opened):
        aclose = getattr(iterator, "aclose", None)
        if aclose is None or getattr(iterator, "ag_frame", True) is None:
            continue  # Not closable, or an async generator that already finished.
        try:
            await aclose()
        except BaseException as error:
            if failure is None:
                failure = error
    if failure is not None:
        raise failure


async def _apply_input(
    stage: MiddlewareStage[Any, Any, Any], registration: MiddlewareRegistration, context: C
) -> C:
    returned: Any = registration.handler(context)
    if registration.is_async or inspect.isawaitable(returned):
        returned = await returned
    if not isinstance(returned, type(context)):
        raise TypeError(
            f"{stage!r}.Input handler {describe_handler(registration.handler)} returned "
            f"{type(returned).__name__}, expected {type(context).__name__}: an Input handler "
            "must return the context (unchanged, or a copy from context.replace(...))"
        )
    return returned


def _output_layer(
    stage: MiddlewareStage[Any, Any, Any],
    outputs: tuple[MiddlewareRegistration, ...],
    inner: Chain[C, E],
) -> Chain[C, E]:
    # Innermost first: the first registered Output handler is the outermost one.
    handlers = tuple(reversed(outputs))

    def output_layer(context: C) -> AsyncIterator[E]:
        return _run_outputs(stage, handlers, inner(context))

    return output_layer


async def _run_outputs(
    stage: MiddlewareStage[Any, Any, Any],
    handlers: tuple[MiddlewareRegistration, ...],
    events: AsyncIterator[E],
) -> AsyncIterator[E]:
    """Pass events through, hold back the last result event, and transform it at the end.

    Events that follow a result event are held with it, so that when the stream ends the
    transformed result is yielded in its original position, followed by what came after it.
    A call halted by an interrupt has no result, and Output handlers do not run.
    """
    tracker = ResultTracker(stage)
    held: E | None = None
    trailing: list[E] = []
    try:
        async for event in events:
            if tracker.see(event):
                if held is not None:
                    # An earlier result was not the last one: release it unchanged.
                    yield held
                    for later in trailing:
                        yield later
                    trailing.clear()
                held = event
            elif held is None:
                yield event
            else:
                trailing.append(event)
    finally:
        await close_all([events])
    tracker.check()
    if held is None:
        return  # Halted by an interrupt.
    yield await _apply_outputs(stage, handlers, held)
    for later in trailing:
        yield later


async def _apply_outputs(
    stage: MiddlewareStage[Any, Any, Any], handlers: tuple[MiddlewareRegistration, ...], event: E
) -> E:
    result_type = stage.result_type
    wrapper: MiddlewareResult[Any] = result_type(result=event)
    for registration in handlers:
        returned: object = registration.handler(wrapper)
        if registration.is_async or inspect.isawaitable(returned):
            returned = await cast("Awaitable[object]", returned)
        wrapper = _stage_result(stage, registration, returned)
    result: E = wrapper.result
    return result


def _stage_result(
    stage: MiddlewareStage[Any, Any, Any], registration: MiddlewareRegistration, returned: object
) -> MiddlewareResult[Any]:
    """Check what an Output handler returned and give it the stage's own result type."""
    result_type = stage.result_type
    handler = describe_handler(registration.handler)
    if not _is_result(returned):
        raise TypeError(
            f"{stage!r}.Output handler {handler} returned {type(returned).__name__}, expected "
            f"{result_type.__name__}: an Output handler must return the result it was given "
            "or a copy from result.replace(result=...)"
        )
    if not isinstance(returned.result, stage.result_event):
        raise TypeError(
            f"{stage!r}.Output handler {handler} returned a {type(returned).__name__} holding "
            f"{type(returned.result).__name__}, expected {stage.result_event.__name__}"
        )
    # A handler written against the base MiddlewareResult may return a base wrapper; the
    # next handler, and the stream, still get the stage's own type.
    if type(returned) is result_type:
        return returned
    rewrapped: MiddlewareResult[Any] = result_type(returned.result)
    return rewrapped


def _is_result(candidate: object) -> TypeGuard[MiddlewareResult[Any]]:
    return isinstance(candidate, MiddlewareResult)
