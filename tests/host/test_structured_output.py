"""Structured output on the scripted model: the tool path, the native path, corrections.

``agent(prompt, output_type=M)`` ends on the model's valid ``M``. These tests read what
the model was asked (``ModelRequest``: tool specs, tool choice, ``output_schema``) and
what entered the history, so each rule of ``_structured_output`` is pinned here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, cast

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from stageware import (
    Agent,
    AgentResult,
    AgentResultEvent,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    Message,
    ModelStopReason,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    StructuredOutputError,
    tool,
)


class Weather(BaseModel):
    """The weather in one city."""

    city: str
    temperature_c: float


class Point(TypedDict):
    x: int
    y: int


@tool
def lookup(city: str) -> str:
    """Look up the weather.

    Args:
        city: The city.
    """
    return f"{city}: 21 C"


def blocks(message: Message) -> list[dict[str, Any]]:
    """*message*'s content blocks as plain dicts, to read any key in an assertion."""
    return cast("list[dict[str, Any]]", message["content"])


def output_call(data: dict[str, Any], name: str = "Weather", id: str | None = None) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name, data, id=id)])


PARIS = {"city": "Paris", "temperature_c": 21}


def test_the_tool_path_offers_the_output_tool_and_returns_the_typed_output() -> None:
    model = ScriptedModel([output_call(PARIS, id="o1")])
    agent = Agent(model, tools=[lookup])

    result = agent("Weather in Paris?", output_type=Weather)

    assert result.output == Weather(city="Paris", temperature_c=21)
    assert result.structured_output is result.output
    assert (result.stop_reason, result.output_type) == ("end_turn", Weather)
    [request] = model.requests
    assert [spec["name"] for spec in request.tool_specs] == ["lookup", "Weather"]
    assert request.tool_specs[1]["inputSchema"]["json"]["required"] == ["city", "temperature_c"]
    assert request.tool_choice is None
    assert request.output_schema is None
    # The output call is answered, so the history stays valid for the next turn.
    assert agent.messages[-1] == {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "o1",
                    "status": "success",
                    "content": [{"text": "Output accepted."}],
                }
            }
        ],
    }


def test_a_prose_answer_is_followed_by_a_forced_output_call() -> None:
    model = ScriptedModel(["It is 21 C in Paris.", output_call(PARIS)])
    agent = Agent(model, tool_choice={"auto": {}})

    result = agent("Weather in Paris?", output_type=Weather, output_retries=0)

    # Asking for the tool the first time is the ordinary way, not a correction: a budget
    # of 0 still allows it.
    assert result.output.city == "Paris"
    first, second = model.requests
    assert first.tool_choice == {"auto": {}}
    assert second.tool_choice == {"tool": {"name": "Weather"}}
    assert second.messages[-1]["role"] == "user"
    assert "calling the Weather tool" in blocks(second.messages[-1])[0]["text"]


def test_tools_run_first_then_the_output_ends_the_run() -> None:
    model = ScriptedModel(
        [
            ScriptedTurn(tool_calls=[ScriptedToolCall("lookup", {"city": "Paris"})]),
            output_call(PARIS),
        ]
    )
    agent = Agent(model, tools=[lookup])

    result = agent("Weather in Paris?", output_type=Weather)

    assert result.output.temperature_c == 21
    assert result.metrics.tool_calls == 1
    results = blocks(model.requests[1].messages[-1])
    assert results[0]["toolResult"]["content"] == [{"text": "Paris: 21 C"}]


def test_a_user_tool_called_beside_the_output_tool_still_runs() -> None:
    model = ScriptedModel(
        [
            ScriptedTurn(
                tool_calls=[
                    ScriptedToolCall("lookup", {"city": "Oslo"}, id="t1"),
                    ScriptedToolCall("Weather", PARIS, id="o1"),
                ]
            )
        ]
    )
    agent = Agent(model, tools=[lookup])

    result = agent("Weather?", output_type=Weather)

    assert result.output.city == "Paris"
    reply = blocks(agent.messages[-1])
    assert [block["toolResult"]["toolUseId"] for block in reply] == ["t1", "o1"]
    assert reply[0]["toolResult"]["content"] == [{"text": "Oslo: 21 C"}]


def test_an_invalid_output_goes_back_as_an_error_result_and_the_retry_succeeds() -> None:
    model = ScriptedModel([output_call({"city": "Paris"}, id="bad"), output_call(PARIS)])
    agent = Agent(model)

    result = agent("Weather in Paris?", output_type=Weather)

    assert result.output == Weather(city="Paris", temperature_c=21)
    correction = blocks(model.requests[1].messages[-1])[0]["toolResult"]
    assert (correction["toolUseId"], correction["status"]) == ("bad", "error")
    assert "temperature_c: Field required" in correction["content"][0]["text"]


