"""Plain JSON values checked against a payload schema.

YAML defaults of payload-typed fields and the ``default`` keywords inside payload files
are written into generated code, so they are validated here against the JSON Schema
subset of :mod:`.payload_subset`, constraints included.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from .documents import as_list, as_mapping

__all__ = ["JSON_TYPES", "REF_PREFIX", "Defs", "validate_value"]

REF_PREFIX = "#/$defs/"

Defs = Mapping[str, Mapping[str, Any]]
"""Every payload definition by name."""

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
}
"""JSON Schema type names and the Python types of their parsed values."""

_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _is_json_type(value: object, name: object) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, JSON_TYPES.get(str(name), (object,)))


def _same(a: object, b: object) -> bool:
    # `True == 1` in Python, but not in JSON Schema.
    return type(a) is type(b) and a == b


def validate_value(schema: Mapping[str, Any], value: object, defs: Defs, where: str) -> str | None:
    """Why *value* does not match *schema* (of the supported subset), or None."""
    return _validate(schema, value, defs, where, frozenset())


def _validate(
    schema: Mapping[str, Any],
    value: object,
    defs: Defs,
    where: str,
    active: frozenset[tuple[int, int]],
) -> str | None:
    # A schema that reaches itself without descending into the value (`A: {anyOf:
    # [{$ref: A}, ...]}`) would recurse forever; such a branch matches nothing new.
    step = (id(schema), id(value))
    if step in active:
        return f"{where}: the type refers to itself without nesting"
    active = active | {step}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(REF_PREFIX):
        name = ref.removeprefix(REF_PREFIX)
        problem = _validate(defs[name], value, defs, name, active)
        if problem is not None:
            return problem
    if "const" in schema and not _same(schema["const"], value):
        return f"{where}: expected {schema['const']!r}, got {value!r}"
    enum = as_list(schema.get("enum"))
    if enum is not None and not any(_same(option, value) for option in enum):
        return f"{where}: {value!r} is not one of {enum!r}"
    for keyword in ("anyOf", "oneOf"):
        options = _schemas(schema.get(keyword))
        if options and all(
            _validate(option, value, defs, where, active) is not None for option in options
        ):
            return f"{where}: {value!r} matches none of the allowed shapes"
    for option in _schemas(schema.get("allOf")):
        problem = _validate(option, value, defs, where, active)
        if problem is not None:
            return problem
    kind = schema.get("type")
    kinds: list[object] = [kind] if isinstance(kind, str) else as_list(kind) or []
    if kinds and not any(_is_json_type(value, name) for name in kinds):
        return f"{where}: expected {' or '.join(map(str, kinds))}, got {value!r}"
    problem = _constraint_problem(schema, value, where)
    if problem is not None:
        return problem
    mapping = as_mapping(value)
    if mapping is not None:
        return _validate_object(schema, mapping, defs, where, active)
    items = as_list(value)
    item_schema = as_mapping(schema.get("items"))
    if items is not None and item_schema is not None:
        for index, item in enumerate(items):
            problem = _validate(item_schema, item, defs, f"{where}[{index}]", active)
            if problem is not None:
                return problem
    return None


def _schemas(value: object) -> list[Mapping[str, Any]]:
    return [option for item in as_list(value) or [] if (option := as_mapping(item)) is not None]


def _constraint_problem(schema: Mapping[str, Any], value: object, where: str) -> str | None:
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"{where}: {value!r} is shorter than {schema['minLength']}"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{where}: {value!r} is longer than {schema['maxLength']}"
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and re.search(pattern, value) is None:
            return f"{where}: {value!r} does not match {pattern!r}"
    items = as_list(value)
    if items is not None:
        if len(items) < schema.get("minItems", 0):
            return f"{where}: fewer than {schema['minItems']} items"
        if "maxItems" in schema and len(items) > schema["maxItems"]:
            return f"{where}: more than {schema['maxItems']} items"
    if isinstance(value, int | float) and not isinstance(value, bool):
        for keyword in (*_BOUNDS, "multipleOf"):
            if keyword in schema and not _within(keyword, float(value), float(schema[keyword])):
                return f"{where}: {value!r} breaks {keyword} {schema[keyword]!r}"
    return None


def _within(keyword: str, number: float, bound: float) -> bool:
    if keyword == "minimum":
        return number >= bound
    if keyword == "maximum":
        return number <= bound
    if keyword == "exclusiveMinimum":
        return number > bound
    if keyword == "exclusiveMaximum":
        return number < bound
    quotient = number / bound
    return math.isclose(quotient, round(quotient))


def _validate_object(
    schema: Mapping[str, Any],
    value: dict[str, Any],
    defs: Defs,
    where: str,
    active: frozenset[tuple[int, int]],
) -> str | None:
    properties = as_mapping(schema.get("properties")) or {}
    for key in as_list(schema.get("required")) or []:
        if key not in value:
            return f"{where}: missing required key {key!r}"
    extra: object = schema.get("additionalProperties", True)
    for key, item in value.items():
        sub = as_mapping(properties.get(key))
        if sub is None:
            if extra is False:
                return f"{where}: unexpected key {key!r}"
            sub = as_mapping(extra) or {}
        problem = _validate(sub, item, defs, f"{where}.{key}", active)
        if problem is not None:
            return problem
    return None
