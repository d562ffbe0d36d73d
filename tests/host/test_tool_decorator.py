"""The @tool decorator: the spec a function yields, how its calls run, what they return."""

from __future__ import annotations

import inspect
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel, Field, ValidationError

from stageware._generated.events import (
    ExecuteToolEvent,
    ToolInterruptEvent,
    ToolResultEvent,
    ToolStreamEvent,
)
from stageware._generated.payloads import ToolUse
from stageware._host._cancel import CancelToken
from stageware._host.tools import AgentTool, ToolContext, tool_interrupt_id
from stageware._host.tools._decorator import FunctionTool, tool
from stageware._host.tools._docstring import parse_docstring
from stageware._runtime import Interrupt

if TYPE_CHECKING:
    # Known to the checkers only, so resolving it at run time fails.
    from decimal import Decimal as OnlyForCheckers


class _Agent:
    name = "tester"
    agent_id = "tester"


class Point(BaseModel):
    x: int
    y: int


def _tool_use(name: str, tool_input: object, tool_use_id: str = "tooluse_1") -> ToolUse:
    return {"toolUseId": tool_use_id, "name": name, "input": tool_input}


def _context(tool_use: ToolUse, interrupts: Mapping[str, Interrupt] | None = None) -> ToolContext:
    return ToolContext(
        agent=_Agent(),
        tool_use=tool_use,
        invocation_state={},
        cancel_signal=CancelToken(),
        interrupts=interrupts,
    )


async def _run(
    agent_tool: AgentTool,
    tool_input: object,
    *,
    tool_use_id: str = "tooluse_1",
    interrupts: Mapping[str, Interrupt] | None = None,
) -> list[ExecuteToolEvent]:
    tool_use = _tool_use(agent_tool.tool_name, tool_input, tool_use_id)
    return [event async for event in agent_tool.stream(tool_use, _context(tool_use, interrupts))]


async def _result(agent_tool: AgentTool, tool_input: object) -> ToolResultEvent:
    events = await _run(agent_tool, tool_input)
    assert len(events) == 1
    event = events[0]
    assert isinstance(event, ToolResultEvent)
    return event


def _text(event: ToolResultEvent) -> str:
    return event.tool_result["content"][0]["text"]


def _schema(agent_tool: AgentTool) -> dict[str, Any]:
    return agent_tool.tool_spec["inputSchema"]["json"]


@tool
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
    """Look up the current weather.

    Uses the nearest station.

    Args:
        city (str): The city
            to look up.
        unit: Temperature unit.

    Returns:
        A sentence about the weather.
    """
    return f"{city}: 20{unit}"


# --- The spec ----------------------------------------------------------------------------


def test_spec_has_the_name_and_the_docstring_text_before_its_sections() -> None:
    spec = get_weather.tool_spec
    assert spec["name"] == "get_weather"
    assert spec["description"] == "Look up the current weather.\n\nUses the nearest station."


def test_schema_has_parameter_descriptions_defaults_and_literals() -> None:
    schema = _schema(get_weather)
    assert schema["type"] == "object"
    assert schema["required"] == ["city"]
    assert schema["additionalProperties"] is False
    city = schema["properties"]["city"]
    assert city["type"] == "string"
    assert city["description"] == "The city to look up."
    unit = schema["properties"]["unit"]
    assert unit["enum"] == ["c", "f"]
    assert unit["default"] == "c"
    assert unit["description"] == "Temperature unit."


def test_nested_model_parameter_is_described_by_reference() -> None:
    @tool
    def plot(point: Point) -> str:
        """Plot a point."""
        return ""

    schema = _schema(plot)
    assert schema["properties"]["point"] == {"$ref": "#/$defs/Point"}
    assert schema["$defs"]["Point"]["required"] == ["x", "y"]


def test_annotated_field_description_wins_over_the_docstring() -> None:
    @tool
    def search(
        query: Annotated[str, Field(description="From Field.")],
        limit: Annotated[int, Field(ge=1)] = 10,
    ) -> str:
        """Search.

        Args:
            query: From the docstring.
            limit: How many hits.
        """
        return ""

    properties = _schema(search)["properties"]
    assert properties["query"]["description"] == "From Field."
    assert properties["limit"] == {
        "default": 10,
        "description": "How many hits.",
        "minimum": 1,
        "title": "Limit",
        "type": "integer",
    }


