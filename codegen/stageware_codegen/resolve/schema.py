"""The resolve step's entry point: cross-reference checks that build the resolved schema.

Pydantic checked each value in isolation; this pass checks what needs the whole
document: type expressions name known types, defaults fit their types, a stage's result
is one of its events, interrupt-id placeholders name context fields. Name clashes are
checked by :mod:`.namespace`, hook points by :mod:`.hooks`, external types by
:mod:`.external_types`.
"""

from __future__ import annotations

from collections.abc import Mapping

from stageware_codegen._errors import InvalidSchemaError
from stageware_codegen.load.diagnostics import DocPath, ErrorCollector, did_you_mean
from stageware_codegen.load.names import CONTEXT_MEMBERS, EVENT_MEMBERS
from stageware_codegen.load.schema import LoadedSchema
from stageware_codegen.load.spec import ContextFieldSpec, EventSpec, StageSpec

from . import ir
from .external_types import TypesChecker, check_external_types
from .field_types import FieldTypes
from .hooks import resolve_hooks
from .interrupt_id import parse_interrupt_id
from .namespace import claim_names
from .type_exprs import TypeExpr

__all__ = ["resolve_schema"]


def resolve_schema(loaded: LoadedSchema, checker: TypesChecker | None = None) -> ir.Schema:
    """Check the loaded schema as a whole and build the resolved schema.

    External types are checked in *checker*, started earlier, else in a fresh subprocess.

    Raises:
        InvalidSchemaError: With every problem found.
    """
    spec, payloads, errors = loaded.spec, loaded.payloads, loaded.errors
    kinds = claim_names(spec, payloads, errors)
    types = FieldTypes(kinds, payloads, errors)
    problems = check_external_types([item.python for item in spec.types.values()], checker)
    for name, item in spec.types.items():
        if item.python in problems:
            errors.add(("types", name, "python"), problems[item.python])
    externals = tuple(
        ir.ExternalType(
            name, item.python.partition(":")[0], item.python.partition(":")[2], item.doc
        )
        for name, item in spec.types.items()
    )
    events = tuple(_event(name, item, types, errors) for name, item in spec.events.items())
    stages = tuple(
        _stage(name, item, spec.events, types, errors) for name, item in spec.stages.items()
    )
    hooks = resolve_hooks(spec.hooks, spec, types, errors) if spec.hooks is not None else None
    if errors.errors:
        raise InvalidSchemaError(errors.errors)
    return ir.Schema(payloads.defs, externals, events, stages, hooks, kinds)


def _event(name: str, spec: EventSpec, types: FieldTypes, errors: ErrorCollector) -> ir.Event:
    base: DocPath = ("events", name)
    fields: list[ir.Field] = []
    seen_default: str | None = None
    for field_name, item in spec.fields.items():
        path = (*base, "fields", field_name)
        if field_name in EVENT_MEMBERS:
            errors.add(path, f"{field_name!r} is reserved on events")
        expr = types.parse(item.type, path)
        if item.has("default"):
            types.check_default(expr, item.default, path)
            seen_default = field_name
        elif seen_default is not None:
            errors.add(
                path,
                f"field without a default follows {seen_default!r}, which has one; "
                "events are built positionally, so defaulted fields must come last",
            )
        if expr is not None:
            fields.append(ir.Field(field_name, expr, item.doc, item.has("default"), item.default))
    keys: list[ir.EventKey] = []
    for key, selection in spec.keys.items():
        chosen = (selection,) if isinstance(selection, str) else selection
        for index, field_name in enumerate(chosen):
            if field_name not in spec.fields:
                where = (
                    (*base, "keys", key)
                    if isinstance(selection, str)
                    else (*base, "keys", key, index)
                )
                errors.add(
                    where, f"unknown field {field_name!r}" + did_you_mean(field_name, spec.fields)
                )
        keys.append(ir.EventKey(key, chosen, isinstance(selection, str)))
    return ir.Event(name, spec.doc, spec.interrupt, tuple(fields), tuple(keys))


def _stage(
    name: str,
    spec: StageSpec,
    events: Mapping[str, EventSpec],
    types: FieldTypes,
    errors: ErrorCollector,
) -> ir.Stage:
    base: DocPath = ("stages", name)
    seen: set[str] = set()
    for index, event in enumerate(spec.events):
        if event not in events:
            errors.add(
                (*base, "events", index), f"unknown event {event!r}" + did_you_mean(event, events)
            )
        elif event in seen:
            errors.add((*base, "events", index), f"event {event!r} is listed twice")
        seen.add(event)
    if spec.result not in spec.events:
        errors.add((*base, "result"), f"result event {spec.result!r} is not in this stage's events")
    elif spec.result in events and events[spec.result].interrupt:
        errors.add(
            (*base, "result"), f"{spec.result!r} is an interrupt event and cannot be the result"
        )
    context = tuple(
        _context_field((*base, "context", key), key, item, types, errors)
        for key, item in spec.context.items()
    )
    interrupt_id = None
    if spec.interrupt is not None:
        interrupt_id = parse_interrupt_id(
            spec.interrupt.id,
            context,
            types.kinds,
            types.payloads,
            errors,
            (*base, "interrupt", "id"),
        )
    return ir.Stage(name, spec.doc, spec.result, tuple(spec.events), interrupt_id, context)


def _context_field(
    path: DocPath, name: str, spec: ContextFieldSpec, types: FieldTypes, errors: ErrorCollector
) -> ir.ContextField:
    if name in CONTEXT_MEMBERS:
        errors.add(path, f"{name!r} is reserved on contexts")
    expr: TypeExpr | None = None
    if spec.copy_mode == "excluded":
        for key in ("replace", "default"):
            if spec.has(key):
                errors.add(
                    (*path, key), f"an excluded field has no {key!r}: it is not on the context"
                )
        if spec.why is None:
            errors.add(path, "an excluded field needs 'why:', documented on the context")
        if spec.type is not None:
            expr = types.parse(spec.type, path)
    else:
        if spec.type is None:
            errors.add(path, "missing required key 'type'")
        else:
            expr = types.parse(spec.type, path)
        if spec.replace == "unhonoured" and spec.why is None:
            errors.add((*path, "replace"), "'unhonoured' needs 'why:' to tell middleware authors")
        if spec.replace == "allowed" and spec.why is not None:
            errors.add(
                (*path, "why"),
                "'why:' explains a field that replace() cannot set or that is excluded; "
                "this field is neither, so it would not be shown anywhere",
            )
        if spec.has("default"):
            types.check_default(expr, spec.default, path)
    return ir.ContextField(
        name,
        expr,
        spec.doc,
        spec.copy_mode,
        spec.replace,
        spec.why,
        spec.has("default"),
        spec.default,
    )