def test_the_budget_spent_raises_with_the_last_reply_and_its_errors() -> None:
    replies = [output_call({"city": "Paris", "temperature_c": "warm"}) for _ in range(3)]
    model = ScriptedModel(replies)
    agent = Agent(model)

    with pytest.raises(StructuredOutputError, match="output_retries=2") as raised:
        agent("Weather in Paris?", output_type=Weather)

    assert len(model.requests) == 3  # the first reply and two corrections
    error = raised.value
    assert blocks(error.last_reply)[0]["toolUse"]["toolUseId"] == "tooluse_2_0"
    assert [e["loc"] for e in error.errors] == [("temperature_c",)]
    # Every call in the history is answered: the agent takes its next prompt as usual.
    model_after = ScriptedModel(["fine"])
    agent.model = model_after
    assert agent("Thanks").text == "fine"


def test_a_model_that_never_calls_the_output_tool_runs_out_of_corrections() -> None:
    model = ScriptedModel(["prose", "more prose", "still prose"])
    agent = Agent(model)

    with pytest.raises(StructuredOutputError, match="did not call the Weather output tool"):
        agent("Weather?", output_type=Weather, output_retries=1)
    assert len(model.requests) == 3


def test_the_native_path_passes_the_schema_and_reads_the_reply_text() -> None:
    model = ScriptedModel(
        ['{"city": "Rome"}', '{"city": "Rome", "temperature_c": 30}'], structured_output=True
    )
    agent = Agent(model, tools=[lookup])

    result = agent("Weather in Rome?", structured_output_model=Weather)

    assert result.output == Weather(city="Rome", temperature_c=30)
    first, second = model.requests
    assert first.output_schema is not None
    assert first.output_schema.output_type is Weather
    # Natively, no output tool is added.
    assert [spec["name"] for spec in first.tool_specs] == ["lookup"]
    correction = second.messages[-1]
    assert correction["role"] == "user"
    assert "not a valid Weather JSON object" in blocks(correction)[0]["text"]
    assert "temperature_c: Field required" in blocks(correction)[0]["text"]


def test_a_native_reply_cut_by_max_tokens_raises_at_once() -> None:
    cut = ScriptedTurn(text='{"city": "Rome", "temp', stop_reason="max_tokens")
    model = ScriptedModel([cut, '{"city": "Rome", "temperature_c": 30}'], structured_output=True)
    agent = Agent(model)

    with pytest.raises(StructuredOutputError, match="stopped at max_tokens") as raised:
        agent("Weather in Rome?", output_type=Weather, output_retries=2)

    # Asking again would be cut the same way: no correction was spent on it.
    assert len(model.requests) == 1
    assert "before its Weather JSON object was complete" in str(raised.value)
    assert blocks(raised.value.last_reply) == [{"text": '{"city": "Rome", "temp'}]
    assert [e["type"] for e in raised.value.errors] == ["json_invalid"]


def test_a_native_reply_that_validates_at_max_tokens_is_the_output() -> None:
    whole = ScriptedTurn(text='{"city": "Rome", "temperature_c": 30}', stop_reason="max_tokens")
    model = ScriptedModel([whole], structured_output=True)

    result = Agent(model)("Weather in Rome?", output_type=Weather)

    assert (result.stop_reason, result.output.city) == ("max_tokens", "Rome")


def test_a_tool_call_cut_by_max_tokens_raises_at_once_and_the_history_stays_valid() -> None:
    cut = ScriptedTurn(
        tool_calls=[ScriptedToolCall("Weather", {"city": "Paris"}, id="o1")],
        stop_reason="max_tokens",
    )
    model = ScriptedModel([cut, "later"])
    agent = Agent(model)

    with pytest.raises(StructuredOutputError, match="stopped at max_tokens") as raised:
        agent("Weather in Paris?", output_type=Weather)

    assert len(model.requests) == 1
    assert "in the middle of its tool calls (Weather)" in str(raised.value)
    assert [e["loc"] for e in raised.value.errors] == [("temperature_c",)]
    # No user text follows the unanswered call; the next prompt answers it first.
    assert agent.messages[-1] == raised.value.last_reply
    assert agent("Thanks").text == "later"
    first = blocks(model.requests[-1].messages[-1])[0]
    assert (first["toolResult"]["toolUseId"], first["toolResult"]["status"]) == ("o1", "error")


def test_a_user_tool_call_cut_by_max_tokens_raises_too() -> None:
    cut = ScriptedTurn(
        tool_calls=[ScriptedToolCall("lookup", {"city": "Paris"})], stop_reason="max_tokens"
    )
    model = ScriptedModel([cut, output_call(PARIS)])

    with pytest.raises(StructuredOutputError, match=r"tool calls \(lookup\)") as raised:
        Agent(model, tools=[lookup])("Weather in Paris?", output_type=Weather)

    # The cut call never runs, and there is no output call to report on.
    assert (len(model.requests), raised.value.errors) == (1, [])