def _audit(ctx: ToolContext, note: str) -> str:
    """Audit.

    Args:
        ctx: Injected by the host.
    """
    return note


def _audit_optional(note: str, *, ctx: ToolContext | None = None) -> str:
    """Audit, also callable without a context."""
    return note


@pytest.mark.parametrize("func", [_audit, _audit_optional])
def test_the_context_parameter_is_left_out_of_the_schema(func: Any) -> None:
    schema = _schema(tool(func))
    assert list(schema["properties"]) == ["note"]
    assert schema["required"] == ["note"]


def test_keyword_arguments_override_name_and_description() -> None:
    @tool(name="lookup-v2", description="  Find a key.  ")
    def lookup(key: str) -> str:
        return key

    assert lookup.tool_name == "lookup-v2"
    assert lookup.tool_spec["name"] == "lookup-v2"
    assert lookup.tool_spec["description"] == "Find a key."
    assert repr(lookup) == "FunctionTool(name='lookup-v2')"


def test_empty_parentheses_work_like_the_bare_decorator() -> None:
    @tool()
    def ping() -> str:
        """Ping."""
        return "pong"

    assert ping.tool_spec["description"] == "Ping."
    assert _schema(ping)["properties"] == {}


def test_tool_spec_is_a_fresh_copy() -> None:
    get_weather.tool_spec["inputSchema"]["json"]["properties"].clear()
    assert "city" in _schema(get_weather)["properties"]


def test_parameters_named_like_model_attributes_keep_their_names() -> None:
    @tool
    def store(json: str, _tag: str = "t", model_config: int = 0) -> str:
        """Store a document."""
        return f"{json}/{_tag}/{model_config}"

    assert list(_schema(store)["properties"]) == ["json", "_tag", "model_config"]


def test_parse_docstring_keeps_unknown_headers_in_the_description() -> None:
    description, parameters = parse_docstring(
        """Summary.

        For example:
            call(1)

        Arguments:
            a: First.

                Second paragraph.
            b (int, optional): B.

        Raises:
            ValueError: Never documented as a parameter.
        """
    )
    assert description == "Summary.\n\nFor example:\n    call(1)"
    # docstring_parser drops the blank line inside an entry; the line reader keeps it.
    assert parameters == {"a": "First.\n\nSecond paragraph.", "b": "B."}


def test_parse_docstring_reads_numpy_style() -> None:
    description, parameters = parse_docstring(
        """Look up an order.

        Reads the order store.

        Parameters
        ----------
        order_id : int
            The order number,
            on two lines.
        verbose : bool, optional
            Say more.

            Really.
        undocumented

        Returns
        -------
        dict
            The order.
        """
    )
    assert description == "Look up an order.\n\nReads the order store."
    assert parameters == {
        "order_id": "The order number, on two lines.",
        "verbose": "Say more.\n\nReally.",
        "undocumented": "",
    }


def test_parse_docstring_reads_sphinx_style() -> None:
    description, parameters = parse_docstring(
        """Look up an order.
        Reads the order store.

        :param order_id: The order number,
            on two lines.
        :type order_id: int
        :param bool verbose: Say more.
        :keyword str region: Where.
        :returns: The order.
        :raises KeyError: For an unknown order.
        """
    )
    assert description == "Look up an order.\nReads the order store."
    assert parameters == {
        "order_id": "The order number, on two lines.",
        "verbose": "Say more.",
        "region": "Where.",
    }


def test_parse_docstring_reads_epydoc_style() -> None:
    assert parse_docstring(
        """Look up an order.

        @param order_id: The order number.
        @type order_id: int
        @return: The order.
        """
    ) == ("Look up an order.", {"order_id": "The order number."})


def test_parse_docstring_reads_google_keyword_sections_and_drops_attributes() -> None:
    assert parse_docstring(
        """Look up an order.

        Args:
            order_id (int): The order.

        Keyword Args:
            region: Where.

        Other Parameters:
            trace: Log it.

        Attributes:
            cache: Not a parameter.
        """
    ) == ("Look up an order.", {"order_id": "The order.", "region": "Where.", "trace": "Log it."})


