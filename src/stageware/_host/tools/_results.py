"""Tool results the host builds or checks before they enter the history."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from stageware._data_paths import format_path
from stageware._generated.payloads import ToolResult

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["error_result", "exception_result", "invalid_result_reason"]


def error_result(tool_use_id: str, text: str) -> ToolResult:
    """An error result carrying *text* for the model."""
    return {"toolUseId": tool_use_id, "status": "error", "content": [{"text": text}]}


def exception_result(tool_use_id: str, error: BaseException) -> ToolResult:
    """The error result for a call that failed with *error*: ``"Error: <message>"``.

    An exception without a message is named by its type, so the model still reads what
    went wrong.
    """
    return error_result(tool_use_id, f"Error: {str(error) or type(error).__qualname__}")


@functools.cache
def _tool_result_adapter() -> TypeAdapter[ToolResult]:
    # Built, and pydantic imported, with the first result checked rather than at import.
    from pydantic import TypeAdapter

    return TypeAdapter(ToolResult)


def invalid_result_reason(result: object) -> str | None:
    """Why *result* is not a Converse ``ToolResult``, or ``None`` when it is one.

    A result enters the history, the session and every later request to the model; a
    malformed one would fail there, far from the tool or middleware that produced it.
    """
    from pydantic import ValidationError

    try:
        _tool_result_adapter().validate_python(result, strict=True)
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        where = format_path(problem["loc"]) or "the result"
        return f"{where}: {problem['msg']}"
    return None
