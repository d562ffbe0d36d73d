"""The generator pipeline: schema file in, finished module texts out (nothing written).

Load and validate the YAML, load the payload files, resolve cross-references, run
datamodel-code-generator for the JSON data types, render the templates, then format and
compile every module. Any problem stops the pipeline before a single file is written.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from . import _ir
from ._datamodel import (
    PYDANTIC_FLAGS,
    TYPED_DICT_FLAGS,
    DatamodelError,
    hook_models_schema,
    run_datamodel_codegen,
)
from ._errors import DocPath, ErrorCollector, InvalidSchemaError, SchemaError
from ._model import parse_schema
from ._output import finish_module
from ._payloads import PayloadSet, load_payloads
from ._render import render_template
from ._resolve import resolve
from ._source import load_yaml
from ._types import NameKind
from ._view_contexts import contexts_view
from ._view_events import events_view
from ._view_surface import init_view, policy_points_view, results_view, stages_view

__all__ = ["build"]

_PAYLOADS_DOC = (
    '"""Payload types: plain JSON data as TypedDicts, from the schema\'s payload files."""'
)
_WORKERS = 4

_HOOK_EVENTS_DOC = (
    '"""Hook events: pydantic models of each hook point\'s payload, discriminated by `hook`."""'
)


def build(
    schema_path: Path, file_label: str, banner_text: str, display_base: Path
) -> dict[str, str]:
    """Generate every module for the schema at *schema_path*.

    Args:
        schema_path: The stage schema YAML.
        file_label: How the schema file is named in error messages.
        banner_text: The banner every generated module starts with.
        display_base: Directory that payload file names in messages are relative to.

    Returns:
        Module file name to finished source text, in a fixed order.

    Raises:
        InvalidSchemaError: For any problem with the schema or its payload files.
        OutputError: If formatting or compiling the output fails.
    """
    try:
        text = schema_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidSchemaError(
            [SchemaError(file_label, 1, "", f"cannot read the schema: {exc}")]
        ) from None
    document = load_yaml(text, file_label)
    errors = document.collector()
    spec = parse_schema(document.data, errors)
    if spec is None:
        raise InvalidSchemaError(errors.errors)
    payloads = load_payloads(spec.payloads, schema_path.parent, errors, display_base)
    if errors.errors or payloads.errors:
        # Without its payload types the rest of the schema would only add a cascade of
        # "unknown type" errors.
        raise InvalidSchemaError([*errors.errors, *payloads.errors])
    schema = resolve(spec, payloads, errors)
    if schema is None:
        raise InvalidSchemaError(errors.errors)
    # The generator subprocesses (datamodel-code-generator, ruff) dominate the run time
    # and are independent, so they run side by side; results are keyed, so the output
    # does not depend on which finishes first.
    with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
        bodies = _render(schema, payloads, errors, pool)
        finished = {
            name: pool.submit(finish_module, name, body, banner_text)
            for name, body in bodies.items()
        }
        return {name: future.result() for name, future in finished.items()}


def _render(
    schema: _ir.Schema, payloads: PayloadSet, errors: ErrorCollector, pool: ThreadPoolExecutor
) -> dict[str, str]:
    """Module bodies (before banner and formatting), in output order."""
    payload_names = list(schema.payload_defs)
    jobs: dict[str, tuple[Future[str], DocPath]] = {}
    if payload_names:
        document = {"$defs": dict(schema.payload_defs)}
        job = pool.submit(
            run_datamodel_codegen, document, TYPED_DICT_FLAGS, _PAYLOADS_DOC, payload_names
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
        job = pool.submit(run_datamodel_codegen, document, PYDANTIC_FLAGS, _HOOK_EVENTS_DOC, events)
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
    for name, (job, path) in jobs.items():
        try:
            bodies[name] = job.result()
        except DatamodelError as exc:
            errors.add(path, str(exc))
    if errors.errors:
        raise InvalidSchemaError(errors.errors)
    return bodies
