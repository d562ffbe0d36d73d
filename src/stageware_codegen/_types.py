"""Type expressions in the schema: parsing, checking, values and JSON Schema.

A field's ``type`` is a small subset of Python's annotation syntax, parsed with ``ast`` and
checked node by node, so only known names and a few generic forms reach generated code.
Validated expressions are written back with ``ast.unparse``, never copied as text.

The same tree answers two more questions: does a YAML default fit the type, and what is
the type in JSON Schema (for hook payloads, which are JSON data turned into pydantic
models by datamodel-code-generator).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ._errors import did_you_mean
from ._source import as_list, as_mapping

__all__ = ["NameKind", "TypeExpr", "TypeExprError", "fits", "parse_type", "to_json_schema"]

# Generic names and how many type arguments they take (None: one or more).
_GENERICS: dict[str, int | None] = {
    "list": 1,
    "dict": 2,
    "tuple": None,
    "Mapping": 2,
    "Sequence": 1,
}


class NameKind(Enum):
    """Where a name in a type expression is defined."""

    BUILTIN = "builtin"
    PAYLOAD = "payload"
    EVENT = "event"
    EXTERNAL = "external"


class TypeExprError(ValueError):
    """A type expression is malformed or names an unknown type."""


@dataclass(frozen=True, slots=True)
class TypeExpr:
    """A validated type expression.

    Attributes:
        tree: The checked expression tree.
        text: The expression as written back by ``ast.unparse``.
        names: Every name the expression uses.
    """

    tree: ast.expr
    text: str
    names: frozenset[str]

    @property
    def mutable_value(self) -> bool:
        """Whether a default of this type needs a ``default_factory``."""
        return _is_mutable(self.tree)


def parse_type(text: str, known: Mapping[str, NameKind]) -> TypeExpr:
    """Parse and check *text* against the *known* names.

    Raises:
        TypeExprError: With a message fit for a schema diagnostic.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise TypeExprError(f"invalid type expression {text!r}: {exc.msg}") from None
    names: set[str] = set()
    _check(tree, known, names)
    return TypeExpr(tree, ast.unparse(tree), frozenset(names))


def _check(node: ast.expr, known: Mapping[str, NameKind], names: set[str]) -> None:
    if isinstance(node, ast.Constant) and node.value is None:
        return
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        _check(node.left, known, names)
        _check(node.right, known, names)
        return
    if isinstance(node, ast.Name):
        if node.id in _GENERICS or node.id == "Literal":
            raise TypeExprError(f"{node.id!r} needs type arguments, for example {node.id}[...]")
        if node.id not in known:
            raise TypeExprError(f"unknown type {node.id!r}" + did_you_mean(node.id, known))
        names.add(node.id)
        return
    if isinstance(node, ast.Subscript):
        _check_subscript(node, known, names)
        return
    if isinstance(node, ast.Attribute):
        raise TypeExprError(
            f"dotted name {ast.unparse(node)!r} is not allowed; declare it under 'types:'"
        )
    raise TypeExprError(f"unsupported type syntax {ast.unparse(node)!r}")


def _check_subscript(node: ast.Subscript, known: Mapping[str, NameKind], names: set[str]) -> None:
    if isinstance(node.value, ast.Attribute):
        _check(node.value, known, names)
    if not isinstance(node.value, ast.Name):
        raise TypeExprError(f"unsupported type syntax {ast.unparse(node)!r}")
    name = node.value.id
    args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    names.add(name)
    if name == "Literal":
        for arg in args:
            if _literal_value(arg) is None:
                raise TypeExprError(
                    "Literal arguments must be str, int or bool constants, "
                    f"got {ast.unparse(arg)!r}"
                )
        return
    if name not in _GENERICS:
        raise TypeExprError(f"{name!r} takes no type arguments")
    arity = _GENERICS[name]
    if name == "tuple" and len(args) == 2 and _is_ellipsis(args[1]):
        args = args[:1]
    elif arity is not None and len(args) != arity:
        raise TypeExprError(f"{name}[...] takes {arity} type argument(s), got {len(args)}")
    for arg in args:
        _check(arg, known, names)


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _literal_value(node: ast.expr) -> tuple[object] | None:
    """The value of a Literal argument, boxed so that a valid ``False`` is not falsy."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int):
        return (node.value,)
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return (-node.operand.value,)
    return None


def _parts(node: ast.expr) -> list[ast.expr]:
    """The members of a ``X | Y`` union, or the node itself."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_parts(node.left), *_parts(node.right)]
    return [node]


