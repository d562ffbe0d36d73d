"""Structured output through ``OpenAIModel``, against the fake chat-completions server.

Native mode sends ``response_format`` with the JSON schema and reads the reply's text;
``structured_output="tool"`` asks through a forced tool call instead. The requests are
real HTTP made by the ``openai`` client, read back as the server received them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Literal

import pytest
from pydantic import BaseModel

from stageware import Agent, OutputSchema, StructuredOutputError
from stageware._host.models._openai_output import response_format
from stageware.openai import OpenAIModel

from .fake_openai_server import FakeOpenAIServer, SSEReply, chunk, tool_delta, usage_chunk


class City(BaseModel):
    """A city and its country."""

    name: str
    country: str


class Trip(BaseModel):
    destination: City
    nights: int = 1


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    fake.start()
    yield fake
    fake.close()


def text_reply(text: str) -> SSEReply:
    return SSEReply([chunk({"content": text}), chunk({}, "stop"), usage_chunk(5, 2)])


def model_on(
    server: FakeOpenAIServer, structured_output: Literal["native", "tool"] = "native"
) -> OpenAIModel:
    return OpenAIModel(
        "test-model",
        base_url=server.base_url,
        api_key="test",
        structured_output=structured_output,
    )


@pytest.mark.anyio
async def test_native_mode_sends_a_strict_json_schema_and_reads_the_text(
    server: FakeOpenAIServer,
) -> None:
    server.reply(text_reply('{"name": "Lyon", "country": "France"}'))
    agent = Agent(model_on(server))

    result = await agent.invoke_async("Where is Lyon?", output_type=City)

    assert result.output == City(name="Lyon", country="France")
    body = server.requests[0].body
    assert "tools" not in body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "City",
            "description": "A city and its country.",
            "schema": {**City.model_json_schema(), "additionalProperties": False},
            "strict": True,
        },
    }


@pytest.mark.anyio
async def test_a_schema_with_optional_fields_is_sent_unchanged_and_not_strict(
    server: FakeOpenAIServer,
) -> None:
    server.reply(
        text_reply('{"destination": {"name": "Lyon"}}'),
        text_reply('{"destination": {"name": "Lyon", "country": "France"}}'),
    )
    agent = Agent(model_on(server))

    result = await agent.invoke_async("Plan a trip", output_type=Trip)

    assert result.output == Trip(destination=City(name="Lyon", country="France"))
    sent = server.requests[0].body["response_format"]["json_schema"]
    assert sent["strict"] is False
    # Optional stays optional; objects are closed to extra keys.
    assert sent["schema"]["required"] == ["destination"]
    assert sent["schema"]["additionalProperties"] is False
    assert sent["schema"]["$defs"]["City"]["additionalProperties"] is False
    # The caller's schema is not changed by the transform.
    assert "additionalProperties" not in OutputSchema.of(Trip).json_schema
    # The invalid reply went back as a user message with the errors.
    correction = server.requests[1].body["messages"][-1]
    assert correction["role"] == "user"
    assert "destination.country: Field required" in json.dumps(correction)


@pytest.mark.anyio
async def test_tool_mode_forces_the_output_tool(server: FakeOpenAIServer) -> None:
    server.reply(
        text_reply("Lyon is in France."),
        SSEReply(
            [
                chunk(
                    tool_delta(
                        0, id="call_1", name="City", arguments='{"name":"Lyon","country":"France"}'
                    )
                ),
                chunk({}, "stop"),  # OpenAI's finish reason for a forced call
                usage_chunk(10, 5),
            ]
        ),
    )
    model = model_on(server, structured_output="tool")
    assert model.supports_structured_output is False
    agent = Agent(model)

    result = await agent.invoke_async("Where is Lyon?", output_type=City)

    assert result.output == City(name="Lyon", country="France")
    first, second = (request.body for request in server.requests)
    assert "response_format" not in first
    assert [tool["function"]["name"] for tool in first["tools"]] == ["City"]
    assert "tool_choice" not in first
    assert second["tool_choice"] == {"type": "function", "function": {"name": "City"}}


@pytest.mark.anyio
async def test_a_native_reply_cut_at_the_length_limit_raises_without_a_correction(
    server: FakeOpenAIServer,
) -> None:
    server.reply(
        SSEReply([chunk({"content": '{"name": "Lyon", "coun'}), chunk({}, "length")]),
        text_reply('{"name": "Lyon", "country": "France"}'),
    )
    agent = Agent(model_on(server))

    with pytest.raises(StructuredOutputError, match="stopped at max_tokens"):
        await agent.invoke_async("Where is Lyon?", output_type=City)

    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_an_output_call_cut_at_the_length_limit_raises_and_the_next_turn_is_valid(
    server: FakeOpenAIServer,
) -> None:
    cut = tool_delta(0, id="call_1", name="City", arguments='{"name":"Ly')
    server.reply(SSEReply([chunk(cut), chunk({}, "length")]), text_reply("You are welcome."))
    agent = Agent(model_on(server, structured_output="tool"))

    with pytest.raises(StructuredOutputError, match=r"tool calls \(City\)"):
        await agent.invoke_async("Where is Lyon?", output_type=City)
    await agent.invoke_async("Thanks")

    assert len(server.requests) == 2
    # The cut call is answered before the next prompt, as chat completions requires.
    sent = server.requests[1].body["messages"]
    assert [m["role"] for m in sent[-3:]] == ["assistant", "tool", "user"]
    assert sent[-2]["tool_call_id"] == "call_1"


def test_a_bad_structured_output_option_is_refused() -> None:
    with pytest.raises(ValueError, match="'native' or 'tool'"):
        OpenAIModel("m", base_url="http://127.0.0.1:1", api_key="k", structured_output="json")  # type: ignore[arg-type]


class Listing(BaseModel):
    """Field names that are JSON Schema keywords stay names."""

    type: str
    properties: list[City]
    tags: dict[str, int]


def test_the_strict_transform_walks_the_schema_not_its_names() -> None:
    sent = response_format(OutputSchema.of(Listing))["json_schema"]
    schema = sent["schema"]

    assert set(schema["properties"]) == {"type", "properties", "tags"}
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["City"]["additionalProperties"] is False
    # A mapping's own schema says which values it takes; it is left as pydantic wrote it.
    assert schema["properties"]["tags"]["additionalProperties"] == {"type": "integer"}
    assert sent["strict"] is False