def test_prose_cut_by_max_tokens_on_the_tool_path_is_asked_for_the_tool() -> None:
    cut = ScriptedTurn(text="Paris is usually mild in", stop_reason="max_tokens")
    model = ScriptedModel([cut, output_call(PARIS)])

    result = Agent(model)("Weather in Paris?", output_type=Weather, output_retries=0)

    assert result.output.city == "Paris"
    assert model.requests[1].tool_choice == {"tool": {"name": "Weather"}}


def test_a_typed_dict_output() -> None:
    model = ScriptedModel([output_call({"x": 1, "y": 2}, name="Point")])

    result = Agent(model)("Where?", output_type=Point)

    assert result.output == {"x": 1, "y": 2}


def test_a_plain_run_has_no_output() -> None:
    result = Agent(ScriptedModel(["hi"]))("Hello")

    assert (result.output, result.structured_output, result.output_type) == (None, None, None)


def test_bad_arguments_are_refused_before_the_model_is_called() -> None:
    model = ScriptedModel([])
    agent = Agent(model, tools=[lookup])

    with pytest.raises(TypeError, match="not an object type"):
        agent("x", output_type=int)
    both: dict[str, Any] = {"output_type": Weather, "structured_output_model": Point}
    with pytest.raises(ValueError, match="differ"):
        agent("x", **both)
    with pytest.raises(ValueError, match="output_retries must be 0 or more"):
        agent("x", output_type=Weather, output_retries=-1)

    class lookup_(BaseModel):
        a: int

    lookup_.__name__ = "lookup"
    with pytest.raises(ValueError, match="already has a tool of that name"):
        agent("x", output_type=lookup_)
    assert model.requests == []


def test_middleware_sees_the_requested_type_and_the_model_call_routes_by_its_own_model() -> None:
    native = ScriptedModel([PARIS_JSON], structured_output=True)
    seen: list[object] = []

    def route(context: InvokeModelContext) -> InvokeModelContext:
        seen.append(context.structured_output_model)
        # The tool spec is added after middleware, for the model that serves the call.
        seen.append([spec["name"] for spec in context.tool_specs])
        return context.replace(model=native)

    tool_model = ScriptedModel([])
    agent = Agent(tool_model, tools=[lookup])
    agent.add_middleware(InvokeModelStage.Input, route)

    result = agent("Weather?", output_type=Weather)

    assert result.output.city == "Paris"
    assert seen == [Weather, ["lookup"]]
    assert native.requests[0].output_schema is not None
    assert tool_model.requests == []


PARIS_JSON = '{"city": "Paris", "temperature_c": 21}'


def test_a_served_reply_from_middleware_is_read_as_the_agent_model_would_give_it() -> None:
    async def cached(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        yield ModelStopReason(
            stop_reason="end_turn",
            message={"role": "assistant", "content": [{"text": PARIS_JSON}]},
            usage={"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
            metrics={"latencyMs": 0},
        )

    agent = Agent(ScriptedModel([], structured_output=True))
    agent.add_middleware(InvokeModelStage.Wrap, cached)

    assert agent("Weather?", output_type=Weather).output.city == "Paris"


def test_a_run_stopped_before_its_output_says_so_when_output_is_read() -> None:
    model = ScriptedModel([ScriptedTurn(text="no", stop_reason="guardrail_intervened")])

    result = Agent(model)("Weather?", output_type=Weather)

    # A provider's refusal is not corrected: the run ends with it, without an output.
    assert (result.stop_reason, result.structured_output) == ("guardrail_intervened", None)
    with pytest.raises(StructuredOutputError, match="stop_reason 'guardrail_intervened'"):
        _ = result.output


@pytest.mark.anyio
async def test_stream_async_ends_with_the_typed_result() -> None:
    agent = Agent(ScriptedModel([output_call(PARIS)]))
    last: AgentResultEvent[Weather] | None = None

    async with aclosing(agent.stream_async("Weather?", output_type=Weather)) as events:
        async for event in events:
            if isinstance(event, AgentResultEvent):
                last = event

    assert last is not None
    assert last.result.output == Weather(city="Paris", temperature_c=21)


@pytest.mark.anyio
async def test_invoke_async_returns_the_typed_result() -> None:
    agent = Agent(ScriptedModel([output_call(PARIS)]))

    result: AgentResult[Weather] = await agent.invoke_async("Weather?", output_type=Weather)

    assert result.output.temperature_c == 21
