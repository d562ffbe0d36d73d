"""Port of Strands 1.62 ``tests/strands/middleware/test_execute_tool_middleware.py``.

Strands Agents is Apache-2.0; this is a rewrite of its test scenarios in stageware's idiom,
not a copy. Strands runs ``Agent(model=MockedModelProvider([toolUse message, final
message]), tools=[calculator])`` synchronously; the port runs ``stageware.Agent`` on a
``ScriptedModel`` (``tool_turn`` for the toolUse message) with
``await agent.invoke_async(...)``, on asyncio and trio. Where Strands replaces a decorated
tool's ``stream`` by hand, the port uses a ``PlainTool`` of the same name whose stream is
the replacement; a tool stream cannot yield bare values in stageware, so the raw stream of
``test_input_rewriting_tool_use_id_stays_consistent_across_events`` yields a
``ToolStreamEvent`` and a ``ToolResultEvent`` built from the ``tool_use`` it receives.
``MockHookProvider`` is a hook on ``LifecycleEvent``; Strands' ``Plugin`` is a plain
object whose ``init_agent`` the test calls.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from stageware import (
    AfterToolCallEvent,
    Agent,
    BeforeToolCallEvent,
    CancelSignal,
    CancelToken,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolResult,
    ExecuteToolStage,
    FunctionTool,
    ScriptedModel,
    ToolContext,
    ToolInterruptEvent,
    ToolResult,
    ToolResultEvent,
    ToolStreamEvent,
    ToolUse,
    tool,
)
from tests.host.agent_helpers import PlainTool

from .support import (
    first_text,
    first_tool_result,
    record_lifecycle,
    tool_result_messages,
    tool_turn,
)

pytestmark = pytest.mark.anyio

Wrap = Callable[[ExecuteToolContext, ExecuteToolNext], AsyncIterator[ExecuteToolEvent]]


def make_calculator() -> FunctionTool[[str], str]:
    @tool(name="calculator")
    def calculator(expression: str) -> str:
        """Evaluate a sum such as 2+2.

        Args:
            expression: Integers joined by '+'.
        """
        return str(sum(int(term) for term in expression.split("+")))

    return calculator


def make_echo(received: list[str] | None = None) -> FunctionTool[[str], str]:
    @tool(name="echo_tool")
    def echo_tool(value: str) -> str:
        """Echo the value.

        Args:
            value: What to echo.
        """
        if received is not None:
            received.append(value)
        return value

    return echo_tool


@pytest.fixture
def calculator_tool() -> FunctionTool[[str], str]:
    return make_calculator()


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(
        [tool_turn("calculator", {"expression": "2+2"}, "tool_1"), "The answer is 4."]
    )


@pytest.fixture
def agent(model: ScriptedModel, calculator_tool: FunctionTool[[str], str]) -> Agent:
    return Agent(model, tools=[calculator_tool])


def one_call(name: str, tool_input: dict[str, Any], tool_use_id: str = "t1") -> ScriptedModel:
    """A model that calls *name* once, then answers "done"."""
    return ScriptedModel([tool_turn(name, tool_input, tool_use_id), "done"])


async def passthrough(
    context: ExecuteToolContext, next_fn: ExecuteToolNext
) -> AsyncIterator[ExecuteToolEvent]:
    async for event in next_fn(context):
        yield event


def capture_into(seen: list[ExecuteToolContext]) -> Wrap:
    async def capture(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        seen.append(context)
        async for event in next_fn(context):
            yield event

    return capture


def observe_results(observed: list[ToolResultEvent]) -> Wrap:
    async def observer(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(context):
            if isinstance(event, ToolResultEvent):
                observed.append(event)
            yield event

    return observer


def short_circuit_with(text: str) -> Wrap:
    async def cached(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        yield ToolResultEvent(
            {
                "toolUseId": context.tool_use["toolUseId"],
                "status": "success",
                "content": [{"text": text}],
            }
        )

    return cached


# --- wrap handler ---


async def test_wrap_passthrough_does_not_alter_behavior(agent: Agent) -> None:
    agent.add_middleware(ExecuteToolStage, passthrough)
    result = await agent.invoke_async("what is 2+2?")
    assert first_text(result.message) == "The answer is 4."


async def test_wrap_handler_receives_execute_tool_context(agent: Agent) -> None:
    received_contexts: list[ExecuteToolContext] = []

    agent.add_middleware(ExecuteToolStage, capture_into(received_contexts))
    await agent.invoke_async("what is 2+2?")

    assert len(received_contexts) == 1
    context = received_contexts[0]
    assert context.agent is agent
    assert context.tool is not None
    assert context.tool_use["name"] == "calculator"
    assert context.tool_use["input"] == {"expression": "2+2"}
    assert isinstance(context.invocation_state, dict)


async def test_wrap_handler_runs_for_unknown_tool_with_tool_none(
    calculator_tool: FunctionTool[[str], str],
) -> None:
    """The chain runs for an unknown tool, with context.tool None, and sees its error result."""
    received_contexts: list[ExecuteToolContext] = []
    observed_results: list[ToolResultEvent] = []
    agent = Agent(one_call("ghost_tool", {}), tools=[calculator_tool])

    async def observer(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        received_contexts.append(context)
        async for event in next_fn(context):
            if isinstance(event, ToolResultEvent):
                observed_results.append(event)
            yield event

    agent.add_middleware(ExecuteToolStage, observer)
    await agent.invoke_async("call the ghost")

    assert len(received_contexts) == 1
    assert received_contexts[0].tool is None
    assert received_contexts[0].tool_use["name"] == "ghost_tool"
    assert len(observed_results) == 1
    assert observed_results[0].tool_result["status"] == "error"
    assert "ghost_tool" in observed_results[0].tool_result["content"][0]["text"]


async def test_wrap_can_mock_unknown_tool(calculator_tool: FunctionTool[[str], str]) -> None:
    """Middleware can short-circuit an unknown tool with a mock result."""
    agent = Agent(one_call("ghost_tool", {}), tools=[calculator_tool])

    async def mock_missing(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        if context.tool is None:
            yield ToolResultEvent(
                {
                    "toolUseId": context.tool_use["toolUseId"],
                    "status": "success",
                    "content": [{"text": "mocked"}],
                }
            )
            return
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, mock_missing)
    await agent.invoke_async("call the ghost")

    assert len(tool_result_messages(agent)) == 1
    assert first_tool_result(agent) == {
        "toolUseId": "t1",
        "status": "success",
        "content": [{"text": "mocked"}],
    }


async def test_wrap_short_circuit_with_cached_result(agent: Agent) -> None:
    """Middleware can short-circuit with a cached ToolResultEvent without calling next."""
    agent.add_middleware(ExecuteToolStage, short_circuit_with("mocked: 42"))
    result = await agent.invoke_async("what is 2+2?")
    # The model still gives its scripted final answer after seeing the tool result.
    assert first_text(result.message) == "The answer is 4."


async def test_wrap_multiple_middleware_compose_correctly(agent: Agent) -> None:
    order: list[str] = []

    def layer(name: str) -> Wrap:
        async def handler(
            context: ExecuteToolContext, next_fn: ExecuteToolNext
        ) -> AsyncIterator[ExecuteToolEvent]:
            order.append(f"{name}_before")
            async for event in next_fn(context):
                yield event
            order.append(f"{name}_after")

        return handler

    agent.add_middleware(ExecuteToolStage, layer("outer"))
    agent.add_middleware(ExecuteToolStage, layer("inner"))
    await agent.invoke_async("what is 2+2?")

    assert order == ["outer_before", "inner_before", "inner_after", "outer_after"]


async def test_wrap_tool_error_surfaces_as_error_result() -> None:
    """A tool that raises produces an error result that flows through middleware."""

    @tool
    def broken_tool() -> str:
        """Always fails."""
        raise RuntimeError("tool exploded")

    agent = Agent(one_call("broken_tool", {}), tools=[broken_tool])
    observed_results: list[ToolResultEvent] = []

    agent.add_middleware(ExecuteToolStage, observe_results(observed_results))
    await agent.invoke_async("do something")

    assert len(observed_results) == 1
    assert observed_results[0].tool_result["status"] == "error"


async def test_raw_tool_exception_reaches_middleware_as_result_not_exception() -> None:
    """A tool whose stream() raises is seen by middleware as an error result, not an exception."""
    caught_in_middleware: list[Exception] = []
    observed_results: list[ToolResultEvent] = []

    async def raising_stream(
        tool_use: ToolUse, context: ToolContext
    ) -> AsyncIterator[ExecuteToolEvent]:
        raise RuntimeError("kaboom")
        yield  # pragma: no cover - makes this an async generator

    calculator = PlainTool("calculator", raising_stream)
    agent = Agent(one_call("calculator", {"expression": "2+2"}), tools=[calculator])

    async def error_observer(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        try:
            async for event in next_fn(context):
                if isinstance(event, ToolResultEvent):
                    observed_results.append(event)
                yield event
        except Exception as error:
            caught_in_middleware.append(error)
            raise

    agent.add_middleware(ExecuteToolStage, error_observer)
    await agent.invoke_async("go")

    assert not caught_in_middleware
    assert len(observed_results) == 1
    assert observed_results[0].tool_result["status"] == "error"
    assert observed_results[0].exception is not None


# --- input phase ---


async def test_input_transforms_tool_context(agent: Agent) -> None:
    seen: list[ExecuteToolContext] = []

    def modify_input(context: ExecuteToolContext) -> ExecuteToolContext:
        return context.replace(tool_use={**context.tool_use, "input": {"expression": "3+3"}})

    agent.add_middleware(ExecuteToolStage.Input, modify_input)
    agent.add_middleware(ExecuteToolStage, capture_into(seen))
    await agent.invoke_async("what is 2+2?")

    assert seen[0].tool_use["input"] == {"expression": "3+3"}


async def test_input_rewriting_tool_use_id_stays_consistent_across_events() -> None:
    """An Input handler's rewritten toolUseId is what every emitted event carries."""
    stream_ids: list[str] = []
    result_ids: list[str] = []

    async def raw_stream(
        tool_use: ToolUse, context: ToolContext
    ) -> AsyncIterator[ExecuteToolEvent]:
        yield ToolStreamEvent(tool_use, "progress")
        yield ToolResultEvent(
            {"toolUseId": tool_use["toolUseId"], "status": "success", "content": [{"text": "42"}]}
        )

    calculator = PlainTool("calculator", raw_stream)
    agent = Agent(one_call("calculator", {"expression": "2+2"}, "original_id"), tools=[calculator])

    def rewrite_id(context: ExecuteToolContext) -> ExecuteToolContext:
        return context.replace(tool_use={**context.tool_use, "toolUseId": "rewritten_id"})

    async def capture_ids(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(context):
            if isinstance(event, ToolStreamEvent):
                stream_ids.append(event.tool_use["toolUseId"])
            elif isinstance(event, ToolResultEvent):
                result_ids.append(event.tool_result["toolUseId"])
            yield event

    agent.add_middleware(ExecuteToolStage.Input, rewrite_id)
    agent.add_middleware(ExecuteToolStage, capture_ids)
    await agent.invoke_async("go")

    assert stream_ids
    assert all(stream_id == "rewritten_id" for stream_id in stream_ids)
    assert result_ids == ["rewritten_id"]


async def test_context_transform_modified_input_reaches_tool() -> None:
    """A tool_use input transformed by middleware is what the tool receives."""
    received_args: list[str] = []
    agent = Agent(one_call("echo_tool", {"value": "original"}), tools=[make_echo(received_args)])

    def modify_input(context: ExecuteToolContext) -> ExecuteToolContext:
        return context.replace(tool_use={**context.tool_use, "input": {"value": "modified"}})

    agent.add_middleware(ExecuteToolStage.Input, modify_input)
    await agent.invoke_async("test")

    assert received_args == ["modified"]


# --- output phase ---


def intercept(result: ExecuteToolResult) -> ExecuteToolResult:
    new_tool_result: ToolResult = {
        **result.result.tool_result,
        "content": [{"text": "intercepted"}],
    }
    return ExecuteToolResult(result=ToolResultEvent(new_tool_result))


async def test_output_transforms_tool_result(agent: Agent) -> None:
    """An Output handler receives an ExecuteToolResult wrapping the ToolResultEvent."""
    transformed: list[ExecuteToolResult] = []

    def output_handler(result: ExecuteToolResult) -> ExecuteToolResult:
        transformed.append(result)
        return intercept(result)

    agent.add_middleware(ExecuteToolStage.Output, output_handler)
    await agent.invoke_async("what is 2+2?")

    assert len(transformed) == 1
    assert isinstance(transformed[0], ExecuteToolResult)
    assert transformed[0].result.tool_result["content"] == [{"text": "4"}]


async def test_output_transformed_result_reaches_conversation(agent: Agent) -> None:
    """The transformed Output result is what lands in the conversation history."""
    agent.add_middleware(ExecuteToolStage.Output, intercept)
    await agent.invoke_async("what is 2+2?")

    assert len(tool_result_messages(agent)) == 1
    assert first_tool_result(agent) == {
        "toolUseId": "tool_1",
        "status": "success",
        "content": [{"text": "intercepted"}],
    }


# --- hooks fire outside middleware ---


async def test_hooks_fire_outside_middleware(
    model: ScriptedModel, calculator_tool: FunctionTool[[str], str]
) -> None:
    agent = Agent(model, tools=[calculator_tool])
    events = record_lifecycle(agent)
    saw_before_hook: list[bool] = []

    async def check_middleware(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        saw_before_hook.append(any(isinstance(e, BeforeToolCallEvent) for e in events))
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, check_middleware)
    await agent.invoke_async("what is 2+2?")
    assert saw_before_hook == [True]


async def test_after_tool_call_event_fires_after_middleware(
    model: ScriptedModel, calculator_tool: FunctionTool[[str], str]
) -> None:
    agent = Agent(model, tools=[calculator_tool])
    events = record_lifecycle(agent)
    middleware_completed: list[bool] = []

    async def tracker(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(context):
            yield event
        middleware_completed.append(True)

    agent.add_middleware(ExecuteToolStage, tracker)
    await agent.invoke_async("what is 2+2?")

    assert middleware_completed
    assert any(isinstance(e, AfterToolCallEvent) for e in events)


async def test_hooks_fire_when_middleware_short_circuits(
    model: ScriptedModel, calculator_tool: FunctionTool[[str], str]
) -> None:
    """AfterToolCallEvent still fires when middleware short-circuits."""
    agent = Agent(model, tools=[calculator_tool])
    events = record_lifecycle(agent)

    agent.add_middleware(ExecuteToolStage, short_circuit_with("4"))
    await agent.invoke_async("what is 2+2?")

    assert any(isinstance(e, AfterToolCallEvent) for e in events)


async def test_after_tool_call_receives_middleware_result_on_short_circuit(
    model: ScriptedModel, calculator_tool: FunctionTool[[str], str]
) -> None:
    """AfterToolCallEvent.result carries the middleware's result on a short-circuit."""
    agent = Agent(model, tools=[calculator_tool])
    events = record_lifecycle(agent)

    agent.add_middleware(ExecuteToolStage, short_circuit_with("mocked_42"))
    await agent.invoke_async("what is 2+2?")

    after_events = [e for e in events if isinstance(e, AfterToolCallEvent)]
    assert len(after_events) == 1
    assert after_events[0].result["content"] == [{"text": "mocked_42"}]


# --- short-circuit and defensive-copy behaviour ---


async def test_short_circuit_tool_not_called() -> None:
    """When middleware short-circuits, the tool itself is not called."""
    tool_called: list[bool] = []

    @tool(name="calculator")
    def calculator(expression: str) -> str:
        """Evaluate a sum.

        Args:
            expression: Integers joined by '+'.
        """
        tool_called.append(True)
        return "2"

    agent = Agent(one_call("calculator", {"expression": "1+1"}), tools=[calculator])
    agent.add_middleware(ExecuteToolStage, short_circuit_with("2"))
    await agent.invoke_async("calc")
    assert not tool_called


async def test_context_transform_does_not_mutate_original() -> None:
    """Replacing the tool_use leaves the context the middleware received unchanged."""
    agent = Agent(one_call("echo_tool", {"value": "original"}), tools=[make_echo()])
    original_contexts: list[ExecuteToolContext] = []

    async def mutating_middleware(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        original_contexts.append(context)
        modified = context.replace(tool_use={**context.tool_use, "input": {"value": "changed"}})
        async for event in next_fn(modified):
            yield event

    agent.add_middleware(ExecuteToolStage, mutating_middleware)
    await agent.invoke_async("test")

    assert len(original_contexts) == 1
    assert original_contexts[0].tool_use["input"] == {"value": "original"}


async def test_short_circuit_result_appears_in_conversation(
    calculator_tool: FunctionTool[[str], str],
) -> None:
    """A short-circuited result is what lands in agent.messages."""
    agent = Agent(one_call("calculator", {"expression": "1+1"}), tools=[calculator_tool])
    agent.add_middleware(ExecuteToolStage, short_circuit_with("mocked_result"))
    await agent.invoke_async("calc")

    assert len(tool_result_messages(agent)) == 1
    assert first_tool_result(agent) == {
        "toolUseId": "t1",
        "status": "success",
        "content": [{"text": "mocked_result"}],
    }


async def test_no_middleware_agent_with_tools_works_correctly(agent: Agent) -> None:
    result = await agent.invoke_async("what is 2+2?")
    assert first_text(result.message) == "The answer is 4."


async def test_caching_plugin_use_case() -> None:
    """A caching plugin: the first call runs the tool, the second returns the cached result."""
    call_count: list[str] = []

    @tool
    def expensive_tool(query: str) -> str:
        """Simulate an expensive operation.

        Args:
            query: What to look up.
        """
        call_count.append(query)
        return f"result_for_{query}"

    # stageware has no plugin system: the plugin-shaped object registers a bound method.
    class CachingPlugin:
        name = "caching"

        def __init__(self) -> None:
            self._cache: dict[str, ToolResult] = {}

        def init_agent(self, agent: Agent) -> None:
            agent.add_middleware(ExecuteToolStage, self._middleware)

        async def _middleware(
            self, context: ExecuteToolContext, next_fn: ExecuteToolNext
        ) -> AsyncIterator[ExecuteToolEvent]:
            key = f"{context.tool_use['name']}:{context.tool_use['input']}"
            if key in self._cache:
                yield ToolResultEvent(self._cache[key])
                return
            async for event in next_fn(context):
                if isinstance(event, ToolResultEvent):
                    self._cache[key] = event.tool_result
                yield event

    model = ScriptedModel(
        [
            tool_turn("expensive_tool", {"query": "hello"}, "t1"),
            "done",
            tool_turn("expensive_tool", {"query": "hello"}, "t2"),
            "done",
        ]
    )
    agent = Agent(model, tools=[expensive_tool])
    CachingPlugin().init_agent(agent)

    await agent.invoke_async("first call")
    assert len(call_count) == 1

    await agent.invoke_async("second call")
    # The second call hits the cache: the tool is not run again.
    assert len(call_count) == 1


# --- edge cases / regressions ---


async def test_tool_yielding_nothing_degrades_to_error_result() -> None:
    """A tool whose stream yields nothing gives an error result, not a crash."""

    async def empty_stream(
        tool_use: ToolUse, context: ToolContext
    ) -> AsyncIterator[ExecuteToolEvent]:
        return
        yield  # pragma: no cover - makes this an async generator

    agent = Agent(one_call("empty_tool", {}), tools=[PlainTool("empty_tool", empty_stream)])

    result = await agent.invoke_async("go")
    assert result.stop_reason == "end_turn"

    assert len(tool_result_messages(agent)) == 1
    assert first_tool_result(agent)["status"] == "error"


async def test_cancel_tool_bypasses_middleware(calculator_tool: FunctionTool[[str], str]) -> None:
    """A BeforeToolCallEvent that cancels the tool short-circuits before the chain runs."""
    agent = Agent(one_call("calculator", {"expression": "2+2"}), tools=[calculator_tool])

    def cancel(event: BeforeToolCallEvent) -> None:
        event.cancel_tool = "not allowed"

    agent.add_hook(cancel, BeforeToolCallEvent)
    middleware_ran: list[bool] = []

    async def observer(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        middleware_ran.append(True)
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, observer)
    await agent.invoke_async("calc")

    assert not middleware_ran
    assert first_tool_result(agent)["content"] == [{"text": "not allowed"}]


async def test_shallow_copy_protects_tool_use_top_level_keys() -> None:
    """Reassigning a top-level tool_use key in middleware does not corrupt executor state."""
    seen_after_name: list[str] = []
    agent = Agent(one_call("echo_tool", {"value": "hi"}), tools=[make_echo()])
    agent.add_hook(lambda event: seen_after_name.append(event.tool_use["name"]), AfterToolCallEvent)

    async def clobber(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        context.tool_use["name"] = "hacked"
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, clobber)
    await agent.invoke_async("go")

    # The after-hook, fed by the executor's own tool_use, still sees the real name.
    assert seen_after_name == ["echo_tool"]


def make_interrupting_tool() -> FunctionTool[[ToolContext], Any]:
    @tool
    def interrupting_tool(tool_context: ToolContext) -> Any:
        """Interrupt on the first call."""
        return tool_context.interrupt("confirm", reason="ok?")

    return interrupting_tool


async def test_output_handler_not_invoked_on_tool_interrupt() -> None:
    """A tool-originated interrupt bypasses the Output handler: it has no result."""
    output_calls: list[ExecuteToolResult] = []
    seen_interrupt_events: list[ToolInterruptEvent] = []
    agent = Agent(one_call("interrupting_tool", {}), tools=[make_interrupting_tool()])

    def output_handler(result: ExecuteToolResult) -> ExecuteToolResult:
        output_calls.append(result)
        return result

    async def observer(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(context):
            if isinstance(event, ToolInterruptEvent):
                seen_interrupt_events.append(event)
            yield event

    agent.add_middleware(ExecuteToolStage, observer)
    agent.add_middleware(ExecuteToolStage.Output, output_handler)

    result = await agent.invoke_async("go")
    assert result.stop_reason == "interrupt"
    # The interrupt flowed through as an ordinary event and was never taken for the result.
    assert len(seen_interrupt_events) == 1
    assert output_calls == []


async def test_invocation_state_is_shared_by_reference() -> None:
    """A middleware write to context.invocation_state is visible to the tool."""
    seen_in_tool: dict[str, Any] = {}

    @tool
    def probe_tool(tool_context: ToolContext) -> str:
        """Record what the invocation state holds."""
        seen_in_tool["marker"] = tool_context.invocation_state.get("marker")
        return "ok"

    agent = Agent(one_call("probe_tool", {}), tools=[probe_tool])

    async def setter(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        context.invocation_state["marker"] = "set_by_middleware"
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, setter)
    await agent.invoke_async("go")

    assert seen_in_tool["marker"] == "set_by_middleware"


async def test_in_place_input_mutation_leaks_to_tool() -> None:
    """Mutating tool_use["input"] in place does reach the tool: input is shared by reference."""
    received_values: list[str] = []
    agent = Agent(one_call("echo_tool", {"value": "original"}), tools=[make_echo(received_values)])

    async def mutate_input(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        context.tool_use["input"]["value"] = "mutated"
        async for event in next_fn(context):
            yield event

    agent.add_middleware(ExecuteToolStage, mutate_input)
    await agent.invoke_async("go")

    assert received_values == ["mutated"]


async def test_wrap_yielding_no_result_surfaces_actionable_error(
    calculator_tool: FunctionTool[[str], str],
) -> None:
    """A Wrap handler that drains next_fn but yields no result gives an actionable error result."""
    agent = Agent(one_call("calculator", {"expression": "2+2"}), tools=[calculator_tool])

    async def swallow_result(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for _event in next_fn(context):
            pass
        return
        yield  # pragma: no cover - makes this an async generator

    agent.add_middleware(ExecuteToolStage, swallow_result)
    await agent.invoke_async("go")

    assert len(tool_result_messages(agent)) == 1
    result = first_tool_result(agent)
    assert result["status"] == "error"
    text = result["content"][0]["text"]
    assert text.startswith("Error: ")
    assert "without yielding a ToolResultEvent" in text


async def test_middleware_observes_but_cannot_replace_cancel_signal() -> None:
    """ExecuteToolContext.cancel_signal is executor-owned: a replacement never reaches the tool."""
    observed_signals: list[CancelSignal] = []
    tool_signals: list[CancelSignal] = []
    replacement = CancelToken()

    @tool
    def probe(tool_context: ToolContext) -> str:
        """Record the cancel signal handed to the tool."""
        tool_signals.append(tool_context.cancel_signal)
        return "ok"

    agent = Agent(one_call("probe", {}), tools=[probe])

    async def replace_signal(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        observed_signals.append(context.cancel_signal)
        async for event in next_fn(dataclasses.replace(context, cancel_signal=replacement)):
            yield event

    agent.add_middleware(ExecuteToolStage, replace_signal)
    result = await agent.invoke_async("use the probe tool")

    # Deliberate difference (issue 7): Strands silently ignores the replacement and runs the
    # tool with the agent's signal; stageware refuses it, so the call ends in an error result
    # naming the field, the tool never runs with (or without) the replacement, and the run
    # goes on.
    assert len(observed_signals) == 1
    assert observed_signals[0] is not replacement
    assert tool_signals == []
    tool_result = first_tool_result(agent)
    assert tool_result["status"] == "error"
    assert tool_result["content"][0]["text"].startswith("Error: ")
    assert "cancel_signal" in tool_result["content"][0]["text"]
    assert result.stop_reason == "end_turn"
