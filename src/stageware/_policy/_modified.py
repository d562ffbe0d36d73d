"""Checking a ``Continue(modified=...)`` against its hook: one function the engine and the
conformance suite share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from stageware._generated.policy_points import HOOK_POINTS, HookPoint

from ._errors import problem_lines
from ._rules import MODIFIABLE

__all__ = ["ModificationError", "check_modified"]


class ModificationError(ValueError):
    """A ``modified`` payload that the hook's event model refuses, or that changes a field
    the hook does not let a policy change."""


def check_modified(point: HookPoint, original: BaseModel, modified: object) -> BaseModel:
    """Return *modified* validated as *point*'s event.

    Raises:
        ModificationError: If it does not validate, or changes a field outside
            ``MODIFIABLE[point]``.
    """
    model = HOOK_POINTS[point].event
    if isinstance(modified, BaseModel):
        data: Any = modified.model_dump(by_alias=True)
    elif isinstance(modified, Mapping):
        changes = cast("Mapping[str, Any]", modified)
        data = {**original.model_dump(by_alias=True), **changes}
    else:
        raise ModificationError(
            f"modified must be a {model.__name__} or a mapping of its fields, "
            f"got {type(modified).__name__}"
        )
    try:
        event = model.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(problem_lines(error, "the event"))
        raise ModificationError(f"modified is not a valid {model.__name__}: {problems}") from None
    allowed = MODIFIABLE[point]
    changed = [
        name
        for name in type(event).model_fields
        if getattr(event, name) != getattr(original, name) and name not in allowed
    ]
    if changed:
        may = ", ".join(sorted(allowed)) or "nothing"
        raise ModificationError(
            f"modified changes {', '.join(changed)}, which {point.value} does not let a policy "
            f"change (it may change: {may})"
        )
    problem = _conversation_problem(point, event)
    # Only what the modification introduced: a middleware is not blamed for its input.
    if problem is not None and problem != _conversation_problem(point, original):
        raise ModificationError(f"modified would break the conversation: {problem}")
    return event


def _conversation_problem(point: HookPoint, event: BaseModel) -> str | None:
    """What a valid event would still break in the history or the next request, if anything.

    The event model checks each message's shape; this checks what the conversation
    needs on top: who speaks, that turns are not empty, and that tool calls agree with
    the stop reason.
    """
    fields = type(event).model_fields
    if "message" in fields:
        message = getattr(event, "message")  # noqa: B009 - a field of several event models
        if message["role"] != "assistant":
            return f"the message's role is {message['role']!r}; it must stay 'assistant'"
        if not message["content"]:
            return "the message has no content"
        calls = any("toolUse" in block for block in message["content"])
        if point is HookPoint.OUTPUT_FINAL and calls:
            return "a final answer cannot call tools"
        stop_reason = getattr(event, "stop_reason", None)
        if point is HookPoint.MODEL_RESPONSE and calls != (stop_reason == "tool_use"):
            return (
                f"stop_reason is {stop_reason!r} but the message "
                f"{'calls' if calls else 'calls no'} tools; change both together"
            )
    if "messages" in fields:
        messages = getattr(event, "messages")  # noqa: B009
        if any(not message["content"] for message in messages):
            return "a message has no content"
        if point is not HookPoint.INPUT_RECEIVED and (
            not messages or messages[-1]["role"] != "user"
        ):
            return "the conversation sent to the model must end with a user turn"
    return None
