"""Whether a YAML default fits a type expression.

Defaults are written into generated code as literals, so they are checked against the
declared type here rather than left for a type checker to find in generated code.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from stageware_codegen.load.diagnostics import show_value
from stageware_codegen.load.documents import as_list, as_mapping

from .type_exprs import NameKind, TypeExpr, literal_value, type_args, union_members

__all__ = ["PayloadCheck", "fits"]

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
    parts = union_members(node)
    if len(parts) > 1:
        problems = [_fits(part, value, kinds, payload) for part in parts]
        if any(problem is None for problem in problems):
            return None
        return f"{show_value(value)} does not fit {ast.unparse(node)}"
    if isinstance(node, ast.Constant):
        return None if value is None else f"expected None, got {show_value(value)}"
    if isinstance(node, ast.Name):
        return _fits_name(node.id, value, kinds, payload)
    # parse_type admitted only subscripts of plain names beyond this point.
    assert isinstance(node, ast.Subscript)
    assert isinstance(node.value, ast.Name)
    name, args = node.value.id, type_args(node)
    if name == "Literal":
        for arg in args:
            boxed = literal_value(arg)
            if boxed is not None and type(boxed[0]) is type(value) and boxed[0] == value:
                return None
        return f"{show_value(value)} is not one of {ast.unparse(node)}"
    if name in ("list", "Sequence"):
        items = as_list(value)
        if items is None:
            return f"expected a list, got {show_value(value)}"
        for item in items:
            problem = _fits(args[0], item, kinds, payload)
            if problem is not None:
                return problem
        return None
    if name in ("dict", "Mapping"):
        mapping = as_mapping(value)
        if mapping is None:
            return f"expected a mapping, got {show_value(value)}"
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
    return None if ok else f"expected {name}, got {show_value(value)}"
