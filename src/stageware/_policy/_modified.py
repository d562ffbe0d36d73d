"""Checking a ``Continue(modified=...)`` against its hook: one function the engine and the
conformance suite share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from stageware._data_paths import format_path
from stageware._generated.policy_points import HOOK_POINTS, HookPoint

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
        problems = "; ".join(
            f"{format_path(p['loc']) or 'the event'}: {p['msg']}" for p in error.errors()
        )
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
    return event
