"""The stage schema's shape, as pydantic models.

These models check the local shape of the YAML: which keys exist, their value types, and
the spelling of every name. Cross-references (a stage's result event exists, a type
expression names known types, a default fits its type) need the whole document and are
checked afterwards by :mod:`._resolve`. Pydantic's errors are translated into
``file:line: path: message`` diagnostics here.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
)
from pydantic_core import ErrorDetails

from ._errors import DocPath, ErrorCollector, did_you_mean, show_value
from ._names import (
    check_field_name,
    check_hook_point_name,
    check_lower_name,
    check_python_path,
    check_type_name,
)
from ._source import as_list
from ._text import check_doc

__all__ = [
    "ContextFieldSpec",
    "CopyMode",
    "EventFieldSpec",
    "EventSpec",
    "ExternalTypeSpec",
    "HookFieldSpec",
    "HookPointSpec",
    "HooksSpec",
    "InterruptSpec",
    "ReplaceMode",
    "SchemaSpec",
    "StageSpec",
    "parse_schema",
]

TypeName = Annotated[str, AfterValidator(check_type_name)]
FieldName = Annotated[str, AfterValidator(check_field_name)]
LowerName = Annotated[str, AfterValidator(check_lower_name)]
HookPointName = Annotated[str, AfterValidator(check_hook_point_name)]
PythonPath = Annotated[str, AfterValidator(check_python_path)]
Doc = Annotated[str, AfterValidator(check_doc)]

CopyMode = Literal["deep", "shallow", "reference", "excluded"]
ReplaceMode = Literal["allowed", "forbidden", "unhonoured"]
PhaseName = Literal["Input", "Wrap", "Output"]


def _key_selection(value: object) -> str | tuple[str, ...]:
    # A plain validator keeps errors at the key itself: a `str | list[str]` union would
    # report one error per union member, under member tags that are not document paths.
    if isinstance(value, str):
        return value
    items = as_list(value)
    if items and all(isinstance(item, str) for item in items):
        return tuple(str(item) for item in items)
    raise ValueError("expected a field name or a non-empty list of field names")


KeySelection = Annotated[str | tuple[str, ...], PlainValidator(_key_selection)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=False)

    def has(self, name: str) -> bool:
        """Whether *name* was written in the document (distinguishes `default: null`)."""
        return name in self.model_fields_set


class ExternalTypeSpec(_Spec):
    """A Python type defined outside the schema that type expressions may name."""

    python: PythonPath
    doc: Doc | None = None


class EventFieldSpec(_Spec):
    """One field of a stage event."""

    type: str
    doc: Doc | None = None
    default: Any = None


class EventSpec(_Spec):
    """A stage event: a frozen dataclass that flows through a stage's chain."""

    doc: Doc
    interrupt: bool = False
    fields: dict[FieldName, EventFieldSpec] = Field(default_factory=dict[str, EventFieldSpec])
    keys: dict[LowerName, KeySelection] = Field(default_factory=dict[str, str | tuple[str, ...]])


class ContextFieldSpec(_Spec):
    """One field of a stage context, with how the host copies it and who may replace it."""

    type: str | None = None
    doc: Doc
    # `copy` would shadow BaseModel.copy, so the attribute has another name.
    copy_mode: CopyMode = Field(alias="copy")
    replace: ReplaceMode = "allowed"
    why: Doc | None = None
    default: Any = None


class InterruptSpec(_Spec):
    """Makes a stage's context interruptible; ``id`` is the interrupt-id template."""

    id: str


class StageSpec(_Spec):
    """A middleware stage."""

    doc: Doc
    internal: bool = False
    result: TypeName
    events: list[TypeName] = Field(min_length=1)
    interrupt: InterruptSpec | None = None
    context: dict[FieldName, ContextFieldSpec] = Field(min_length=1)


class HookFieldSpec(_Spec):
    """One payload field of a hook event (JSON data)."""

    type: str
    doc: Doc | None = None
    default: Any = None


class HookPointSpec(_Spec):
    """A named policy hook point: a stage, a phase and a direction."""

    event: TypeName
    stage: TypeName
    phase: PhaseName
    direction: LowerName
    doc: Doc
    payload: dict[FieldName, HookFieldSpec] = Field(default_factory=dict[str, HookFieldSpec])


class HooksSpec(_Spec):
    """The policy layer's hook points, bands (outermost first) and directions."""

    bands: dict[LowerName, Doc] = Field(min_length=1)
    directions: dict[LowerName, Doc]
    points: dict[HookPointName, HookPointSpec] = Field(min_length=1)


class SchemaSpec(_Spec):
    """The whole stage schema document."""

    version: Literal[1]
    payloads: list[str] = Field(default_factory=list[str])
    types: dict[TypeName, ExternalTypeSpec] = Field(default_factory=dict[str, ExternalTypeSpec])
    events: dict[TypeName, EventSpec] = Field(min_length=1)
    stages: dict[TypeName, StageSpec] = Field(min_length=1)
    hooks: HooksSpec | None = None


def parse_schema(data: Any, errors: ErrorCollector) -> SchemaSpec | None:
    """Validate *data* against :class:`SchemaSpec`, recording problems in *errors*."""
    try:
        return SchemaSpec.model_validate(data)
    except ValidationError as exc:
        for detail in exc.errors(include_url=False):
            path, message = _translate(detail)
            errors.add(path, message)
        return None


def _translate(detail: ErrorDetails) -> tuple[DocPath, str]:
    """Turn one pydantic error into a document path and a message in schema terms."""
    loc = tuple(detail["loc"])
    kind = detail["type"]
    if loc and loc[-1] == "[key]":
        # Errors about a mapping key: the path is the key itself.
        loc = loc[:-1]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        return loc, f"unknown key {key!r}" + did_you_mean(key, _expected_keys(loc[:-1]))
    if kind == "missing":
        return loc, f"missing required key {loc[-1]!r}"
    if kind in ("value_error", "assertion_error"):
        return loc, str(detail.get("ctx", {}).get("error", detail["msg"]))
    if kind == "literal_error":
        got = detail["input"]
        expected = str(detail.get("ctx", {}).get("expected", ""))
        hint = did_you_mean(got, expected.replace("'", "").replace(" or ", ", ").split(", "))
        return loc, f"expected {expected}, got {show_value(got)}{hint}"
    return loc, f"{detail['msg'][0].lower()}{detail['msg'][1:]}, got {show_value(detail['input'])}"


def _expected_keys(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the model at *loc* accepts, for "did you mean" hints."""
    annotation: Any = SchemaSpec
    for part in loc:
        annotation = _step(annotation, part)
        if annotation is None:
            return []
    model = _unwrap_model(annotation)
    return list(model.model_fields) if model is not None else []


def _step(annotation: Any, part: int | str) -> Any:
    model = _unwrap_model(annotation)
    if model is not None:
        field = model.model_fields.get(str(part))
        return None if field is None else field.annotation
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        return args[1]
    if origin is list and args:
        return args[0]
    return None


def _unwrap_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    return None
