"""External types (``types:``) are checked where they are declared.

Generated code imports them only for the type checkers, so importing the generated
package cannot prove them: the generator finds each module and the name in it, and
reports a problem at the entry's ``python`` key, before anything is written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stageware_codegen.resolve.external_types import external_type_problem

from .conftest import Cli, Project


def _declare(project: Project, python: str) -> int:
    """Declare the external type ``Gadget`` as *python*; return the line of its path."""
    project.edit(
        "types:\n",
        f'types:\n  Gadget:\n    python: "{python}"\n    doc: A type from elsewhere.\n',
    )
    return project.line_of(f'python: "{python}"')


def test_a_missing_module_is_reported_at_the_entry_and_nothing_is_written(
    project: Project, cli: Cli
) -> None:
    before = project.snapshot()
    line = _declare(project, "no_such_module:Gadget")

    result = cli("generate")

    assert result.code == 2
    assert result.err == (
        f"schema/stages.yaml:{line}: types.Gadget.python: 'no_such_module:Gadget' cannot be "
        "imported: no module named 'no_such_module'\n"
    )
    assert project.snapshot() == before


def test_check_reports_it_too(project: Project, cli: Cli) -> None:
    line = _declare(project, "no_such_package.types:Gadget")

    result = cli("check")

    assert result.code == 2
    assert result.err == (
        f"schema/stages.yaml:{line}: types.Gadget.python: 'no_such_package.types:Gadget' "
        "cannot be imported: no module named 'no_such_package'\n"
    )


def test_a_new_output_directory_is_not_created_for_a_bad_type(project: Project, cli: Cli) -> None:
    _declare(project, "no_such_module:Gadget")

    result = cli("generate", "--output", "fresh/api")

    assert result.code == 2
    assert not (project.root / "fresh" / "api").exists()


def test_a_misspelled_name_is_reported_with_the_closest_one(project: Project, cli: Cli) -> None:
    project.edit(
        'python: "stageware.runtime:AgentHandle"', 'python: "stageware.runtime:AgentHandel"'
    )
    line = project.line_of('python: "stageware.runtime:AgentHandel"')

    result = cli("check")

    assert result.code == 2
    assert result.err == (
        f"schema/stages.yaml:{line}: types.AgentHandle.python: "
        "'stageware.runtime:AgentHandel' cannot be imported: module 'stageware.runtime' has "
        "no attribute 'AgentHandel' (did you mean 'AgentHandle'?)\n"
    )


def test_a_module_of_the_project_in_the_working_directory_is_found(
    project: Project, cli: Cli
) -> None:
    (project.root / "harness_types.py").write_text("class Gadget:\n    pass\n", encoding="utf-8")
    _declare(project, "harness_types:Gadget")

    result = cli("generate")

    assert result.code == 0, result.err


@pytest.mark.parametrize(
    "python",
    [
        # Found in the source: __all__ of a package whose names load lazily, and an import.
        "stageware:Model",
        "stageware.runtime:AgentHandle",
        # No source to read (a built-in module), and a star import: imported to be sure.
        "builtins:memoryview",
        "decimal:Decimal",
    ],
)
def test_existing_types_pass(python: str) -> None:
    assert external_type_problem(python) is None


def test_names_the_type_checkers_see_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "checked_only.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from collections.abc import Mapping as Table\n"
        "try:\n"
        "    Spare = int\n"
        "except ImportError:\n"
        "    pass\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    assert external_type_problem("checked_only:Table") is None
    assert external_type_problem("checked_only:Spare") is None
    assert "checked_only" not in sys.modules  # found in the source, never run
    assert external_type_problem("checked_only:Tabel") == (
        "'checked_only:Tabel' cannot be imported: module 'checked_only' has no attribute "
        "'Tabel' (did you mean 'Table'?)"
    )


def test_a_module_that_must_be_run_and_fails_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "starred.py").write_text(
        'from os.path import *\nraise RuntimeError("no luck")\n', encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    assert external_type_problem("starred:Thing") == (
        "'starred:Thing' cannot be imported: importing 'starred' raised RuntimeError: no luck"
    )
