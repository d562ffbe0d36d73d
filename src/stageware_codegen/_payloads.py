"""Payload files: JSON Schema documents whose ``$defs`` are the schema's JSON data types.

All payload files are merged into one ``$defs`` namespace (a name defined twice is an
error), and every ``$ref`` must point into it, so datamodel-code-generator sees one
self-contained document. This module also checks YAML defaults against a payload type,
covering the JSON Schema keywords payload files use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import DocPath, ErrorCollector, InvalidSchemaError, SchemaError
from ._names import check_type_name, reserved_type_problem
from ._project import relative_path
from ._source import Document, as_list, as_mapping, load_json
from ._text import check_doc

__all__ = ["PayloadSet", "load_payloads"]

_ROOT_KEYS = frozenset({"$schema", "$id", "$comment", "title", "description", "$defs"})
_REF_PREFIX = "#/$defs/"


@dataclass(frozen=True, slots=True)
class PayloadSet:
    """The merged payload definitions.

    Attributes:
        defs: Every ``$defs`` entry by name, in file and declaration order.
        errors: Problems found in the payload files (one collector per file).
    """

    defs: Mapping[str, Mapping[str, Any]]
    errors: tuple[SchemaError, ...]

    def check_value(self, name: str, value: object) -> str | None:
        """Return why *value* is not a valid ``name`` payload, or None."""
        return _validate(self.defs[name], value, self.defs, name)

    def deref(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """*schema*, or the definition it names if it is a ``$ref``, followed to the end."""
        ref = schema.get("$ref")
        while isinstance(ref, str):
            schema = self.defs[ref.removeprefix(_REF_PREFIX)]
            ref = schema.get("$ref")
        return schema

    def closure(self, names: set[str]) -> list[str]:
        """*names* plus every definition they reference, in declaration order."""
        pending = list(names)
        seen: set[str] = set()
        while pending:
            name = pending.pop()
            if name not in seen:
                seen.add(name)
                pending.extend(_refs(self.defs[name]))
        return [name for name in self.defs if name in seen]


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
    origin: dict[str, str] = {}
    errors: list[SchemaError] = []
    loaded: list[tuple[ErrorCollector, list[tuple[str, Mapping[str, Any]]]]] = []
    for index, entry in enumerate(entries):
        path = schema_dir / entry
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            schema_errors.add(("payloads", index), f"cannot read payload file: {exc.strerror}")
            continue
        try:
            document = load_json(text, relative_path(path, display))
        except InvalidSchemaError as exc:
            errors.extend(exc.errors)
            continue
        collector = document.collector()
        found = _file_defs(document, collector)
        for name, definition in found:
            if name in defs:
                collector.add(("$defs", name), f"{name!r} is already defined in {origin[name]}")
            else:
                defs[name] = definition
                origin[name] = document.file
        loaded.append((collector, found))
    # $refs are checked once every file is loaded, since files may use each other's defs.
    for collector, found in loaded:
        for name, definition in found:
            for where, message in _bad_refs(definition, defs, ("$defs", name)):
                collector.add(where, message)
        errors.extend(collector.errors)
    return PayloadSet(defs, tuple(errors))


def _file_defs(document: Document, errors: ErrorCollector) -> list[tuple[str, Mapping[str, Any]]]:
    data = as_mapping(document.data)
    if data is None:
        errors.add((), "a payload file must be a JSON object with '$defs'")
        return []
    for key in data:
        if key not in _ROOT_KEYS:
            errors.add((key,), f"unsupported top-level key {key!r}: only '$defs' are generated")
    defs = as_mapping(data.get("$defs"))
    if defs is None:
        errors.add(("$defs",), "'$defs' must be an object of named JSON Schemas")
        return []
    for path, text in _texts(defs, ("$defs",)):
        try:
            check_doc(text)
        except ValueError as exc:
            errors.add(path, str(exc))
    found: list[tuple[str, Mapping[str, Any]]] = []
    for name, value in defs.items():
        definition = as_mapping(value)
        try:
            check_type_name(name)
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


def _children(node: object, path: DocPath) -> list[tuple[DocPath, str | int, Any]]:
    """The (path, key, value) children of a JSON object or array; none for scalars."""
    mapping = as_mapping(node)
    if mapping is not None:
        return [((*path, key), key, value) for key, value in mapping.items()]
    items = as_list(node)
    if items is not None:
        return [((*path, index), index, value) for index, value in enumerate(items)]
    return []


def _texts(node: object, path: DocPath) -> list[tuple[DocPath, str]]:
    """Every ``title`` and ``description`` under *node*: they become docstrings."""
    found: list[tuple[DocPath, str]] = []
    for where, key, value in _children(node, path):
        if key in ("title", "description") and isinstance(value, str):
            found.append((where, value))
        else:
            found.extend(_texts(value, where))
    return found


def _bad_refs(
    node: object, known: Mapping[str, object], path: DocPath
) -> list[tuple[DocPath, str]]:
    """Every ``$ref`` under *node* that does not name a known definition."""
    problems: list[tuple[DocPath, str]] = []
    for where, key, value in _children(node, path):
        if key != "$ref":
            problems.extend(_bad_refs(value, known, where))
        elif not isinstance(value, str) or not value.startswith(_REF_PREFIX):
            problems.append((where, f"$ref must look like '{_REF_PREFIX}Name', got {value!r}"))
        elif value.removeprefix(_REF_PREFIX) not in known:
            problems.append((where, f"$ref {value!r} names no payload definition"))
    return problems


def _refs(node: object) -> list[str]:
    """The definition names every well-formed ``$ref`` under *node* points to."""
    found: list[str] = []
    for _, key, value in _children(node, ()):
        if key == "$ref" and isinstance(value, str) and value.startswith(_REF_PREFIX):
            found.append(value.removeprefix(_REF_PREFIX))
        else:
            found.extend(_refs(value))
    return found


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
}


def _is_json_type(value: object, name: object) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, _JSON_TYPES.get(str(name), (object,)))


def _same(a: object, b: object) -> bool:
    # `True == 1` in Python, but not in JSON Schema.
    return type(a) is type(b) and a == b


Defs = Mapping[str, Mapping[str, Any]]


def _validate(schema: Mapping[str, Any], value: object, defs: Defs, where: str) -> str | None:
    """A small JSON Schema check for defaults: the keywords payload files use."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
        name = ref.removeprefix(_REF_PREFIX)
        return _validate(defs[name], value, defs, name)
    if "const" in schema and not _same(schema["const"], value):
        return f"{where}: expected {schema['const']!r}, got {value!r}"
    enum = as_list(schema.get("enum"))
    if enum is not None and not any(_same(option, value) for option in enum):
        return f"{where}: {value!r} is not one of {enum!r}"
    for keyword in ("anyOf", "oneOf"):
        options = [
            option
            for item in as_list(schema.get(keyword)) or []
            if (option := as_mapping(item)) is not None
        ]
        if options and all(_validate(option, value, defs, where) is not None for option in options):
            return f"{where}: {value!r} matches none of the allowed shapes"
    kind = schema.get("type")
    kinds: list[object] = [kind] if isinstance(kind, str) else as_list(kind) or []
    if kinds and not any(_is_json_type(value, name) for name in kinds):
        return f"{where}: expected {' or '.join(map(str, kinds))}, got {value!r}"
    mapping = as_mapping(value)
    if mapping is not None:
        return _validate_object(schema, mapping, defs, where)
    items = as_list(value)
    item_schema = as_mapping(schema.get("items"))
    if items is not None and item_schema is not None:
        for index, item in enumerate(items):
            problem = _validate(item_schema, item, defs, f"{where}[{index}]")
            if problem is not None:
                return problem
    return None


def _validate_object(
    schema: Mapping[str, Any], value: dict[str, Any], defs: Defs, where: str
) -> str | None:
    properties = as_mapping(schema.get("properties")) or {}
    for key in as_list(schema.get("required")) or []:
        if key not in value:
            return f"{where}: missing required key {key!r}"
    extra: object = schema.get("additionalProperties", True)
    for key, item in value.items():
        sub = as_mapping(properties.get(key))
        if sub is None:
            if extra is False:
                return f"{where}: unexpected key {key!r}"
            sub = as_mapping(extra) or {}
        problem = _validate(sub, item, defs, f"{where}.{key}")
        if problem is not None:
            return problem
    return None
