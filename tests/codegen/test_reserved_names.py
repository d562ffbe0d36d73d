"""No schema name may be one the generated code imports or defines itself.

``class Iterator`` next to ``from collections.abc import Iterator`` (which ``events.py``
imports for events with ``keys``) makes the package fail both type checkers, so every
such name is refused at its place in the schema. The reserved list is checked against
what the generated modules really bind, so it cannot fall behind the templates.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

from stageware_codegen.load.names import check_type_name
from stageware_codegen.load.reserved import DATAMODEL_IMPORTS, RESERVED
from stageware_codegen.load.schema import load_schema
from stageware_codegen.render import package
from stageware_codegen.render.datamodel import DatamodelError, run_datamodel_codegen
from stageware_codegen.render.imports import Imports
from stageware_codegen.resolve.schema import resolve_schema
from stageware_codegen.resolve.stage_names import StageNames

from .conftest import GENERATED, SCHEMA_DIR, Cli

SCHEMA = """\
version: 1
payloads: [payloads.json]
{types}
events:
  Done:
    doc: The result.
    fields:
      text: {{type: str, doc: The text.}}
    keys:
      text: text
{events}
stages:
  Work:
    doc: Does the work.
    result: Done
    events: [Done]
    context:
      task: {{type: Task, doc: The task., copy: deep}}
{stages}
hooks:
  bands: {{app: Application middleware.}}
  directions: {{inbound: On the way in., outbound: On the way out.}}
  points:
    work.before:
      event: {hook_event}
      stage: Work
      phase: Input
      direction: inbound
      doc: Before the work.
      payload:
        task: {{type: Task}}