def test_parse_docstring_without_sections_is_all_description() -> None:
    text = """Look up an order.

    The order store is read;
    nothing is written.
    """
    assert parse_docstring(text) == (
        "Look up an order.\n\nThe order store is read;\nnothing is written.",
        {},
    )
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("One line.") == ("One line.", {})


def test_numpy_and_sphinx_docstrings_describe_the_tool_parameters() -> None:
    @tool
    def numpy_style(city: str, days: int = 1) -> str:
        """Forecast the weather.

        Parameters
        ----------
        city : str
            The city.
        days : int
            How many days ahead.
        """
        return city

    @tool
    def sphinx_style(city: str) -> str:
        """Forecast the weather.

        :param city: The city.
        """
        return city

    properties = numpy_style.tool_spec["inputSchema"]["json"]["properties"]
    assert numpy_style.tool_spec["description"] == "Forecast the weather."
    assert (properties["city"]["description"], properties["days"]["description"]) == (
        "The city.",
        "How many days ahead.",
    )
    sphinx_properties = sphinx_style.tool_spec["inputSchema"]["json"]["properties"]
    assert sphinx_properties["city"]["description"] == "The city."


def test_a_sphinx_parameter_the_function_lacks_is_rejected() -> None:
    def typo(city: str) -> str:
        """Typo.

        :param ctiy: The city.
        """
        return city

    with pytest.raises(TypeError, match=r"typo: the docstring documents 'ctiy'"):
        tool(typo)


# --- Decoration-time errors --------------------------------------------------------------


def test_unannotated_parameter_is_rejected() -> None:
    def bad(city, unit: str) -> str:  # type: ignore[no-untyped-def]
        """Bad."""
        return ""

    with pytest.raises(TypeError, match=r"bad: parameter 'city' has no type annotation"):
        tool(bad)


def test_variadic_parameters_are_rejected() -> None:
    def star(*names: str) -> str:
        """Star."""
        return ""

    def double(**options: int) -> str:
        """Double."""
        return ""

    with pytest.raises(TypeError, match=r"star: parameter 'names' is variadic"):
        tool(star)
    with pytest.raises(TypeError, match=r"double: parameter 'options' is variadic"):
        tool(double)


def test_missing_description_is_rejected() -> None:
    def silent(city: str) -> str:
        return city

    def only_args(city: str) -> str:
        """Args:
        city: The city.
        """
        return city

    with pytest.raises(TypeError, match=r"silent: the tool has no description"):
        tool(silent)
    with pytest.raises(TypeError, match=r"only_args: the tool has no description"):
        tool(only_args)
    assert tool(description="Describe it.")(silent).tool_spec["description"] == "Describe it."


def test_documenting_a_parameter_the_function_lacks_is_rejected() -> None:
    def typo(city: str) -> str:
        """Typo.

        Args:
            ctiy: The city.
        """
        return city

    with pytest.raises(TypeError, match=r"typo: the docstring documents 'ctiy'"):
        tool(typo)


class Opaque:
    pass


def test_type_without_a_json_schema_is_rejected_naming_the_parameter() -> None:
    def opaque(label: str, handle: Opaque) -> str:
        """Opaque."""
        return label

    with pytest.raises(TypeError, match=r"opaque: parameter 'handle' has type .*Opaque"):
        tool(opaque)


def test_two_context_parameters_are_rejected() -> None:
    def twice(a: ToolContext, b: ToolContext) -> str:
        """Twice."""
        return ""

    with pytest.raises(TypeError, match=r"twice: parameters 'a' and 'b' are both ToolContext"):
        tool(twice)


def test_sync_generator_function_is_rejected() -> None:
    def numbers() -> Iterator[int]:
        """Numbers."""
        yield 1

    with pytest.raises(TypeError, match=r"numbers: a generator function cannot be a tool"):
        tool(numbers)


def test_a_callable_that_is_not_a_function_is_rejected() -> None:
    class Reporter:
        def __call__(self, city: str) -> str:
            """Call."""
            return city

    with pytest.raises(TypeError, match=r"@tool expects a function or a bound method"):
        tool(Reporter())


