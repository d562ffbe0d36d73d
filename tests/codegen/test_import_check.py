"""The rendered package is imported before it replaces anything.

``compile()`` only proves syntax; a module can still fail when it runs. Generation stages
the package beside the output, imports every module in a subprocess, and only then moves
files into place.
"""

from __future__ import annotations

from pathlib import Path

from stageware_codegen._smoke import _shadows_stageware

from .conftest import GENERATED, Cli, Project

# An external type whose module does not exist: the generated code compiles, but
# `from no_such_module import Gadget` fails when contexts.py is imported.
_BROKEN_TYPE = (
    "types:\n"
    "  Gadget:\n"
    '    python: "no_such_module:Gadget"\n'
    "    doc: A type from a module that is not installed.\n"
)


def _break(project: Project) -> None:
    project.edit("types:\n", _BROKEN_TYPE)
    project.edit(
        "      projected_input_tokens:\n",
        "      gadget:\n"
        "        type: Gadget\n"
        "        doc: A gadget.\n"
        "        copy: reference\n"
        "      projected_input_tokens:\n",
    )


def test_a_module_that_fails_to_import_is_named_and_nothing_is_written(
    project: Project, cli: Cli
) -> None:
    before = project.snapshot()
    siblings = sorted(path.name for path in project.output.parent.iterdir())
    _break(project)

    result = cli("generate")

    assert result.code == 2
    assert "Traceback" not in result.err
    assert result.err.startswith("stageware: generated contexts.py:"), result.err
    assert "fails to import: ModuleNotFoundError: No module named 'no_such_module'" in result.err
    assert result.err.rstrip().endswith("nothing was written")
    assert project.snapshot() == before
    # The staging directory beside the output is gone too.
    assert sorted(path.name for path in project.output.parent.iterdir()) == siblings


def test_check_imports_the_package_too(project: Project, cli: Cli) -> None:
    _break(project)

    result = cli("check")

    assert result.code == 2
    assert "fails to import: ModuleNotFoundError" in result.err


def test_a_new_output_directory_is_not_created_when_the_import_fails(
    project: Project, cli: Cli
) -> None:
    _break(project)

    result = cli("generate", "--output", "fresh/api")

    assert result.code == 2
    assert not (project.root / "fresh" / "api").exists()


def test_files_are_written_with_ordinary_permissions(project: Project, cli: Cli) -> None:
    project.edit("doc: Why the model stopped.}", "doc: Why it stopped.}")

    assert cli("generate").code == 0

    assert (project.output / "events.py").stat().st_mode & 0o644 == 0o644


def test_regenerating_our_own_package_does_not_import_the_old_copy(tmp_path: Path) -> None:
    # The old generated package is what `import stageware` loads; if it is broken, the
    # import check of its replacement must still run, so stageware's __init__ is skipped.
    assert _shadows_stageware(GENERATED)
    assert not _shadows_stageware(tmp_path / "api")
