"""The Cedar schema of a policy: entity types, one action per decision, typed contexts.

How a step becomes a Cedar request (``docs/guides/cedar.md`` says it for policy authors):

- ``tool.before``: action ``Action::"tool:<name>"``, a member of ``Action::"tool.before"``;
  resource ``Tool::"<name>"``; context ``input`` (typed by the tool) and ``tool_use_id``.
- ``route.select``: action ``Action::"route.select"``; resource ``Model::"<model id>"``;
  context: the ``RouteEvent``'s fields (``model_id``, ``tool_names``).
- ``input.received``: action ``Action::"input.received"``; resource
  ``Agent::"<agent name>"``; context ``text`` (the text blocks of the new messages),
  ``characters`` and ``message_count``.

Each context also holds ``run``: ``{id, agent, attempt, session?}``. The principal is
``User::"<id>"`` (a member of ``Role::"<role>"`` for each of its roles, with the
attributes the application declared), or ``Agent::"<name>"`` for a run the application
passed no principal for, where the policy lets such runs be decided at all.

``route.select``'s context is typed from the stage schema's hook event (``RouteEvent``),
so a field the schema adds reaches the policies without a change here; a tool call's
``input`` is typed by the tool's own input schema, one action per tool, since Cedar types
a context per action.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

from pydantic import BaseModel

from stageware import AgentTool, ToolSpec
from stageware.policy import HookPoint, RouteEvent

from ._types import LONG, STRING, CedarType, Record, from_json_schema, type_json

__all__ = [
    "HOOKS",
    "TOOL_GROUP",
    "PolicySchema",
    "schema_for",
    "tool_action",
    "tool_specs",
]

HOOKS: Final = (HookPoint.TOOL_BEFORE, HookPoint.ROUTE_SELECT, HookPoint.INPUT_RECEIVED)
"""The hook points a Cedar policy decides at."""

TOOL_GROUP: Final = "tool.before"
"""The action group every tool's action is a member of."""

_PRINCIPALS: Final = ["User", "Agent"]
# Fields every event has that a context carries elsewhere (``run``) or not at all.
_OUT_OF_CONTEXT: Final = frozenset({"hook", "run_id"})

RUN: Final = Record(
    {
        "id": (STRING, True),
        "agent": (STRING, True),
        "attempt": (LONG, True),
        "session": (STRING, False),
    }
)
"""``context.run``: the run being decided on."""

INPUT_SUMMARY: Final = Record(
    {
        "text": (STRING, True),
        "characters": (LONG, True),
        "message_count": (LONG, True),
    }
)
"""``input.received``'s context instead of the messages themselves (whose images and
documents a policy has no use for)."""


def tool_action(name: str) -> str:
    """The id of the action that calls the tool *name*."""
    return f"tool:{name}"


def _event_context(model: type[BaseModel], drop: Iterable[str] = ()) -> Record:
    typed = from_json_schema(model.model_json_schema())
    assert isinstance(typed, Record)  # every hook event is an object with properties
    dropped = _OUT_OF_CONTEXT | set(drop)
    kept = {name: sub for name, sub in typed.attributes.items() if name not in dropped}
    return Record({**kept, "run": (RUN, True)})


