"""The render step's entry point: the body of every module of the generated package.

Templates render the modules whose shape the schema decides (contexts, events, results,
stage tokens, the policy surface, ``__init__``); datamodel-code-generator writes the
payload types from JSON Schema. Its subprocess runs on the caller's pool, beside the
templates. Bodies have no banner and are not formatted yet.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from stageware_codegen._errors import InvalidSchemaError, SchemaError
from stageware_codegen.load.diagnostics import ErrorCollector
from stageware_codegen.load.payloads import PayloadSet
from stageware_codegen.resolve import ir as _ir

from .datamodel import DatamodelError, run_datamodel_codegen
from .templating import render_template
from .view_contexts import contexts_view
from .view_events import events_view
from .view_policy import policy_decorator_view, policy_events_view, policy_points_view
from .view_surface import init_view, results_view, stages_view

__all__ = ["DatamodelAnswers", "render_package"]

_PAYLOADS_DOC = (
    '"""Payload types: plain JSON data as TypedDicts, from the schema\'s payload files."""'
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

    def answer(self, document: Mapping[str, Any], header: str, names: list[str]) -> str:
        """The module datamodel-code-generator writes for this request; run if unknown."""
        request = json.dumps([document, header, names], sort_keys=True)
        key = hashlib.sha256(request.encode("utf-8")).hexdigest()
        answer = self.known.get(key)
        if answer is None:
            answer = run_datamodel_codegen(document, header, names)
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
        InvalidSchemaError: datamodel-code-generator failed on the payloads; the problem
            is reported where the definitions it is about are, else at ``payloads``.
    """
    payload_names = list(schema.payload_defs)
    datamodel = DatamodelAnswers() if datamodel is None else datamodel
    job: Future[str] | None = None
    if payload_names:
        document = {"$defs": dict(schema.payload_defs)}
        job = pool.submit(datamodel.answer, document, _PAYLOADS_DOC, payload_names)
    bodies: dict[str, str] = {"payloads.py": _PAYLOADS_DOC + "\n"}
    bodies["events.py"] = render_template("events.py", events_view(schema))
    bodies["contexts.py"] = render_template("contexts.py", contexts_view(schema))
    bodies["results.py"] = render_template("results.py", results_view(schema))
    bodies["stages.py"] = render_template("stages.py", stages_view(schema))
    if schema.hooks is not None:
        bodies["policy_events.py"] = render_template(
            "policy_events.py", policy_events_view(schema, schema.hooks)
        )
        bodies["policy_points.py"] = render_template(
            "policy_points.py", policy_points_view(schema.hooks)
        )
        bodies["policy_decorator.py"] = render_template(
            "policy_decorator.py", policy_decorator_view(schema.hooks)
        )
    bodies["__init__.py"] = render_template("init.py", init_view(schema, payload_names))
    in_payload_files: list[SchemaError] = []
    if job is not None:
        try:
            bodies["payloads.py"] = job.result()
        except DatamodelError as exc:
            in_payload_files = _report(exc, payloads, errors)
    if errors.errors or in_payload_files:
        raise InvalidSchemaError([*errors.errors, *in_payload_files])
    return bodies


def _report(exc: DatamodelError, payloads: PayloadSet, errors: ErrorCollector) -> list[SchemaError]:
    """Report *exc* at each payload definition it blames, else at ``payloads`` of the schema.

    Returns:
        The problems in payload files; one not pinned on a definition goes to *errors*.
    """
    in_payload_files = [
        payloads.error_at(name, message, within)
        for name, within, message in exc.blamed
        if name in payloads.homes
    ]
    if not in_payload_files:
        errors.add(("payloads",), str(exc))
    return in_payload_files
