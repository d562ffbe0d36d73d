"""Type expressions in the schema: parsing and checking.

A field's ``type`` is a small subset of Python's annotation syntax, parsed with ``ast`` and
checked node by node, so only known names and a few generic forms reach generated code.
Validated expressions are written back with ``ast.unparse``, never copied as text. The
helpers at the end take a checked tree apart for :mod:`.defaults` and :mod:`.hooks`.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from stageware_codegen.load.diagnostics import did_you_mean

__all__ = [
    "GENERICS",
    "MAX_TYPE_LENGTH",
    "MAX_TYPE_NESTING",
    "NameKind",
    "TypeExpr",
    "TypeExprError",
    "literal_value",
    "parse_type",
    "type_args",
    "union_members",
]

MAX_TYPE_LENGTH = 1000
"""The longest type expression accepted, in characters."""

MAX_TYPE_NESTING = 16
"""How deep type arguments may nest (``list[list[...]]``)."""

GENERICS: dict[str, int | None] = {
    "list": 1,
    "dict": 2,
    "tuple": None,
    "Mapping": 2,
    "Sequence": 1,
    "type": 1,
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

    @property
    def accepts_none(self) -> bool:
        """Whether ``None`` is a value of this type (``X | None``, ``Any``, ``object``)."""
        return any(
            (isinstance(member, ast.Constant) and member.value is None)
            or (isinstance(member, ast.Name) and member.id in ("Any", "object"))
            for member in union_members(self.tree)
        )


def parse_type(text: str, known: Mapping[str, NameKind]) -> TypeExpr:
    """Parse and check *text* against the *known* names.

    Raises:
        TypeExprError: With a message fit for a schema diagnostic.
    """
    if len(text) > MAX_TYPE_LENGTH:
        raise TypeExprError(f"type expression is longer than {MAX_TYPE_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
        names: set[str] = set()
        _check(tree, known, names, 0)
        rendered = ast.unparse(tree)
    except SyntaxError as exc:
        raise TypeExprError(f"invalid type expression {text!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        # ast recurses once per `|` and per bracket; the length limit normally stops
        # this first.
        raise TypeExprError("type expression is too complex to check") from None
    return TypeExpr(tree, rendered, frozenset(names))


def _check(node: ast.expr, known: Mapping[str, NameKind], names: set[str], depth: int) -> None:
    if depth > MAX_TYPE_NESTING:
        raise TypeExprError(f"type expression is nested more than {MAX_TYPE_NESTING} levels deep")
    members = union_members(node)
    if len(members) > 1:
        for member in members:
            _check(member, known, names, depth)
        return
    if isinstance(node, ast.Constant) and node.value is None:
        return
    if isinstance(node, ast.Name):
        if node.id in GENERICS or node.id == "Literal":
            raise TypeExprError(f"{node.id!r} needs type arguments, for example {node.id}[...]")
        if node.id not in known:
            raise TypeExprError(f"unknown type {node.id!r}" + did_you_mean(node.id, known))
        names.add(node.id)
        return
    if isinstance(node, ast.Subscript):
        _check_subscript(node, known, names, depth)
        return
    if isinstance(node, ast.Attribute):
        raise TypeExprError(
            f"dotted name {ast.unparse(node)!r} is not allowed; declare it under 'types:'"
        )
    raise TypeExprError(f"unsupported type syntax {ast.unparse(node)!r}")


def _check_subscript(
    node: ast.Subscript, known: Mapping[str, NameKind], names: set[str], depth: int
) -> None:
    if isinstance(node.value, ast.Attribute):
        _check(node.value, known, names, depth)
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
        _check(arg, known, names, depth + 1)


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
    """The members of a ``X | Y`` union, left to right, or the node itself."""
    members: list[ast.expr] = []
    # `a | b | c` nests to the left as deep as it is long: walk it without recursion.
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.BinOp) and isinstance(current.op, ast.BitOr):
            pending += [current.right, current.left]
        else:
            members.append(current)
    return members


def type_args(node: ast.Subscript) -> list[ast.expr]:
    """The type arguments of ``X[...]``."""
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
