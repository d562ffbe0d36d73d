"""Run datamodel-code-generator on JSON Schema built from the payload definitions.

It runs as a subprocess (``python -m datamodel_code_generator``): its command line is the
stable, documented interface, and a fresh process keeps its global state out of ours.
It exits 0 on some broken output, so the caller checks that every expected name exists.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from stageware_codegen.load.diagnostics import DocPath
from stageware_codegen.resolve import ir as _ir
from stageware_codegen.resolve.hook_payload_types import to_json_schema

__all__ = ["Blame", "DatamodelError", "hook_models_schema", "run_datamodel_codegen"]

# Flags shared by both outputs: Python 3.11 syntax, enums as Literal, schema
# descriptions as docstrings, constraints that type-check, and the built-in formatter
# because ruff formats afterwards.
_COMMON_FLAGS = (
    "--input-file-type",
    "jsonschema",
    "--target-python-version",
    "3.11",
    "--disable-timestamp",
    "--enum-field-as-literal",
    "all",
    "--use-standard-collections",
    "--use-union-operator",
    "--use-schema-description",
    "--use-field-description",
    # Constraints as Field(...) arguments: constr(...) annotations do not type-check.
    "--field-constraints",
    "--skip-root-model",
    "--formatters",
    "builtin",
)

TYPED_DICT_FLAGS = ("--output-model-type", "typing.TypedDict")
"""Payload types as TypedDicts: the host passes plain dicts around."""

PYDANTIC_FLAGS = (
    "--output-model-type",
    "pydantic_v2.BaseModel",
    # A defaulted field keeps its declared type instead of becoming Optional.
    "--strict-nullable",
    # Literal enums and unions as aliases, so fields hold plain values, not RootModels.
    "--use-type-alias",
)
"""Hook events as pydantic models: the policy layer validates and discriminates them."""


Blame = tuple[str, DocPath, str]
"""A problem at one definition: its name, the path inside it, and what is wrong there."""


class DatamodelError(Exception):
    """datamodel-code-generator failed or produced unusable code.

    Attributes:
        blamed: The problem at each definition it is about; empty when it cannot be
            pinned on one.
    """

    def __init__(self, message: str, blamed: tuple[Blame, ...] = ()) -> None:
        super().__init__(message)
        self.blamed = blamed


def run_datamodel_codegen(
    document: Mapping[str, Any], flags: tuple[str, ...], header: str, expected: list[str]
) -> str:
    """Generate a module from *document*; check it parses and defines *expected* names."""
    command = [
        sys.executable,
        "-m",
        "datamodel_code_generator",
        *_COMMON_FLAGS,
        *flags,
        "--custom-file-header",
        header,
    ]
    try:
        completed = subprocess.run(
            command,
            input=json.dumps(document, ensure_ascii=False),
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=False,
        )
    except OSError as exc:
        raise DatamodelError(f"cannot run datamodel-code-generator: {exc}") from None
    if completed.returncode != 0:
        detail = completed.stderr.strip().splitlines()
        raise DatamodelError(
            "datamodel-code-generator failed: "
            + (detail[-1] if detail else f"exit {completed.returncode}")
        )
    try:
        module = ast.parse(completed.stdout)
    except SyntaxError as exc:
        raise DatamodelError(
            f"datamodel-code-generator produced invalid Python: {exc.msg}"
        ) from None
    imported = _imported_names(module)
    clashing = [name for name in expected if name in imported]
    if clashing:
        # It renames a class whose name it imports: the name must be reserved.
        problems = [
            f"reserved: datamodel-code-generator imports it from {imported[name]}"
            for name in clashing
        ]
        raise DatamodelError(
            "; ".join(problems),
            tuple((name, (), problem) for name, problem in zip(clashing, problems, strict=True)),
        )
    defined = _top_level_names(module)
    missing = [name for name in expected if name not in defined]
    if missing:
        message = "datamodel-code-generator did not emit " + ", ".join(
            repr(name) for name in missing
        )
        raise DatamodelError(message, tuple((name, (), message) for name in missing))
    hidden = _hidden_types(module)
    if hidden:
        raise DatamodelError("; ".join(problem for _, _, problem in hidden), tuple(hidden))
    return _typed_dict_from_typing_extensions(completed.stdout, module)


def _typed_dict_from_typing_extensions(source: str, module: ast.Module) -> str:
    """Import ``TypedDict`` from typing_extensions rather than typing.

    pydantic refuses ``typing.TypedDict`` before Python 3.12, and hosts and the policy
    layer validate payloads with pydantic (``TypeAdapter(Messages)``), so the payload
    types must be built on the typing_extensions class.
    """
    for node in module.body:
        if not (isinstance(node, ast.ImportFrom) and node.module == "typing"):
            continue
        names = [alias for alias in node.names if alias.name == "TypedDict"]
        if not names:
            continue
        rest = [alias for alias in node.names if alias.name != "TypedDict"]
        lines = source.splitlines(keepends=True)
        replacement = "from typing_extensions import TypedDict\n"
        if rest:
            kept = ast.ImportFrom(module="typing", names=rest, level=0)
            replacement = ast.unparse(kept) + "\n" + replacement
        start, end = node.lineno - 1, node.end_lineno or node.lineno
        return "".join([*lines[:start], replacement, *lines[end:]])
    return source


def _hidden_types(module: ast.Module) -> list[Blame]:
    """Fields of a pydantic model named like a type a later field's annotation uses.

    In a class body a field's name hides the module-level name for the annotations
    after it; mypy then rejects the type (``Code: int`` then ``other: Code``). A
    TypedDict does not bind its fields, so only models are checked.
    """
    found: list[Blame] = []
    for node in module.body:
        if not isinstance(node, ast.ClassDef) or "BaseModel" not in map(ast.unparse, node.bases):
            continue
        fields: list[str] = []
        for item in node.body:
            if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                continue
            used = {name.id for name in ast.walk(item) if isinstance(name, ast.Name)}
            for field in fields:
                if field in used and field != item.target.id:
                    problem = (
                        f"property {field!r} hides the type {field!r} that property "
                        f"{item.target.id!r} uses in the pydantic model generated for the "
                        "hook events; rename the property"
                    )
                    found.append((node.name, ("properties", field), problem))
            fields.append(item.target.id)
    return found


def _imported_names(module: ast.Module) -> dict[str, str]:
    """Every name the module imports (as written, before any ``as``), with its module."""
    return {
        alias.name: node.module or ""
        for node in module.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def _top_level_names(module: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in module.body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return names


def hook_models_schema(schema: _ir.Schema, hooks: _ir.Hooks, used: list[str]) -> dict[str, Any]:
    """JSON Schema for the hook events: a ``hook`` discriminator plus each payload.

    Args:
        schema: The resolved schema (for payload definitions and name kinds).
        hooks: Its hook points.
        used: The payload definitions the hook payloads need, transitively.
    """
    defs: dict[str, Any] = {name: schema.payload_defs[name] for name in used}
    for point in hooks.points:
        properties: dict[str, Any] = {
            "hook": {
                "const": point.name,
                "default": point.name,
                "description": "Names the hook point; the discriminator of ``HookEvent``.",
            }
        }
        required: list[str] = []
        for field in point.payload:
            prop = to_json_schema(field.type, schema.kinds)
            if field.doc is not None:
                prop["description"] = field.doc
            if field.has_default:
                prop["default"] = field.default
            else:
                required.append(field.name)
            properties[field.name] = prop
        defs[point.event] = {
            "description": point.doc,
            "type": "object",
            "properties": properties,
            "required": required,
        }
    return {"$defs": defs}
