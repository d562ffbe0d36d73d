"""Structured output as chat completions asks for it: ``response_format`` with a JSON schema.

OpenAI's strict mode (``"strict": true``) guarantees the reply fits the schema, but only
for a subset of JSON Schema: every object must list all of its properties in
``required`` and say ``"additionalProperties": false``. Making an optional field
required would change what the caller's type means (the model would have to send a
value, or a null that the type may not accept), so the schema is never rewritten that
way. Instead:

- every object that does not say otherwise gets ``"additionalProperties": false``, which
  only tells the model not to invent keys (pydantic's own schema says ``true`` where the
  type accepts extra keys, and that is kept);
- the request is strict exactly when every object of the schema already requires all of
  its properties, which is the common case of a type whose fields have no defaults;
  otherwise it is sent with ``"strict": false``, which OpenAI follows on a best-effort
  basis and which local servers (vLLM, llama.cpp, Ollama) enforce with a grammar anyway.

The host validates the reply either way, and sends it back with the errors if it does
not fit. The caller's schema is never changed: the transform works on a copy.
"""

from __future__ import annotations

import copy
from typing import Any, cast

from ._output_schema import OutputSchema

__all__ = ["response_format"]


def response_format(schema: OutputSchema[Any]) -> dict[str, Any]:
    """The ``response_format`` field that asks for *schema*'s JSON object."""
    json_schema = copy.deepcopy(schema.json_schema)
    strict = _close_objects(json_schema)
    return {
        "type": "json_schema",
        "json_schema": {
            "name": schema.name,
            "description": schema.description,
            "schema": json_schema,
            "strict": strict,
        },
    }


# Keywords whose value is one subschema, and those whose value holds several (a list, or a
# mapping of names to subschemas). Only these are walked: a property named "type" or
# "properties" is a name, not a keyword.
_ONE_SCHEMA = ("items", "additionalProperties", "not", "contains")
_MANY_SCHEMAS = ("properties", "$defs", "definitions", "anyOf", "oneOf", "allOf", "prefixItems")


def _close_objects(schema: dict[str, Any]) -> bool:
    """Add ``additionalProperties: false`` to the objects of *schema* that leave it open.

    Returns whether every object requires all its properties (strict mode's rule).
    """
    strict = True
    # A stack, not recursion: a deeply nested schema must not overflow the interpreter.
    pending: list[dict[str, Any]] = [schema]
    while pending:
        node = pending.pop()
        if node.get("type") == "object" or "properties" in node:
            node.setdefault("additionalProperties", False)
            properties: dict[str, Any] = node.get("properties") or {}
            required: set[str] = set(node.get("required") or ())
            if set(properties) - required or node["additionalProperties"] is not False:
                strict = False
        for keyword in _ONE_SCHEMA:
            pending.extend(_schemas(node.get(keyword)))
        for keyword in _MANY_SCHEMAS:
            for member in _members(node.get(keyword)):
                pending.extend(_schemas(member))
    return strict


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
