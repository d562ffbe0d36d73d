"""The ``@tool`` decorator: a typed Python function as an ``AgentTool``.

The decorated function keeps its signature and can still be called directly; the host
calls it through ``stream()``, which validates the model's input against the function's
parameters, injects the ``ToolContext``, runs the function (sync functions in a worker
thread) and turns what it returns or raises into events. A tool failure becomes an error
result the model can read and react to; only interrupts and cancellation leave ``stream()``
as something other than a result.

pydantic, which describes and checks a tool's parameters, is imported with the first
tool built, not with stageware: an agent without ``@tool`` functions never needs it.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, cast, final, overload

import anyio.to_thread

from stageware._data_paths import format_path
from stageware._generated.events import (
    ExecuteToolEvent,
    ToolInterruptEvent,
    ToolResultEvent,
    ToolStreamEvent,
)
from stageware._generated.payloads import ToolResult, ToolResultContent, ToolSpec, ToolUse
from stageware._host._shorten import shorten
from stageware._runtime import InterruptException

from ._context import ToolContext
from ._results import error_result, exception_result

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

    from ._spec import FunctionSchema

__all__ = ["FunctionTool", "fixed_tool_spec", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

# How much of a rejected input value an error message quotes back to the model.
_MAX_INPUT_REPR = 120


class _Kind(enum.Enum):
    SYNC = "sync"
    ASYNC = "async"
    ASYNC_GENERATOR = "async generator"


@final
class FunctionTool(Generic[P, R]):
    """A function the model can call, built by ``tool``.

    Calling the object calls the function unchanged (a coroutine function returns its
    coroutine). The host uses ``stream`` instead.
    """

    # Set by functools.update_wrapper, declared so checkers know the wrapper has them.
    __name__: str
    __wrapped__: Callable[P, R]

    def __init__(
        self,
        func: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        """Wrap *func*; see ``tool`` for what is checked and the errors raised."""
        from ._spec import describe_tool_function, function_schema

        self._func = func
        # The host calls with the arguments it built from the model's input, which the
        # ParamSpec cannot describe; this is the same function, seen untyped.
        self._call: Callable[..., Any] = func
        self._kind = (
            _Kind.ASYNC_GENERATOR
            if inspect.isasyncgenfunction(func)
            else _Kind.ASYNC
            if inspect.iscoroutinefunction(func)
            else _Kind.SYNC
        )
        self._schema: FunctionSchema = function_schema(func, name=name, description=description)
        if inspect.isgeneratorfunction(func):
            raise TypeError(
                f"{describe_tool_function(func)}: a generator function cannot be a tool; "
                "make it an `async def` generator to stream its values"
            )
        # __name__, __doc__ and __wrapped__, so introspection (inspect.signature, help())
        # sees the function rather than the wrapper.
        functools.update_wrapper(self, func)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function directly, bypassing validation and the host."""
        return self._func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionTool(name={self._schema.name!r})"

    @property
    def tool_name(self) -> str:
        """The name the model calls the tool by."""
        return self._schema.name

    @property
    def tool_spec(self) -> ToolSpec:
        """The Converse tool spec: name, description and the parameters' JSON Schema.

        A fresh copy on every access, so a caller that edits it does not change the tool.
        """
        return self._schema.tool_spec()

    @property
    def input_model(self) -> type[BaseModel]:
        """The pydantic model the model's input is validated against."""
        return self._schema.input_model

    async def stream(
        self, tool_use: ToolUse, context: ToolContext
    ) -> AsyncGenerator[ExecuteToolEvent, None]:
        """Run the tool for *tool_use* and yield its events.

        Invalid input yields an error result naming the offending fields. Values an async
        generator function yields are streamed as ``ToolStreamEvent``; the last of them is
        the result. What the function returns becomes a ``ToolResultEvent``; an exception
        it raises becomes an error result with ``exception`` set, except
        ``InterruptException``, which becomes a ``ToolInterruptEvent``. Cancellation
        propagates, without waiting for a sync function's thread.

        Typed as an async generator (a kind of ``AsyncIterator``, as ``AgentTool`` asks)
        so a caller that stops early can ``aclose()`` it and the function's own generator
        is closed with it.
        """
        from pydantic import ValidationError

        try:
            args, kwargs = self._schema.bind(tool_use["input"], context)
        except ValidationError as exc:
            text = _describe_validation_error(self._schema.name, exc)
            yield ToolResultEvent(
                tool_result=error_result(tool_use["toolUseId"], text), exception=exc
            )
            return

        result: object = None
        if self._kind is _Kind.ASYNC_GENERATOR:
            generator: AsyncGenerator[object, None] = self._call(*args, **kwargs)
            async with aclosing(generator):
                while True:
                    # Only the tool's own step is guarded: an exception thrown in at our
                    # yield belongs to the consumer and must not become a tool result.
                    try:
                        result = await anext(generator)
                    except StopAsyncIteration:
                        break
                    except Exception as exc:
                        yield _failure_event(tool_use, exc)
                        return
                    yield ToolStreamEvent(tool_use=tool_use, data=result)
        else:
            try:
                if self._kind is _Kind.ASYNC:
                    result = await self._call(*args, **kwargs)
                else:
                    # A worker thread, so a blocking tool neither stalls the event loop
                    # nor serialises tools the host runs concurrently. A thread cannot be
                    # killed: cancelled, the call stops waiting for it and whatever the
                    # function returns later is dropped.
                    result = await anyio.to_thread.run_sync(
                        functools.partial(self._call, *args, **kwargs), abandon_on_cancel=True
                    )
            except Exception as exc:
                yield _failure_event(tool_use, exc)
                return
        yield _result_event(tool_use, result)


