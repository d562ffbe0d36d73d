"""The rendered package is imported before it replaces anything.

``compile()`` only proves syntax; a module can still fail when it runs. Generation stages
the package inside the output, imports every module in a subprocess, and only then moves
files into place. The generator never means to emit such a module, so these tests hand
the write step one directly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import stageware
from stageware_codegen import OutputError
from stageware_codegen.write.staging import Staging

from .conftest import GENERATED, Cli, Project, write_package


def _broken(project: Project) -> dict[str, str]:
    """The checked-in modules, with one that compiles but fails when it is imported."""
    files = {path.name: path.read_text(encoding="utf-8") for path in project.output.glob("*.py")}
    files["contexts.py"] += "\nimport no_such_module\n"
    return files


def test_a_module_that_fails_to_import_is_named_and_nothing_is_written(
    project: Project,
) -> None:
    before = project.snapshot()
    siblings = sorted(path.name for path in project.output.parent.iterdir())
    files = _broken(project)
    line = files["contexts.py"].count("\n")

    with pytest.raises(OutputError) as caught:
        write_package(project.output, files)

    assert str(caught.value) == (
        f"generated contexts.py:{line} fails to import: "
        "ModuleNotFoundError: No module named 'no_such_module'; nothing was written"
    )
    assert project.snapshot() == before
    # Nothing was staged beside the output, and the staging inside it is gone.
    assert sorted(path.name for path in project.output.parent.iterdir()) == siblings


def test_staging_imports_the_package(project: Project, tmp_path: Path) -> None:
    (tmp_path / "staging").mkdir()
    with pytest.raises(OutputError, match=r"contexts\.py:[0-9]+ fails to import"):
        Staging(tmp_path / "staging").check_imports(_broken(project))


def test_a_new_output_directory_is_not_created_when_the_import_fails(project: Project) -> None:
    with pytest.raises(OutputError):
        write_package(project.root / "fresh" / "api", _broken(project))

    assert not (project.root / "fresh" / "api").exists()


def test_files_are_written_with_ordinary_permissions(project: Project, cli: Cli) -> None:
    project.edit("doc: Why the model stopped.}", "doc: Why it stopped.}")

    assert cli("generate").code == 0

    assert (project.output / "events.py").stat().st_mode & 0o644 == 0o644


def test_a_broken_generated_package_of_stageware_itself_can_be_regenerated(
    project: Project,
) -> None:
    # A copy of the stageware package whose generated code fails on import, first on
    # the path: the schema's external types (`stageware:Model`) and the runtime the new
    # package imports must be found without importing the broken package.
    site = project.root / "site"
    shutil.copytree(
        Path(stageware.__file__).parent,
        site / "stageware",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    broken = site / "stageware" / "_generated"
    for path in broken.glob("*.py"):
        path.write_text(
            path.read_text(encoding="utf-8") + '\nraise RuntimeError("broken")\n',
            encoding="utf-8",
        )
    env = {**os.environ, "PYTHONPATH": str(site)}
    uses = [sys.executable, "-c", "import stageware; print(stageware.InvokeModelStage.name)"]
    assert subprocess.run(uses, env=env, capture_output=True, check=False).returncode != 0

    generate = [sys.executable, "-m", "stageware_codegen.cli", "generate", "--output", str(broken)]
    completed = subprocess.run(generate, env=env, capture_output=True, text=True, check=False)

    assert completed.returncode == 0, completed.stderr
    fresh = {path.name: path.read_text(encoding="utf-8") for path in broken.glob("*.py")}
    checked_in = {path.name: path.read_text(encoding="utf-8") for path in GENERATED.glob("*.py")}
    assert fresh.keys() == checked_in.keys()
    assert not any("broken" in text for text in fresh.values())
    used = subprocess.run(uses, env=env, capture_output=True, text=True, check=True)
    assert used.stdout.strip() == "InvokeModel"