def test_a_bound_method_is_a_tool_without_self() -> None:
    class Station:
        def __init__(self, prefix: str) -> None:
            self.prefix = prefix

        def report(self, city: str) -> str:
            """Report."""
            return self.prefix + city

    report = tool(Station("at ").report)
    assert list(_schema(report)["properties"]) == ["city"]
    assert report("Oslo") == "at Oslo"


def test_unresolvable_annotation_is_rejected() -> None:
    def forward(city: OnlyForCheckers) -> str:
        """Forward."""
        return ""

    with pytest.raises(TypeError, match=r"forward: cannot resolve the annotations"):
        tool(forward)


def test_a_name_model_apis_reject_is_a_value_error() -> None:
    def weather(city: str) -> str:
        """Weather."""
        return city

    with pytest.raises(ValueError, match=r"the tool name 'the weather' must be"):
        tool(weather, name="the weather")


# --- Direct calls and the AgentTool protocol ---------------------------------------------


def test_the_tool_is_still_the_function() -> None:
    assert get_weather("Paris") == "Paris: 20c"
    assert get_weather("Oslo", unit="f") == "Oslo: 20f"
    assert get_weather.__name__ == "get_weather"
    assert get_weather.__doc__ is not None
    assert list(inspect.signature(get_weather).parameters) == ["city", "unit"]
    assert isinstance(get_weather, FunctionTool)
    assert isinstance(get_weather, AgentTool)


@pytest.mark.anyio
async def test_a_direct_call_of_an_async_tool_returns_the_coroutine() -> None:
    @tool
    async def double(n: int) -> int:
        """Double."""
        return n * 2

    coroutine = double(21)
    assert inspect.iscoroutine(coroutine)
    assert await coroutine == 42


# --- Validation --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_invalid_input_is_an_error_result_naming_the_fields() -> None:
    calls: list[str] = []

    @tool
    def plot(point: Point, unit: Literal["c", "f"] = "c") -> str:
        """Plot."""
        calls.append("called")
        return ""

    event = await _result(plot, {"point": {"x": "one"}, "unit": "k", "colour": "red"})
    assert event.tool_result["status"] == "error"
    assert event.tool_result["toolUseId"] == "tooluse_1"
    assert isinstance(event.exception, ValidationError)
    assert _text(event).splitlines() == [
        "Error: invalid input for tool 'plot':",
        "- point.x: Input should be a valid integer, unable to parse string as an integer "
        "(got 'one')",
        "- point.y: Field required",
        "- unit: Input should be 'c' or 'f' (got 'k')",
        "- colour: Extra inputs are not permitted (got 'red')",
    ]
    assert calls == []


@pytest.mark.anyio
async def test_input_that_is_not_an_object_is_an_error_result() -> None:
    event = await _result(get_weather, None)
    assert event.tool_result["status"] == "error"
    assert "- input: Input should be a valid dictionary" in _text(event)


# --- Running sync, async and async-generator functions -----------------------------------


@pytest.mark.anyio
async def test_sync_function_gets_validated_arguments_and_defaults() -> None:
    @tool
    def plot(point: Point, label: str = "p", *, scale: int = 1) -> str:
        """Plot."""
        assert isinstance(point, Point)
        return f"{label}@{point.x * scale},{point.y * scale}"

    event = await _result(plot, {"point": {"x": 1, "y": "2"}, "scale": 3})
    assert event.tool_result == {
        "toolUseId": "tooluse_1",
        "status": "success",
        "content": [{"text": "p@3,6"}],
    }
    assert event.exception is None


@pytest.mark.anyio
async def test_sync_function_runs_outside_the_event_loop_thread() -> None:
    threads: list[int] = []

    @tool
    def where() -> str:
        """Where."""
        threads.append(threading.get_ident())
        return ""

    await _result(where, {})
    assert threads != [threading.get_ident()]


@pytest.mark.anyio
async def test_async_function_gets_the_context_by_annotation() -> None:
    @tool
    async def whoami(greeting: str, tc: ToolContext) -> str:
        """Who am I."""
        await anyio.lowlevel.checkpoint()
        return f"{greeting}, {tc.agent.name}; call {tc.tool_use['toolUseId']}"

    event = await _result(whoami, {"greeting": "hi"})
    assert _text(event) == "hi, tester; call tooluse_1"


