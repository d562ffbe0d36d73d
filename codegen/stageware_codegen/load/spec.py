"""The stage schema's shape, as pydantic models.

These models check the local shape of the YAML: which keys exist, their value types, and
the spelling of every name. Cross-references (a stage's result event exists, a type
expression names known types, a default fits its type) need the whole document and are
checked afterwards by :mod:`stageware_codegen.resolve`. Pydantic's errors are translated into schema
terms by :mod:`.validation_messages`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
)

from .diagnostics import ErrorCollector
from .docs import check_doc
from .documents import as_list
from .names import (
    check_field_name,
    check_hook_point_name,
    check_lower_name,
    check_python_path,
    check_type_name,
)
from .validation_messages import translate

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
        for problem in translate(exc.errors(include_url=False), SchemaSpec):
            errors.add(problem.path, problem.message)
        return None
