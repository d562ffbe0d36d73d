"""The command line: `cedar schema` prints the schema, `policy check` reports Cedar files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stageware.cedar import schema_for
from stageware_codegen.cli import main

from .test_cedar_schema import TOOLS


def test_cedar_schema_prints_the_schema_for_the_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    attributes = tmp_path / "user.json"
    attributes.write_text(
        json.dumps({"type": "object", "properties": {"team": {"type": "string"}}}),
        encoding="utf-8",
    )
    status = main(
        [
            "cedar",
            "schema",
            "--tools",
            "tests.cedar.test_cedar_schema:TOOLS",
            "--principal-attributes",
            str(attributes),
        ]
    )
    assert status == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == schema_for(
        TOOLS, principal_attributes={"type": "object", "properties": {"team": {"type": "string"}}}
    )


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        (["--tools", "tests.cedar.nowhere:TOOLS"], "names nothing: No module named"),
        (["--tools", "tests.cedar.test_cedar_schema"], "is not 'package.module:attribute'"),
        (["--principal-attributes", "missing.json"], "No such file or directory"),
    ],
)
def test_cedar_schema_names_a_bad_argument(
    arguments: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cedar", "schema", *arguments]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("stageware cedar schema: ")
    assert problem in captured.err


def test_policy_check_reports_a_cedar_file_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policies = tmp_path / "tools.cedar"
    policies.write_text(
        '// refunds need finance\n@id("typo")\npermit(principal, action == Action::"tool:refnd", '
        "resource);\n",
        encoding="utf-8",
    )
    spec = tmp_path / "policy.yaml"
    spec.write_text(
        "version: 1\nmiddleware:\n  - use: stageware.cedar:cedar_policy\n    settings:\n"
        f"      policies: [{policies}]\n      tools: tests.cedar.test_cedar_schema:TOOLS\n",
        encoding="utf-8",
    )
    assert main(["policy", "check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"{spec}:3: middleware[0]: building middleware 'cedar' failed" in err
    assert f"{policies}:2:1: 'typo': unrecognized action `Action::\"tool:refnd\"`" in err
