"""Every name a generated module binds that the schema does not declare.

A generated module binds three kinds of names at module level: names it imports
(``Iterator``, ``Final``, ``BaseModel``, the runtime's), names its template defines
(``HookPoint``, ``_Default``), and names the schema declares (events, payload types,
external types, hook events, the names generated for each stage). The first two kinds
are listed here, and a schema name that is one of them is an error at its place in the
schema: ``class Iterator`` next to ``from collections.abc import Iterator`` would make
the generated package fail both type checkers.

The lists cannot fall behind the code that writes the imports. The render step's
``Imports`` refuses any name that is not in :data:`TEMPLATE_IMPORTS`; the names
datamodel-code-generator imports are checked against :data:`DATAMODEL_IMPORTS` when it
runs; and a test parses every generated module and checks that each name it binds is
either the schema's or listed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    "DATAMODEL_IMPORTS",
    "MODULE_ALIASES",
    "RESERVED",
    "RUNTIME_MODULE",
    "TEMPLATE_DEFINITIONS",
    "TEMPLATE_IMPORTS",
]

RUNTIME_MODULE: Final = "stageware.runtime"

TEMPLATE_IMPORTS: Final[Mapping[str, frozenset[str]]] = {
    "collections.abc": frozenset({"Callable", "Coroutine", "Iterator", "Mapping", "Sequence"}),
    "dataclasses": frozenset({"dataclass", "field"}),
    "datetime": frozenset({"timedelta"}),
    "enum": frozenset({"StrEnum"}),
    "pydantic": frozenset({"BaseModel", "ConfigDict", "Field"}),
    RUNTIME_MODULE: frozenset(
        {
            "AsyncInputHandler",
            "AsyncOutputHandler",
            "CallInterrupts",
            "InputHandler",
            "Interrupt",
            "MiddlewareInterruptResult",
            "MiddlewareResult",
            "MiddlewareStage",
            "NextFn",
            "OutputHandler",
            "Phase",
            "UNSET",
            "Unset",
            "WrapHandler",
            "copy_payload",
            "interrupt_name_hash",
            "resolve_middleware_interrupt",
        }
    ),
    "types": frozenset({"MappingProxyType"}),
    "typing": frozenset(
        {
            "Annotated",
            "Any",
            "ClassVar",
            "Final",
            "Literal",
            "Protocol",
            "TYPE_CHECKING",
            "TypeAlias",
            "TypeVar",
            "final",
            "overload",
        }
    ),
}
"""What the modules rendered from templates may import, by module."""

MODULE_ALIASES: Final[Mapping[str, str]] = {"copy": "_copy"}
"""Modules the templates import whole, and the name each is bound to."""

DATAMODEL_IMPORTS: Final[Mapping[str, frozenset[str]]] = {
    "typing": frozenset({"Any", "Literal", "NotRequired", "TypeAlias"}),
    "typing_extensions": frozenset({"TypedDict"}),
}
"""What datamodel-code-generator imports into ``payloads.py``, for the JSON Schema
subset the schema may use (see :mod:`.payload_subset`)."""

TEMPLATE_DEFINITIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "events.py": ("_Default",),
    "policy_points.py": (
        "BANDS",
        "HOOK_POINTS",
        "Band",
        "Direction",
        "HookEvent",
        "HookPoint",
        "HookPointSpec",
    ),
    "policy_decorator.py": (
        "FailModeRequired",
        "HookCollection",
        "MiddlewareDeclaration",
        "MiddlewareTarget",
        "PolicyCallable",
        "_DefT_co",
        "_EnvT",
        "_EnvT_co",
        "_EnvT_contra",
        "_EventT",
        "_EventT_contra",
        "_OutT",
        "_OutT_co",
        "_OutT_contra",
        "_PointT_co",
    ),
}
"""Names the templates define whatever the schema says, by generated module."""


def _origins() -> dict[str, str]:
    origins: dict[str, str] = {}
    for imports in (TEMPLATE_IMPORTS, DATAMODEL_IMPORTS):
        for module, names in imports.items():
            for name in names:
                origins.setdefault(name, f"imports it from {module}")
    for module, alias in MODULE_ALIASES.items():
        origins[alias] = f"imports {module} under that name"
    for file, defined in TEMPLATE_DEFINITIONS.items():
        for name in defined:
            origins[name] = f"defines it in {file}"
    return origins


RESERVED: Final[Mapping[str, str]] = _origins()
"""Every reserved name, and what the generated code does with it (for messages)."""
