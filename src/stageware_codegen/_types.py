"""Type expressions in the schema: parsing and checking.

A field's ``type`` is a small subset of Python's annotation syntax, parsed with ``ast`` and
checked node by node, so only known names and a few generic forms reach generated code.
Validated expressions are written back with ``ast.unparse``, never copied as text. The
helpers at the end take a checked tree apart for :mod:`._fits` and :mod:`._type_schema`.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from ._errors import did_you_mean

__all__ = [
    "GENERICS",
    "NameKind",
    "TypeExpr",
    "TypeExprError",
    "literal_value",
    "parse_type",
    "type_args",
    "union_members",
]

GENERICS: dict[str, int | None] = {
    "list": 1,
    "dict": 2,
    "tuple": None,
    "Mapping": 2,
    "Sequence": 1,
}
"""Generic names and how many type arguments they take (None: one or more)."""


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
        if node.id in GENERICS or node.id == "Literal":
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
    args = type_args(node)
    names.add(name)
    if name == "Literal":
        for arg in args:
            if literal_value(arg) is None:
                raise TypeExprError(
                    "Literal arguments must be str, int or bool constants, "
                    f"got {ast.unparse(arg)!r}"
                )
        return
    if name not in GENERICS:
        raise TypeExprError(f"{name!r} takes no type arguments")
    arity = GENERICS[name]
    if name == "tuple" and len(args) == 2 and _is_ellipsis(args[1]):
        args = args[:1]
    elif arity is not None and len(args) != arity:
        raise TypeExprError(f"{name}[...] takes {arity} type argument(s), got {len(args)}")
    for arg in args:
        _check(arg, known, names)


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def literal_value(node: ast.expr) -> tuple[object] | None:
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


def union_members(node: ast.expr) -> list[ast.expr]:
    """The members of a ``X | Y`` union, or the node itself."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*union_members(node.left), *union_members(node.right)]
    return [node]


def type_args(node: ast.Subscript) -> list[ast.expr]:
    """The type arguments of ``X[...]``."""
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
