"""JSON Schema to Cedar types, and JSON values to the Cedar values those types accept.

A tool's input is described by JSON Schema; a Cedar schema types the same data with
fewer shapes. What maps, and how:

- ``string`` (and a string ``enum``) -> ``String``; ``boolean`` -> ``Bool``;
  ``integer`` -> ``Long``; ``number`` -> the ``decimal`` extension (Cedar has no floats:
  a decimal keeps four digits after the point, so a value with more is an error, not a
  silent rounding that would move it across a policy's limit);
- ``array`` -> ``Set`` of its items (Cedar sets have no order and no duplicates);
- ``object`` with ``properties`` -> ``Record``; a property outside ``required``, or one
  that may be ``null`` (``anyOf: [X, {type: null}]``, as pydantic writes ``X | None``),
  is optional (``context.input has zip``);
- ``$ref`` into ``$defs`` is followed (pydantic's nested models), to a bounded depth.

Anything else (a union of kinds, a free-form object, a recursive model past the depth)
has no Cedar type: the attribute is left out of the schema and of every request, so a
policy that names it fails validation when it is loaded, rather than deciding on data
it cannot type.
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, cast, final

__all__ = [
    "CedarDataError",
    "CedarType",
    "Prim",
    "Record",
    "SetOf",
    "cedar_value",
    "from_json_schema",
    "type_json",
]

# A model nested deeper than this (or one that refers to itself) stops being typed there.
_MAX_DEPTH: Final = 16
# Cedar's Long is a signed 64-bit integer.
_LONG_MIN: Final = -(2**63)
_LONG_MAX: Final = 2**63 - 1
_FOUR_PLACES: Final = decimal.Decimal("0.0001")


class CedarDataError(ValueError):
    """A value does not fit the Cedar type its schema gave it."""


@final
@dataclass(frozen=True, slots=True)
class Prim:
    """A primitive Cedar type: ``String``, ``Long``, ``Bool`` or ``decimal``."""

    name: str


@final
@dataclass(frozen=True, slots=True)
class SetOf:
    """A Cedar ``Set`` of *element*."""

    element: CedarType


@final
@dataclass(frozen=True, slots=True)
class Record:
    """A Cedar ``Record``: attribute name -> (type, required)."""

    attributes: Mapping[str, tuple[CedarType, bool]]


CedarType: TypeAlias = Prim | SetOf | Record

STRING: Final = Prim("String")
LONG: Final = Prim("Long")
BOOL: Final = Prim("Bool")
DECIMAL: Final = Prim("decimal")

_PRIMITIVES: Final[Mapping[str, Prim]] = {
    "string": STRING,
    "integer": LONG,
    "boolean": BOOL,
    "number": DECIMAL,
}


def from_json_schema(schema: Mapping[str, Any]) -> CedarType | None:
    """The Cedar type of values *schema* describes, or ``None`` if Cedar has none."""
    defs: object = schema.get("$defs", schema.get("definitions", {}))
    return _convert(schema, cast(Mapping[str, Any], defs) if isinstance(defs, Mapping) else {}, 0)


def _convert(node: object, defs: Mapping[str, Any], depth: int) -> CedarType | None:
    if not isinstance(node, Mapping) or depth > _MAX_DEPTH:
        return None
    schema = cast(Mapping[str, Any], node)
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        return _convert(defs.get(name), defs, depth + 1)
    inner = _nullable(schema)
    if inner is not None:
        return _convert(inner, defs, depth)
    kind = schema.get("type")
    if kind is None and isinstance(schema.get("enum"), list):
        values = cast(list[object], schema["enum"])
        return STRING if values and all(isinstance(v, str) for v in values) else None
    if not isinstance(kind, str):
        return None
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    if kind == "array":
        element = _convert(schema.get("items"), defs, depth + 1)
        return None if element is None else SetOf(element)
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return None
        required = schema.get("required", [])
        needed = set(cast(list[str], required)) if isinstance(required, list) else set[str]()
        attributes: dict[str, tuple[CedarType, bool]] = {}
        for name, sub in cast(Mapping[str, object], properties).items():
            typed = _convert(sub, defs, depth + 1)
            if typed is not None:
                optional = name not in needed or _nullable(sub) is not None
                attributes[name] = (typed, not optional)
        return Record(attributes)
    return None


def _nullable(node: object) -> object | None:
    """The non-null branch of ``anyOf: [X, {type: null}]``, else ``None``."""
    if not isinstance(node, Mapping):
        return None
    branches = cast(Mapping[str, Any], node).get("anyOf")
    if not isinstance(branches, list) or len(cast(list[object], branches)) != 2:
        return None
    others: list[object] = [
        b
        for b in cast(list[object], branches)
        if not (isinstance(b, Mapping) and cast(Mapping[str, Any], b).get("type") == "null")
    ]
    return others[0] if len(others) == 1 else None


def type_json(typed: CedarType) -> dict[str, Any]:
    """*typed* in Cedar's JSON schema format."""
    if isinstance(typed, Prim):
        if typed == DECIMAL:
            return {"type": "Extension", "name": "decimal"}
        return {"type": typed.name}
    if isinstance(typed, SetOf):
        return {"type": "Set", "element": type_json(typed.element)}
    return {
        "type": "Record",
        "attributes": {
            name: {**type_json(sub), "required": required}
            for name, (sub, required) in typed.attributes.items()
        },
    }