def fixed_tool_spec(agent_tool: object) -> ToolSpec | None:
    """A ``@tool``'s spec itself, not a copy; ``None`` for any other tool.

    A ``@tool``'s spec is fixed when the function is decorated, so an agent reads it once
    and hands this one object to every model call no handler sees (a handler gets a
    copy). The host never changes it, and a model must not (the ``Model`` protocol says
    so); FunctionTool's public surface only hands out copies.
    """
    if not isinstance(agent_tool, FunctionTool):
        return None
    return agent_tool._schema.spec  # pyright: ignore[reportPrivateUsage]


@overload
def tool(
    func: Callable[P, R], /, *, name: str | None = None, description: str | None = None
) -> FunctionTool[P, R]: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    func: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Turn a typed function into a tool: ``@tool`` or ``@tool(name=..., description=...)``.

    The input schema is built from the parameters' annotations and defaults
    (``Annotated[T, Field(description=...)]`` is honoured), parameter descriptions come
    from the docstring's ``Args:`` section, and the tool's description is the docstring's
    text before its sections. A parameter annotated ``ToolContext`` (or
    ``ToolContext | None``) receives the host's context and is not part of the schema.

    What the function returns becomes the result: a ``str`` a text block, ``None`` an
    empty text block, a dict with ``status`` and ``content`` (and nothing else but
    ``toolUseId``) the result itself, anything else one JSON block.

    Args:
        func: The function, when used as a bare decorator.
        name: The tool name; defaults to the function's name.
        description: Replaces the docstring's description.

    Raises:
        TypeError: When a parameter has no annotation, is ``*args`` or ``**kwargs``, or
            has a type pydantic cannot describe; when the docstring documents a parameter
            the function lacks; when there is neither a docstring nor *description*; for
            a (non-async) generator function.
        ValueError: For a tool name the model APIs would reject.
    """
    if func is not None:
        return FunctionTool(func, name=name, description=description)

    def decorate(func: Callable[P, R]) -> FunctionTool[P, R]:
        return FunctionTool(func, name=name, description=description)

    return decorate


def _result_event(tool_use: ToolUse, value: object) -> ToolResultEvent:
    tool_use_id = tool_use["toolUseId"]
    if value is None:
        # One (empty) text block rather than no content: some model APIs reject a tool
        # result without content, and "returned nothing" reads as success.
        return ToolResultEvent(
            tool_result={"toolUseId": tool_use_id, "status": "success", "content": [{"text": ""}]}
        )
    if isinstance(value, str):
        return ToolResultEvent(
            tool_result={
                "toolUseId": tool_use_id,
                "status": "success",
                "content": [{"text": value}],
            }
        )
    own = _as_tool_result(value)
    if own is not None:
        return ToolResultEvent(tool_result={**own, "toolUseId": tool_use_id})
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        data = to_jsonable_python(value)
    except PydanticSerializationError as exc:
        text = f"Error: the tool returned a {type(value).__qualname__}, which is not JSON data"
        return ToolResultEvent(tool_result=error_result(tool_use["toolUseId"], text), exception=exc)
    return ToolResultEvent(
        tool_result={"toolUseId": tool_use_id, "status": "success", "content": [{"json": data}]}
    )


def _as_tool_result(value: object) -> ToolResult | None:
    # Strict on purpose: an ordinary dict that merely has "status" and "content" keys
    # (an HTTP response, say) is data for the model, not a result the tool assembled.
    if not isinstance(value, Mapping):
        return None
    # isinstance cannot narrow the key and value types; the checks below do.
    mapping = cast("Mapping[object, object]", value)
    if not {"status", "content"} <= mapping.keys() <= {"status", "content", "toolUseId"}:
        return None
    status = mapping["status"]
    content = mapping["content"]
    if status not in ("success", "error") or not isinstance(content, list):
        return None
    # The blocks are the tool's own; their shape is its responsibility.
    blocks = cast("list[ToolResultContent]", content)
    return {
        "toolUseId": "",
        "status": "success" if status == "success" else "error",
        "content": list(blocks),
    }


def _failure_event(tool_use: ToolUse, exc: Exception) -> ExecuteToolEvent:
    if isinstance(exc, InterruptException):
        # No result: the host registers the interrupt and halts the run; on resume the
        # tool runs again and context.interrupt() returns the answer.
        return ToolInterruptEvent(tool_use=tool_use, interrupts=[exc.interrupt])
    return ToolResultEvent(tool_result=exception_result(tool_use["toolUseId"], exc), exception=exc)


def _describe_validation_error(tool_name: str, exc: ValidationError) -> str:
    # Written for the model to correct its call: the field path, pydantic's message and
    # the rejected value, without pydantic's URLs and internal error types.
    lines = [f"Error: invalid input for tool {tool_name!r}:"]
    for error in exc.errors(include_url=False):
        where = format_path(error["loc"]) or "input"
        message = error["msg"]
        if error["type"] != "missing":
            message += f" (got {_short_repr(error['input'])})"
        lines.append(f"- {where}: {message}")
    return "\n".join(lines)


def _short_repr(value: object) -> str:
    return shorten(repr(value), _MAX_INPUT_REPR)
