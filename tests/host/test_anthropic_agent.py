"""An agent on AnthropicModel, against the fake Messages API server on loopback.

Multi-turn runs through ``Agent``: the second request carries the first turn back in
Anthropic's form (tool use and result, thinking with its signature, cache points), and a
throttled call is retried by the agent with the server's wait.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

from stageware import Agent, ModelRetryStrategy, tool
from stageware.anthropic import AnthropicModel

from .fake_anthropic_server import (
    ErrorReply,
    FakeAnthropicServer,
    SSEReply,
    error_body,
    message,
    text_block,
    thinking_block,
    tool_block,
)


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer()
    fake.start()
    yield fake
    fake.close()


@tool
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city.
    """
    return f"sunny in {city}"


def test_a_tool_round_trip_with_thinking_goes_back_in_anthropics_form(
    server: FakeAnthropicServer,
) -> None:
    server.reply(
        SSEReply(
            message(
                thinking_block("I should call the tool.", "sig-A"),
                tool_block("toolu_1", "weather", {"city": "Oslo"}),
                stop_reason="tool_use",
                input_tokens=20,
                output_tokens=8,
            )
        ),
        SSEReply(message(text_block("It is sunny in Oslo."), input_tokens=40, output_tokens=6)),
    )
    model = AnthropicModel(
        "claude-test",
        base_url=server.base_url,
        api_key="test",
        params={"thinking": {"type": "enabled", "budget_tokens": 1024}},
    )
    agent = Agent(model, tools=[weather], system_prompt="Be brief.")

    result = agent("Weather in Oslo?")

    assert (result.stop_reason, result.text) == ("end_turn", "It is sunny in Oslo.")
    assert result.metrics.usage["inputTokens"] == 60
    assert result.metrics.usage["outputTokens"] == 14
    first, second = (request.body for request in server.requests)
    # The host passes the prompt as blocks too; blocks are what can carry cache points.
    assert first["system"] == second["system"] == [{"type": "text", "text": "Be brief."}]
    assert [tool_["name"] for tool_ in first["tools"]] == ["weather"]
    assert second["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should call the tool.", "signature": "sig-A"},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "sunny in Oslo"}],
                }
            ],
        },
    ]


def test_a_tool_call_whose_arguments_are_not_an_object_does_not_end_the_conversation(
    server: FakeAnthropicServer, caplog: pytest.LogCaptureFixture
) -> None:
    # A call cut short (or a model's bad arguments): its input is text, not an object.
    bad_call: list[dict[str, Any]] = [
        {
            "type": "content_block_start",
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}},
        },
        {
            "type": "content_block_delta",
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Os'},
        },
        {"type": "content_block_stop"},
    ]
    server.reply(
        SSEReply(message(bad_call, stop_reason="tool_use")),
        SSEReply(message(text_block("Sorry, which city?"))),
        SSEReply(message(text_block("Sunny."))),
    )
    agent = Agent(
        AnthropicModel("claude-test", base_url=server.base_url, api_key="test"), tools=[weather]
    )

    with caplog.at_level("INFO", logger="stageware._host.models._anthropic_request"):
        assert agent("Weather?").text == "Sorry, which city?"
        assert agent("Oslo.").text == "Sunny."

    second, third = (request.body["messages"] for request in server.requests[1:])
    call, result = second[1]["content"][0], second[2]["content"][0]
    # The call goes as an empty object; its result says what was wrong with the arguments.
    assert call == {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}
    assert (result["tool_use_id"], result["is_error"]) == ("toolu_1", True)
    assert third[:3] == second
    assert "messages[1].content[0]: the tool call's input is not a JSON object" in caplog.text
    assert '\'{"city": "Os\'' in caplog.text


class Forecast(pydantic.BaseModel):
    """A forecast."""

    city: str
    sunny: bool


def test_a_structured_run_on_the_tool_path_with_thinking_asks_without_forcing(
    server: FakeAnthropicServer,
) -> None:
    server.reply(
        SSEReply(message(thinking_block("Easy.", "sig-A"), text_block("Sunny in Oslo."))),
        SSEReply(
            message(
                thinking_block("The tool, then.", "sig-B"),
                tool_block("toolu_1", "Forecast", {"city": "Oslo", "sunny": True}),
                stop_reason="tool_use",
            )
        ),
    )
    model = AnthropicModel(
        "claude-test",
        base_url=server.base_url,
        api_key="test",
        structured_output="tool",
        params={"thinking": {"type": "enabled", "budget_tokens": 1024}},
    )

    result = Agent(model)("Weather in Oslo?", output_type=Forecast)

    assert result.output == Forecast(city="Oslo", sunny=True)
    first, second = (request.body for request in server.requests)
    assert "tool_choice" not in first
    # The host forces its tool after the prose reply; with thinking on, that goes as auto.
    assert second["tool_choice"] == {"type": "auto"}
    assert "calling the Forecast tool" in second["messages"][-1]["content"][0]["text"]


def test_system_blocks_with_a_cache_point_reach_the_server_as_cache_control(
    server: FakeAnthropicServer,
) -> None:
    server.reply(
        SSEReply(message(text_block("one"), cache_write=900)),
        SSEReply(message(text_block("two"), cache_read=900)),
    )
    agent = Agent(
        AnthropicModel("claude-test", base_url=server.base_url, api_key="test"),
        system_prompt=[{"text": "A long manual."}, {"cachePoint": {"type": "default"}}],
    )

    first = agent("Question one?")
    second = agent("Question two?")

    assert first.metrics.usage.get("cacheWriteInputTokens") == 900
    assert second.metrics.usage.get("cacheReadInputTokens") == 900
    for request in server.requests:
        assert request.body["system"] == [
            {"type": "text", "text": "A long manual.", "cache_control": {"type": "ephemeral"}}
        ]
    # Each synchronous call ran its own event loop; the model's client followed it.
    assert len(server.requests[1].body["messages"]) == 3


def test_a_throttled_call_is_retried_by_the_agent(server: FakeAnthropicServer) -> None:
    server.reply(
        ErrorReply(529, error_body("overloaded_error", "Overloaded"), {"retry-after": "0"}),
        SSEReply(message(text_block("Back again."))),
    )
    agent = Agent(
        AnthropicModel("claude-test", base_url=server.base_url, api_key="test"),
        retry_strategy=ModelRetryStrategy(max_attempts=2, initial_delay=0.01),
    )

    result = agent("Hello")

    assert result.text == "Back again."
    assert len(server.requests) == 2
