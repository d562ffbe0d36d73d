"""Generated payload types are plain dicts at run time and validate with pydantic."""

from __future__ import annotations

import pydantic
import pytest

from stageware import Messages, ToolResult


def test_messages_validate_with_pydantic() -> None:
    messages = pydantic.TypeAdapter(Messages).validate_python(
        [
            {
                "role": "user",
                "content": [
                    {"text": "hi"},
                    {"toolUse": {"toolUseId": "t", "name": "n", "input": {}}},
                ],
            }
        ]
    )

    assert messages == [
        {
            "role": "user",
            "content": [{"text": "hi"}, {"toolUse": {"toolUseId": "t", "name": "n", "input": {}}}],
        }
    ]
    assert type(messages[0]) is dict


def test_a_malformed_payload_is_rejected_with_its_location() -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        pydantic.TypeAdapter(ToolResult).validate_python(
            {"toolUseId": "t", "status": "finished", "content": []}
        )

    assert info.value.errors()[0]["loc"] == ("status",)
