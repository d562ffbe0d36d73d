"""A swallowed interrupt still interrupts, on both interruptible stages.

Once ``context.interrupt()`` has raised for a call, the chain runs no terminal for that
call, passes on no event that follows, and hands the host the original exception, however
the middleware went on after catching it; a warning names the interrupt and the mistake.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import anyio
import pytest

from stageware import (
    AgentStreamContext,
    AgentStreamStage,
    EventLoopStopEvent,
    ExecuteToolContext,
    ExecuteToolStage,
    Interrupt,
    InterruptException,
    MiddlewareRegistry,
    MiddlewareStage,
    ToolResultEvent,
    ToolStreamEvent,
)
from stageware.runtime import CallInterrupts, SwallowedInterruptWarning

pytestmark = pytest.mark.anyio

Next = Callable[[Any], AsyncGenerator[Any, None]]
TOOL_USE: Any = {"toolUseId": "tooluse_42", "name": "refund", "input": {"amount": 500}}


class _Agent:
    name = "tester"
    agent_id = "tester"


@dataclass(frozen=True)
class Case:
    """One interruptible stage: how to build its context, its result and its gate's id."""

    stage: MiddlewareStage[Any, Any, Any]
    context: Callable[[Mapping[str, Interrupt] | None], Any]
    result: Callable[[str], Any]
    id_prefix: str

    def gate_id(self, name: str) -> str:
        return self.id_prefix + str(uuid.uuid5(uuid.NAMESPACE_OID, name))


def _tool_context(interrupts: Mapping[str, Interrupt] | None) -> ExecuteToolContext:
    return ExecuteToolContext.from_host(
        agent=_Agent(),
        tool=None,
        tool_use=TOOL_USE,
        invocation_state={},
        cancel_signal=anyio.Event(),
        interrupts=interrupts,
    )


def _stream_context(interrupts: Mapping[str, Interrupt] | None) -> AgentStreamContext:
    return AgentStreamContext.from_host(
        agent=_Agent(), messages=[], invocation_state={}, interrupts=interrupts
    )


def _tool_result(text: str) -> ToolResultEvent:
    return ToolResultEvent(
        {"toolUseId": "tooluse_42", "status": "success", "content": [{"text": text}]}
    )


def _stop(text: str) -> EventLoopStopEvent:
    return EventLoopStopEvent(
        stop_reason="end_turn",
        message={"role": "assistant", "content": [{"text": text}]},
        metrics={"latencyMs": 0},
        request_state={},
    )


CASES = [
    pytest.param(
        Case(
            ExecuteToolStage,
            _tool_context,
            _tool_result,
            "v2:middleware_execute_tool:tester:tooluse_42:",
        ),
        id="ExecuteTool",
    ),
    pytest.param(
        Case(AgentStreamStage, _stream_context, _stop, "v2:middleware_agent_stream:tester:"),
        id="AgentStream",
    ),
]


def _progress(text: str) -> ToolStreamEvent:
    return ToolStreamEvent(tool_use=TOOL_USE, data=text)


