"""The render step's entry point: the body of every module of the generated package.

Templates render the modules whose shape the schema decides (contexts, events, results,
stage tokens, hook points, ``__init__``); datamodel-code-generator writes the payload
types and the hook events from JSON Schema. Its subprocesses run on the caller's pool,
beside the templates. Bodies have no banner and are not formatted yet.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from stageware_codegen._errors import InvalidSchemaError, SchemaError
from stageware_codegen.load.diagnostics import DocPath, ErrorCollector
from stageware_codegen.load.payloads import PayloadSet
from stageware_codegen.resolve import ir as _ir
from stageware_codegen.resolve.type_exprs import NameKind

from .datamodel import (
    PYDANTIC_FLAGS,
    TYPED_DICT_FLAGS,
    DatamodelError,
    hook_models_schema,
    run_datamodel_codegen,
)
from .templating import render_template
from .view_contexts import contexts_view
from .view_events import events_view
from .view_surface import init_view, policy_points_view, results_view, stages_view

__all__ = ["DatamodelAnswers", "render_package"]

_PAYLOADS_DOC = (
    '"""Payload types: plain JSON data as TypedDicts, from the schema\'s payload files."""'
)
_HOOK_EVENTS_DOC = (
    '"""Hook events: pydantic models of each hook point\'s payload, discriminated by `hook`."""'
)


@dataclass(frozen=True, slots=True)
class DatamodelAnswers:
    """datamodel-code-generator's output by request, so that a known one is not run again.

    Attributes:
        known: Answers from an earlier run, by request digest.
        given: The answers of this run, by request digest.
    """

    known: Mapping[str, str] = field(default_factory=dict[str, str])
    given: dict[str, str] = field(default_factory=dict[str, str])

    def answer(
        self, document: Mapping[str, Any], flags: tuple[str, ...], header: str, names: list[str]
    ) -> str:
        """The module datamodel-code-generator writes for this request; run if unknown."""
        request = json.dumps([document, flags, header, names], sort_keys=True)
        key = hashlib.sha256(request.encode("utf-8")).hexdigest()
        answer = self.known.get(key)
        if answer is None:
            answer = run_datamodel_codegen(document, flags, header, names)
        self.given[key] = answer
        return answer


def render_package(
    schema: _ir.Schema,
    payloads: PayloadSet,
    errors: ErrorCollector,
    pool: ThreadPoolExecutor,
    datamodel: DatamodelAnswers | None = None,
) -> dict[str, str]:
    """Module bodies (before banner and formatting), by file name, in output order.

    *datamodel* holds datamodel-code-generator's answers known from an earlier run, and
    receives this run's.

    Raises:
        InvalidSchemaError: datamodel-code-generator failed on the payloads or hook
            payloads; the problem is reported where the definitions it is about are
            (a payload file, a hook point's ``event``), else at that key of the schema.
    """
    payload_names = list(schema.payload_defs)
    datamodel = DatamodelAnswers() if datamodel is None else datamodel
    jobs: dict[str, tuple[Future[str], DocPath]] = {}
    if payload_names:
        document = {"$defs": dict(schema.payload_defs)}
        job = pool.submit(
            datamodel.answer, document, TYPED_DICT_FLAGS, _PAYLOADS_DOC, payload_names
        )
        jobs["payloads.py"] = (job, ("payloads",))
    if schema.hooks is not None:
        used = {
            name
            for point in schema.hooks.points
            for field in point.payload
            for name in field.type.names
            if schema.kinds.get(name) is NameKind.PAYLOAD
        }
        document = hook_models_schema(schema, schema.hooks, payloads.closure(used))
        events = [point.event for point in schema.hooks.points]
        job = pool.submit(datamodel.answer, document, PYDANTIC_FLAGS, _HOOK_EVENTS_DOC, events)
        jobs["policy_events.py"] = (job, ("hooks",))
    bodies: dict[str, str] = {"payloads.py": _PAYLOADS_DOC + "\n"}
    bodies["events.py"] = render_template("events.py", events_view(schema))
    bodies["contexts.py"] = render_template("contexts.py", contexts_view(schema))
    bodies["results.py"] = render_template("results.py", results_view(schema))
    bodies["stages.py"] = render_template("stages.py", stages_view(schema))
    if schema.hooks is not None:
        bodies["policy_points.py"] = render_template(
            "policy_points.py", policy_points_view(schema.hooks)
        )
    bodies["__init__.py"] = render_template("init.py", init_view(schema, payload_names))
    in_payload_files: list[SchemaError] = []
    for name, (job, path) in jobs.items():
        try:
            bodies[name] = job.result()
        except DatamodelError as exc:
            in_payload_files.extend(_report(exc, path, schema, payloads, errors))
    if errors.errors or in_payload_files:
        raise InvalidSchemaError([*errors.errors, *in_payload_files])
    return bodies


def _report(
    exc: DatamodelError,
    path: DocPath,
    schema: _ir.Schema,
    payloads: PayloadSet,
    errors: ErrorCollector,
) -> list[SchemaError]:
    """Report *exc* at each definition it blames, else at *path* of the schema.

    Returns:
        The problems in payload files; those in the schema go to *errors*.
    """
    points = {} if schema.hooks is None else {p.event: p.name for p in schema.hooks.points}
    in_payload_files: list[SchemaError] = []
    reported = False
    for name, within, message in exc.blamed:
        if name in payloads.homes:
            in_payload_files.append(payloads.error_at(name, message, within))
        elif name in points:
            # A hook event's properties are the payload fields of its point.
            where = ("payload", *within[1:]) if within else ("event",)
            errors.add(("hooks", "points", points[name], *where), message)
        else:
            continue
        reported = True
    if not reported:
        errors.add(path, str(exc))
    return in_payload_files
