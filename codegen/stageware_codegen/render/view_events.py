"""The view of ``events.py``: one frozen dataclass per event, one union per stage.

An event with ``keys`` reads like a read-only dict, as the spec indexes events:
``event["stop"]``, ``"stop" in event``, iteration over the keys, ``keys()`` and ``get()``,
each typed per key.
"""

from __future__ import annotations

from typing import Any

from stageware_codegen.resolve import ir as _ir

from .docstrings import docstring
from .viewkit import BODY, MEMBER, ModuleView, default_code

__all__ = ["events_view"]

_HOME = ".events"


def events_view(schema: _ir.Schema) -> dict[str, Any]:
    """The view of ``events.py``: one frozen dataclass per event, one union per stage."""
    module = ModuleView(schema, _HOME)
    module.imports.add("dataclasses", "dataclass")
    module.imports.add("typing", "ClassVar")
    module.imports.add("typing", "final")
    events: list[dict[str, Any]] = []
    factories: list[dict[str, str]] = []
    for event in schema.events:
        fields: list[dict[str, Any]] = []
        types: dict[str, str] = {}
        for item in event.fields:
            annotation = module.use_type(item.type)
            types[item.name] = annotation
            default = None
            if item.has_default:
                default, factory = default_code(
                    event.name, item.name, item.type, item.default, module
                )
                if factory is not None:
                    factories.append(factory)
            fields.append(
                {
                    "name": item.name,
                    "annotation": annotation,
                    "default": default,
                    "docstring": None if item.doc is None else docstring(item.doc, MEMBER),
                }
            )
        keys = [_key_view(key, types) for key in event.keys]
        if keys:
            module.imports.add("collections.abc", "Iterator")
            module.imports.add("typing", "Literal")
            module.imports.add("typing", "overload")
            module.imports.add("typing", "TypeVar")
        names = [repr(key.name) for key in event.keys]
        events.append(
            {
                "name": event.name,
                "docstring": docstring(event.doc, MEMBER),
                "is_interrupt": repr(event.interrupt),
                "fields": fields,
                "getters": keys,
                "getitem_doc": docstring(_getitem_doc(event), BODY),
                "key_type": f"Literal[{', '.join(names)}]",
                "key_tuple": f"({', '.join(names)}{',' if len(names) == 1 else ''})",
            }
        )
    unions: list[dict[str, str]] = []
    if schema.stages:
        module.imports.add("typing", "TypeAlias")
    for stage in schema.stages:
        unions.append(
            {
                "name": f"{stage.name}Event",
                "expr": " | ".join(stage.events),
                "docstring": docstring(f"Any event a `{stage.name}Stage` chain yields."),
            }
        )
    return {
        "doc": "Stage events: what flows through each stage's middleware chain.",
        "imports": module.imports.lines(),
        # `get(key, default)` returns the default's own type for keys it does not know.
        "default_typevar": any(event.keys for event in schema.events),
        "factories": factories,
        "events": events,
        "unions": unions,
    }


def _key_view(key: _ir.EventKey, types: dict[str, str]) -> dict[str, str]:
    if key.single:
        returns, value = types[key.fields[0]], f"self.{key.fields[0]}"
    else:
        returns = f"tuple[{', '.join(types[name] for name in key.fields)}]"
        value = (
            "("
            + ", ".join(f"self.{name}" for name in key.fields)
            + ("," if len(key.fields) == 1 else "")
            + ")"
        )
    return {"literal": repr(key.name), "returns": returns, "value": value}


def _getitem_doc(event: _ir.Event) -> str:
    lines = ["Look up fields by key, as the spec indexes events like dicts.", ""]
    for key in event.keys:
        fields = ", ".join(f"`{name}`" for name in key.fields)
        lines.append(f"`{key.name}` gives {fields}" + ("" if key.single else " as a tuple") + ".")
    lines += ["", "Raises:", "    KeyError: For any other key."]
    return "\n".join(lines)