def cedar_value(typed: CedarType, value: object, where: str) -> object:
    """*value* as the Cedar JSON value of type *typed*; attributes without a type dropped.

    Raises:
        CedarDataError: If *value* does not fit, naming *where* it is
            (``input.order.id``).
    """
    if isinstance(typed, Prim):
        return _primitive(typed, value, where)
    if isinstance(typed, SetOf):
        if not isinstance(value, list | tuple):
            raise CedarDataError(f"{where} should be a list, got {_kind(value)}")
        items = cast("list[object] | tuple[object, ...]", value)
        return [cedar_value(typed.element, item, f"{where}[{i}]") for i, item in enumerate(items)]
    if not isinstance(value, Mapping):
        raise CedarDataError(f"{where} should be an object, got {_kind(value)}")
    given = cast(Mapping[str, object], value)
    record: dict[str, object] = {}
    for name, (sub, required) in typed.attributes.items():
        item = given.get(name)
        if item is None:
            if required:
                raise CedarDataError(f"{where}.{name} is required and missing")
            continue
        record[name] = cedar_value(sub, item, f"{where}.{name}")
    return record


def _primitive(typed: Prim, value: object, where: str) -> object:
    if typed == STRING and isinstance(value, str):
        return value
    if typed == BOOL and isinstance(value, bool):
        return value
    if typed == LONG and isinstance(value, int) and not isinstance(value, bool):
        if not _LONG_MIN <= value <= _LONG_MAX:
            raise CedarDataError(f"{where} is {value}, outside a Cedar Long's 64 bits")
        return value
    if typed == DECIMAL and isinstance(value, int | float) and not isinstance(value, bool):
        return {"__extn": {"fn": "decimal", "arg": _decimal_text(value, where)}}
    raise CedarDataError(f"{where} should be a {_described(typed)}, got {_kind(value)}")


def _decimal_text(value: int | float, where: str) -> str:
    number = decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)
    if not number.is_finite():
        raise CedarDataError(f"{where} is {value!r}, which a Cedar decimal cannot hold")
    exponent = number.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -4:
        raise CedarDataError(
            f"{where} is {value!r}: a Cedar decimal holds four digits after the point"
        )
    return str(number.quantize(_FOUR_PLACES))


def _described(typed: Prim) -> str:
    return {"String": "string", "Long": "integer", "Bool": "boolean"}.get(typed.name, "number")


def _kind(value: object) -> str:
    return type(value).__name__
