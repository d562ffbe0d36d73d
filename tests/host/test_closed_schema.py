"""The one JSON-schema walker that closes objects, shared by the Bedrock and OpenAI adapters."""

from __future__ import annotations

import copy
import json
from typing import Any

import pydantic

from stageware import OutputSchema
from stageware._host.models._bedrock_request import native_schema
from stageware._host.models._closed_schema import close_objects
from stageware._host.models._openai_output import response_format

# A value that looks like an object schema, as data: closing it would change the data.
LOOKALIKE: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}


class Filter(pydantic.BaseModel):
    """A filter whose default is data shaped like a schema."""

    query: str
    shape: dict[str, Any] = pydantic.Field(default=LOOKALIKE)
    examples: list[str] = pydantic.Field(default=[], examples=[[json.dumps(LOOKALIKE)]])


class Leaf(pydantic.BaseModel):
    """A type nested in another."""

    name: str


class Tree(pydantic.BaseModel):
    """A type whose fields all lack defaults: strict mode can have it."""

    root: Leaf
    leaves: list[Leaf]


def test_subschemas_are_closed_and_data_is_left_as_it_is() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "type": {"type": "string", "default": LOOKALIKE},
            "properties": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "loose": {"type": "object", "additionalProperties": True},
        },
        "required": ["type", "properties", "loose"],
        "$defs": {"Inner": {"properties": {"y": {"const": LOOKALIKE}}, "required": ["y"]}},
        "anyOf": [{"type": "object"}, {"enum": [LOOKALIKE]}],
        "examples": [LOOKALIKE],
    }
    original = copy.deepcopy(schema)

    closed = close_objects(schema).schema

    assert schema == original
    assert closed["additionalProperties"] is False
    assert closed["properties"]["properties"]["additionalProperties"] is False
    assert closed["properties"]["loose"]["additionalProperties"] is True
    assert closed["$defs"]["Inner"]["additionalProperties"] is False
    assert closed["anyOf"][0]["additionalProperties"] is False
    assert closed["properties"]["type"]["default"] == LOOKALIKE
    assert closed["$defs"]["Inner"]["properties"]["y"]["const"] == LOOKALIKE
    assert closed["anyOf"][1]["enum"] == [LOOKALIKE]
    assert closed["examples"] == [LOOKALIKE]


def test_all_required_says_whether_strict_mode_can_be_asked_for() -> None:
    assert close_objects(OutputSchema.of(Tree).json_schema).all_required
    assert not close_objects(OutputSchema.of(Filter).json_schema).all_required
    assert not close_objects({"type": "object", "additionalProperties": {}}).all_required


def test_bedrock_and_openai_close_the_same_schema_the_same_way() -> None:
    schema = OutputSchema.of(Filter)

    bedrock = native_schema(schema.json_schema)
    openai = response_format(schema)["json_schema"]["schema"]

    assert bedrock == openai
    assert bedrock["properties"]["shape"]["default"] == LOOKALIKE
    assert "additionalProperties" not in bedrock["properties"]["shape"]["default"]
    assert bedrock["additionalProperties"] is False
