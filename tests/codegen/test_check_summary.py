"""``stageware check`` says what changed in the typed surface before it shows the diff.

A user regenerating after a schema change learns which handlers to revisit: fields
added, removed, renamed (probably) or retyped, what ``replace()`` can set, stages,
events, payload types and hook points added or removed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stageware_codegen import check
from stageware_codegen.write.diff import surface_changes

from .conftest import Cli, Project

DATA = Path(__file__).parent / "data"

SUMMARIZE = """\
  Summarize:
    doc: Summarizes one text.
    result: Translated
    events: [Translated]
    context:
      text: {type: str, doc: The text., copy: reference}
"""


def _edit(path: Path, *replacements: tuple[str, str]) -> None:
    text = path.read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in text, f"test bug: {old!r} is not in {path.name}"
        text = text.replace(old, new, 1)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def translate(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The translate schema, generated into ``api`` in the working directory."""
    monkeypatch.chdir(tmp_path)
    schema = tmp_path / "translate.yaml"
    shutil.copy(DATA / "translate.yaml", schema)
    result = cli("generate", "--schema", "translate.yaml", "--output", "api")
    assert result.code == 0, result.err
    return schema


def test_an_up_to_date_package_has_no_changes(translate: Path) -> None:
    report = check(translate, translate.parent / "api")
    assert report.up_to_date
    assert report.changes == ()


def test_context_event_and_stage_changes_are_listed_above_the_diff(
    translate: Path, cli: Cli
) -> None:
    _edit(
        translate,
        # Context fields: renamed, retyped, removed, added.
        ("      tags:\n", "      labels:\n"),
        (
            "      tokens_hint:\n        type: int\n",
            "      tokens_hint:\n        type: int | None\n",
        ),
        (
            "      budget:\n        type: float\n        doc: Spending limit; an int default "
            "fits a float.\n        copy: reference\n        default: 2\n",
            "",
        ),
        (
            "      credentials:\n",
            "      audience:\n        type: str\n        doc: Who reads it.\n"
            "        copy: reference\n      credentials:\n",
        ),
        # What replace() can set.
        ("        replace: forbidden\n        why: The request identifies the call.\n", ""),
        (
            "        doc: The text to translate.\n        copy: reference\n",
            "        doc: The text to translate.\n        copy: reference\n"
            "        replace: forbidden\n",
        ),
        # Events: one removed, one added, one retyped field; a stage added.
        (
            "  NeedsReview:\n    doc: The translator wants a human to look first.\n"
            "    interrupt: true\n    fields:\n      reason: {type: str}\n",
            "  Progress:\n    doc: How far it got.\n    fields:\n      done: {type: float}\n",
        ),
        ("events: [Fragment, NeedsReview, Translated]", "events: [Fragment, Progress, Translated]"),
        ("      tokens: {type: int, default: 0}", "      tokens: {type: float, default: 0}"),
        ("stages:\n", "stages:\n" + SUMMARIZE),
    )

    result = cli("check", "--schema", "translate.yaml", "--output", "api")

    assert result.code == 1, result.err
    summary, _, diff = result.out.partition("\n\n")
    assert summary.splitlines() == [
        "stage added: Summarize",
        "event added: Progress",
        "event removed: NeedsReview",
        "Translated: field retyped: tokens: int -> float",
        "TranslateEvent: retyped: Fragment | NeedsReview | Translated -> "
        "Fragment | Progress | Translated",
        "TranslateContext: field added: audience (str)",
        "TranslateContext: field renamed?: tags -> labels (list[str])",
        "TranslateContext: field removed: budget (float)",
        "TranslateContext: field retyped: tokens_hint: int -> int | None",
        "TranslateContext: replace() can now set: request",
        "TranslateContext: replace() can no longer set: text",
    ]
    assert diff.startswith("--- api/"), diff


def test_payload_types_hook_events_and_hook_points_are_listed(project: Project, cli: Cli) -> None:
    payloads = project.root / "schema" / "payloads" / "converse.schema.json"
    document = json.loads(payloads.read_text(encoding="utf-8"))
    usage = document["$defs"]["Usage"]
    usage["properties"]["reasoningTokens"] = {"type": "integer"}
    usage["required"].remove("totalTokens")
    payloads.write_text(json.dumps(document, indent=2), encoding="utf-8")
    project.edit("        tool_name: {type: str, doc: Name of the tool.}\n", "")
    project.edit(
        "    run.error:\n      event: RunErrorEvent\n      stage: AgentStream\n      phase: Wrap\n"
        "      direction: outbound\n      doc: The run failed with an error.\n      payload:\n"
        "        run_id: {type: str, doc: Id of the run.}\n"
        "        error_type: {type: str, doc: Class name of the error.}\n"
        "        error: {type: str, doc: The error message.}\n",
        "",
    )

    result = cli("check")

    assert result.code == 1, result.err
    summary = result.out.partition("\n\n")[0].splitlines()
    assert summary == [
        "Usage: field added: reasoningTokens (NotRequired[int])",
        "Usage: field retyped: totalTokens: int -> NotRequired[int]",
        "hook event removed: RunErrorEvent",
        "ToolCallEvent: field removed: tool_name (str)",
        "hook point removed: run.error",
    ]


TWO_FIELDS = """\
@dataclass
class C:
    a: int
    b: int
    c: str

    def replace(self, *, a: int, c: str) -> C: ...
"""


@pytest.mark.parametrize(
    ("new", "changes"),
    [
        (
            TWO_FIELDS.replace("a: int", "x: int").replace("b: int", "y: int"),
            ["C: field renamed?: a -> x (int)", "C: field renamed?: b -> y (int)"],
        ),
        (
            TWO_FIELDS.replace("    b: int\n", "").replace("    c: str\n", "    d: str\n"),
            [
                "C: field removed: b (int)",
                "C: field renamed?: c -> d (str)",
                "C: replace() can no longer set: d",
            ],
        ),
        ("this is not Python", []),
    ],
    ids=["two_renames_in_order", "rename_loses_replace", "unparsable_module_is_left_out"],
)
def test_surface_changes(new: str, changes: list[str]) -> None:
    assert surface_changes({"contexts.py": TWO_FIELDS}, {"contexts.py": new}) == changes
