"""The load step's entry point: the schema file and the payload files it names, checked.

The YAML is parsed with a line for every node, validated against :mod:`.spec`, and the
payload files it lists are loaded. Problems are collected per document; when any is
found the step stops with all of them, because without its payload types the rest of
the schema would only add a cascade of "unknown type" errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stageware_codegen._errors import InvalidSchemaError, SchemaError

from .diagnostics import ErrorCollector
from .documents import decode_utf8
from .payloads import PayloadSet, load_payloads
from .spec import SchemaSpec, parse_schema
from .yaml_document import load_yaml

__all__ = ["LoadedSchema", "load_schema"]


@dataclass(frozen=True, slots=True)
class LoadedSchema:
    """A schema whose every value has the right shape; cross-references are unchecked.

    Attributes:
        spec: The validated document.
        payloads: The merged payload definitions.
        errors: Where later steps report problems in the schema file, by document path.
    """

    spec: SchemaSpec
    payloads: PayloadSet
    errors: ErrorCollector


def load_schema(path: Path, file_label: str, display_base: Path) -> LoadedSchema:
    """Read and validate the schema at *path* and its payload files.

    Args:
        path: The stage schema YAML.
        file_label: How the schema file is named in messages.
        display_base: Directory that payload file names in messages are relative to.

    Raises:
        InvalidSchemaError: With every problem found in the schema or its payload files.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidSchemaError(
            [SchemaError(file_label, 1, "", f"cannot read the schema: {exc}")]
        ) from None
    document = load_yaml(decode_utf8(data, file_label), file_label)
    errors = document.collector()
    spec = parse_schema(document.data, errors)
    if spec is None:
        raise InvalidSchemaError(errors.errors)
    payloads = load_payloads(spec.payloads, path.parent, errors, display_base)
    if errors.errors or payloads.errors:
        raise InvalidSchemaError([*errors.errors, *payloads.errors])
    return LoadedSchema(spec, payloads, errors)