def _args(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _is_mutable(node: ast.expr) -> bool:
    return any(
        isinstance(part, ast.Subscript)
        and isinstance(part.value, ast.Name)
        and part.value.id in ("list", "dict", "Mapping", "Sequence")
        for part in _parts(node)
    )


PayloadCheck = Callable[[str, object], str | None]
"""Checks a value against a named payload type; returns a problem or None."""


def fits(
    expr: TypeExpr, value: object, kinds: Mapping[str, NameKind], payload: PayloadCheck
) -> str | None:
    """Return why *value* (plain YAML data) does not fit *expr*, or None if it does."""
    return _fits(expr.tree, value, kinds, payload)


def _fits(
    node: ast.expr, value: object, kinds: Mapping[str, NameKind], payload: PayloadCheck
) -> str | None:
    parts = _parts(node)
    if len(parts) > 1:
        problems = [_fits(part, value, kinds, payload) for part in parts]
        if any(problem is None for problem in problems):
            return None
        return f"{_show(value)} does not fit {ast.unparse(node)}"
    if isinstance(node, ast.Constant):
        return None if value is None else f"expected None, got {_show(value)}"
    if isinstance(node, ast.Name):
        return _fits_name(node.id, value, kinds, payload)
    # _check admitted only subscripts of plain names beyond this point.
    assert isinstance(node, ast.Subscript)
    assert isinstance(node.value, ast.Name)
    name, args = node.value.id, _args(node)
    if name == "Literal":
        for arg in args:
            boxed = _literal_value(arg)
            if boxed is not None and type(boxed[0]) is type(value) and boxed[0] == value:
                return None
        return f"{_show(value)} is not one of {ast.unparse(node)}"
    if name in ("list", "Sequence"):
        items = as_list(value)
        if items is None:
            return f"expected a list, got {_show(value)}"
        for item in items:
            problem = _fits(args[0], item, kinds, payload)
            if problem is not None:
                return problem
        return None
    if name in ("dict", "Mapping"):
        mapping = as_mapping(value)
        if mapping is None:
            return f"expected a mapping, got {_show(value)}"
        for key, item in mapping.items():
            problem = _fits(args[0], key, kinds, payload) or _fits(args[1], item, kinds, payload)
            if problem is not None:
                return problem
        return None
    return f"defaults of type {ast.unparse(node)} are not supported"


def _fits_name(
    name: str, value: object, kinds: Mapping[str, NameKind], payload: PayloadCheck
) -> str | None:
    kind = kinds[name]
    if kind is NameKind.PAYLOAD:
        return payload(name, value)
    if kind is not NameKind.BUILTIN or name in ("bytes", "Exception", "BaseException"):
        return f"a {name} cannot be written as a YAML default"
    if name in ("Any", "object"):
        return None
    if name == "str":
        ok = isinstance(value, str)
    elif name == "int":
        ok = type(value) is int
    elif name == "float":
        ok = type(value) in (int, float)
    else:
        ok = type(value) is bool
    return None if ok else f"expected {name}, got {_show(value)}"


def _show(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def to_json_schema(expr: TypeExpr, kinds: Mapping[str, NameKind]) -> dict[str, Any]:
    """Translate *expr* to JSON Schema; payload names become ``$ref`` into ``$defs``.

    Raises:
        TypeExprError: If the type is not plain JSON data.
    """
    return _json(expr.tree, kinds)


_JSON_SCALARS: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "Any": {},
    "object": {},
}


def _json(node: ast.expr, kinds: Mapping[str, NameKind]) -> dict[str, Any]:
    parts = _parts(node)
    if len(parts) > 1:
        return {"anyOf": [_json(part, kinds) for part in parts]}
    if isinstance(node, ast.Constant):
        return {"type": "null"}
    if isinstance(node, ast.Name):
        if kinds[node.id] is NameKind.PAYLOAD:
            return {"$ref": f"#/$defs/{node.id}"}
        scalar = _JSON_SCALARS.get(node.id)
        if scalar is None or kinds[node.id] is not NameKind.BUILTIN:
            raise TypeExprError(f"hook payloads are JSON data; {node.id!r} is not")
        return dict(scalar)
    # _check admitted only subscripts of plain names beyond this point.
    assert isinstance(node, ast.Subscript)
    assert isinstance(node.value, ast.Name)
    name, args = node.value.id, _args(node)
    if name == "Literal":
        values = [boxed[0] for arg in args if (boxed := _literal_value(arg)) is not None]
        return {"const": values[0]} if len(values) == 1 else {"enum": values}
    if name in ("list", "Sequence"):
        return {"type": "array", "items": _json(args[0], kinds)}
    if name in ("dict", "Mapping"):
        if ast.unparse(args[0]) != "str":
            raise TypeExprError("hook payload mappings must have str keys (JSON objects)")
        return {"type": "object", "additionalProperties": _json(args[1], kinds)}
    raise TypeExprError(f"hook payloads cannot use {name}[...]; use list[...]")
