"""An agent on the OpenAI-compatible adapter, against the fake server on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stageware import Agent, tool
from stageware.openai import OpenAIModel

from .fake_openai_server import FakeOpenAIServer, SSEReply, chunk, tool_delta, usage_chunk


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
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


def text_reply(text: str) -> SSEReply:
    return SSEReply([chunk({"content": text}), chunk({}, "stop"), usage_chunk(5, 2)])


def test_a_tool_round_trip_reaches_the_server_as_chat_messages(server: FakeOpenAIServer) -> None:
    server.reply(
        SSEReply(
            [
                chunk(tool_delta(0, id="call_1", name="weather", arguments='{"city": "Oslo"}')),
                chunk({}, "tool_calls"),
                usage_chunk(10, 5),
            ]
        ),
        text_reply("It is sunny in Oslo."),
    )
    agent = Agent(
        OpenAIModel("test-model", base_url=server.base_url, api_key="test"),
        tools=[weather],
        system_prompt="Be brief.",
    )

    result = agent("Weather in Oslo?")

    assert (result.stop_reason, result.text) == ("end_turn", "It is sunny in Oslo.")
    assert result.metrics.usage["inputTokens"] == 15
    second = server.requests[1].body["messages"]
    assert second[0] == {"role": "system", "content": "Be brief."}
    assert second[-1]["role"] == "tool"
    assert second[-1]["tool_call_id"] == "call_1"
    assert "sunny in Oslo" in second[-1]["content"]


def test_synchronous_calls_each_on_their_own_event_loop_keep_working(
    server: FakeOpenAIServer,
) -> None:
    # Each agent(...) runs its own event loop; the model's own client must follow it.
    server.reply(text_reply("one"), text_reply("two"))
    agent = Agent(OpenAIModel("test-model", base_url=server.base_url, api_key="test"))

    assert agent("first").text == "one"
    assert agent("second").text == "two"


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('{"city": Oslo', id="not JSON: the model forgot the quotes"),
        pytest.param('"Oslo"', id="a JSON string, not an object"),
    ],
)
def test_invalid_tool_arguments_are_reported_once_and_replayed_as_the_model_sent_them(
    server: FakeOpenAIServer, raw: str
) -> None:
    calls: list[str] = []

    @tool
    def forecast(city: str) -> str:
        """The forecast for a city.

        Args:
            city: The city.
        """
        calls.append(city)
        return "rain"

    server.reply(
        SSEReply(
            [
                chunk(tool_delta(0, id="call_1", name="forecast", arguments=raw)),
                chunk({}, "tool_calls"),
            ]
        ),
        text_reply("Sorry, which city?"),
        text_reply("Rain in Oslo."),
    )
    agent = Agent(
        OpenAIModel("test-model", base_url=server.base_url, api_key="test"), tools=[forecast]
    )

    agent("Forecast?")
    agent("Oslo, please.")

    assert calls == []  # the tool never ran on arguments it could not read
    second, third = (request.body["messages"] for request in server.requests[1:])
    assert [message["role"] for message in second] == ["user", "assistant", "tool"]
    for request_messages in (second, third):
        # The arguments go back byte for byte, not as a JSON string of them.
        assert request_messages[1]["tool_calls"][0]["function"]["arguments"] == raw
        tool_message: dict[str, Any] = request_messages[2]
        assert tool_message["content"].count("Error:") == 1
        assert raw in tool_message["content"]
    assert [message["role"] for message in third] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]


def test_usage_keeps_cache_counts_summed_over_calls(server: FakeOpenAIServer) -> None:
    server.reply(
        SSEReply(
            [
                chunk(tool_delta(0, id="call_1", name="weather", arguments='{"city": "Oslo"}')),
                chunk({}, "tool_calls"),
                usage_chunk(100, 5, cached_tokens=64),
            ]
        ),
        SSEReply([chunk({"content": "Sunny."}), chunk({}, "stop"), usage_chunk(120, 3, 96)]),
    )
    agent = Agent(
        OpenAIModel("test-model", base_url=server.base_url, api_key="test"), tools=[weather]
    )

    result = agent("Weather in Oslo?")

    assert result.metrics.usage == {
        "inputTokens": 220,
        "outputTokens": 8,
        "totalTokens": 228,
        "cacheReadInputTokens": 160,
    }
