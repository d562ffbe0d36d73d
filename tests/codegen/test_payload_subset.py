"""Payload files are held to the JSON Schema subset that generates code which type-checks.

Problems are reported in the JSON file, at the line and JSON path of the keyword; the
run exits 2 and writes nothing. Constraints are accepted and YAML defaults are checked
against them; the generated TypedDicts cannot carry them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stageware_codegen.load.payload_values import validate_value

from .conftest import Cli, Project

PAYLOADS = "schema/payloads/converse.schema.json"


def _edit(project: Project, change: Callable[[dict[str, Any]], None]) -> Path:
    path = project.root / PAYLOADS
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document["$defs"])
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def _tool_use_id(defs: dict[str, Any]) -> dict[str, Any]:
    field: dict[str, Any] = defs["ToolUse"]["properties"]["toolUseId"]
    return field


@dataclass(frozen=True)
class Case:
    """A change to the payload definitions and the error it must produce.

    The error must be on the first line that contains ``line_at`` after the first line
    that contains ``after``.
    """

    change: Callable[[dict[str, Any]], None]
    line_at: str
    path: str
    message: str
    after: str = '"$defs"'


CASES: dict[str, Case] = {
    "bad_pattern": Case(
        lambda defs: _tool_use_id(defs).update(pattern="(?<=a"),
        '"pattern"',
        "$defs.ToolUse.properties.toolUseId.pattern",
        "invalid pattern '(?<=a'",
        after='"toolUseId": {',
    ),
    "format": Case(
        lambda defs: _tool_use_id(defs).update(format="email"),
        '"format"',
        "$defs.ToolUse.properties.toolUseId.format",
        "'format' is not supported",
        after='"toolUseId": {',
    ),
    "unknown_type": Case(
        lambda defs: _tool_use_id(defs).update(type="strin"),
        '"strin"',
        "$defs.ToolUse.properties.toolUseId.type",
        "unknown JSON type 'strin' (did you mean 'string'?)",
        after='"toolUseId": {',
    ),
    "misspelled_keyword": Case(
        lambda defs: defs["Usage"].update(propertes={}),
        '"propertes"',
        "$defs.Usage.propertes",
        "unsupported JSON Schema keyword 'propertes' (did you mean 'properties'?)",
    ),
    "unique_items": Case(
        lambda defs: defs["Messages"].update(uniqueItems=True),
        '"uniqueItems"',
        "$defs.Messages.uniqueItems",
        "the array would become a set",
    ),
    "typed_extra_properties": Case(
        lambda defs: defs["Usage"].update(additionalProperties={"type": "integer"}),
        '"additionalProperties"',
        "$defs.Usage.additionalProperties",
        "'additionalProperties' next to 'properties' must be true or false",
    ),
    "default_does_not_fit": Case(
        lambda defs: _tool_use_id(defs).update(default=5),
        '"default"',
        "$defs.ToolUse.properties.toolUseId.default",
        "the default does not fit its schema: default: expected string, got 5",
        after='"toolUseId": {',
    ),
    "default_breaks_a_constraint": Case(
        lambda defs: _tool_use_id(defs).update(minLength=3, default="ab"),
        '"default"',
        "$defs.ToolUse.properties.toolUseId.default",
        "'ab' is shorter than 3",
        after='"toolUseId": {',
    ),
    "alias_cycle": Case(
        lambda defs: defs.update(LoopA={"$ref": "#/$defs/LoopB"}, LoopB={"$ref": "#/$defs/LoopA"}),
        '"$ref"',
        "$defs.LoopA.$ref",
        "'LoopA' is defined as itself: LoopA -> LoopB -> LoopA",
        after='"LoopA": {',
    ),
    "empty_property_name": Case(
        lambda defs: defs["Usage"]["properties"].update({"": {"type": "integer"}}),
        '"": {',
        "$defs.Usage.properties['']",
        "a property name may not be empty",
        after='"Usage": {',
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_unsupported_json_schema_is_reported_in_the_payload_file(
    name: str, project: Project, cli: Cli
) -> None:
    case = CASES[name]
    before = project.snapshot()
    path = _edit(project, case.change)
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(number for number, text in enumerate(lines, 1) if case.after in text)
    line = next(
        number for number, text in enumerate(lines, 1) if number > start and case.line_at in text
    )

    result = cli("generate")

    assert result.code == 2
    assert "Traceback" not in result.err
    prefix = f"{PAYLOADS}:{line}: {case.path}: "
    assert any(
        error.startswith(prefix) and case.message in error for error in result.err.splitlines()
    ), result.err
    assert project.snapshot() == before


def test_constraints_are_accepted_and_the_code_type_checks(project: Project, cli: Cli) -> None:
    def constrain(defs: dict[str, Any]) -> None:
        _tool_use_id(defs).update(minLength=1, maxLength=64, pattern="^[A-Za-z0-9_-]+$")
        defs["Usage"]["properties"]["inputTokens"].update(minimum=0)
        defs["Messages"].update(minItems=0)

    _edit(project, constrain)

    result = cli("generate")

    assert result.code == 0, result.err
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "out"],
        cwd=project.root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize(
    ("schema", "value", "problem"),
    [
        ({"type": "string", "maxLength": 2}, "abc", "longer than 2"),
        ({"type": "string", "pattern": "^a"}, "ba", "does not match"),
        ({"type": "integer", "minimum": 1}, 0, "breaks minimum 1"),
        ({"type": "number", "exclusiveMaximum": 1}, 1, "breaks exclusiveMaximum 1"),
        ({"type": "integer", "multipleOf": 2}, 3, "breaks multipleOf 2"),
        ({"type": "array", "minItems": 1}, [], "fewer than 1 items"),
        ({"allOf": [{"type": "object", "required": ["a"]}]}, {}, "missing required key 'a'"),
        ({"type": "integer", "minimum": 1}, 1, None),
        ({"type": "string", "pattern": "^a", "minLength": 1}, "ab", None),
    ],
)
def test_defaults_are_checked_against_constraints(
    schema: dict[str, Any], value: object, problem: str | None
) -> None:
    found = validate_value(schema, value, {}, "X")
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


def test_a_type_that_reaches_itself_without_nesting_does_not_recurse_forever() -> None:
    defs = {"Loop": {"anyOf": [{"$ref": "#/$defs/Loop"}, {"type": "string"}]}}
    assert validate_value(defs["Loop"], "text", defs, "Loop") is None
    assert validate_value(defs["Loop"], 5, defs, "Loop") is not None
