"""Type expressions as JSON Schema, for hook payloads.

Hook payloads are JSON data: datamodel-code-generator turns the JSON Schema built here
into pydantic models. Payload names become ``$ref``s into the payload ``$defs``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from .type_exprs import NameKind, TypeExpr, TypeExprError, literal_value, type_args, union_members

__all__ = ["to_json_schema"]

_JSON_SCALARS: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "Any": {},
    "object": {},
}


def to_json_schema(expr: TypeExpr, kinds: Mapping[str, NameKind]) -> dict[str, Any]:
    """Translate *expr* to JSON Schema; payload names become ``$ref`` into ``$defs``.

    Raises:
        TypeExprError: If the type is not plain JSON data.
    """
    return _json(expr.tree, kinds)


def _json(node: ast.expr, kinds: Mapping[str, NameKind]) -> dict[str, Any]:
    parts = union_members(node)
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
    # parse_type admitted only subscripts of plain names beyond this point.
    assert isinstance(node, ast.Subscript)
    assert isinstance(node.value, ast.Name)
    name, args = node.value.id, type_args(node)
    if name == "Literal":
        values = [boxed[0] for arg in args if (boxed := literal_value(arg)) is not None]
        return {"const": values[0]} if len(values) == 1 else {"enum": values}
    if name in ("list", "Sequence"):
        return {"type": "array", "items": _json(args[0], kinds)}
    if name in ("dict", "Mapping"):
        if ast.unparse(args[0]) != "str":
            raise TypeExprError("hook payload mappings must have str keys (JSON objects)")
        return {"type": "object", "additionalProperties": _json(args[1], kinds)}
    raise TypeExprError(f"hook payloads cannot use {name}[...]; use list[...]")
