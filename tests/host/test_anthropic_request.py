"""Converse payloads as Anthropic Messages API fields: blocks, cache points, tools, schemas."""

from __future__ import annotations

import copy
from typing import Any

import pydantic
import pytest

from stageware import OutputSchema
from stageware._generated.payloads import Messages, SystemContentBlock, ToolSpec
from stageware._host.models._anthropic_request import (
    convert_messages,
    convert_system,
    convert_tool_choice,
    convert_tools,
    output_format,
)

WEATHER: ToolSpec = {
    "name": "weather",
    "description": "The weather in a city.",
    "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


def test_a_tool_round_trip_with_reasoning_and_an_image_maps_block_by_block() -> None:
    messages: Messages = [
        {
            "role": "user",
            "content": [
                {"text": "What is this?"},
                {"image": {"format": "png", "source": {"bytes": "iVBORw0K"}}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "Look it up.", "signature": "s1"}}},
                {"reasoningContent": {"redactedContent": "opaque"}},
                {"toolUse": {"toolUseId": "tu_1", "name": "weather", "input": {"city": "Oslo"}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tu_1",
                        "status": "error",
                        "content": [{"text": "no data"}, {"json": {"code": 7}}],
                    }
                }
            ],
        },
    ]

    assert convert_messages(messages) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Look it up.", "signature": "s1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "tool_use", "id": "tu_1", "name": "weather", "input": {"city": "Oslo"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "tu_1",
                    "content": [
                        {"type": "text", "text": "no data"},
                        {"type": "text", "text": '{"code": 7}'},
                    ],
                    "is_error": True,
                }
            ],
        },
    ]


def test_reasoning_without_a_signature_is_left_out_and_an_emptied_message_too() -> None:
    # Another provider's reasoning: Anthropic refuses unsigned thinking blocks.
    messages: Messages = [
        {"role": "user", "content": [{"text": "Hi"}]},
        {"role": "assistant", "content": [{"reasoningContent": {"reasoningText": {"text": "x"}}}]},
        {"role": "assistant", "content": [{"text": "Hello"}]},
    ]

    assert convert_messages(messages) == [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
    ]


def test_a_cache_point_marks_the_block_before_it_in_messages_system_and_tools() -> None:
    messages: Messages = [
        {
            "role": "user",
            "content": [{"text": "long document"}, {"cachePoint": {"type": "default"}}],
        }
    ]
    system: list[SystemContentBlock] = [
        {"text": "You are terse."},
        {"cachePoint": {"type": "default"}},
        {"text": "Today is Monday."},
    ]
    tools: list[Any] = [WEATHER, {"cachePoint": {"type": "default"}}]

    assert convert_messages(messages)[0]["content"] == [
        {"type": "text", "text": "long document", "cache_control": {"type": "ephemeral"}}
    ]
    assert convert_system("ignored: the blocks win", system) == [
        {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Today is Monday."},
    ]
    assert convert_tools(tools) == [
        {
            "name": "weather",
            "description": "The weather in a city.",
            "input_schema": WEATHER["inputSchema"]["json"],
            "cache_control": {"type": "ephemeral"},
        }
    ]


def test_the_system_prompt_string_is_sent_when_there_are_no_blocks() -> None:
    assert convert_system("Be brief.", None) == "Be brief."
    assert convert_system(None, None) is None
    assert convert_system("", None) is None


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        pytest.param(
            [{"role": "user", "content": [{"cachePoint": {"type": "default"}}]}],
            r"messages\[0\]\.content\[0\]: a cachePoint must follow the block it caches",
            id="a cache point first",
        ),
        pytest.param(
            [
                {
                    "role": "assistant",
                    "content": [
                        {"reasoningContent": {"redactedContent": "x"}},
                        {"cachePoint": {"type": "default"}},
                    ],
                }
            ],
            r"messages\[0\]\.content\[1\]: Anthropic cannot cache at a redacted_thinking block",
            id="a cache point after thinking",
        ),
        pytest.param(
            [
                {
                    "role": "user",
                    "content": [{"toolUse": {"toolUseId": "t", "name": "n", "input": {}}}],
                }
            ],
            r"messages\[0\]\.content\[0\]: a 'toolUse' block cannot be sent in a user message",
            id="a tool use from the user",
        ),
        pytest.param(
            [{"role": "user", "content": [{"text": "a", "image": {}}]}],
            r"messages\[0\]\.content\[0\]: a content block must have exactly one key",
            id="two keys in one block",
        ),
    ],
)
def test_a_block_anthropic_cannot_carry_is_a_value_error_naming_where(
    messages: Any, error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        convert_messages(messages)


@pytest.mark.parametrize("raw", ["[1, 2", "[1, 2]", '{"city": "Os', ""])
def test_raw_tool_input_that_is_not_an_object_is_sent_as_an_empty_one(raw: str) -> None:
    messages: Messages = [
        {"role": "user", "content": [{"text": "hi"}]},
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t", "name": "n", "input": raw}}],
        },
    ]

    assert convert_messages(messages)[1]["content"][0] == {
        "type": "tool_use",
        "id": "t",
        "name": "n",
        "input": {},
    }


def test_raw_tool_input_that_is_a_json_object_is_sent_parsed() -> None:
    messages: Messages = [
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t", "name": "n", "input": '{"a": 1}'}}],
        }
    ]

    assert convert_messages(messages)[0]["content"][0]["input"] == {"a": 1}


def test_tool_choice_maps_auto_any_and_a_named_tool() -> None:
    assert convert_tool_choice({"auto": {}}) == {"type": "auto"}
    assert convert_tool_choice({"any": {}}) == {"type": "any"}
    assert convert_tool_choice({"tool": {"name": "weather"}}) == {
        "type": "tool",
        "name": "weather",
    }


class Address(pydantic.BaseModel):
    street: str
    number: int = pydantic.Field(ge=1)


class Person(pydantic.BaseModel):
    """A person and where they live."""

    name: str
    address: Address


def test_the_output_format_is_anthropics_dialect_of_the_schema_which_stays_unchanged() -> None:
    schema = OutputSchema.of(Person)
    before = copy.deepcopy(schema.json_schema)

    converted = output_format(schema.json_schema)

    assert schema.json_schema == before
    assert converted["type"] == "json_schema"
    body = converted["schema"]
    assert body["additionalProperties"] is False
    assert body["$defs"]["Address"]["additionalProperties"] is False
    # The unsupported bound moves into the description rather than being dropped.
    number = body["$defs"]["Address"]["properties"]["number"]
    assert "minimum" not in number
    assert "minimum: 1" in number["description"]
