"""From a typed Python function to the tool description a model reads.

``function_schema`` reads a function's signature and docstring (``_docstring``) once, at
decoration time, and builds a pydantic model of its parameters. That model is both the
JSON Schema sent to the model and the validator its calls are checked against, so the two
cannot disagree. Every mistake the function's author can make here (a missing annotation,
``*args``, no description, a type pydantic cannot describe) is a ``TypeError`` naming the
function and the parameter, not a failed tool call later.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, final

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, TypeAdapter, create_model
from pydantic.fields import FieldInfo

from stageware._generated.payloads import ToolSpec
from stageware._runtime import copy_payload

from ._context import ToolContext
from ._docstring import parse_docstring

__all__ = ["FunctionSchema", "describe_tool_function", "function_schema"]

# The tool-name rule shared by the Converse, OpenAI and Anthropic APIs: checked here so a
# bad name fails when the tool is defined, not as a rejected request mid-run.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@final
@dataclass(frozen=True, slots=True)
class _Parameter:
    name: str
    keyword_only: bool
    field: str | None
    """The input model's field for this parameter; ``None`` for the injected context."""


@final
class FunctionSchema:
    """What a tool function's signature and docstring say, checked and ready to use.

    Attributes:
        name: The tool name.
        description: What the tool does, for the model.
        input_model: The pydantic model of the parameters the model supplies (the
            ``ToolContext`` parameter excluded).
        spec: The Converse tool spec, built once and never changed: the host hands this
            very object to models, and a copy to anything else (:meth:`tool_spec`).
    """

    __slots__ = ("_parameters", "description", "input_model", "name", "spec")

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_model: type[BaseModel],
        parameters: tuple[_Parameter, ...],
    ) -> None:
        self.name = name
        self.description = description
        self.input_model = input_model
        self._parameters = parameters
        self.spec: ToolSpec = {
            "name": name,
            "description": description,
            "inputSchema": {"json": input_model.model_json_schema()},
        }

    def tool_spec(self) -> ToolSpec:
        """A fresh copy of :attr:`spec`; the caller may change it without affecting the tool."""
        return copy_payload(self.spec)

    def bind(self, tool_input: object, context: ToolContext) -> tuple[list[Any], dict[str, Any]]:
        """Validate *tool_input* and return the positional and keyword arguments of the call.

        Omitted parameters get their defaults; the context goes to the ``ToolContext``
        parameter, if there is one.

        Raises:
            pydantic.ValidationError: When *tool_input* does not fit the input model.
        """
        validated = self.input_model.model_validate(tool_input)
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for parameter in self._parameters:
            value = context if parameter.field is None else getattr(validated, parameter.field)
            if parameter.keyword_only:
                kwargs[parameter.name] = value
            else:
                args.append(value)
        return args, kwargs


