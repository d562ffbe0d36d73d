"""A JSON schema with every object closed (``"additionalProperties": false``), as a copy.

Providers' constrained-decoding modes (OpenAI's strict ``response_format``, Bedrock's
``outputConfig.textFormat``) want each object schema to say that it takes no keys
beyond its properties; pydantic writes that only for ``extra="forbid"``. The walk
follows JSON-Schema keywords only, so data inside a schema is left as it is: a property
named ``type`` or ``properties`` is a name, and a ``default``, ``const``, ``enum`` or
``examples`` value that looks like an object schema is a value, not a subschema.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast, final

__all__ = ["ClosedSchema", "close_objects"]

# Keywords whose value is one subschema, and those whose value holds several (a list, or a
# mapping of names to subschemas). Only these are walked.
_ONE_SCHEMA: Final = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_MANY_SCHEMAS: Final = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "anyOf",
    "oneOf",
    "allOf",
    "prefixItems",
)


@final
@dataclass(frozen=True, slots=True)
class ClosedSchema:
    """The closed copy of a schema, and what strict modes need to know about it.

    Attributes:
        schema: The copy, with ``"additionalProperties": false`` on every object schema
            that did not say otherwise (an explicit ``true`` or subschema is kept).
        all_required: Whether every object requires all of its properties and is closed,
            which OpenAI's strict mode demands.
    """

    schema: dict[str, Any]
    all_required: bool


def close_objects(json_schema: Mapping[str, Any]) -> ClosedSchema:
    """Close the object schemas of a copy of *json_schema*; *json_schema* is not changed."""
    schema = copy.deepcopy(dict(json_schema))
    all_required = True
    # A stack, not recursion: a deeply nested schema must not overflow the interpreter.
    pending: list[dict[str, Any]] = [schema]
    while pending:
        node = pending.pop()
        if node.get("type") == "object" or "properties" in node:
            node.setdefault("additionalProperties", False)
            properties: dict[str, Any] = node.get("properties") or {}
            required: set[str] = set(node.get("required") or ())
            if set(properties) - required or node["additionalProperties"] is not False:
                all_required = False
        for keyword in _ONE_SCHEMA:
            pending.extend(_schemas(node.get(keyword)))
        for keyword in _MANY_SCHEMAS:
            for member in _members(node.get(keyword)):
                pending.extend(_schemas(member))
    return ClosedSchema(schema, all_required)


def _schemas(value: object) -> list[dict[str, Any]]:
    """*value* as a subschema to walk: a dict, or nothing (``true``/``false``, absent)."""
    return [cast("dict[str, Any]", value)] if isinstance(value, dict) else []


def _members(value: object) -> list[object]:
    """The subschemas a list or a mapping of them holds; none for anything else."""
    if isinstance(value, dict):
        return list(cast("dict[str, object]", value).values())
    if isinstance(value, list):
        return list(cast("list[object]", value))
    return []