class PolicySchema:
    """The schema a policy is validated and evaluated against, and the types behind it.

    Args:
        tools: Tool specifications (``tool.tool_spec``) whose calls policies may name.
        principal_attributes: JSON Schema of the ``User`` entity's attributes (an object
            schema with ``properties``); ``None`` for a user with none.

    Raises:
        ValueError: Two tools with one name, or attributes that are not an object schema.
    """

    def __init__(
        self,
        tools: Iterable[ToolSpec],
        principal_attributes: Mapping[str, Any] | None = None,
    ) -> None:
        self.tools: dict[str, Record] = {}
        for spec in tools:
            name = spec["name"]
            if name in self.tools:
                raise ValueError(f"two tools are named {name!r}; a Cedar action names one")
            typed = from_json_schema(spec["inputSchema"]["json"])
            self.tools[name] = Record(
                {
                    "input": (typed if typed is not None else Record({}), True),
                    "tool_use_id": (STRING, True),
                    "run": (RUN, True),
                }
            )
        user = from_json_schema(principal_attributes) if principal_attributes else Record({})
        if not isinstance(user, Record):
            raise ValueError(
                "principal_attributes must be a JSON Schema object with 'properties', "
                f"got {dict(principal_attributes or {})!r}"
            )
        self.user = user
        self.route = _event_context(RouteEvent)
        self.input = Record({**INPUT_SUMMARY.attributes, "run": (RUN, True)})

    def context(self, hook: HookPoint, tool: str | None = None) -> Record | None:
        """The type of the context at *hook* (for *tool*); ``None`` for an unknown tool."""
        if hook is HookPoint.TOOL_BEFORE:
            return self.tools.get(cast(str, tool))
        return self.route if hook is HookPoint.ROUTE_SELECT else self.input

    def json(self) -> dict[str, Any]:
        """The schema in Cedar's JSON schema format (the empty namespace)."""

        def applies(resource: str, context: CedarType) -> dict[str, Any]:
            return {
                "appliesTo": {
                    "principalTypes": _PRINCIPALS,
                    "resourceTypes": [resource],
                    "context": type_json(context),
                }
            }

        actions: dict[str, Any] = {TOOL_GROUP: {}}
        for name, context in sorted(self.tools.items()):
            actions[tool_action(name)] = {
                "memberOf": [{"id": TOOL_GROUP}],
                **applies("Tool", context),
            }
        actions[HookPoint.ROUTE_SELECT.value] = applies("Model", self.route)
        actions[HookPoint.INPUT_RECEIVED.value] = applies("Agent", self.input)
        return {
            "": {
                "entityTypes": {
                    "User": {"memberOfTypes": ["Role"], "shape": type_json(self.user)},
                    "Role": {},
                    "Agent": {},
                    "Tool": {},
                    "Model": {},
                },
                "actions": actions,
            }
        }


def tool_specs(tools: str | Iterable[object]) -> list[ToolSpec]:
    """The tool specifications of *tools*: tools, specs, or ``module:attribute`` of them.

    Raises:
        TypeError: For something that is neither a tool nor a tool specification.
        ValueError: For a reference that names nothing.
    """
    if isinstance(tools, str):
        tools = _imported(tools)
    specs: list[ToolSpec] = []
    for index, item in enumerate(tools):
        if isinstance(item, AgentTool):
            specs.append(item.tool_spec)
        elif isinstance(item, Mapping) and "name" in item and "inputSchema" in item:
            specs.append(cast(ToolSpec, item))
        else:
            raise TypeError(
                f"tools[{index}] is {item!r}: give tools (@tool functions, AgentTool) or "
                "their tool_spec dictionaries"
            )
    return specs


def _imported(reference: str) -> Iterable[object]:
    module_name, colon, attribute = reference.partition(":")
    if not colon or not module_name or not attribute:
        raise ValueError(f"tools: {reference!r} is not 'package.module:attribute'")
    try:
        found: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"tools: {reference!r} names nothing: {error}") from None
    if isinstance(found, str) or not isinstance(found, Iterable):
        raise TypeError(f"tools: {reference!r} is {found!r}, not a list of tools")
    return cast(Iterable[object], found)


def schema_for(
    tools: str | Iterable[object] = (),
    *,
    principal_attributes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Cedar schema (JSON format) that ``cedar_policy`` validates policies against.

    Args:
        tools: The tools whose calls policies may name: tools (``@tool`` functions, any
            ``AgentTool``), their ``tool_spec`` dictionaries, or
            ``"package.module:attribute"`` naming such a list.
        principal_attributes: JSON Schema of the ``Principal``'s attributes (an object
            with ``properties``), as in ``CedarSettings``.

    Returns:
        The schema as Cedar's JSON schema format, ready for ``json.dumps`` and for Cedar's
        own tools (``cedar validate --schema-format json``).

    Raises:
        TypeError: A tool that is neither a tool nor a tool specification.
        ValueError: A reference that names nothing, two tools with one name, or
            attributes that are not an object schema.
    """
    return PolicySchema(tool_specs(tools), principal_attributes).json()
