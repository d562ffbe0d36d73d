"""Structured output: `agent(p, output_type=M)` is `AgentResult[M]`; `.output` is an `M`."""

from __future__ import annotations

from typing import Any, Literal, assert_type

from pydantic import BaseModel
from typing_extensions import TypedDict

from stageware import (
    Agent,
    AgentResult,
    AgentResultEvent,
    AgentStreamEvent,
    InvokeModelContext,
    InvokeModelStage,
    ScriptedModel,
    StructuredOutputError,
)
from stageware.openai import OpenAIModel


class Weather(BaseModel):
    city: str
    temperature_c: float


class Point(TypedDict):
    x: int
    y: int


agent = Agent(ScriptedModel([]))


# Positive cases.

weather = agent("Weather?", output_type=Weather)
assert_type(weather, AgentResult[Weather])
assert_type(weather.output, Weather)
assert_type(weather.output.temperature_c, float)
assert_type(weather.structured_output, Weather | None)

# Strands' spelling of the same argument.
ported = agent("Weather?", structured_output_model=Weather, output_retries=1)
assert_type(ported.output, Weather)

point = agent("Where?", output_type=Point)
assert_type(point.output, Point)
assert_type(point.output["x"], int)

plain = agent("Hi")
assert_type(plain, AgentResult[None])
assert_type(plain.output, None)


def unparametrised(result: AgentResult) -> None:
    # A bare AgentResult is a plain run's (the type parameter defaults to None).
    assert_type(result, AgentResult[None])
    assert_type(result.output, None)


async def asynchronous() -> None:
    result = await agent.invoke_async("Weather?", output_type=Weather)
    assert_type(result.output, Weather)
    assert_type((await agent.invoke_async("Hi")).output, None)
    async for event in agent.stream_async("Weather?", output_type=Weather):
        assert_type(event, AgentStreamEvent | AgentResultEvent[Weather])
        if isinstance(event, AgentResultEvent):
            assert_type(event.result.output, Weather)


def middleware_sees_it(context: InvokeModelContext) -> InvokeModelContext:
    assert_type(context.structured_output_model, type[Any] | None)
    return context


agent.add_middleware(InvokeModelStage.Input, middleware_sees_it)


def errors(error: StructuredOutputError) -> None:
    assert_type(error.last_reply["role"], Literal["user", "assistant"])


native = OpenAIModel("m", base_url="http://127.0.0.1:1", api_key="k", structured_output="tool")
assert_type(native.supports_structured_output, bool)


# Negative cases: each line must be a type error.

weather.output.humidity  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue,reportUnknownMemberType]
point.output["z"]  # type: ignore[typeddict-item]  # pyright: ignore[reportGeneralTypeIssues]
plain.output.city  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue,reportUnknownMemberType]
agent("x", output_type="Weather")  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue,reportArgumentType]
agent("x", output_retries="2")  # type: ignore[call-overload]  # pyright: ignore[reportArgumentType]


def not_replaceable(context: InvokeModelContext) -> None:
    context.replace(structured_output_model=Weather)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


OpenAIModel("m", structured_output="json")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
