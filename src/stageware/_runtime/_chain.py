"""Composing a stage's handlers around its terminal, and running the result.

The composed chain has this shape, outermost first:

```text
Output handlers ( Input handlers -> Wrap handlers -> terminal )
```

Input handlers transform the context before anything else runs; Wrap handlers nest
around the terminal; Output handlers run once, after the whole inner chain has finished,
on its final result, so a Wrap handler that retries or short-circuits still ends in
exactly one Output pass. Within a phase the first registered handler is outermost:
Input handlers run in registration order, Wrap handlers nest in registration order, and
the first registered Output handler has the last word.

The rules a running chain keeps:

- **The result is the last event of the stage's ``result_event`` type.** Without Output
  handlers every event passes through as yielded. With them, the result is held back and
  the transformed one is yielded after every other event of the inner chain, trailing
  events a Wrap handler yields after it included, so the last event is the result. A
  result that a later one superseded (a retrying or repeating Wrap handler) is dropped:
  the consumer never sees an untransformed result. Other events keep their order.
- **The chain closes what any ``next_fn`` opened.** ``next_fn(context)`` returns an async
  generator (a terminal or handler that returns another async iterator is wrapped in
  one). Every stream a ``next_fn`` opened and that is still open when the chain finishes
  (read halfway, a first attempt a retry left, one a failing or cancelled handler
  abandoned) is closed then, normally, by an error, by cancellation or by ``aclose()``,
  last opened first, so inner streams before outer ones. Not sooner: closing each
  handler's leftovers as that handler finished took a generator of ours around every
  Wrap handler, which doubled what a layer costs. A handler that wants a stream closed
  at once closes it itself. Errors from closing do not stop the other closes; the first
  is raised.
- **A swallowed interrupt still interrupts.** Once ``context.interrupt()`` has raised for
  a call (recorded in the ``CallInterrupts`` its context carries, shared by every
  ``replace()`` copy), the chain does not call the terminal for it, passes on no event
  that follows, and raises the original ``InterruptException`` in place of that event, of
  the normal end or of any other error, with a ``SwallowedInterruptWarning``; the host
  sees the interrupt as if no middleware had caught it. Cancellation is never caught,
  and an interrupt that propagates normally passes through unchanged.

Costs, per call: the outermost layer is one generator of ours, which also runs the Input
and Output handlers and starts the first Wrap handler, so the first Wrap handler costs
about two hand-written layers (its own generator and ours) and every further one costs
its own generator and nothing else, as in a hand-nested chain: 20 Wrap layers cost about
1.1 times 20 hand-written ones. A chain of Wrap handlers only, unchecked (``compose()``),
called on a context without an interrupt record, has a lighter outermost layer
(``_run_wraps``): it passes events on and closes leftovers, with none of the other
checks to set up. Its generator stays: it is the one place that runs when the chain
finishes however it finishes (exhausted, ``aclose()``, an error, cancellation), and
Python closes no stream a generator was reading when that generator is closed, so
without it a stream a handler left open would wait for the garbage collector and the
event loop's finaliser, in another task. The ``next_fn``s that nest them note what they open in
the call's own list; a finished call hands them back for the next one, so they are made
only when calls overlap. A chain whose streams all finished closes nothing. A checked
chain, or one with Output handlers, looks at each event until the result has passed
(with Output handlers, to the end): one set lookup for an event type it has learnt can
be neither the result nor an interrupt, a type test and an attribute lookup otherwise.
A context that carries an interrupt record costs one attribute check per event; a stage
without handlers is its terminal, at no cost at all.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from operator import attrgetter
from types import AsyncGeneratorType
from typing import Any, Generic, TypeGuard, TypeVar, cast, final

from ._interrupt import CallInterrupts, call_interrupts
from ._result import MiddlewareResult
from ._stage import MiddlewareStage, Phase
from ._validation import MiddlewareRegistration, describe_handler

__all__ = ["ASYNC_GENERATOR", "StagePlan", "as_generator", "build_chain", "close_all"]

C = TypeVar("C")
E = TypeVar("E")

Chain = Callable[[C], AsyncIterator[E]]
Next = Callable[[C], AsyncGenerator[E, None]]
Handler = Callable[[C, Next[C, E]], AsyncIterator[E]]
GeneratorHandler = Callable[[C, Next[C, E]], AsyncGenerator[E, None]]

# ``type(x) is ASYNC_GENERATOR`` narrows *x* to an async generator for both checkers, where
# ``cast()`` would be a function call on every layer of every call.
ASYNC_GENERATOR: type[AsyncGenerator[Any, None]] = AsyncGeneratorType


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
    stage: MiddlewareStage[Any, Any, Any],
    plan: StagePlan,
    terminal: Chain[C, E],
    *,
    checked: bool = False,
) -> Chain[C, E]:
    """Compose *plan* around *terminal*. With no handlers the terminal itself is returned.

    A *checked* chain also raises ``RuntimeError`` when its stream ends with neither the
    stage's result nor an interrupt event: the check looks at each event until the
    result (one set lookup for a type already known to be neither), in the outermost
    layer, which is there anyway.
    """
    if not (plan.inputs or plan.wraps or plan.outputs):
        return terminal
    outermost: Handler[C, E] | None = plan.wraps[0].handler if plan.wraps else None
    nesting = _Nesting(tuple(r.handler for r in plan.wraps[1:]), _terminal_layer(stage, terminal))
    inputs = plan.inputs
    # Innermost first: the first registered Output handler is the outermost one.
    outputs = tuple(reversed(plan.outputs))

    plain: set[type[Any]] = set()

    def chain(context: C) -> AsyncIterator[E]:
        return _run(stage, context, inputs, outermost, nesting, outputs, checked, plain)

    if outermost is None or inputs or outputs or checked:
        return chain
    wrapped = outermost

    def wraps_only(context: C) -> AsyncIterator[E]:
        # Without Input, Output handlers or a result check, the outermost layer has only
        # the streams to close, unless the context carries an interrupt record.
        if type(getattr(context, "_interrupts", None)) is CallInterrupts:
            return chain(context)
        return _run_wraps(wrapped, nesting, context)

    return wraps_only


@final
class _Nesting(Generic[C, E]):
    """The Wrap handlers inside the outermost one, and the ``next_fn``s that nest them.

    Every call needs ``next_fn``s of its own, because each notes what it opens in the
    call's own list: concurrent calls of one chain (a round of tool calls) must not close
    each other's streams. Making them, a closure per handler, is most of what a Wrap layer
    costs beyond its generator, so a call that finished puts its set in ``spare`` for the
    next one, its list emptied. (``_run`` takes and puts back itself: two method calls
    cost a tenth of a hand-written layer.)
    """

    __slots__ = ("_inner_wraps", "call_terminal", "spare")

    def __init__(self, inner_wraps: tuple[Handler[C, E], ...], call_terminal: Next[C, E]) -> None:
        self._inner_wraps = inner_wraps  # Outermost first.
        self.call_terminal = call_terminal
        self.spare: list[tuple[Next[C, E], list[AsyncGenerator[E, None]]]] = []

    def make(self) -> tuple[Next[C, E], list[AsyncGenerator[E, None]]]:
        """A new outermost handler's ``next_fn``, and the list every ``next_fn`` notes into."""
        opened: list[AsyncGenerator[E, None]] = []
        next_fn = _recording(self.call_terminal, opened)
        for wrap in reversed(self._inner_wraps):
            next_fn = _opening(wrap, next_fn, opened)
        return next_fn, opened


