"""The Cedar schema generated from the stage schema's hook events and the agent's tools."""

from __future__ import annotations

import json
from typing import Any

import cedarpy
import pytest

from stageware._cedar._cedarpy import validate_policies
from stageware.cedar import schema_for

from .cedar_helpers import ATTRIBUTES, lookup, refund


def _actions(schema: dict[str, Any]) -> dict[str, Any]:
    actions: dict[str, Any] = schema[""]["actions"]
    return actions


def test_a_nested_tool_input_becomes_nested_records() -> None:
    schema = schema_for([refund, lookup], principal_attributes=ATTRIBUTES)
    refund_action = _actions(schema)["tool:refund"]
    assert refund_action["memberOf"] == [{"id": "tool.before"}]
    assert refund_action["appliesTo"]["principalTypes"] == ["User", "Agent"]
    assert refund_action["appliesTo"]["resourceTypes"] == ["Tool"]
    context = refund_action["appliesTo"]["context"]["attributes"]
    assert context["input"] == {
        "type": "Record",
        "required": True,
        "attributes": {
            "order": {
                "type": "Record",
                "required": True,
                "attributes": {
                    "id": {"type": "String", "required": True},
                    "address": {
                        "type": "Record",
                        "required": True,
                        "attributes": {
                            "country": {"type": "String", "required": True},
                            # str | None: optional, read with `has`.
                            "postcode": {"type": "String", "required": False},
                        },
                    },
                    # A list with a default: a Set, optional.
                    "tags": {"type": "Set", "element": {"type": "String"}, "required": False},
                },
            },
            # A float: Cedar's decimal extension.
            "amount": {"type": "Extension", "name": "decimal", "required": True},
            "express": {"type": "Bool", "required": False},
        },
    }
    assert context["tool_use_id"] == {"type": "String", "required": True}
    assert context["run"]["attributes"]["session"] == {"type": "String", "required": False}
    user = schema[""]["entityTypes"]["User"]
    assert user["memberOfTypes"] == ["Role"]
    assert user["shape"]["attributes"] == {"employment": {"type": "String", "required": False}}


def test_the_hook_contexts_come_from_the_hook_events() -> None:
    actions = _actions(schema_for())
    assert sorted(actions) == ["input.received", "route.select", "tool.before"]
    route = actions["route.select"]["appliesTo"]
    assert route["resourceTypes"] == ["Model"]
    # RouteEvent's own fields, as the stage schema declares them, plus the run.
    assert sorted(route["context"]["attributes"]) == ["model_id", "run", "tool_names"]
    assert route["context"]["attributes"]["tool_names"]["type"] == "Set"
    received = actions["input.received"]["appliesTo"]
    assert sorted(received["context"]["attributes"]) == [
        "characters",
        "message_count",
        "run",
        "text",
    ]


def test_what_cedar_cannot_type_is_left_out_and_a_policy_naming_it_fails() -> None:
    spec = {
        "name": "search",
        "description": "Search.",
        "inputSchema": {
            "json": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "filters": {"type": "object"},  # free-form: no Cedar type
                    "limit": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "mode": {"enum": ["fast", "deep"]},
                },
                "required": ["query"],
            }
        },
    }
    schema = schema_for([spec])
    attributes = _actions(schema)["tool:search"]["appliesTo"]["context"]["attributes"]
    assert attributes["input"]["attributes"] == {
        "query": {"type": "String", "required": True},
        "mode": {"type": "String", "required": False},
    }
    naming = (
        'permit(principal, action == Action::"tool:search", resource) '
        "when { context.input.limit > 1 };"
    )
    result = validate_policies(naming, schema)
    [error] = result.errors
    assert error.error.endswith(
        'attribute `input.limit` in context for Action::"tool:search" not found'
    )


def test_tools_by_reference_and_bad_tools() -> None:
    by_reference = schema_for("tests.cedar.test_cedar_schema:TOOLS")
    assert "tool:refund" in _actions(by_reference)
    assert by_reference == schema_for(TOOLS)
    with pytest.raises(ValueError, match="names nothing"):
        schema_for("tests.cedar.test_cedar_schema:MISSING")
    with pytest.raises(TypeError, match=r"tools\[1\] is 'lookup'"):
        schema_for([refund, "lookup"])
    with pytest.raises(ValueError, match="two tools are named 'refund'"):
        schema_for([refund, refund.tool_spec])
    with pytest.raises(ValueError, match="principal_attributes must be a JSON Schema object"):
        schema_for(principal_attributes={"type": "string"})


def test_the_schema_is_one_cedar_accepts() -> None:
    schema = schema_for([refund, lookup], principal_attributes=ATTRIBUTES)
    # Cedar's own parser reads it back, and a policy on nested input validates against it.
    cedarpy.Schema.from_json_str(json.dumps(schema))
    policy = (
        'forbid(principal, action == Action::"tool:refund", resource) when '
        "{ context.input.order.address has postcode && "
        'context.input.order.address.postcode like "75*" };'
    )
    assert validate_policies(policy, schema).validation_passed


TOOLS = [refund, lookup]
"""Named by ``tests.cedar.test_cedar_schema:TOOLS`` above."""
