"""Run datamodel-code-generator on the payload definitions: the TypedDicts of `payloads.py`.

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

__all__ = ["Blame", "DatamodelError", "run_datamodel_codegen"]

# Python 3.11 syntax, enums as Literal, schema descriptions as docstrings, and the
# built-in formatter because ruff formats afterwards. Payload types are TypedDicts: the
# host passes plain dicts around, and the hook events validate them with pydantic.
_FLAGS = (
    "--input-file-type",
    "jsonschema",
    "--output-model-type",
    "typing.TypedDict",
    "--target-python-version",
    "3.11",
    "--disable-timestamp",
    "--enum-field-as-literal",
    "all",
    "--use-standard-collections",
    "--use-union-operator",
    "--use-schema-description",
    "--use-field-description",
    "--skip-root-model",
    "--formatters",
    "builtin",
)


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


def run_datamodel_codegen(document: Mapping[str, Any], header: str, expected: list[str]) -> str:
    """Generate a module from *document*; check it parses and defines *expected* names."""
    command = [
        sys.executable,
        "-m",
        "datamodel_code_generator",
        *_FLAGS,
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
    return _typed_dict_from_typing_extensions(completed.stdout, module)


def _typed_dict_from_typing_extensions(source: str, module: ast.Module) -> str:
    """Import ``TypedDict`` from typing_extensions rather than typing.

    pydantic refuses ``typing.TypedDict`` before Python 3.12, and payloads are validated
    with pydantic: the hook events' fields are these types, and hosts validate payloads
    with ``TypeAdapter(Messages)``. So they must be built on the typing_extensions class.
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
