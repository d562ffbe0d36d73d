"""Turning a hook event and its ``PolicyEnv`` into a Cedar request and its entities.

Only data the schema types goes in: a tool input's field that has no Cedar type is left
out (see ``_types``), and a value that does not fit its type is an error the middleware's
fail mode decides on, never a request Cedar would refuse to build half-way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast, final

from pydantic import BaseModel

from stageware.policy import (
    HookPoint,
    InputEvent,
    PolicyEnv,
    Principal,
    RouteEvent,
    ToolCallEvent,
)

from ._schema import PolicySchema, tool_action
from ._types import CedarDataError, Record, cedar_value

__all__ = ["CedarRequest", "UnfitInput", "UnknownTool", "build_request"]


class UnknownTool(LookupError):
    """A tool call whose tool is not in the schema: no policy can name it."""


class UnfitInput(ValueError):
    """A tool call whose input does not fit the tool's input schema (the model's doing)."""


@final
@dataclass(frozen=True, slots=True)
class CedarRequest:
    """A request for ``cedarpy.is_authorized``, and how a reason names its parts."""

    request: dict[str, Any]
    entities: list[dict[str, Any]]
    subject: str
    principal: str


def _uid(kind: str, name: str) -> dict[str, str]:
    return {"type": kind, "id": name}


def build_request(
    schema: PolicySchema, event: BaseModel, env: PolicyEnv, principal: Principal | None
) -> CedarRequest:
    """The request deciding *event* for *principal* (``None``: the agent itself).

    Raises:
        UnknownTool: A tool call of a tool the schema does not list.
        UnfitInput: A tool call whose input does not fit the tool's input schema.
        CedarDataError: The principal's attributes do not fit their schema.
    """
    run: dict[str, object] = {"id": env.run_id, "agent": env.agent_name, "attempt": env.attempt}
    if env.session_id is not None:
        run["session"] = env.session_id
    if isinstance(event, ToolCallEvent):
        typed = schema.context(HookPoint.TOOL_BEFORE, event.tool_name)
        if typed is None:
            raise UnknownTool(event.tool_name)
        action = tool_action(event.tool_name)
        resource = _uid("Tool", event.tool_name)
        try:
            tool_input = cedar_value(typed.attributes["input"][0], event.input, "input")
        except CedarDataError as error:
            raise UnfitInput(
                f"the call of tool {event.tool_name!r}: its input does not fit the tool's "
                f"schema: {error}"
            ) from None
        context = {"input": tool_input, "tool_use_id": event.tool_use_id, "run": run}
        subject = f"the call of tool {event.tool_name!r}"
    elif isinstance(event, RouteEvent):
        typed = schema.route
        action = HookPoint.ROUTE_SELECT.value
        resource = _uid("Model", event.model_id)
        given = {**event.model_dump(exclude={"hook", "run_id"}), "run": run}
        context = _context(typed, given)
        subject = f"model {event.model_id!r}"
    elif isinstance(event, InputEvent):
        typed = schema.input
        action = HookPoint.INPUT_RECEIVED.value
        resource = _uid("Agent", env.agent_name)
        text = "\n".join(
            block["text"]
            for message in event.messages
            for block in message["content"]
            if "text" in block
        )
        given = {
            "text": text,
            "characters": len(text),
            "message_count": len(event.messages),
            "run": run,
        }
        context = _context(typed, given)
        subject = "the input"
    else:
        raise TypeError(f"a Cedar policy does not decide at {env.hook.value}")
    entities: list[dict[str, Any]] = [{"uid": resource, "attrs": {}, "parents": []}]
    if principal is None:
        who = _uid("Agent", env.agent_name)
        if resource != who:
            entities.append({"uid": who, "attrs": {}, "parents": []})
        named = f'Agent::"{env.agent_name}"'
    else:
        who = _uid("User", principal.id)
        roles = [_uid("Role", role) for role in sorted(principal.roles)]
        attributes = _attributes(schema.user, principal)
        entities.append({"uid": who, "attrs": attributes, "parents": roles})
        entities.extend({"uid": role, "attrs": {}, "parents": []} for role in roles)
        named = f'User::"{principal.id}"'
    request = {
        "principal": who,
        "action": _uid("Action", action),
        "resource": resource,
        "context": context,
    }
    return CedarRequest(request, entities, subject, named)


def _context(typed: Record, given: Mapping[str, object]) -> dict[str, Any]:
    return cast(dict[str, Any], cedar_value(typed, given, "context"))


def _attributes(typed: Record, principal: Principal) -> dict[str, Any]:
    extra = sorted(set(principal.attributes) - set(typed.attributes))
    if extra:
        # Cedar refuses an entity with attributes its schema does not declare; say which.
        raise CedarDataError(
            f"the principal's attributes {extra} are not declared in the Cedar schema "
            "(principal_attributes)"
        )
    return cast(dict[str, Any], cedar_value(typed, dict(principal.attributes), "principal"))