def _no_result(stage: MiddlewareStage[Any, Any, Any]) -> RuntimeError:
    event = stage.result_event.__name__
    return RuntimeError(
        f"the {stage!r} chain finished without yielding a {event}. A Wrap handler must "
        f"yield the {event} its next_fn produced, or yield one of its own to short-circuit."
    )


async def _run(
    stage: MiddlewareStage[Any, Any, Any],
    context: C,
    inputs: tuple[MiddlewareRegistration, ...],
    handler: Handler[C, E] | None,
    nesting: _Nesting[C, E],
    outputs: tuple[MiddlewareRegistration, ...],
    checked: bool,
    plain: set[type[Any]],
) -> AsyncGenerator[E, None]:
    """The outermost layer: Input handlers, the Wrap handlers, then Output handlers.

    It is the chain's only layer of its own: the other Wrap handlers' generators are
    nested directly, and every stream a ``next_fn`` opens is noted in one list, which this
    layer closes when it finishes. *plain* holds the event types this chain has met that
    are neither the result nor an interrupt, whatever the instance (``_is_plain``): an
    event of one of them passes the result and interrupt tests with one set lookup.
    """
    if inputs:
        context = await _apply_inputs(stage, inputs, context)
    record = call_interrupts(context)
    if handler is None:
        nested = None
        opened: list[AsyncGenerator[E, None]] = []
        events: AsyncIterator[E] = nesting.call_terminal(context)
    else:
        nested = nesting.spare.pop() if nesting.spare else nesting.make()
        opened = nested[1]
        events = handler(context, nested[0])
    result_event = stage.result_event
    held: E | None = None
    interrupted = False
    seen_result = False
    try:
        # Copies of one loop, so that each does only the checks its chain needs.
        if outputs:
            async for event in events:
                if record is not None and record.raised is not None:
                    raise record.swallowed(f"{stage!r} middleware")
                if type(event) in plain:
                    yield event
                    continue
                if isinstance(event, result_event):
                    held = event  # Replaces an earlier result, which is never passed on.
                    continue
                if getattr(event, "is_interrupt", False):
                    interrupted = interrupted or held is None
                elif len(plain) < _MAX_PLAIN and _is_plain(type(event), result_event):
                    plain.add(type(event))
                yield event
        else:
            if checked:
                async for event in events:
                    if record is not None and record.raised is not None:
                        raise record.swallowed(f"{stage!r} middleware")
                    if type(event) in plain:
                        yield event
                        continue
                    if isinstance(event, result_event):
                        seen_result = True
                        yield event
                        break  # The rest of the stream needs no result check.
                    if getattr(event, "is_interrupt", False):
                        interrupted = True
                    elif len(plain) < _MAX_PLAIN and _is_plain(type(event), result_event):
                        plain.add(type(event))
                    yield event
            if seen_result or not checked:
                if record is None:
                    async for event in events:
                        yield event
                else:
                    async for event in events:
                        if record.raised is not None:
                            raise record.swallowed(f"{stage!r} middleware")
                        yield event
    except Exception as error:
        if record is not None and record.raised is not None and error is not record.raised:
            # The interrupt was caught and turned into another error: a human still decides.
            raise record.swallowed(f"{stage!r} middleware") from None
        raise
    finally:
        # As close_all tests it: an async generator whose frame is gone has finished.
        if getattr(events, "ag_frame", True) is not None or any(map(_frame_of, opened)):
            await close_all([events, *opened])  # Inner first: last opened first, then events.
        if nested is not None:
            # Kept for another call. Not reached if a close failed: nothing is reused then.
            opened.clear()
            nesting.spare.append(nested)
    if record is not None and record.raised is not None:
        raise record.swallowed(f"{stage!r} middleware")
    if not outputs:
        if checked and not seen_result and not interrupted:
            raise _no_result(stage)
        return
    if held is None:
        if interrupted:
            return  # Halted by an interrupt event: no result, so no Output pass.
        raise _no_result(stage)
    yield await _apply_outputs(stage, outputs, held)


