"""What the host hands a journal to record for a step, as JSON data, and how it reads it back.

A step records plain JSON data only, never a Python object, so that any journal can keep it
(``stageware.dbos`` records it in DBOS's step table) and a replay in another process, or
after an upgrade, reads back exactly what the first run saw. So a step's body never raises
into the journal: an exception the model or the tool raised is recorded as a description
(:func:`describe_error`), and the host raises it itself. On the first run that is the
original exception object, with its traceback and cause; on a replay, one rebuilt from the
description (:func:`rebuild_error`): the same class when that class is already imported in
the replaying process (the adapter that raised it is, as it serves the same agent), with the
same ``args`` and the attributes that were JSON data (``ModelThrottledError.retry_after``,
``status_code``...), so that hooks, the retry strategy and the loop act on it as they did;
otherwise a :class:`ReplayedError` naming the class. The rebuilt exception has no cause and
no traceback of its own: those live in the first run's logs.

Cancellation is not an outcome: a cancelled step records nothing, and runs again.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, cast, final

from stageware._runtime import Interrupt

from .sessions._encoding import json_problem

__all__ = [
    "ReplayedError",
    "describe_error",
    "describe_interrupt",
    "is_json",
    "read_interrupt",
    "rebuild_error",
]


@final
class ReplayedError(Exception):
    """An exception a journal step recorded, replayed where its class is not imported.

    Attributes:
        type_name: The recorded class, as ``module:qualified name``.
    """

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name


def is_json(value: object) -> bool:
    """Whether *value* is JSON data a journal records faithfully."""
    return json_problem(value, "value") is None


def describe_error(error: BaseException) -> dict[str, Any]:
    """*error* as JSON data: its class, message, ``args`` and JSON attributes."""
    cls = type(error)
    args = list(error.args)
    attributes = {
        name: value
        for name, value in getattr(error, "__dict__", {}).items()
        # Notes are what was added to explain it (``add_note``); no other dunder is data.
        if (name == "__notes__" or not name.startswith("__")) and is_json(value)
    }
    return {
        "type": f"{cls.__module__}:{cls.__qualname__}",
        "message": str(error),
        "args": args if is_json(args) else [str(error)],
        "attributes": attributes,
    }


def rebuild_error(description: Mapping[str, Any]) -> Exception:
    """The exception :func:`describe_error` described, as a replay raises it.

    Built without calling the class's ``__init__`` (whose parameters the description does
    not know), as ``pickle`` does: the ``args`` and the recorded attributes are set on it.
    """
    type_name = cast("str", description["type"])
    message = cast("str", description["message"])
    cls = _imported_exception_class(type_name)
    if cls is None:
        return ReplayedError(type_name, message)
    args = tuple(cast("list[Any]", description["args"]))
    try:
        error = cls.__new__(cls, *args)
        error.args = args
        for name, value in cast("dict[str, Any]", description["attributes"]).items():
            setattr(error, name, value)
    except (AttributeError, TypeError, ValueError):
        # A class that cannot be made this way (a __new__ of its own, attributes that
        # cannot be set from outside): the class name and message still tell what happened.
        return ReplayedError(type_name, message)
    return error


def _imported_exception_class(type_name: str) -> type[Exception] | None:
    """The exception class *type_name* names, if its module is imported already.

    Never imports a module: a name read from stored data does not decide what code loads.
    """
    module_name, _, qualname = type_name.partition(":")
    found: object = sys.modules.get(module_name)
    for part in qualname.split("."):
        if found is None or part.startswith("<"):  # a class defined inside a function
            return None
        found = getattr(found, part, None)
    if isinstance(found, type) and issubclass(found, Exception):
        return found
    return None


def describe_interrupt(interrupt: Interrupt) -> dict[str, Any]:
    """*interrupt* as JSON data (its reason and response are JSON, as a session keeps them)."""
    return {
        "id": interrupt.id,
        "name": interrupt.name,
        "reason": interrupt.reason,
        "response": interrupt.response,
    }


def read_interrupt(data: Mapping[str, Any]) -> Interrupt:
    """The interrupt :func:`describe_interrupt` described."""
    return Interrupt(
        id=data["id"], name=data["name"], reason=data["reason"], response=data["response"]
    )
