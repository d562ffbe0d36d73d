"""Hook points resolved: each names a real stage, a declared direction and JSON payload.

Hook payloads become pydantic models, so their field names must not shadow pydantic's
own attributes; and they are JSON data (builtins, payload types, lists, str-keyed
mappings, Literal and None): the session store keeps the event an escalation stopped
at, and the conformance suite generates events from the models. Each point becomes a
member of the ``HookPoint`` enum, named by :func:`..load.names.enum_member`, so no two
points may map to the same member (``run.end`` and ``run_end``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from pydantic import BaseModel

from stageware_codegen.load.diagnostics import DocPath, ErrorCollector, did_you_mean
from stageware_codegen.load.names import enum_member
from stageware_codegen.load.spec import HooksSpec, SchemaSpec

from . import ir
from .field_types import FieldTypes
from .type_exprs import NameKind, TypeExpr, type_args, union_members

__all__ = ["json_data_problem", "resolve_hooks"]

_DIRECTIONS = ("inbound", "outbound")
# Pydantic attributes a hook payload field would shadow.
_MODEL_ATTRIBUTES = frozenset(name for name in dir(BaseModel) if not name.startswith("_"))
# The builtin names that are JSON data (Any and object: any JSON value).
_JSON_BUILTINS = frozenset({"str", "int", "float", "bool", "Any", "object"})


def resolve_hooks(
    spec: HooksSpec, schema: SchemaSpec, types: FieldTypes, errors: ErrorCollector
) -> ir.Hooks:
    """Check every hook point of *spec* against the rest of *schema*."""
    if tuple(spec.directions) != _DIRECTIONS:
        errors.add(
            ("hooks", "directions"),
            "directions must be exactly 'inbound' then 'outbound': "
            "the policy runtime orders hooks by them",
        )
    points: list[ir.HookPoint] = []
    members: dict[str, str] = {}
    for name, item in spec.points.items():
        base: DocPath = ("hooks", "points", name)
        member = enum_member(name)
        if member in members:
            errors.add(
                base,
                f"hook point {name!r} would be the enum member HookPoint.{member}, "
                f"like {members[member]!r}; rename one of them",
            )
        members.setdefault(member, name)
        if item.stage not in schema.stages:
            errors.add(
                (*base, "stage"),
                f"unknown stage {item.stage!r}" + did_you_mean(item.stage, schema.stages),
            )
        if item.direction not in spec.directions:
            errors.add(
                (*base, "direction"),
                f"unknown direction {item.direction!r}"
                + did_you_mean(item.direction, spec.directions),
            )
        payload: list[ir.Field] = []
        for field_name, field in item.payload.items():
            path = (*base, "payload", field_name)
            if field_name == "hook" or field_name in _MODEL_ATTRIBUTES:
                errors.add(
                    path, f"{field_name!r} is reserved on hook events (pydantic model attribute)"
                )
            expr = types.parse(field.type, path)
            problem = None if expr is None else json_data_problem(expr, types.kinds)
            if problem is not None:
                errors.add((*path, "type"), problem)
                expr = None
            if field.has("default"):
                types.check_default(expr, field.default, path)
            if expr is not None:
                payload.append(
                    ir.Field(field_name, expr, field.doc, field.has("default"), field.default)
                )
        points.append(
            ir.HookPoint(
                name, item.event, item.stage, item.phase, item.direction, item.doc, tuple(payload)
            )
        )
    return ir.Hooks(tuple(spec.bands.items()), tuple(spec.directions.items()), tuple(points))


def json_data_problem(expr: TypeExpr, kinds: Mapping[str, NameKind]) -> str | None:
    """Why *expr*, a checked type expression, is not JSON data; None if it is."""
    pending: list[ast.expr] = [expr.tree]
    while pending:
        node = pending.pop()
        members = union_members(node)
        if len(members) > 1:
            pending.extend(reversed(members))  # reported left to right
        elif isinstance(node, ast.Name):
            if kinds[node.id] is not NameKind.PAYLOAD and node.id not in _JSON_BUILTINS:
                return f"hook payloads are JSON data; {node.id!r} is not"
        elif isinstance(node, ast.Subscript):
            # parse_type admitted only subscripts of plain names.
            assert isinstance(node.value, ast.Name)
            name, args = node.value.id, type_args(node)
            if name in ("list", "Sequence"):
                pending.append(args[0])
            elif name in ("dict", "Mapping"):
                if ast.unparse(args[0]) != "str":
                    return "hook payload mappings must have str keys (JSON objects)"
                pending.append(args[1])
            elif name != "Literal":
                return f"hook payloads cannot use {name}[...]; use list[...]"
    return None
