"""The resolved schema: every name checked, every type parsed, ready to render.

:mod:`.schema` builds these objects from the validated document; the renderers only
read them. Declared order is kept everywhere, since it decides field order in generated
classes and the order of bands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stageware_codegen.load.spec import CopyMode, ReplaceMode

from .type_exprs import NameKind, TypeExpr

__all__ = [
    "ContextField",
    "Event",
    "EventKey",
    "ExternalType",
    "Field",
    "HookPoint",
    "Hooks",
    "IdPart",
    "Schema",
    "Stage",
]


@dataclass(frozen=True, slots=True)
class ExternalType:
    """A type the schema names but does not define; imported from ``module``."""

    name: str
    module: str
    attr: str
    doc: str | None


@dataclass(frozen=True, slots=True)
class Field:
    """A field of an event or a hook payload."""

    name: str
    type: TypeExpr
    doc: str | None
    has_default: bool
    default: Any


@dataclass(frozen=True, slots=True)
class EventKey:
    """``event[name]``: one field (``single``) or a tuple of fields."""

    name: str
    fields: tuple[str, ...]
    single: bool


@dataclass(frozen=True, slots=True)
class Event:
    """A stage event class."""

    name: str
    doc: str
    interrupt: bool
    fields: tuple[Field, ...]
    keys: tuple[EventKey, ...]


@dataclass(frozen=True, slots=True)
class ContextField:
    """A context field; ``type`` is None only for excluded fields."""

    name: str
    type: TypeExpr | None
    doc: str
    copy: CopyMode
    replace: ReplaceMode
    why: str | None
    has_default: bool
    default: Any


@dataclass(frozen=True, slots=True)
class IdPart:
    """One piece of an interrupt-id template.

    Exactly one of: ``literal`` text, the interrupt ``name_hash``, or a context ``field``
    indexed by ``keys`` (``{tool_use[toolUseId]}``) or read by ``attrs``
    (``{agent.agent_id}``).
    """

    literal: str | None = None
    name_hash: bool = False
    field: str | None = None
    keys: tuple[str | int, ...] = ()
    attrs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Stage:
    """A middleware stage."""

    name: str
    doc: str
    result: str
    events: tuple[str, ...]
    interrupt_id: tuple[IdPart, ...] | None
    context: tuple[ContextField, ...]


@dataclass(frozen=True, slots=True)
class HookPoint:
    """A policy hook point and the pydantic event class it receives."""

    name: str
    event: str
    stage: str
    phase: str
    direction: str
    doc: str
    payload: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class Hooks:
    """Hook points with their bands (outermost first) and directions."""

    bands: tuple[tuple[str, str], ...]
    directions: tuple[tuple[str, str], ...]
    points: tuple[HookPoint, ...]


@dataclass(frozen=True, slots=True)
class Schema:
    """The whole resolved schema.

    Attributes:
        payload_defs: JSON Schema ``$defs`` of every payload file, merged, in file order.
        kinds: Every name a type expression may use, and where it is defined.
    """

    payload_defs: Mapping[str, Mapping[str, Any]]
    externals: tuple[ExternalType, ...]
    events: tuple[Event, ...]
    stages: tuple[Stage, ...]
    hooks: Hooks | None
    kinds: Mapping[str, NameKind]
