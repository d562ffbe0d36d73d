"""Tool results the host builds or checks before they enter the history."""

from __future__ import annotations

import functools

from pydantic import TypeAdapter, ValidationError

from stageware._generated.payloads import ToolResult
from stageware._host._pydantic_errors import error_location

__all__ = ["error_result", "invalid_result_reason"]


def error_result(tool_use_id: str, text: str) -> ToolResult:
    """An error result carrying *text* for the model."""
    return {"toolUseId": tool_use_id, "status": "error", "content": [{"text": text}]}


@functools.cache
def _tool_result_adapter() -> TypeAdapter[ToolResult]:
    return TypeAdapter(ToolResult)


def invalid_result_reason(result: object) -> str | None:
    """Why *result* is not a Converse ``ToolResult``, or ``None`` when it is one.

    A result enters the history, the session and every later request to the model; a
    malformed one would fail there, far from the tool or middleware that produced it.
    """
    try:
        _tool_result_adapter().validate_python(result, strict=True)
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        where = error_location(problem["loc"]) or "the result"
        return f"{where}: {problem['msg']}"
    return None
