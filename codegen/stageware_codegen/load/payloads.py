"""Payload files: JSON Schema documents whose ``$defs`` are the schema's JSON data types.

All payload files are merged into one ``$defs`` namespace (a name defined twice is an
error), every ``$ref`` must point into it, and every definition must stay within the
JSON Schema subset of :mod:`.payload_subset`, so datamodel-code-generator sees one
self-contained document it turns into code that type-checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stageware._data_paths import format_path
from stageware_codegen._errors import InvalidSchemaError, SchemaError
from stageware_codegen._project import relative_path

from .diagnostics import DocPath, ErrorCollector
from .documents import Document, as_mapping, decode_utf8
from .json_document import load_json
from .names import check_model_name, reserved_type_problem
from .payload_subset import ref_cycle, schema_problems, subschemas
from .payload_values import REF_PREFIX, Defs, validate_value

__all__ = ["PayloadSet", "load_payloads"]

_ROOT_KEYS = frozenset({"$schema", "$id", "$comment", "title", "description", "$defs"})


@dataclass(frozen=True, slots=True)
class PayloadSet:
    """The merged payload definitions.

    Attributes:
        defs: Every ``$defs`` entry by name, in file and declaration order.
        errors: Problems found in the payload files (one collector per file).
        homes: The document that defines each entry of ``defs``.
    """

    defs: Mapping[str, Mapping[str, Any]]
    errors: tuple[SchemaError, ...]
    homes: Mapping[str, Document]

    def error_at(self, name: str, message: str, within: DocPath = ()) -> SchemaError:
        """A problem at *within* the definition of *name*, in the file that defines it."""
        home = self.homes[name]
        path = ("$defs", name, *within)
        return SchemaError(home.file, home.collector().line_of(path), format_path(path), message)

    def check_value(self, name: str, value: object) -> str | None:
        """Return why *value* is not a valid ``name`` payload, or None."""
        return validate_value(self.defs[name], value, self.defs, name)

    def deref(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """*schema*, or the definition it names if it is a ``$ref``, followed to the end."""
        ref = schema.get("$ref")
        while isinstance(ref, str):
            schema = self.defs[ref.removeprefix(REF_PREFIX)]
            ref = schema.get("$ref")
        return schema


def load_payloads(
    entries: list[str], schema_dir: Path, schema_errors: ErrorCollector, display: Path
) -> PayloadSet:
    """Load the payload files named in the schema's ``payloads`` list.

    Args:
        entries: The ``payloads`` entries, relative to the schema file.
        schema_dir: Directory of the schema file.
        schema_errors: Where problems with the entries themselves go.
        display: Directory that file names in messages are shown relative to.
    """
    defs: dict[str, Mapping[str, Any]] = {}
    homes: dict[str, Document] = {}
    errors: list[SchemaError] = []
    loaded: list[tuple[ErrorCollector, list[tuple[str, Mapping[str, Any]]]]] = []
    for index, entry in enumerate(entries):
        path = schema_dir / entry
        try:
            data = path.read_bytes()
        except OSError as exc:
            schema_errors.add(("payloads", index), f"cannot read payload file: {_reason(exc)}")
            continue
        file = relative_path(path, display)
        try:
            document = load_json(decode_utf8(data, file), file)
        except InvalidSchemaError as exc:
            errors.extend(exc.errors)
            continue
        collector = document.collector()
        found = _file_defs(document, collector)
        for name, definition in found:
            if name in defs:
                collector.add(("$defs", name), f"{name!r} is already defined in {homes[name].file}")
            else:
                defs[name] = definition
                homes[name] = document
        loaded.append((collector, found))
    # Definitions are checked once every file is loaded: files may use each other's defs.
    in_cycles: set[str] = set()
    for collector, found in loaded:
        for name, definition in found:
            for where, message in schema_problems(definition, ("$defs", name), defs):
                collector.add(where, message)
            cycle = ref_cycle(name, defs) if name not in in_cycles else None
            if cycle is not None:
                in_cycles.update(cycle)
                collector.add(
                    ("$defs", name, "$ref"),
                    f"{name!r} is defined as itself: {' -> '.join(cycle)}",
                )
    # Defaults are values of the definitions around them, so they are checked only
    # once every definition is known to be sound.
    if not any(collector.errors for collector, _ in loaded):
        for collector, found in loaded:
            for name, definition in found:
                _check_defaults(definition, ("$defs", name), defs, collector)
    for collector, _ in loaded:
        errors.extend(collector.errors)
    return PayloadSet(defs, tuple(errors), homes)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _file_defs(document: Document, errors: ErrorCollector) -> list[tuple[str, Mapping[str, Any]]]:
    data = as_mapping(document.data)
    if data is None:
        errors.add((), "a payload file must be a JSON object with '$defs'")
        return []
    for key, value in data.items():
        if key not in _ROOT_KEYS:
            errors.add((key,), f"unsupported top-level key {key!r}: only '$defs' are generated")
        elif key in ("title", "description") and not isinstance(value, str):
            errors.add((key,), f"{key!r} must be a string")
    defs = as_mapping(data.get("$defs"))
    if defs is None:
        errors.add(("$defs",), "'$defs' must be an object of named JSON Schemas")
        return []
    found: list[tuple[str, Mapping[str, Any]]] = []
    for name, value in defs.items():
        definition = as_mapping(value)
        try:
            check_model_name(name)
        except ValueError as exc:
            errors.add(("$defs", name), str(exc))
            continue
        reserved = reserved_type_problem(name)
        if reserved is not None:
            errors.add(("$defs", name), reserved)
            continue
        if definition is None:
            errors.add(("$defs", name), "a definition must be a JSON Schema object")
            continue
        found.append((name, definition))
    return found


def _check_defaults(
    schema: Mapping[str, Any], path: DocPath, defs: Defs, errors: ErrorCollector
) -> None:
    """Report every ``default`` in *schema* that does not fit the schema it sits in."""
    if "default" in schema:
        problem = validate_value(schema, schema["default"], defs, "default")
        if problem is not None:
            errors.add((*path, "default"), f"the default does not fit its schema: {problem}")
    for where, sub in subschemas(schema, path):
        _check_defaults(sub, where, defs, errors)