async def _run_wraps(
    handler: Handler[C, E], nesting: _Nesting[C, E], context: C
) -> AsyncGenerator[E, None]:
    """``_run`` for a chain of Wrap handlers only, on a context without an interrupt record.

    It passes every event on as it comes and closes, when it finishes, what the handlers'
    ``next_fn``s opened and left open: ``_run``'s rules with nothing to look for, at the
    fixed cost of a hand-written layer and little more.
    """
    nested = nesting.spare.pop() if nesting.spare else nesting.make()
    opened = nested[1]
    events = handler(context, nested[0])
    try:
        async for event in events:
            yield event
    finally:
        # Any open stream (a frame, where a finished generator has None; the handler's own
        # stream is asked too, as close_all asks it) means a close; the test runs in C.
        if getattr(events, "ag_frame", True) is not None or any(map(_frame_of, opened)):
            await close_all([events, *opened])  # Inner first: last opened first.
        # Kept for another call. Not reached if a close failed: nothing is reused then.
        opened.clear()
        nesting.spare.append(nested)


_frame_of = attrgetter("ag_frame")


# A stage has a handful of event types; the bound keeps a stream of classes made on the
# fly from being kept alive by a chain.
_MAX_PLAIN = 64


def _is_plain(event_type: type[Any], result_event: type[Any]) -> bool:
    """Whether no event of *event_type* can be the result or have a truthy ``is_interrupt``.

    True only where the class decides for every instance: ``is_interrupt`` is a falsy
    class attribute or absent, and no instance can answer otherwise (no ``__dict__`` to
    shadow it, no ``__getattr__`` or ``__getattribute__`` of its own). The generated
    events are such classes; anything else is asked event by event, as before.
    """
    if issubclass(event_type, result_event) or event_type.__dictoffset__ != 0:
        return False
    if hasattr(event_type, "__getattr__"):
        return False
    if inspect.getattr_static(event_type, "__getattribute__") is not object.__getattribute__:
        return False
    # A property or a slot named is_interrupt is a (truthy) descriptor on the class: such
    # a type is never plain, and each of its events is asked.
    flag: object = inspect.getattr_static(event_type, "is_interrupt", False)
    return not flag