@pytest.mark.anyio
async def test_parameters_named_like_model_attributes_are_passed_through() -> None:
    @tool
    async def store(json: str, _tag: str = "t") -> str:
        """Store."""
        return f"{json}/{_tag}"

    assert _text(await _result(store, {"json": "{}", "_tag": "x"})) == "{}/x"


@pytest.mark.anyio
async def test_async_generator_streams_each_value_and_the_last_is_the_result() -> None:
    @tool
    async def count(to: int) -> AsyncIterator[str]:
        """Count."""
        for n in range(1, to + 1):
            yield f"{n}/{to}"

    tool_use = _tool_use("count", {"to": 3})
    events = [event async for event in count.stream(tool_use, _context(tool_use))]
    assert events == [
        ToolStreamEvent(tool_use=tool_use, data="1/3"),
        ToolStreamEvent(tool_use=tool_use, data="2/3"),
        ToolStreamEvent(tool_use=tool_use, data="3/3"),
        ToolResultEvent(
            tool_result={
                "toolUseId": "tooluse_1",
                "status": "success",
                "content": [{"text": "3/3"}],
            }
        ),
    ]


@pytest.mark.anyio
async def test_async_generator_that_yields_nothing_has_an_empty_result() -> None:
    @tool
    async def quiet() -> AsyncIterator[str]:
        """Quiet."""
        return
        yield

    event = await _result(quiet, {})
    assert event.tool_result["content"] == [{"text": ""}]


@pytest.mark.anyio
async def test_async_generator_is_closed_when_the_consumer_stops_early() -> None:
    closed = anyio.Event()

    @tool
    async def endless() -> AsyncIterator[int]:
        """Endless."""
        try:
            n = 0
            while True:
                n += 1
                yield n
        finally:
            closed.set()

    tool_use = _tool_use("endless", {})
    stream = endless.stream(tool_use, _context(tool_use))
    first = await anext(stream)
    assert first == ToolStreamEvent(tool_use=tool_use, data=1)
    await stream.aclose()
    assert closed.is_set()


# --- Converting return values ------------------------------------------------------------


def _returning(value: object) -> FunctionTool[[], object]:
    @tool
    def give() -> object:
        """Give."""
        return value

    return give


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "content"),
    [
        ("plain", [{"text": "plain"}]),
        ("", [{"text": ""}]),
        (None, [{"text": ""}]),
        ({"temp": 20}, [{"json": {"temp": 20}}]),
        ([1, "two"], [{"json": [1, "two"]}]),
        (3.5, [{"json": 3.5}]),
        (Point(x=1, y=2), [{"json": {"x": 1, "y": 2}}]),
        # Status and content, but not a result: the status is not one a result has.
        (
            {"status": 200, "content": [{"text": "page"}]},
            [{"json": {"status": 200, "content": [{"text": "page"}]}}],
        ),
        (
            {"status": "success", "content": [], "headers": {}},
            [{"json": {"status": "success", "content": [], "headers": {}}}],
        ),
    ],
)
async def test_return_values_become_result_content(value: object, content: object) -> None:
    event = await _result(_returning(value), {})
    assert event.tool_result == {"toolUseId": "tooluse_1", "status": "success", "content": content}


@pytest.mark.anyio
async def test_a_returned_tool_result_is_used_with_the_calls_id() -> None:
    own = {"toolUseId": "made-up", "status": "error", "content": [{"text": "no such city"}]}
    event = await _result(_returning(own), {})
    assert event.tool_result == {
        "toolUseId": "tooluse_1",
        "status": "error",
        "content": [{"text": "no such city"}],
    }
    assert event.exception is None


@pytest.mark.anyio
async def test_a_value_that_is_not_json_data_is_an_error_result() -> None:
    event = await _result(_returning(threading.Lock()), {})
    assert event.tool_result["status"] == "error"
    assert _text(event).startswith("Error: the tool returned a ")
    assert event.exception is not None


# --- Failures, interrupts and cancellation -----------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_an_exception_becomes_an_error_result(kind: str) -> None:
    error = RuntimeError("station offline")

    def fail_sync(city: str) -> str:
        """Fail."""
        raise error

    async def fail_async(city: str) -> str:
        """Fail."""
        raise error

    failing = tool(fail_sync) if kind == "sync" else tool(fail_async)
    event = await _result(failing, {"city": "Paris"})
    assert event.tool_result == {
        "toolUseId": "tooluse_1",
        "status": "error",
        "content": [{"text": "Error: station offline"}],
    }
    assert event.exception is error