"""


def _is_type_name(name: str) -> bool:
    try:
        check_type_name(name)
    except ValueError:
        return False
    return True


# Every reserved name a schema could otherwise declare (PascalCase, not a builtin).
TYPE_NAMES = sorted(name for name in RESERVED if _is_type_name(name))
# Payload types may not contain underscores at all.
MODEL_NAMES = [name for name in TYPE_NAMES if "_" not in name]
STAGE_SUFFIXES = [name.removeprefix("X") for name in StageNames("X").all()]
# Stage names one of whose generated names is reserved: `Middleware` -> MiddlewareResult.
STAGE_NAMES = sorted(
    {
        name.removesuffix(suffix)
        for name in TYPE_NAMES
        for suffix in STAGE_SUFFIXES
        if name.endswith(suffix) and _is_type_name(name.removesuffix(suffix))
    }
)


def _write(
    root: Path,
    *,
    types: str = "",
    events: str = "",
    stages: str = "",
    hook_event: str = "WorkEvent",
    defs: dict[str, Any] | None = None,
) -> Path:
    payload_defs = {"Task": {"type": "object", "properties": {"id": {"type": "string"}}}}
    payload_defs.update(defs or {})
    (root / "payloads.json").write_text(
        json.dumps({"$defs": payload_defs}, indent=2), encoding="utf-8"
    )
    text = SCHEMA.format(types=types, events=events, stages=stages, hook_event=hook_event)
    schema = root / "stages.yaml"
    schema.write_text(text, encoding="utf-8")
    return schema


def _line(path: Path, fragment: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if fragment in line)


def _generate(cli: Cli, schema: Path) -> list[str]:
    result = cli("generate", "--schema", schema.name, "--output", "out")
    assert result.code == 2, result.err
    assert "Traceback" not in result.err
    assert not (schema.parent / "out").exists()
    return result.err.splitlines()


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_names_the_brief_names_are_reserved() -> None:
    risky = {"Iterator", "Any", "Final", "TypeAlias", "Literal", "Mapping", "TYPE_CHECKING"}
    risky |= {"dataclass", "field", "final", "BaseModel", "Field", "StrEnum", "_copy"}
    risky |= {"MappingProxyType", "MiddlewareStage", "Interrupt", "UNSET", "HookPoint"}
    assert risky <= set(RESERVED)


@pytest.mark.parametrize("name", TYPE_NAMES)
def test_an_event_may_not_have_a_reserved_name(name: str, root: Path, cli: Cli) -> None:
    schema = _write(root, events=f"  {name}:\n    doc: Named like generated code.\n")

    errors = _generate(cli, schema)

    line = _line(schema, f"  {name}:")
    assert errors == [
        f"stages.yaml:{line}: events.{name}: {name!r} is reserved: the generated code "
        + RESERVED[name]
    ]


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_a_payload_type_may_not_have_a_reserved_name(name: str, root: Path, cli: Cli) -> None:
    schema = _write(root, defs={name: {"type": "string"}})

    errors = _generate(cli, schema)

    line = _line(root / "payloads.json", f'"{name}": {{')
    assert errors == [
        f"payloads.json:{line}: $defs.{name}: {name!r} is reserved: the generated code "
        + RESERVED[name]
    ]


@pytest.mark.parametrize("name", TYPE_NAMES)
def test_a_hook_event_may_not_have_a_reserved_name(name: str, root: Path, cli: Cli) -> None:
    schema = _write(root, hook_event=name)

    errors = _generate(cli, schema)

    line = _line(schema, f"event: {name}")
    assert errors == [
        f"stages.yaml:{line}: hooks.points['work.before'].event: {name!r} is reserved: "
        f"the generated code {RESERVED[name]}"
    ]


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_a_stage_may_not_generate_a_reserved_name(stage: str, root: Path, cli: Cli) -> None:
    body = "    doc: Named badly.\n    result: Done\n    events: [Done]\n    context:\n"
    field = "      n: {type: int, doc: N., copy: reference}\n"
    schema = _write(root, stages=f"  {stage}:\n{body}{field}")

    errors = _generate(cli, schema)

    line = _line(schema, f"  {stage}:")
    reserved = [name for name in StageNames(stage).all() if name in RESERVED]
    assert reserved
    assert errors == [
        f"stages.yaml:{line}: stages.{stage}: {name!r} (generated for stage {stage!r}) is "
        f"reserved: the generated code {RESERVED[name]}"
        for name in reserved
    ]


def test_external_types_may_not_have_reserved_names_unless_they_are_the_same(
    root: Path, cli: Cli
) -> None:
    # The very class the generated code imports under that name is fine.
    same = {"Interrupt": "stageware.runtime:Interrupt"}
    entries = "".join(
        f'  {name}: {{python: "{same.get(name, "decimal:Decimal")}"}}\n' for name in TYPE_NAMES
    )
    schema = _write(root, types="types:\n" + entries)

    errors = _generate(cli, schema)

    assert errors == [
        f"stages.yaml:{_line(schema, f'  {name}: ')}: types.{name}: {name!r} is reserved: "
        f"the generated code {RESERVED[name]}"
        for name in TYPE_NAMES
        if name not in same
    ]


@pytest.mark.parametrize("name", ["Tool_Use", "ToolUse_"])
def test_payload_types_have_no_underscores(name: str, root: Path, cli: Cli) -> None:
    # datamodel-code-generator would rename them (ToolUse), and the generated code
    # would not find its own class.
    schema = _write(root, defs={name: {"type": "string"}})

    errors = _generate(cli, schema)

    line = _line(root / "payloads.json", f'"{name}": {{')
    assert errors == [
        f"payloads.json:{line}: $defs.{name}: invalid name {name!r}: payload types may not "
        "contain '_' (datamodel-code-generator, which writes them, would rename it)"
    ]


def test_a_hook_event_may_have_an_underscore(root: Path, cli: Cli) -> None:
    # Hook events come from a template, which writes the name as the schema spells it.
    schema = _write(root, hook_event="Work_Event")

    result = cli("generate", "--schema", schema.name, "--output", "out")

    assert result.code == 0, result.err
    events = (root / "out" / "policy_events.py").read_text(encoding="utf-8")
    assert "class Work_Event(BaseModel):" in events


@pytest.mark.parametrize(
    ("blamed", "where"),
    [
        ((("Task", (), "it went wrong"),), "payloads.json:{task}: $defs.Task: "),
        ((), "stages.yaml:{payloads}: payloads: "),
    ],
    ids=["at_the_definition", "unpinned"],
)
def test_a_datamodel_problem_is_reported_at_the_definition_it_names(
    blamed: tuple[tuple[str, tuple[str, ...], str], ...],
    where: str,
    root: Path,
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(*_: object) -> str:
        raise DatamodelError("it went wrong", blamed)

    monkeypatch.setattr(package, "run_datamodel_codegen", fail)
    schema = _write(root)

    errors = _generate(cli, schema)

    task, payloads = _line(root / "payloads.json", '"Task": {'), _line(schema, "payloads:")
    assert errors == [where.format(task=task, payloads=payloads) + "it went wrong"]


def test_a_view_cannot_import_a_name_that_is_not_reserved() -> None:
    imports = Imports()
    imports.add("typing", "Final")
    imports.add(".events", "Anything")
    with pytest.raises(ValueError, match="typing:Optional is not a reserved name"):
        imports.add("typing", "Optional")


def _bound_names(source: str) -> set[str]:
    """Every name a module binds at module level, also inside ``if TYPE_CHECKING:``."""
    names: set[str] = set()
    pending = list(ast.parse(source).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If):
            pending.extend(node.body + node.orelse)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return names


def test_every_name_the_generated_package_binds_is_the_schemas_or_reserved() -> None:
    loaded = load_schema(SCHEMA_DIR / "stages.yaml", "stages.yaml", SCHEMA_DIR)
    schema = resolve_schema(loaded)
    declared = {*schema.payload_defs, *(event.name for event in schema.events)}
    declared |= {item.name for item in schema.externals}
    declared |= {name for stage in schema.stages for name in StageNames(stage.name).all()}
    assert schema.hooks is not None
    declared |= {point.event for point in schema.hooks.points}
    factory = re.compile(r"_[A-Za-z0-9]+_[a-z0-9_]+_default(_[0-9]+)?")
    for path in sorted(GENERATED.glob("*.py")):
        bound = _bound_names(path.read_text(encoding="utf-8"))
        unknown = {
            name
            for name in bound - declared - set(RESERVED) - {"annotations", "__all__"}
            if not factory.fullmatch(name)
        }
        assert not unknown, f"{path.name} binds names load/reserved.py does not list: {unknown}"


# Every construct of the JSON Schema subset the payload files may use.
KITCHEN_SINK: dict[str, Any] = {
    "Text": {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^a"},
    "Number": {
        "type": ["number", "null"],
        "minimum": 0,
        "maximum": 9,
        "exclusiveMinimum": -1,
        "exclusiveMaximum": 10,
        "multipleOf": 0.5,
    },
    "Count": {"type": "integer", "default": 3, "title": "Count", "$comment": "c"},
    "Flag": {"type": "boolean", "examples": [True]},
    "Nothing": {"type": "null"},
    "Choice": {"enum": ["a", "b", 1]},
    "Constant": {"const": "x"},
    "Texts": {"type": "array", "items": {"$ref": "#/$defs/Text"}, "minItems": 1, "maxItems": 3},
    "Counts": {"type": "object", "additionalProperties": {"type": "integer"}},
    "Open": {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": True,
    },
    "Closed": {
        "type": "object",
        "description": "Every kind of property.",
        "properties": {
            "a": {"type": "string", "default": "q"},
            "b": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "c": {"oneOf": [{"$ref": "#/$defs/Count"}, {"$ref": "#/$defs/Flag"}]},
            "d": {"allOf": [{"$ref": "#/$defs/Open"}]},
            "e": {"type": "array"},
            "f": {"type": "object"},
            "g": {},
            "h": {"type": ["string", "integer"]},
            "i": {"enum": ["x"]},
            "j": {"type": "array", "items": {"type": "object", "properties": {"z": {}}}},
        },
        "required": ["a", "c"],
        "additionalProperties": False,
    },
    "Both": {"allOf": [{"$ref": "#/$defs/Closed"}, {"type": "object", "properties": {}}]},
    "Anything": {},
}


def test_datamodel_code_generator_imports_only_reserved_names() -> None:
    source = run_datamodel_codegen({"$defs": KITCHEN_SINK}, '"""Doc."""', list(KITCHEN_SINK))
    imported = {
        (node.module, alias.name)
        for node in ast.parse(source).body
        if isinstance(node, ast.ImportFrom) and node.module != "__future__"
        for alias in node.names
    }
    listed = {(module, name) for module, names in DATAMODEL_IMPORTS.items() for name in names}
    assert imported <= listed
