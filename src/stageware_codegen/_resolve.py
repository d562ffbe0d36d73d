"""Cross-reference checks that turn a validated document into the resolved schema.

Pydantic checked each value in isolation; this pass checks what needs the whole
document: names are unique across everything the generated package defines, type
expressions name known types, defaults fit their types, a stage's result is one of its
events, interrupt-id placeholders name context fields, hook points name real stages.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from . import _ir
from ._errors import DocPath, ErrorCollector, did_you_mean
from ._model import ContextFieldSpec, EventSpec, HooksSpec, SchemaSpec, StageSpec
from ._names import BUILTIN_TYPE_NAMES, CONTEXT_MEMBERS, EVENT_MEMBERS, RESERVED_TYPE_NAMES
from ._payloads import PayloadSet
from ._types import NameKind, TypeExpr, TypeExprError, fits, parse_type, to_json_schema

__all__ = ["STAGE_NAME_SUFFIXES", "resolve"]

STAGE_NAME_SUFFIXES = (
    "Context",
    "Result",
    "Stage",
    "Event",
    "Next",
    "InputHandler",
    "AsyncInputHandler",
    "WrapHandler",
    "OutputHandler",
    "AsyncOutputHandler",
)
"""Every stage ``S`` defines ``S`` + each suffix in the generated package."""

_DIRECTIONS = ("inbound", "outbound")
_ID_FIELD = re.compile(r"([a-z][a-z0-9_]*)((?:\[[^\[\]]+\])*)")
# Pydantic attributes a hook payload field would shadow.
_MODEL_ATTRIBUTES = frozenset(name for name in dir(BaseModel) if not name.startswith("_"))


def resolve(spec: SchemaSpec, payloads: PayloadSet, errors: ErrorCollector) -> _ir.Schema | None:
    """Check *spec* as a whole; return the resolved schema, or None if *errors* grew."""
    before = len(errors.errors)
    kinds = _kinds(spec, payloads, errors)
    resolver = _Resolver(kinds, payloads, errors)
    externals = tuple(
        _ir.ExternalType(
            name, item.python.partition(":")[0], item.python.partition(":")[2], item.doc
        )
        for name, item in spec.types.items()
    )
    events = tuple(resolver.event(name, item) for name, item in spec.events.items())
    stages = tuple(resolver.stage(name, item, spec.events) for name, item in spec.stages.items())
    hooks = resolver.hooks(spec.hooks, spec) if spec.hooks is not None else None
    if len(errors.errors) > before:
        return None
    return _ir.Schema(payloads.defs, externals, events, stages, hooks, kinds)


def _kinds(spec: SchemaSpec, payloads: PayloadSet, errors: ErrorCollector) -> dict[str, NameKind]:
    """Every name type expressions may use, checking that generated names never clash."""
    owners: dict[str, str] = {}

    def claim(name: str, label: str, path: DocPath, same_as: str | None = None) -> None:
        """Reserve *name*, described as *label* in messages, for one definition."""
        reserved = RESERVED_TYPE_NAMES.get(name)
        if reserved is not None and reserved != same_as:
            errors.add(path, f"{name!r} is reserved: the generated code defines or imports it")
        elif name in BUILTIN_TYPE_NAMES:
            errors.add(path, f"{name!r} is a built-in type name")
        elif name in owners:
            errors.add(path, f"{label} clashes with {owners[name]}")
        else:
            owners[name] = label

    kinds: dict[str, NameKind] = dict.fromkeys(BUILTIN_TYPE_NAMES, NameKind.BUILTIN)
    for name in payloads.defs:
        claim(name, f"payload type {name!r}", ("payloads",))
        kinds[name] = NameKind.PAYLOAD
    for name, external in spec.types.items():
        claim(name, f"external type {name!r}", ("types", name), same_as=external.python)
        kinds[name] = NameKind.EXTERNAL
    for name in spec.events:
        claim(name, f"event {name!r}", ("events", name))
        kinds[name] = NameKind.EVENT
    for name in spec.stages:
        for suffix in STAGE_NAME_SUFFIXES:
            generated = name + suffix
            claim(generated, f"{generated!r} (generated for stage {name!r})", ("stages", name))
    if spec.hooks is not None:
        # Hook events live in their own module next to pydantic copies of the payload
        # types, so they may reuse a stage event's name but no payload or stage-token name.
        hook_owners = dict.fromkeys(payloads.defs, "payload type")
        hook_owners.update({name + "Stage": "stage token" for name in spec.stages})
        for point, item in spec.hooks.points.items():
            path: DocPath = ("hooks", "points", point, "event")
            if item.event in RESERVED_TYPE_NAMES or item.event in BUILTIN_TYPE_NAMES:
                errors.add(
                    path, f"{item.event!r} is reserved: the generated code defines or imports it"
                )
            elif item.event in hook_owners:
                owner = hook_owners[item.event]
                errors.add(path, f"hook event {item.event!r} clashes with {owner} {item.event!r}")
            else:
                hook_owners[item.event] = f"the event of hook point {point!r}:"
    return kinds


class _Resolver:
    def __init__(
        self, kinds: Mapping[str, NameKind], payloads: PayloadSet, errors: ErrorCollector
    ) -> None:
        self._kinds = kinds
        self._payloads = payloads
        self._errors = errors

    def type(self, text: str, path: DocPath) -> TypeExpr | None:
        try:
            return parse_type(text, self._kinds)
        except TypeExprError as exc:
            self._errors.add((*path, "type"), str(exc))
            return None

    def default(self, expr: TypeExpr | None, value: object, path: DocPath) -> None:
        if expr is None:
            return
        problem = fits(expr, value, self._kinds, self._payloads.check_value)
        if problem is not None:
            self._errors.add(
                (*path, "default"), f"default {_show(value)} does not fit {expr.text}: {problem}"
            )

    def event(self, name: str, spec: EventSpec) -> _ir.Event:
        base: DocPath = ("events", name)
        fields: list[_ir.Field] = []
        seen_default: str | None = None
        for field_name, item in spec.fields.items():
            path = (*base, "fields", field_name)
            if field_name in EVENT_MEMBERS:
                self._errors.add(path, f"{field_name!r} is reserved on events")
            expr = self.type(item.type, path)
            if item.has("default"):
                self.default(expr, item.default, path)
                seen_default = field_name
            elif seen_default is not None:
                self._errors.add(
                    path,
                    f"field without a default follows {seen_default!r}, which has one; "
                    "events are built positionally, so defaulted fields must come last",
                )
            if expr is not None:
                fields.append(
                    _ir.Field(field_name, expr, item.doc, item.has("default"), item.default)
                )
        keys: list[_ir.EventKey] = []
        for key, selection in spec.keys.items():
            chosen = (selection,) if isinstance(selection, str) else selection
            for index, field_name in enumerate(chosen):
                if field_name not in spec.fields:
                    where = (
                        (*base, "keys", key)
                        if isinstance(selection, str)
                        else (*base, "keys", key, index)
                    )
                    self._errors.add(
                        where,
                        f"unknown field {field_name!r}" + did_you_mean(field_name, spec.fields),
                    )
            keys.append(_ir.EventKey(key, chosen, isinstance(selection, str)))
        return _ir.Event(name, spec.doc, spec.interrupt, tuple(fields), tuple(keys))

    def stage(self, name: str, spec: StageSpec, events: Mapping[str, EventSpec]) -> _ir.Stage:
        base: DocPath = ("stages", name)
        seen: set[str] = set()
        for index, event in enumerate(spec.events):
            if event not in events:
                self._errors.add(
                    (*base, "events", index),
                    f"unknown event {event!r}" + did_you_mean(event, events),
                )
            elif event in seen:
                self._errors.add((*base, "events", index), f"event {event!r} is listed twice")
            seen.add(event)
        if spec.result not in spec.events:
            self._errors.add(
                (*base, "result"), f"result event {spec.result!r} is not in this stage's events"
            )
        elif spec.result in events and events[spec.result].interrupt:
            self._errors.add(
                (*base, "result"), f"{spec.result!r} is an interrupt event and cannot be the result"
            )
        context = tuple(
            self.context_field((*base, "context", key), key, item)
            for key, item in spec.context.items()
        )
        interrupt_id = None
        if spec.interrupt is not None:
            interrupt_id = self.interrupt_id(spec.interrupt.id, context, (*base, "interrupt", "id"))
        return _ir.Stage(
            name, spec.doc, spec.internal, spec.result, tuple(spec.events), interrupt_id, context
        )

    def context_field(self, path: DocPath, name: str, spec: ContextFieldSpec) -> _ir.ContextField:
        if name in CONTEXT_MEMBERS:
            self._errors.add(path, f"{name!r} is reserved on contexts")
        expr: TypeExpr | None = None
        if spec.copy_mode == "excluded":
            for key in ("replace", "default"):
                if spec.has(key):
                    self._errors.add(
                        (*path, key), f"an excluded field has no {key!r}: it is not on the context"
                    )
            if spec.why is None:
                self._errors.add(path, "an excluded field needs 'why:', documented on the context")
            if spec.type is not None:
                expr = self.type(spec.type, path)
        else:
            if spec.type is None:
                self._errors.add(path, "missing required key 'type'")
            else:
                expr = self.type(spec.type, path)
            if spec.replace == "unhonoured" and spec.why is None:
                self._errors.add(
                    (*path, "replace"), "'unhonoured' needs 'why:' to tell middleware authors"
                )
            if spec.has("default"):
                self.default(expr, spec.default, path)
        return _ir.ContextField(
            name,
            expr,
            spec.doc,
            spec.copy_mode,
            spec.replace,
            spec.why,
            spec.has("default"),
            spec.default,
        )

    def interrupt_id(
        self, template: str, context: tuple[_ir.ContextField, ...], path: DocPath
    ) -> tuple[_ir.IdPart, ...]:
        fields = {item.name: item for item in context}
        parts: list[_ir.IdPart] = []
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            self._errors.add(path, f"invalid interrupt-id template: {exc}")
            return ()
        for literal, placeholder, spec, conversion in parsed:
            if literal:
                parts.append(_ir.IdPart(literal=literal))
            if placeholder is None:
                continue
            if spec or conversion:
                self._errors.add(
                    path,
                    f"placeholder {{{placeholder}}}: format specs and conversions are not "
                    "supported",
                )
                continue
            if placeholder == "name_uuid":
                parts.append(_ir.IdPart(name_hash=True))
                continue
            part = self._id_field(placeholder, fields, path)
            if part is not None:
                parts.append(part)
        if not any(part.name_hash for part in parts):
            self._errors.add(
                path,
                "the interrupt-id template must contain {name_uuid}, or every name shares one id",
            )
        return tuple(parts)

    def _id_field(
        self, placeholder: str, fields: Mapping[str, _ir.ContextField], path: DocPath
    ) -> _ir.IdPart | None:
        known = ["name_uuid", *(name for name, item in fields.items() if item.copy != "excluded")]
        match = _ID_FIELD.fullmatch(placeholder)
        field = fields.get(match.group(1)) if match else None
        if match is None or field is None or field.copy == "excluded" or field.type is None:
            head = match.group(1) if match else placeholder
            self._errors.add(
                path,
                f"unknown interrupt-id placeholder {{{placeholder}}}" + did_you_mean(head, known),
            )
            return None
        keys: tuple[str | int, ...] = tuple(
            int(key) if key.isdigit() else key
            for key in re.findall(r"\[([^\[\]]+)\]", match.group(2))
        )
        problem = self._index_problem(field.type, keys) if keys else None
        if problem is not None:
            self._errors.add(path, f"placeholder {{{placeholder}}}: {problem}")
            return None
        return _ir.IdPart(field=field.name, keys=keys)

    def _index_problem(self, expr: TypeExpr, keys: tuple[str | int, ...]) -> str | None:
        """Why ``field[key]...`` would not type-check, or None."""
        text = expr.text
        if (
            re.fullmatch(r"(dict|Mapping)\[str, .*\]", text)
            and len(keys) == 1
            and isinstance(keys[0], str)
        ):
            return None
        if self._kinds.get(text) is not NameKind.PAYLOAD:
            return f"only a payload object or dict[str, ...] field can be indexed, not {text}"
        schema: Mapping[str, Any] = self._payloads.defs[text]
        for key in keys:
            schema = self._deref(schema)
            properties = schema.get("properties", {})
            if str(key) not in properties or str(key) not in schema.get("required", []):
                return f"{key!r} is not a required key of {text}"
            schema = properties[str(key)]
        return None

    def _deref(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        while isinstance(ref, str):
            schema = self._payloads.defs[ref.rsplit("/", 1)[-1]]
            ref = schema.get("$ref")
        return schema

    def hooks(self, spec: HooksSpec, schema: SchemaSpec) -> _ir.Hooks:
        if tuple(spec.directions) != _DIRECTIONS:
            self._errors.add(
                ("hooks", "directions"),
                "directions must be exactly 'inbound' then 'outbound': "
                "the policy runtime orders hooks by them",
            )
        points: list[_ir.HookPoint] = []
        for name, item in spec.points.items():
            base: DocPath = ("hooks", "points", name)
            if item.stage not in schema.stages:
                self._errors.add(
                    (*base, "stage"),
                    f"unknown stage {item.stage!r}" + did_you_mean(item.stage, schema.stages),
                )
            if item.direction not in spec.directions:
                self._errors.add(
                    (*base, "direction"),
                    f"unknown direction {item.direction!r}"
                    + did_you_mean(item.direction, spec.directions),
                )
            payload: list[_ir.Field] = []
            for field_name, field in item.payload.items():
                path = (*base, "payload", field_name)
                if field_name == "hook" or field_name in _MODEL_ATTRIBUTES:
                    self._errors.add(
                        path,
                        f"{field_name!r} is reserved on hook events (pydantic model attribute)",
                    )
                expr = self.type(field.type, path)
                if expr is not None:
                    try:
                        to_json_schema(expr, self._kinds)
                    except TypeExprError as exc:
                        self._errors.add((*path, "type"), str(exc))
                        expr = None
                if field.has("default"):
                    self.default(expr, field.default, path)
                if expr is not None:
                    payload.append(
                        _ir.Field(field_name, expr, field.doc, field.has("default"), field.default)
                    )
            points.append(
                _ir.HookPoint(
                    name,
                    item.event,
                    item.stage,
                    item.phase,
                    item.direction,
                    item.doc,
                    tuple(payload),
                )
            )
        return _ir.Hooks(tuple(spec.bands.items()), tuple(spec.directions.items()), tuple(points))


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