def _opening(
    handler: Handler[C, E], inner: Next[C, E], opened: list[AsyncGenerator[E, None]]
) -> Next[C, E]:
    """The ``next_fn`` that starts *handler* on *inner*, noting its stream in *opened*.

    The stream is the handler's own generator: nothing of ours goes around it, so a Wrap
    layer costs what a hand-written one does; the outermost layer closes what it left.
    """
    if inspect.isasyncgenfunction(handler):
        # Calling an async generator function returns an async generator: the type test
        # the other next_fn makes on every call is answered here, once.
        generator_handler = cast("GeneratorHandler[C, E]", handler)

        def next_generator(context: C) -> AsyncGenerator[E, None]:
            events = generator_handler(context, inner)
            opened.append(events)
            return events

        return next_generator

    def next_fn(context: C) -> AsyncGenerator[E, None]:
        events = handler(context, inner)
        if type(events) is not ASYNC_GENERATOR:
            events = as_generator(events)
        opened.append(events)
        return events

    return next_fn


def _recording(inner: Next[C, E], opened: list[AsyncGenerator[E, None]]) -> Next[C, E]:
    """The ``next_fn`` a layer hands its handler: *inner*, noting each stream in *opened*."""

    def next_fn(context: C) -> AsyncGenerator[E, None]:
        events = inner(context)
        opened.append(events)
        return events

    return next_fn


def _terminal_layer(stage: MiddlewareStage[Any, Any, Any], terminal: Chain[C, E]) -> Next[C, E]:
    """The ``next_fn`` the innermost Wrap handler calls: the terminal, as an async generator.

    It refuses to run the terminal for a call whose interrupt a middleware caught.
    """

    def call_terminal(context: C) -> AsyncGenerator[E, None]:
        record = call_interrupts(context)
        if record is not None and record.raised is not None:
            raise record.swallowed(f"{stage!r} middleware")
        events = terminal(context)
        if type(events) is ASYNC_GENERATOR:
            return events
        return as_generator(events)

    return call_terminal


async def as_generator(events: AsyncIterator[E]) -> AsyncGenerator[E, None]:
    """*events* as an async generator, so that ``next_fn`` always returns one."""
    try:
        async for event in events:
            yield event
    finally:
        await close_all([events])


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


async def _apply_inputs(
    stage: MiddlewareStage[Any, Any, Any], inputs: tuple[MiddlewareRegistration, ...], context: C
) -> C:
    """Run the Input handlers in registration order; return the context they leave."""
    record = call_interrupts(context)
    try:
        for registration in inputs:
            context = await _apply_input(stage, registration, context)
    except Exception as error:
        if record is not None and record.raised is not None and error is not record.raised:
            # An Input handler turned its interrupt into another error: a human still decides.
            raise record.swallowed(f"{stage!r} middleware") from None
        raise
    return context


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
