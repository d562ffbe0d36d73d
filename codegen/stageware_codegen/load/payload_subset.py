"""The JSON Schema subset payload files may use.

datamodel-code-generator accepts far more JSON Schema than it turns into code that
type-checks: ``format`` becomes a pydantic type such as ``EmailStr`` (which needs an
extra package) instead of ``str``, ``uniqueItems`` a ``set``, an unknown ``type`` silently
``Any``. Payload files are held to the subset below, checked keyword by keyword, so every
problem is reported with its JSON path. :mod:`.payload_values` gives the subset its meaning
for values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .diagnostics import DocPath, did_you_mean
from .docs import check_doc
from .documents import as_list, as_mapping
from .payload_values import JSON_TYPES, REF_PREFIX, Defs

__all__ = ["ref_cycle", "schema_problems", "subschemas"]

Problems = list[tuple[DocPath, str]]

_COMBINATORS = ("anyOf", "oneOf", "allOf")
_LENGTHS = ("minLength", "maxLength", "minItems", "maxItems")
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_KEYWORDS = frozenset(
    {
        # Structure.
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "items",
        "additionalProperties",
        "$ref",
        *_COMBINATORS,
        # Constraints: defaults are checked against them here. The generated TypedDicts
        # cannot carry them, so nothing enforces them at run time.
        *_LENGTHS,
        *_BOUNDS,
        "multipleOf",
        "pattern",
        # Annotations.
        "title",
        "description",
        "default",
        "examples",
        "$comment",
    }
)

_UNSUPPORTED: dict[str, str] = {
    "format": (
        "'format' is not supported: datamodel-code-generator would turn the value into a "
        "type other than str (some need extra packages); say it in 'description'"
    ),
    "uniqueItems": "'uniqueItems' is not supported: the array would become a set",
    "$defs": "nested '$defs' are not supported: define every type at the top level",
    "definitions": "'definitions' is not supported: define every type under the top '$defs'",
}


def schema_problems(node: object, path: DocPath, defs: Mapping[str, object]) -> Problems:
    """Every use of JSON Schema outside the supported subset in *node*, by JSON path.

    Args:
        node: A schema: a payload definition or a schema nested in one.
        path: Where *node* is in its file.
        defs: Every payload definition name, for ``$ref`` targets.
    """
    schema = as_mapping(node)
    if schema is None:
        return [(path, "a schema must be a JSON object")]
    problems: Problems = []
    for key, value in schema.items():
        where = (*path, key)
        if key not in _KEYWORDS:
            message = _UNSUPPORTED.get(key) or (
                f"unsupported JSON Schema keyword {key!r}" + did_you_mean(key, _KEYWORDS)
            )
            problems.append((where, message))
        elif key == "type":
            problems.extend(_type_problems(value, where))
        elif key == "properties":
            properties = as_mapping(value)
            if properties is None:
                problems.append((where, "'properties' must be an object of schemas"))
            else:
                for name, sub in properties.items():
                    if not name:
                        # A TypedDict key cannot be empty.
                        problems.append(((*where, name), "a property name may not be empty"))
                    problems.extend(schema_problems(sub, (*where, name), defs))
        elif key in ("items",):
            problems.extend(schema_problems(value, where, defs))
        elif key == "additionalProperties":
            problems.extend(_additional_problems(schema, value, where, defs))
        elif key in _COMBINATORS:
            options = as_list(value)
            if not options:
                problems.append((where, f"{key!r} must be a non-empty array of schemas"))
            for index, option in enumerate(options or []):
                problems.extend(schema_problems(option, (*where, index), defs))
        else:
            problem = _value_problem(key, value, defs)
            if problem is not None:
                problems.append((where, problem))
    return problems


def _type_problems(value: object, where: DocPath) -> Problems:
    names = [value] if isinstance(value, str) else as_list(value)
    if not names:
        return [(where, "'type' must be a JSON type name or a non-empty array of them")]
    problems: Problems = []
    for index, name in enumerate(names):
        if name not in JSON_TYPES:
            at = where if isinstance(value, str) else (*where, index)
            problems.append((at, f"unknown JSON type {name!r}" + did_you_mean(name, JSON_TYPES)))
    return problems


def _additional_problems(
    schema: Mapping[str, Any], value: object, where: DocPath, defs: Mapping[str, object]
) -> Problems:
    if isinstance(value, bool):
        return []
    if "properties" in schema:
        # A TypedDict with typed extra items needs PEP 728, which mypy does not support.
        return [
            (
                where,
                "'additionalProperties' next to 'properties' must be true or false; "
                "use a schema only for a plain mapping",
            )
        ]
    return schema_problems(value, where, defs)


def _value_problem(key: str, value: object, defs: Mapping[str, object]) -> str | None:
    """The problem with the value of a keyword that holds no schema, or None."""
    if key == "$ref":
        if not isinstance(value, str) or not value.startswith(REF_PREFIX):
            return f"$ref must look like '{REF_PREFIX}Name', got {value!r}"
        if value.removeprefix(REF_PREFIX) not in defs:
            return f"$ref {value!r} names no payload definition"
    elif key in ("title", "description", "$comment"):
        if not isinstance(value, str):
            return f"{key!r} must be a string"
        if key != "$comment":
            try:
                check_doc(value)
            except ValueError as exc:
                return str(exc)
    elif key == "enum":
        if not as_list(value):
            return "'enum' must be a non-empty array"
    elif key == "required":
        items = as_list(value)
        if items is None or not all(isinstance(item, str) for item in items):
            return "'required' must be an array of property names"
    elif key in _LENGTHS:
        if type(value) is not int or value < 0:
            return f"{key!r} must be a non-negative integer"
    elif key in (*_BOUNDS, "multipleOf"):
        if not isinstance(value, int | float) or isinstance(value, bool):
            return f"{key!r} must be a number"
        if key == "multipleOf" and value <= 0:
            return "'multipleOf' must be a positive number"
    elif key == "pattern":
        if not isinstance(value, str):
            return "'pattern' must be a string"
        try:
            re.compile(value)
        except re.error as exc:
            return f"invalid pattern {value!r}: {exc}"
    elif key == "examples" and as_list(value) is None:
        return "'examples' must be an array"
    return None


def subschemas(schema: Mapping[str, Any], path: DocPath) -> list[tuple[DocPath, Mapping[str, Any]]]:
    """The schemas directly inside *schema* (not data such as defaults), with their paths."""
    children: list[tuple[DocPath, object]] = [
        ((*path, "properties", name), sub)
        for name, sub in (as_mapping(schema.get("properties")) or {}).items()
    ]
    children += [((*path, key), schema.get(key)) for key in ("items", "additionalProperties")]
    for keyword in _COMBINATORS:
        children += [
            ((*path, keyword, index), option)
            for index, option in enumerate(as_list(schema.get(keyword)) or [])
        ]
    return [(where, sub) for where, child in children if (sub := as_mapping(child)) is not None]


def ref_cycle(name: str, defs: Defs) -> list[str] | None:
    """The chain of names if *name* is an alias that leads back to itself, else None."""
    chain = [name]
    ref = defs[name].get("$ref")
    while isinstance(ref, str) and ref.startswith(REF_PREFIX):
        target = ref.removeprefix(REF_PREFIX)
        if target not in defs:
            return None
        chain.append(target)
        if target == name:
            return chain
        if target in chain[:-1]:
            return None
        ref = defs[target].get("$ref")
    return None