class Terminal:
    """The stage's terminal: records whether it ran (the tool, the model) and how far."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.ran = False

    async def __call__(self, context: Any) -> AsyncIterator[Any]:
        self.ran = True
        yield _progress("working")
        yield self.case.result("ran")


class Caught:
    """Middleware that catches what ``interrupt()`` raised, as a broad ``except`` would."""

    def __init__(self) -> None:
        self.caught: list[Exception] = []

    def gate(self, context: Any, name: str = "approve") -> None:
        try:
            context.interrupt(name, reason="refund 500?")
        except Exception as error:  # the mistake under test
            self.caught.append(error)

    @property
    def original(self) -> InterruptException:
        first = self.caught[0]
        assert isinstance(first, InterruptException)
        return first


@contextmanager
def _warns_about(name: str) -> Iterator[None]:
    with pytest.warns(SwallowedInterruptWarning) as record:
        yield
    [warning] = record.list
    message = str(warning.message)
    assert f"interrupt {name!r}" in message
    assert "except Exception" in message
    assert "re-raise InterruptException" in message


async def _collect(events: AsyncIterator[Any], received: list[Any]) -> None:
    async for event in events:
        received.append(event)


@pytest.mark.parametrize("case", CASES)
async def test_a_wrap_handler_that_swallows_the_interrupt_and_calls_next_never_runs_the_terminal(
    case: Case,
) -> None:
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    caught = Caught()

    async def gate(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        yield _progress("before the gate")
        caught.gate(context)
        async for event in next_fn(context):
            yield event

    registry.add_middleware(case.stage, gate)
    received: list[Any] = []

    with _warns_about("approve"), pytest.raises(InterruptException) as info:
        await _collect(registry.invoke(case.stage, case.context(None), terminal), received)

    assert info.value is caught.original
    assert info.value.interrupt == Interrupt(
        id=case.gate_id("approve"), name="approve", reason="refund 500?"
    )
    assert not terminal.ran
    assert received == [_progress("before the gate")]  # what came before the gate still flows


@pytest.mark.parametrize("case", CASES)
async def test_a_handler_that_swallows_and_short_circuits_passes_nothing_on(case: Case) -> None:
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    caught = Caught()

    async def fake_approval(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        caught.gate(context)
        yield _progress("approved, honest")
        yield case.result("pretend it ran")

    registry.add_middleware(case.stage, fake_approval)
    received: list[Any] = []

    with _warns_about("approve"), pytest.raises(InterruptException) as info:
        await _collect(registry.invoke(case.stage, case.context({}), terminal), received)

    assert info.value is caught.original
    assert received == []
    assert not terminal.ran


@pytest.mark.parametrize("case", CASES)
async def test_an_interrupt_swallowed_after_the_result_stops_what_follows(case: Case) -> None:
    # invoke() stops checking for the result once it has passed; the record is still read.
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    caught = Caught()

    async def gate_after(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        async for event in next_fn(context):
            yield event
        caught.gate(context)
        yield _progress("after the gate")

    registry.add_middleware(case.stage, gate_after)
    received: list[Any] = []

    with _warns_about("approve"), pytest.raises(InterruptException) as info:
        await _collect(registry.invoke(case.stage, case.context(None), terminal), received)

    assert info.value is caught.original
    assert received == [_progress("working"), case.result("ran")]


@pytest.mark.parametrize("case", CASES)
async def test_catching_the_reraise_from_next_fn_as_well_still_interrupts(case: Case) -> None:
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    caught = Caught()
    next_errors: list[Exception] = []

    async def stubborn(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        caught.gate(context)
        try:
            async for event in next_fn(context):
                yield event
        except Exception as error:
            next_errors.append(error)
            yield case.result("fallback")

    registry.add_middleware(case.stage, stubborn)
    received: list[Any] = []

    with _warns_about("approve"), pytest.raises(InterruptException) as info:
        await _collect(registry.invoke(case.stage, case.context(None), terminal), received)

    assert info.value is caught.original
    assert next_errors == [caught.original]  # next_fn refused, with the same exception
    assert received == []
    assert not terminal.ran


@pytest.mark.parametrize("case", CASES)
async def test_an_interrupt_turned_into_another_error_reaches_the_host_as_the_interrupt(
    case: Case,
) -> None:
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    raised: list[Exception] = []

    async def translate_errors(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        try:
            context.interrupt("approve")
        except Exception as error:
            raised.append(error)
            raise RuntimeError("approval failed") from error
        async for event in next_fn(context):
            yield event

    registry.add_middleware(case.stage, translate_errors)

    with _warns_about("approve"), pytest.raises(InterruptException) as info:
        await _collect(registry.invoke(case.stage, case.context(None), terminal), [])

    assert [info.value] == raised
    assert not terminal.ran


@pytest.mark.parametrize("case", CASES)
async def test_an_input_handler_that_swallows_the_interrupt_stops_the_call(case: Case) -> None:
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    caught = Caught()

    def gate(context: Any) -> Any:
        caught.gate(context)
        return context

    registry.add_middleware(case.stage.Input, gate)

    with _warns_about("approve"), pytest.raises(InterruptException) as info:
        await _collect(registry.invoke(case.stage, case.context(None), terminal), [])

    assert info.value is caught.original
    assert not terminal.ran


@pytest.mark.parametrize("case", CASES)
async def test_the_record_is_shared_by_replaced_contexts_and_inner_layers(case: Case) -> None:
    # The gate asks on a replace()d copy, the outer layer carries on with the original
    # context, and an inner layer calls next_fn with another copy: still refused.
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    caught = Caught()
    outputs: list[Any] = []

    async def outer(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        caught.gate(context.replace(invocation_state={"copy": True}))
        async for event in next_fn(context):
            yield event

    async def inner(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        async for event in next_fn(replace(context, invocation_state={})):
            yield event

    def record(result: Any) -> Any:
        outputs.append(result)
        return result

    registry.add_middleware(case.stage, outer)
    registry.add_middleware(case.stage, inner)
    registry.add_middleware(case.stage.Output, record)

    with _warns_about("approve"), pytest.raises(InterruptException) as info:
        await _collect(registry.invoke(case.stage, case.context(None), terminal), [])

    assert info.value is caught.original
    assert not terminal.ran
    assert outputs == []


@pytest.mark.parametrize("case", CASES)
async def test_the_first_interrupt_raised_is_the_one_the_host_gets(case: Case) -> None:
    registry = MiddlewareRegistry()
    caught = Caught()

    async def two_gates(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        caught.gate(context, "first")
        context.interrupt("second")  # raised, not caught
        yield case.result("unreachable")

    registry.add_middleware(case.stage, two_gates)

    with _warns_about("first"), pytest.raises(InterruptException) as info:
        await _collect(registry.invoke(case.stage, case.context(None), Terminal(case)), [])

    assert info.value is caught.original
    assert info.value.interrupt.name == "first"


@pytest.mark.parametrize("case", CASES)
async def test_an_interrupt_that_propagates_is_not_warned_about(case: Case) -> None:
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    raised: list[InterruptException] = []

    async def gate(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        try:
            context.interrupt("approve")
        except InterruptException as error:
            raised.append(error)
            raise
        async for event in next_fn(context):
            yield event

    registry.add_middleware(case.stage, gate)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InterruptException) as info:
            await _collect(registry.invoke(case.stage, case.context(None), terminal), [])

    assert [info.value] == raised
    assert not terminal.ran


@pytest.mark.parametrize("case", CASES)
async def test_a_stored_answer_resolves_and_the_call_runs(case: Case) -> None:
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    answers: list[object] = []
    gate_id = case.gate_id("approve")

    async def gate(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        answers.append(context.interrupt("approve").response)
        async for event in next_fn(context):
            yield event

    registry.add_middleware(case.stage, gate)
    answered = {gate_id: Interrupt(id=gate_id, name="approve", response="yes")}
    received: list[Any] = []

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await _collect(registry.invoke(case.stage, case.context(answered), terminal), received)

    assert answers == ["yes"]
    assert terminal.ran
    assert received == [_progress("working"), case.result("ran")]


@pytest.mark.parametrize("case", CASES)
async def test_each_call_has_its_own_record(case: Case) -> None:
    # A call whose interrupt was swallowed does not poison the next call of the stage.
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    caught = Caught()
    calls = 0

    async def gate_once(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            caught.gate(context)
        async for event in next_fn(context):
            yield event

    registry.add_middleware(case.stage, gate_once)
    with _warns_about("approve"), pytest.raises(InterruptException):
        await _collect(registry.invoke(case.stage, case.context(None), terminal), [])
    received: list[Any] = []

    await _collect(registry.invoke(case.stage, case.context(None), terminal), received)

    assert terminal.ran
    assert received[-1] == case.result("ran")


@pytest.mark.parametrize("case", CASES)
def test_from_host_gives_each_context_a_fresh_record_that_replace_shares(case: Case) -> None:
    answered = {"some-id": Interrupt(id="some-id", name="x", response=1)}
    first = case.context(answered)
    second = case.context(None)

    record = first._interrupts
    assert isinstance(record, CallInterrupts)
    assert dict(record) == answered
    assert record is not answered  # a snapshot
    assert second._interrupts is not record
    assert len(second._interrupts) == 0
    assert first.replace(invocation_state={})._interrupts is record
    assert replace(first, invocation_state={})._interrupts is record


@pytest.mark.parametrize("case", CASES)
async def test_an_input_handler_that_turns_the_interrupt_into_another_error_still_interrupts(
    case: Case,
) -> None:
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    caught = Caught()

    def gate(context: Any) -> Any:
        caught.gate(context)
        raise ValueError("the approval service is down")

    registry.add_middleware(case.stage.Input, gate)
    received: list[Any] = []

    with _warns_about("approve"), pytest.raises(InterruptException) as info:
        await _collect(registry.invoke(case.stage, case.context(None), terminal), received)

    assert info.value is caught.original
    assert not terminal.ran
    assert received == []


@pytest.mark.parametrize("case", CASES)
async def test_a_composed_chain_of_wrap_handlers_only_still_stops_a_swallowed_interrupt(
    case: Case,
) -> None:
    # compose() without Input or Output handlers runs a lighter outermost layer for a
    # context without an interrupt record; one that carries a record gets every check.
    registry = MiddlewareRegistry()
    terminal = Terminal(case)
    caught = Caught()

    async def fake_approval(context: Any, next_fn: Next) -> AsyncIterator[Any]:
        caught.gate(context)
        yield _progress("approved, honest")
        yield case.result("pretend it ran")

    registry.add_middleware(case.stage, fake_approval)
    received: list[Any] = []

    with _warns_about("approve"), pytest.raises(InterruptException) as info:
        await _collect(registry.compose(case.stage, terminal)(case.context({})), received)

    assert info.value is caught.original
    assert received == []
    assert not terminal.ran
