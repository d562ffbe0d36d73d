"""An agent on BedrockModel, against the fake bedrock-runtime server on loopback.

The agent's history goes to Bedrock as it is (Converse both sides): the tests check the
request bodies of a tool round trip and of a second turn, and that the agent retries
throttling and surfaces a context-window overflow as its own error.
"""

from __future__ import annotations

from collections.abc import Iterator

import pydantic
import pytest

from stageware import (
    Agent,
    ContextWindowOverflowError,
    ModelRetryStrategy,
    OutputSchema,
    tool,
)

from .bedrock_helpers import make_model
from .fake_bedrock_server import (
    ErrorReply,
    FakeBedrockServer,
    StreamReply,
    metadata,
    text_events,
    tool_events,
)


@pytest.fixture
def server() -> Iterator[FakeBedrockServer]:
    fake = FakeBedrockServer()
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


def _tool_call_reply() -> StreamReply:
    return StreamReply(
        [
            ("messageStart", {"role": "assistant"}),
            *tool_events("tooluse_1", "weather", '{"city": "Oslo"}'),
            ("messageStop", {"stopReason": "tool_use"}),
            metadata(10, 5),
        ]
    )


def test_a_tool_round_trip_and_a_second_turn_send_the_history_as_it_is(
    server: FakeBedrockServer,
) -> None:
    server.reply(
        _tool_call_reply(),
        StreamReply([*text_events("It is sunny in Oslo."), metadata(20, 6, cache_read=15)]),
        StreamReply([*text_events("You are welcome."), metadata(30, 4)]),
    )
    agent = Agent(make_model(server), tools=[weather], system_prompt="Be brief.")

    first = agent("Weather in Oslo?")
    second = agent("Thanks!")

    assert (first.stop_reason, first.text) == ("end_turn", "It is sunny in Oslo.")
    assert first.metrics.usage["inputTokens"] == 30
    assert first.metrics.usage.get("cacheReadInputTokens") == 15
    assert second.text == "You are welcome."
    bodies = [request.body for request in server.requests]
    assert bodies[0]["toolConfig"]["tools"][0]["toolSpec"]["name"] == "weather"
    assert bodies[0]["system"] == [{"text": "Be brief."}]
    assert bodies[1]["messages"] == [
        {"role": "user", "content": [{"text": "Weather in Oslo?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "toolUse": {
                        "toolUseId": "tooluse_1",
                        "name": "weather",
                        "input": {"city": "Oslo"},
                    }
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tooluse_1",
                        "status": "success",
                        "content": [{"text": "sunny in Oslo"}],
                    }
                }
            ],
        },
    ]
    assert bodies[2]["messages"][3:] == [
        {"role": "assistant", "content": [{"text": "It is sunny in Oslo."}]},
        {"role": "user", "content": [{"text": "Thanks!"}]},
    ]


def test_the_agent_retries_throttling_after_the_wait_bedrock_asked_for(
    server: FakeBedrockServer,
) -> None:
    server.reply(
        ErrorReply(429, "ThrottlingException", "Too many tokens.", {"Retry-After": "0"}),
        StreamReply([*text_events("Done."), metadata()]),
    )
    agent = Agent(make_model(server), retry_strategy=ModelRetryStrategy(max_attempts=2))

    result = agent("Hi")

    assert result.text == "Done."
    assert len(server.requests) == 2


def test_a_context_window_overflow_ends_the_run_with_its_own_stop_reason(
    server: FakeBedrockServer,
) -> None:
    server.reply(ErrorReply(400, "ValidationException", "Input is too long for requested model."))
    agent = Agent(make_model(server))

    result = agent("A very long prompt")

    assert result.stop_reason == "context_window_overflow"
    assert isinstance(result.error, ContextWindowOverflowError)
    assert "anthropic.claude-test-v1:0" in str(result.error)

    assert agent.messages == [{"role": "user", "content": [{"text": "A very long prompt"}]}]


class Forecast(pydantic.BaseModel):
    """A forecast."""

    city: str
    sky: str


def test_a_turn_after_a_structured_run_still_defines_the_tools_its_history_used(
    server: FakeBedrockServer,
) -> None:
    # The default structured path leaves the output tool's use and result in the history;
    # Bedrock refuses such a history without a toolConfig, and the next turn has no tools.
    output_tool = OutputSchema.of(Forecast).name
    server.reply(
        StreamReply(
            [
                ("messageStart", {"role": "assistant"}),
                *tool_events("tooluse_out", output_tool, '{"city": "Oslo", "sky": "clear"}'),
                ("messageStop", {"stopReason": "tool_use"}),
                metadata(),
            ]
        ),
        StreamReply([*text_events("You are welcome."), metadata()]),
    )
    agent = Agent(make_model(server))

    first = agent("Forecast for Oslo?", output_type=Forecast)
    second = agent("Thanks!")

    assert first.output == Forecast(city="Oslo", sky="clear")
    assert second.text == "You are welcome."
    later = server.requests[1].body
    assert any("toolUse" in block for block in later["messages"][1]["content"])
    assert [tool["toolSpec"]["name"] for tool in later["toolConfig"]["tools"]] == [output_tool]
    assert "toolChoice" not in later["toolConfig"]


def test_a_turn_after_the_agent_lost_its_tools_defines_the_ones_its_history_used(
    server: FakeBedrockServer,
) -> None:
    server.reply(
        _tool_call_reply(),
        StreamReply([*text_events("It is sunny in Oslo."), metadata()]),
        StreamReply([*text_events("You are welcome."), metadata()]),
    )
    agent = Agent(make_model(server), tools=[weather])
    agent("Weather in Oslo?")
    later = Agent(make_model(server), messages=agent.messages)

    assert later("Thanks!").text == "You are welcome."
    (stub,) = server.requests[2].body["toolConfig"]["tools"]
    assert stub["toolSpec"]["name"] == "weather"
