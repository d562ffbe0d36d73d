"""Views of the policy surface: hook points and bands, hook events, the decorator's type.

The three modules are generated from the schema's ``hooks`` section. They import only
public stageware modules and each other, never the policy layer, which sits above the
generated package: what the decorator's signature needs from that layer (the declared
middleware, the handler's ``env``, its outcome) is a type parameter the layer binds.
"""

from __future__ import annotations

from typing import Any

from stageware_codegen.load.names import enum_member
from stageware_codegen.load.reserved import RUNTIME_MODULE, TEMPLATE_DEFINITIONS
from stageware_codegen.resolve import ir as _ir

from .docstrings import docstring
from .imports import Imports
from .viewkit import MEMBER, ModuleView

__all__ = ["policy_decorator_view", "policy_events_view", "policy_points_view"]

_HOOK_DOC = "Names the hook point; the discriminator of ``HookEvent``."


def policy_points_view(hooks: _ir.Hooks) -> dict[str, Any]:
    """The view of ``policy_points.py``: hook point, band and direction enums, the point table."""
    imports = Imports()
    imports.add("collections.abc", "Mapping")
    imports.add("dataclasses", "dataclass")
    imports.add("enum", "StrEnum")
    imports.add("types", "MappingProxyType")
    for name in ("Annotated", "Any", "Final", "TypeAlias", "final"):
        imports.add("typing", name)
    imports.add("pydantic", "BaseModel")
    imports.add("pydantic", "Field")
    imports.add(RUNTIME_MODULE, "MiddlewareStage")
    imports.add(RUNTIME_MODULE, "Phase")
    for point in hooks.points:
        imports.add(".stages", f"{point.stage}Stage")
        imports.add(".policy_events", point.event)

    def members(items: list[tuple[str, str]]) -> list[dict[str, str]]:
        return [
            {
                "member": enum_member(value),
                "value": repr(value),
                "docstring": docstring(doc, MEMBER),
            }
            for value, doc in items
        ]

    return {
        "doc": "Policy hook points, bands and directions, and the hook event union.",
        "imports": imports.lines(),
        "points": members([(point.name, point.doc) for point in hooks.points]),
        "bands": members(list(hooks.bands)),
        "directions": members(list(hooks.directions)),
        "specs": [
            {
                "member": enum_member(point.name),
                "stage": f"{point.stage}Stage",
                "phase": point.phase.upper(),
                "direction": enum_member(point.direction),
                "event": point.event,
            }
            for point in hooks.points
        ],
        "band_members": [enum_member(name) for name, _ in hooks.bands],
        "events": [point.event for point in hooks.points],
        # The hook event classes are re-exported here, next to the enums, so that this
        # module is the one namespace of the policy surface.
        "exported": [
            repr(name)
            for name in sorted(
                [
                    *TEMPLATE_DEFINITIONS["policy_points.py"],
                    *(point.event for point in hooks.points),
                ],
                key=lambda name: (not name.isupper(), name),
            )
        ],
    }


def policy_events_view(schema: _ir.Schema, hooks: _ir.Hooks) -> dict[str, Any]:
    """The view of ``policy_events.py``: one pydantic model per hook point.

    Fields are typed with the payload TypedDicts themselves, imported from ``payloads``,
    so pydantic validates nested payloads against the one definition of each type.
    """
    module = ModuleView(schema, ".policy_events")
    module.imports.add("pydantic", "BaseModel")
    module.imports.add("pydantic", "ConfigDict")
    module.imports.add("typing", "ClassVar")
    module.imports.add("typing", "Literal")
    events: list[dict[str, Any]] = []
    for point in hooks.points:
        fields = [
            {
                "name": field.name,
                "annotation": module.use_type(field.type),
                # pydantic copies a mutable default for each instance: repr() is enough.
                "default": repr(field.default) if field.has_default else None,
                "docstring": None if field.doc is None else docstring(field.doc, MEMBER),
            }
            for field in point.payload
        ]
        events.append(
            {
                "name": point.event,
                "docstring": docstring(point.doc, MEMBER),
                "hook": repr(point.name),
                "hook_docstring": docstring(_HOOK_DOC, MEMBER),
                "fields": fields,
            }
        )
    return {
        "doc": (
            "Hook events: pydantic models of each hook point's payload, discriminated by `hook`."
            "\n\n"
            "Each model builds its validator on first use (``defer_build``), so importing\n"
            "the policy layer does not pay for a schema of every hook point.\n"
        ),
        "imports": module.imports.lines(),
        "events": events,
    }


def policy_decorator_view(hooks: _ir.Hooks) -> dict[str, Any]:
    """The view of ``policy_decorator.py``: the ``middleware`` decorator's overloads.

    One overload per hook point types a declaration for that point alone; a last one
    takes any hooks and any event, for several points or points known only at run time.
    """
    imports = Imports()
    for name in ("Callable", "Coroutine", "Iterator", "Mapping"):
        imports.add("collections.abc", name)
    imports.add("datetime", "timedelta")
    for name in ("Any", "Literal", "Protocol", "TypeAlias", "TypeVar", "overload"):
        imports.add("typing", name)
    imports.add("pydantic", "BaseModel")
    imports.add(".policy_points", "Band")
    imports.add(".policy_points", "HookPoint")
    for point in hooks.points:
        imports.add(".policy_events", point.event)
    return {
        "doc": "The `middleware` decorator's typed signature: one overload per hook point.",
        "imports": imports.lines(),
        "points": [
            {
                "hooks": f"Literal[{point.name!r}, HookPoint.{enum_member(point.name)}]",
                "event": point.event,
            }
            for point in hooks.points
        ],
        "exported": [repr(name) for name in _public(TEMPLATE_DEFINITIONS["policy_decorator.py"])],
    }


def _public(names: tuple[str, ...]) -> list[str]:
    return sorted(name for name in names if not name.startswith("_"))
