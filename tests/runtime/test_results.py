"""The result event: recognised by type, last one wins, Output handlers and their checks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from stageware import MiddlewareRegistry, MiddlewareResult

from .stage_fixture import (
    Chunk,
    Done,
    EchoContext,
    EchoEvent,
    EchoResult,
    EchoStage,
    Paused,
    collect,
    echo_terminal,
)

pytestmark = pytest.mark.anyio

Next = Callable[[EchoContext], AsyncIterator[EchoEvent]]
AnyResult = TypeVar("AnyResult", bound=MiddlewareResult[Any])


async def test_output_handlers_run_once_on_the_last_result_event() -> None:
    calls: list[str] = []
    registry = MiddlewareRegistry()

    async def two_results(context: EchoContext) -> AsyncIterator[EchoEvent]:
        yield Done("draft")
        yield Chunk("between")
        yield Done("final")
        yield Chunk("after")

    def output(result: EchoResult) -> EchoResult:
        calls.append(result.result.text)
        return result.replace(result=Done(result.result.text.upper()))

    registry.add_middleware(EchoStage.Output, output)

    events = await collect(registry.invoke(EchoStage, EchoContext(text=""), two_results))

    assert calls == ["final"]
    # The superseded draft is dropped, other events keep their order, the result comes last.
    assert events == [Chunk("between"), Chunk("after"), Done("FINAL")]


async def test_a_chain_without_a_result_event_is_an_actionable_error() -> None:
    registry = MiddlewareRegistry()

    async def drops_result(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        async for event in next_fn(context):
            if isinstance(event, Chunk):
                yield event

    registry.add_middleware(EchoStage, drops_result)

    with pytest.raises(RuntimeError, match=r"EchoStage chain finished without yielding a Done"):
        await collect(registry.invoke(EchoStage, EchoContext(text="a b"), echo_terminal))


async def test_an_output_phase_without_a_result_event_raises_before_calling_handlers() -> None:
    registry = MiddlewareRegistry()
    called = False

    async def no_result(context: EchoContext) -> AsyncIterator[EchoEvent]:
        yield Chunk("only")

    def output(result: EchoResult) -> EchoResult:
        nonlocal called
        called = True
        return result

    registry.add_middleware(EchoStage.Output, output)

    with pytest.raises(RuntimeError, match="without yielding a Done"):
        await collect(registry.compose(EchoStage, no_result)(EchoContext(text="")))
    assert not called


async def test_output_handler_returning_the_wrong_type_is_a_type_error() -> None:
    registry = MiddlewareRegistry()

    def returns_event(result: EchoResult) -> Done:
        return result.result

    registry.add_middleware(EchoStage.Output, returns_event)  # type: ignore[arg-type]

    with pytest.raises(
        TypeError, match=r"Output handler .*returns_event returned Done, expected EchoResult"
    ):
        await collect(registry.invoke(EchoStage, EchoContext(text="x"), echo_terminal))


async def test_output_handler_returning_a_wrapper_around_another_event_is_a_type_error() -> None:
    registry = MiddlewareRegistry()
    registry.add_middleware(
        EchoStage.Output,
        lambda r: EchoResult(result=Chunk("not a result")),  # type: ignore[call-overload]
    )

    with pytest.raises(TypeError, match=r"holding Chunk, expected Done"):
        await collect(registry.invoke(EchoStage, EchoContext(text="x"), echo_terminal))


def test_value_is_the_earlier_name_of_result() -> None:
    result = EchoResult(result=Done("a"))

    assert result.value is result.result
    replaced = result.replace(value=Done("b"))
    assert type(replaced) is EchoResult
    assert replaced.result == Done("b")
    assert result.result == Done("a")  # The original is unchanged.
    with pytest.raises(TypeError, match="result= or value=, not both"):
        result.replace(result=Done("c"), value=Done("d"))
    assert EchoResult(value=Done("v")) == EchoResult(Done("v")) == EchoResult(result=Done("v"))
    with pytest.raises(TypeError, match="needs the result event"):
        EchoResult()  # type: ignore[call-overload]


def test_middleware_result_is_a_plain_frozen_wrapper() -> None:
    generic: MiddlewareResult[int] = MiddlewareResult(result=1)

    assert generic.replace(result=2) == MiddlewareResult(result=2)
    assert generic.replace() == generic
    with pytest.raises(AttributeError):
        generic.result = 3  # type: ignore[misc]


async def test_a_call_halted_by_an_interrupt_event_has_no_result_and_no_output_pass() -> None:
    registry = MiddlewareRegistry()
    outputs: list[EchoResult] = []

    async def halts(context: EchoContext) -> AsyncIterator[EchoEvent]:
        yield Chunk("thinking")
        yield Paused("may I?")

    def record(result: EchoResult) -> EchoResult:
        outputs.append(result)
        return result

    registry.add_middleware(EchoStage.Output, record)

    events = await collect(registry.invoke(EchoStage, EchoContext(text=""), halts))

    assert events == [Chunk("thinking"), Paused("may I?")]
    assert outputs == []


class _Note:
    """An event whose instances may set their own ``is_interrupt`` (they have a ``__dict__``)."""

    is_interrupt = False

    def __init__(self, text: str, *, interrupts: bool = False) -> None:
        self.text = text
        if interrupts:
            self.is_interrupt = True


@dataclass(frozen=True, slots=True)
class _Flagged:
    """An event whose ``is_interrupt`` is a property: each instance answers for itself."""

    text: str
    asks: bool

    @property
    def is_interrupt(self) -> bool:
        return self.asks


async def passthrough(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
    async for event in next_fn(context):
        yield event


def _halting_streams() -> list[Any]:
    return [
        pytest.param([_Note("working"), _Note("may I?", interrupts=True)], id="instance-attribute"),
        pytest.param([_Flagged("working", False), _Flagged("may I?", True)], id="property"),
    ]


@pytest.mark.parametrize("stream", _halting_streams())
@pytest.mark.parametrize("with_output", [False, True], ids=["checked", "output-handler"])
async def test_each_event_answers_is_interrupt_where_its_class_does_not_decide(
    stream: list[Any], with_output: bool
) -> None:
    # The chain learns which event types can never be the result nor an interrupt, to skip
    # both tests for them; a type whose instances may answer otherwise is never learnt.
    registry = MiddlewareRegistry()
    outputs: list[EchoResult] = []

    async def halts(context: EchoContext) -> AsyncIterator[Any]:
        for event in stream:
            yield event

    def record(result: EchoResult) -> EchoResult:
        outputs.append(result)
        return result

    registry.add_middleware(EchoStage, passthrough)
    if with_output:
        registry.add_middleware(EchoStage.Output, record)

    for _ in range(2):  # the second call runs with whatever the first one learnt
        events = await collect(registry.invoke(EchoStage, EchoContext(text=""), halts))
        assert events == stream  # halted, not "finished without yielding a Done"
    assert outputs == []


async def test_an_output_handler_may_return_the_base_wrapper() -> None:
    registry = MiddlewareRegistry()
    seen: list[type[object]] = []

    def legacy(result: EchoResult) -> EchoResult:
        # An older handler that builds the base wrapper under its earlier field name.
        return MiddlewareResult(value=Done("legacy"))  # type: ignore[return-value]

    def after(result: EchoResult) -> EchoResult:
        seen.append(type(result))
        return result

    registry.add_middleware(EchoStage.Output, after)
    registry.add_middleware(EchoStage.Output, legacy)

    events = await collect(registry.invoke(EchoStage, EchoContext(text="x"), echo_terminal))

    assert events[-1] == Done("legacy")
    assert seen == [EchoResult]  # Re-wrapped in the stage's own type for the next handler.


async def test_a_generic_output_handler_fits_every_stage() -> None:
    registry = MiddlewareRegistry()
    stamped: list[object] = []

    def stamp(result: AnyResult) -> AnyResult:
        stamped.append(result.result)
        return result

    registry.add_middleware(EchoStage.Output, stamp)

    await collect(registry.invoke(EchoStage, EchoContext(text="x"), echo_terminal))

    assert stamped == [Done("x")]


async def test_the_transformed_result_follows_what_a_wrap_handler_yields_after_it() -> None:
    registry = MiddlewareRegistry()

    async def footer(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        async for event in next_fn(context):
            yield event
        yield Chunk("footer")

    registry.add_middleware(EchoStage, footer)
    registry.add_middleware(EchoStage.Output, lambda r: r.replace(result=Done(r.result.text + "!")))

    events = await collect(registry.invoke(EchoStage, EchoContext(text="a b"), echo_terminal))

    assert events == [Chunk("a"), Chunk("b"), Chunk("footer"), Done("a b!")]


async def test_a_result_a_retry_superseded_never_reaches_the_consumer() -> None:
    # A retrying Wrap handler passes on every event of both attempts; the Output handler
    # redacts. The first attempt's result must not slip through unredacted.
    registry = MiddlewareRegistry()
    attempts = 0
    redacted: list[str] = []

    async def model(context: EchoContext) -> AsyncIterator[EchoEvent]:
        nonlocal attempts
        attempts += 1
        yield Chunk(f"attempt {attempts}")
        yield Done(f"secret {attempts}")

    async def retry_once(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        for _ in range(2):
            async for event in next_fn(context):
                yield event

    def redact(result: EchoResult) -> EchoResult:
        redacted.append(result.result.text)
        return result.replace(result=Done("[redacted]"))

    registry.add_middleware(EchoStage, retry_once)
    registry.add_middleware(EchoStage.Output, redact)

    events = await collect(registry.invoke(EchoStage, EchoContext(text=""), model))

    assert events == [Chunk("attempt 1"), Chunk("attempt 2"), Done("[redacted]")]
    assert redacted == ["secret 2"]


async def test_without_output_handlers_every_event_passes_as_yielded() -> None:
    registry = MiddlewareRegistry()

    async def repeat(context: EchoContext, next_fn: Next) -> AsyncIterator[EchoEvent]:
        for _ in range(2):
            async for event in next_fn(context):
                yield event
        yield Chunk("after")

    registry.add_middleware(EchoStage, repeat)

    events = await collect(registry.invoke(EchoStage, EchoContext(text="x"), echo_terminal))

    assert events == [Chunk("x"), Done("x"), Chunk("x"), Done("x"), Chunk("after")]