@pytest.mark.anyio
async def test_an_exception_without_a_message_is_named_by_its_type() -> None:
    @tool
    def fail() -> str:
        """Fail."""
        raise LookupError

    assert _text(await _result(fail, {})) == "Error: LookupError"


@pytest.mark.anyio
async def test_an_async_generator_that_fails_after_streaming_ends_with_an_error() -> None:
    @tool
    async def partial() -> AsyncIterator[int]:
        """Partial."""
        yield 1
        raise ValueError("lost the connection")

    events = await _run(partial, {})
    assert [type(event) for event in events] == [ToolStreamEvent, ToolResultEvent]
    last = events[-1]
    assert isinstance(last, ToolResultEvent)
    assert _text(last) == "Error: lost the connection"
    assert isinstance(last.exception, ValueError)


def _refund_sync(amount: int, context: ToolContext) -> str:
    """Refund."""
    approved = context.interrupt("approve", reason={"amount": amount})
    return f"approved={approved}"


async def _refund_async(amount: int, context: ToolContext) -> str:
    """Refund."""
    approved = context.interrupt("approve", reason={"amount": amount})
    return f"approved={approved}"


async def _refund_generator(amount: int, context: ToolContext) -> AsyncIterator[str]:
    """Refund."""
    yield "checking"
    approved = context.interrupt("approve", reason={"amount": amount})
    yield f"approved={approved}"


@pytest.mark.anyio
@pytest.mark.parametrize("func", [_refund_sync, _refund_async, _refund_generator])
async def test_an_interrupt_halts_and_the_answer_is_returned_on_resume(func: Any) -> None:
    refund = tool(func, name="refund")
    interrupt_id = tool_interrupt_id("tester", "tooluse_7", "approve")

    events = await _run(refund, {"amount": 500}, tool_use_id="tooluse_7")
    assert not any(isinstance(event, ToolResultEvent) for event in events)
    last = events[-1]
    assert isinstance(last, ToolInterruptEvent)
    assert last.tool_use["toolUseId"] == "tooluse_7"
    assert last.interrupts == [Interrupt(id=interrupt_id, name="approve", reason={"amount": 500})]

    answered = {interrupt_id: Interrupt(id=interrupt_id, name="approve", response="yes")}
    events = await _run(refund, {"amount": 500}, tool_use_id="tooluse_7", interrupts=answered)
    result = events[-1]
    assert isinstance(result, ToolResultEvent)
    assert _text(result) == "approved=yes"


class _Halt(BaseException):
    pass


@pytest.mark.anyio
async def test_a_base_exception_propagates() -> None:
    @tool
    async def halt() -> str:
        """Halt."""
        raise _Halt

    with pytest.raises(_Halt):
        await _run(halt, {})


@pytest.mark.anyio
async def test_cancellation_propagates_without_a_result() -> None:
    started = anyio.Event()
    cancelled: list[bool] = []
    events: list[ExecuteToolEvent] = []

    @tool
    async def wait() -> str:
        """Wait."""
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise
        return "never"

    async def consume() -> None:
        events.extend(await _run(wait, {}))

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        await started.wait()
        group.cancel_scope.cancel()

    assert cancelled == [True]
    assert events == []


@pytest.mark.anyio
async def test_concurrent_sync_tools_overlap() -> None:
    # Each call waits until the other has started: they finish only if both run at once.
    barrier = threading.Barrier(2, timeout=5)

    @tool
    def meet(who: str) -> str:
        """Meet."""
        barrier.wait()
        return who

    results: dict[str, ToolResultEvent] = {}

    async def call(who: str) -> None:
        results[who] = await _result(meet, {"who": who})

    async with anyio.create_task_group() as group:
        group.start_soon(call, "a")
        group.start_soon(call, "b")

    assert {who: event.tool_result["status"] for who, event in results.items()} == {
        "a": "success",
        "b": "success",
    }
    assert _text(results["a"]) == "a"
