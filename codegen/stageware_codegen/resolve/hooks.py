"""Hook points resolved: each names a real stage, a declared direction and JSON payload.

Hook payloads become pydantic models, so their types must be JSON data and their field
names must not shadow pydantic's own attributes. Each point becomes a member of the
``HookPoint`` enum, named by :func:`..load.names.enum_member`, so no two points may map to the
same member (``run.end`` and ``run_end``).
"""

from __future__ import annotations

from pydantic import BaseModel

from stageware_codegen.load.diagnostics import DocPath, ErrorCollector, did_you_mean
from stageware_codegen.load.names import enum_member
from stageware_codegen.load.spec import HooksSpec, SchemaSpec

from . import ir
from .field_types import FieldTypes
from .hook_payload_types import to_json_schema
from .type_exprs import TypeExprError

__all__ = ["resolve_hooks"]

_DIRECTIONS = ("inbound", "outbound")
# Pydantic attributes a hook payload field would shadow.
_MODEL_ATTRIBUTES = frozenset(name for name in dir(BaseModel) if not name.startswith("_"))


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
            if expr is not None:
                try:
                    to_json_schema(expr, types.kinds)
                except TypeExprError as exc:
                    errors.add((*path, "type"), str(exc))
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
