"""Interrupt-id templates: ``"v1:tool:{tool_use[toolUseId]}:{name_uuid}"`` parsed and checked.

A placeholder names the interrupt's hash (``{name_uuid}``) or a context field, optionally
indexed by keys that the field's type guarantees, so the generated ``_interrupt_id``
type-checks and never raises ``KeyError``; or an attribute of a field whose type is a host
object (``{agent.agent_id}``). The generator cannot see a host type's attributes, so an
attribute is checked where it counts: the checkers run over the generated code, and a
misspelt attribute is a type error there (and an ``AttributeError`` at run time).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from stageware_codegen.load.diagnostics import DocPath, ErrorCollector, did_you_mean
from stageware_codegen.load.payloads import PayloadSet

from . import ir
from .type_exprs import NameKind, TypeExpr

__all__ = ["parse_interrupt_id"]

_ID_FIELD = re.compile(r"([a-z][a-z0-9_]*)((?:\[[^\[\]]+\])*|(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def parse_interrupt_id(
    template: str,
    context: tuple[ir.ContextField, ...],
    kinds: Mapping[str, NameKind],
    payloads: PayloadSet,
    errors: ErrorCollector,
    path: DocPath,
) -> tuple[ir.IdPart, ...]:
    """Split *template* into literal text, the name hash and context field accesses."""
    fields = {item.name: item for item in context}
    parts: list[ir.IdPart] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        errors.add(path, f"invalid interrupt-id template: {exc}")
        return ()
    for literal, placeholder, spec, conversion in parsed:
        if literal:
            parts.append(ir.IdPart(literal=literal))
        if placeholder is None:
            continue
        if spec or conversion:
            errors.add(
                path,
                f"placeholder {{{placeholder}}}: format specs and conversions are not supported",
            )
            continue
        if placeholder == "name_uuid":
            parts.append(ir.IdPart(name_hash=True))
            continue
        part = _field_part(placeholder, fields, kinds, payloads, errors, path)
        if part is not None:
            parts.append(part)
    if not any(part.name_hash for part in parts):
        errors.add(
            path, "the interrupt-id template must contain {name_uuid}, or every name shares one id"
        )
    return tuple(parts)


def _field_part(
    placeholder: str,
    fields: Mapping[str, ir.ContextField],
    kinds: Mapping[str, NameKind],
    payloads: PayloadSet,
    errors: ErrorCollector,
    path: DocPath,
) -> ir.IdPart | None:
    known = ["name_uuid", *(name for name, item in fields.items() if item.copy != "excluded")]
    match = _ID_FIELD.fullmatch(placeholder)
    field = fields.get(match.group(1)) if match else None
    if match is None or field is None or field.copy == "excluded" or field.type is None:
        head = match.group(1) if match else placeholder
        errors.add(
            path, f"unknown interrupt-id placeholder {{{placeholder}}}" + did_you_mean(head, known)
        )
        return None
    if match.group(2).startswith("."):
        attrs = tuple(match.group(2)[1:].split("."))
        if kinds.get(field.type.text) is not NameKind.EXTERNAL:
            errors.add(
                path,
                f"placeholder {{{placeholder}}}: only a field of a host type can be read by "
                f"attribute, not {field.type.text} (index payloads and dicts with [key])",
            )
            return None
        return ir.IdPart(field=field.name, attrs=attrs)
    keys: tuple[str | int, ...] = tuple(
        int(key) if key.isdigit() else key for key in re.findall(r"\[([^\[\]]+)\]", match.group(2))
    )
    problem = _index_problem(field.type, keys, kinds, payloads) if keys else None
    if problem is not None:
        errors.add(path, f"placeholder {{{placeholder}}}: {problem}")
        return None
    return ir.IdPart(field=field.name, keys=keys)


def _index_problem(
    expr: TypeExpr, keys: tuple[str | int, ...], kinds: Mapping[str, NameKind], payloads: PayloadSet
) -> str | None:
    """Why ``field[key]...`` would not type-check, or None."""
    text = expr.text
    if (
        re.fullmatch(r"(dict|Mapping)\[str, .*\]", text)
        and len(keys) == 1
        and isinstance(keys[0], str)
    ):
        return None
    if kinds.get(text) is not NameKind.PAYLOAD:
        return f"only a payload object or dict[str, ...] field can be indexed, not {text}"
    schema: Mapping[str, Any] = payloads.defs[text]
    for key in keys:
        schema = payloads.deref(schema)
        properties = schema.get("properties", {})
        if str(key) not in properties or str(key) not in schema.get("required", []):
            return f"{key!r} is not a required key of {text}"
        schema = properties[str(key)]
    return None