def function_schema(
    func: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> FunctionSchema:
    """Read *func*'s signature and docstring into a :class:`FunctionSchema`.

    Args:
        func: The tool function.
        name: The tool name; defaults to the function's ``__name__``.
        description: Replaces the docstring's description.

    Raises:
        TypeError: For a parameter without an annotation, ``*args`` or ``**kwargs``, more
            than one ``ToolContext`` parameter, a type pydantic cannot turn into JSON Schema,
            a docstring documenting a parameter the function lacks, or no description.
        ValueError: For a tool name the model APIs reject.
    """
    if not (inspect.isfunction(func) or inspect.ismethod(func)):
        raise TypeError(
            f"@tool expects a function or a bound method, got {func!r}; wrap it in a function "
            "with the parameters the model should pass"
        )
    where = describe_tool_function(func)
    tool_name = func.__name__ if name is None else name
    if _TOOL_NAME.fullmatch(tool_name) is None:
        raise ValueError(
            f"{where}: the tool name {tool_name!r} must be 1 to 64 letters, digits, '_' or '-'; "
            "pass name=... to choose another"
        )
    doc_description, doc_parameters = parse_docstring(inspect.getdoc(func))
    tool_description = doc_description if description is None else description.strip()
    if not tool_description:
        raise TypeError(
            f"{where}: the tool has no description; write a docstring or pass description=..."
        )
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except NameError as exc:
        # Deferred annotations are resolved in the function's module, not where it was
        # defined, so a type local to an enclosing function is out of reach.
        raise TypeError(
            f"{where}: cannot resolve the annotations: {exc}; string annotations (or `from "
            "__future__ import annotations`) need their types importable at module level"
        ) from exc

    signature = inspect.signature(func)
    undocumented = doc_parameters.keys() - signature.parameters.keys()
    if undocumented:
        raise TypeError(
            f"{where}: the docstring documents {_names(undocumented)}, which the function "
            "does not have"
        )
    taken = set(signature.parameters)
    fields: dict[str, Any] = {}
    parameters: list[_Parameter] = []
    context_parameter: str | None = None
    for parameter in signature.parameters.values():
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(
                f"{where}: parameter {parameter.name!r} is variadic; a tool's parameters must "
                "be named, so the model knows what to pass"
            )
        if parameter.name not in hints:
            raise TypeError(
                f"{where}: parameter {parameter.name!r} has no type annotation; annotate it so "
                "its JSON Schema can be built"
            )
        hint = hints[parameter.name]
        keyword_only = parameter.kind is inspect.Parameter.KEYWORD_ONLY
        if _is_tool_context(hint):
            if context_parameter is not None:
                raise TypeError(
                    f"{where}: parameters {context_parameter!r} and {parameter.name!r} are both "
                    "ToolContext; the host injects one context"
                )
            context_parameter = parameter.name
            parameters.append(_Parameter(parameter.name, keyword_only, None))
            continue
        field = _field_name(parameter.name, taken)
        taken.add(field)
        fields[field] = (hint, _field_info(parameter, hint, field, doc_parameters))
        parameters.append(_Parameter(parameter.name, keyword_only, field))

    try:
        # extra="forbid": a misspelt optional argument is reported to the model instead
        # of being dropped silently, and the schema says additionalProperties: false.
        input_model = create_model(tool_name, __config__=ConfigDict(extra="forbid"), **fields)
        return FunctionSchema(
            name=tool_name,
            description=tool_description,
            input_model=input_model,
            parameters=tuple(parameters),
        )
    except (PydanticUserError, TypeError, ValueError) as exc:
        raise TypeError(f"{where}: {_schema_failure(fields, parameters, exc)}") from exc


def describe_tool_function(func: Callable[..., Any]) -> str:
    """How error messages name a tool function: ``@tool module.qualname``."""
    return f"@tool {func.__module__}.{func.__qualname__}"


def _is_tool_context(hint: object) -> bool:
    if typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    if hint is ToolContext:
        return True
    # `context: ToolContext | None = None` lets the function also be called directly.
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return set(typing.get_args(hint)) == {ToolContext, type(None)}
    return False


def _field_name(parameter: str, taken: set[str]) -> str:
    # pydantic drops fields starting with "_" and refuses or warns on names that shadow
    # BaseModel members ("json", "copy", "model_config"); such a parameter gets another
    # field name and keeps its own name as the alias the model sees.
    if not parameter.startswith(("_", "model_")) and not hasattr(BaseModel, parameter):
        return parameter
    field = f"field_{parameter.lstrip('_')}"
    while field in taken or hasattr(BaseModel, field):
        field += "_"
    return field


def _field_info(
    parameter: inspect.Parameter, hint: object, field: str, doc_parameters: Mapping[str, str]
) -> FieldInfo:
    options: dict[str, Any] = {}
    if parameter.default is not inspect.Parameter.empty:
        options["default"] = parameter.default
    if field != parameter.name:
        options["alias"] = parameter.name
    # A description given with Annotated[..., Field(description=...)] is the more specific
    # one; pydantic would let the docstring's replace it, so only fill a missing one.
    doc = doc_parameters.get(parameter.name)
    if doc and not _has_annotated_description(hint):
        options["description"] = doc
    info: FieldInfo = Field(**options)
    return info


def _has_annotated_description(hint: object) -> bool:
    if typing.get_origin(hint) is not Annotated:
        return False
    return any(
        isinstance(meta, FieldInfo) and meta.description is not None
        for meta in typing.get_args(hint)[1:]
    )


def _schema_failure(fields: Mapping[str, Any], parameters: list[_Parameter], exc: Exception) -> str:
    # The model-level error does not say which parameter caused it; trying each type on
    # its own finds the one to name.
    for parameter in parameters:
        if parameter.field is None:
            continue
        hint = fields[parameter.field][0]
        try:
            TypeAdapter(hint).json_schema()
        except (PydanticUserError, TypeError, ValueError) as field_exc:
            return (
                f"parameter {parameter.name!r} has type {_type_name(hint)}, which pydantic "
                f"cannot turn into JSON Schema: {_first_sentence(field_exc)}"
            )
    return f"cannot build the input schema: {_first_sentence(exc)}"


def _first_sentence(exc: Exception) -> str:
    # pydantic's messages go on with advice for model authors (arbitrary_types_allowed,
    # __get_pydantic_core_schema__) that a tool author cannot act on, and a URL; the full
    # message stays available as the TypeError's __cause__.
    return str(exc).partition("\n")[0].partition(". ")[0]


def _type_name(hint: object) -> str:
    return hint.__qualname__ if isinstance(hint, type) else repr(hint)


def _names(names: set[str]) -> str:
    return ", ".join(repr(name) for name in sorted(names))
