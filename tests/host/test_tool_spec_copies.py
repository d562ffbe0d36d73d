"""InvokeModel's tool specs: the agent's own where no handler can see them, copies where one can.

The spec's copy rules say a handler cannot change the agent's tools by mutating the
context's ``tool_specs``; what it does to them still reaches the model. Where no Input or
Wrap handler is registered there is nothing to protect, and copying every tool's spec on
every model call made an agent with many tools pay for each one on every call. The model
here records the very list and spec objects it was handed, so the tests show both where
nothing is copied and that a handler's changes never reach the agent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from stageware import (
    Agent,
    ExecuteToolEvent,
    FunctionTool,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelResult,
    InvokeModelStage,
    Messages,
    StreamEvent,
    ToolContext,
    ToolResultEvent,
    ToolSpec,
    ToolUse,
    tool,
)
from stageware._host.tools import fixed_tool_spec

pytestmark = pytest.mark.anyio


@tool
def lookup(query: str, limit: int = 10) -> str:
    """Look something up.

    Args:
        query: What to look up.
        limit: How many results at most.
    """
    return query


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


class RecordingModel:
    """Answers "ok" and keeps the tool-spec lists it was given, not copies of them."""

    def __init__(self) -> None:
        self.received: list[list[ToolSpec]] = []

    def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        assert tool_specs is not None
        self.received.append(tool_specs)
        return self._events()

    async def _events(self) -> AsyncIterator[StreamEvent]:
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockDelta": {"delta": {"text": "ok"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


class ChangingTool:
    """A hand-written tool whose description says how often it was described."""

    def __init__(self) -> None:
        self.described = 0

    @property
    def tool_name(self) -> str:
        return "changing"

    @property
    def tool_spec(self) -> ToolSpec:
        self.described += 1
        return {
            "name": "changing",
            "description": f"Described {self.described} time(s).",
            "inputSchema": {"json": {"type": "object", "properties": {}}},
        }

    async def stream(
        self, tool_use: ToolUse, context: ToolContext
    ) -> AsyncIterator[ExecuteToolEvent]:
        yield ToolResultEvent(
            tool_result={"toolUseId": tool_use["toolUseId"], "status": "success", "content": []}
        )


def own_spec(function_tool: FunctionTool[..., Any]) -> ToolSpec:
    """The spec object *function_tool* holds, which a copy is not."""
    spec = fixed_tool_spec(function_tool)
    assert spec is not None
    return spec


def pristine() -> list[ToolSpec]:
    """What the model should be offered when nothing changed the specs."""
    return [lookup.tool_spec, ping.tool_spec]


def vandalise(specs: list[ToolSpec]) -> None:
    """Change *specs* every way a handler could: nested values, keys, the list itself."""
    specs[0]["description"] = "vandalised"
    specs[0]["inputSchema"]["json"]["properties"].clear()
    cast("dict[str, Any]", specs[1]).pop("description")
    specs.append({"name": "extra", "description": "Added.", "inputSchema": {"json": {}}})


async def test_without_a_handler_the_model_gets_the_tools_own_specs() -> None:
    model = RecordingModel()
    agent = Agent(model, tools=[lookup, ping])

    await agent.invoke_async("one")
    await agent.invoke_async("two")

    first, second = model.received
    # Not copies: the very objects the tools hold, in a list of each call's own.
    assert first[0] is own_spec(lookup)
    assert first[1] is own_spec(ping)
    assert second[0] is own_spec(lookup)
    assert second[1] is own_spec(ping)
    assert second is not first
    assert first == pristine()


class ListChangingModel(RecordingModel):
    """Adds to and removes from the list it is given (the specs themselves are left alone,
    as the Model protocol asks), as a model that filters or extends tools might."""

    def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        assert tool_specs is not None
        self.received.append(list(tool_specs))
        tool_specs.pop(0)
        tool_specs.append({"name": "extra", "description": "Added.", "inputSchema": {"json": {}}})
        return self._events()


async def test_a_model_that_changes_its_tool_list_changes_nothing_of_the_agent() -> None:
    model = ListChangingModel()
    agent = Agent(model, tools=[lookup, ping])
    other_model = RecordingModel()
    other = Agent(other_model, tools=[lookup, ping])

    await agent.invoke_async("one")
    await agent.invoke_async("two")
    await other.invoke_async("three")

    assert model.received == [pristine(), pristine()]
    assert other_model.received == [pristine()]


async def test_with_only_an_output_handler_the_model_gets_the_tools_own_specs() -> None:
    model = RecordingModel()
    agent = Agent(model, tools=[lookup, ping])

    def output(result: InvokeModelResult) -> InvokeModelResult:
        return result

    agent.add_middleware(InvokeModelStage.Output, output)
    await agent.invoke_async("one")

    [sent] = model.received
    assert sent[0] is own_spec(lookup)
    assert sent[1] is own_spec(ping)


async def test_an_input_handler_changing_the_specs_reaches_the_model_but_not_the_agent() -> None:
    model = RecordingModel()
    agent = Agent(model, tools=[lookup, ping])
    seen: list[list[ToolSpec]] = []

    def change(context: InvokeModelContext) -> InvokeModelContext:
        seen.append(context.tool_specs)
        assert context.tool_specs == pristine()  # every call starts from the agent's specs
        vandalise(context.tool_specs)
        return context

    agent.add_middleware(InvokeModelStage.Input, change)
    await agent.invoke_async("one")
    await agent.invoke_async("two")

    first, second = model.received
    assert first is seen[0]
    assert first[0]["description"] == "vandalised"
    assert len(first) == 3
    assert second[0]["description"] == "vandalised"  # the second call's own change
    # The second call's handler saw the agent's specs (asserted in change), not the first
    # call's changes; and the tools are as they were.
    assert seen[1] is not seen[0]
    assert seen[1][0] is not seen[0][0]
    assert own_spec(lookup) == lookup.tool_spec == pristine()[0]
    assert "query" in own_spec(lookup)["inputSchema"]["json"]["properties"]
    assert own_spec(ping)["description"] == "Answer pong."


async def test_a_wrap_handler_changing_the_specs_leaves_the_agent_and_other_agents_alone() -> None:
    model = RecordingModel()
    agent = Agent(model, tools=[lookup, ping])
    other_model = RecordingModel()
    other = Agent(other_model, tools=[lookup, ping])

    async def change(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        vandalise(context.tool_specs)
        async for event in next_fn(context):
            yield event

    agent.add_middleware(InvokeModelStage.Wrap, change)
    await agent.invoke_async("one")
    await other.invoke_async("one")

    [sent] = model.received
    assert sent[0]["description"] == "vandalised"
    [sent_to_other] = other_model.received
    assert sent_to_other == pristine()
    assert sent_to_other[0] is own_spec(lookup)


async def test_copies_are_reused_while_they_equal_the_specs_and_made_again_once_changed() -> None:
    model = RecordingModel()
    agent = Agent(model, tools=[lookup, ping])
    calls = 0

    def change_second_call(context: InvokeModelContext) -> InvokeModelContext:
        nonlocal calls
        calls += 1
        if calls == 2:
            context.tool_specs[1]["description"] = "changed"
        return context

    agent.add_middleware(InvokeModelStage.Input, change_second_call)
    for prompt in ("one", "two", "three"):
        await agent.invoke_async(prompt)

    first, second, third = model.received
    # Copies, never the tools' own specs.
    assert first[0] is not own_spec(lookup)
    assert first[1] is not own_spec(ping)
    # A list of its own per call; an unchanged copy is handed out again.
    assert second is not first
    assert second[0] is first[0]
    # The copy the second call's handler changed is not: the third call gets a new one.
    assert second[1]["description"] == "changed"
    assert third[1] is not second[1]
    assert third == pristine()


async def test_a_copy_a_caller_takes_from_the_tool_does_not_change_what_the_model_gets() -> None:
    model = RecordingModel()
    agent = Agent(model, tools=[lookup])

    lookup.tool_spec["description"] = "changed outside"
    await agent.invoke_async("one")

    [sent] = model.received
    assert sent[0]["description"] == "Look something up."


async def test_a_hand_written_tools_spec_is_read_on_every_model_call() -> None:
    model = RecordingModel()
    changing = ChangingTool()
    agent = Agent(model, tools=[ping, changing])
    described = changing.described  # the agent's checks read it once when it is built

    await agent.invoke_async("one")
    await agent.invoke_async("two")

    first, second = model.received
    assert first[1]["description"] == f"Described {described + 1} time(s)."
    assert second[1]["description"] == f"Described {described + 2} time(s)."
    assert first[0] is second[0] is own_spec(ping)
