"""An exception a step raised, as JSON data, and raised again from it on a replay.

DBOS would pickle the exception, and many exceptions do not come back from a pickle
(one whose ``__init__`` takes keyword-only arguments, as ``SessionTimeoutError``'s does,
fails to load). So the journal records the exception's type (module and qualified name),
its ``args`` and the attributes in its ``__dict__`` that are JSON data, and a replay
builds it again from those without calling ``__init__``: the same type, the same
``str()``, the same attributes. An exception that cannot be built that way (its type is
not importable, such as a class defined in a function, or its message depends on state
that is not JSON data) is checked when it is recorded, and replayed as a
``ReplayedStepError`` naming the original type and message.

The traceback, ``__cause__`` and ``__context__`` are not kept: a replay raises from the
journal, not from the code that failed.
"""

from __future__ import annotations

import importlib
import json
from typing import Any, final

__all__ = ["ReplayedStepError", "error_data", "raised_error"]


@final
class ReplayedStepError(RuntimeError):
    """A recorded step's exception that could not be rebuilt as its own type on a replay.

    Attributes:
        type_name: The original exception's type, ``module:qualified name``.
        message: The original exception's ``str()``.
    """

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


def error_data(error: BaseException) -> dict[str, Any]:
    """*error* as JSON data, checked now to rebuild as the same type and message."""
    kind = type(error)
    data: dict[str, Any] = {
        "type": f"{kind.__module__}:{kind.__qualname__}",
        "message": _text(error),
        "args": list(error.args) if _is_json(list(error.args)) else None,
        "attributes": {
            name: value
            for name, value in getattr(error, "__dict__", {}).items()
            if not name.startswith("__") and _is_json(value)
        },
    }
    rebuilt = _rebuilt(data)
    data["exact"] = (
        rebuilt is not None and type(rebuilt) is kind and _text(rebuilt) == data["message"]
    )
    return data


def raised_error(data: dict[str, Any]) -> BaseException:
    """The exception :func:`error_data` recorded as *data*, to raise."""
    rebuilt = _rebuilt(data) if data["exact"] else None
    if rebuilt is None:
        return ReplayedStepError(data["type"], data["message"])
    return rebuilt


def _rebuilt(data: dict[str, Any]) -> BaseException | None:
    module_name, _, qualname = str(data["type"]).partition(":")
    try:
        found: object = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    if not isinstance(found, type) or not issubclass(found, BaseException):
        return None
    try:
        error = found.__new__(found)
        args = data["args"]
        error.args = tuple(args) if args is not None else (data["message"],)
        for name, value in data["attributes"].items():
            setattr(error, name, value)
    except Exception:
        return None
    return error


def _text(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:
        return repr(error)


def _is_json(value: object) -> bool:
    """Whether *value* is JSON data that comes back from JSON unchanged (no tuples)."""
    try:
        return bool(json.loads(json.dumps(value)) == value)
    except (TypeError, ValueError, RecursionError):
        return False
