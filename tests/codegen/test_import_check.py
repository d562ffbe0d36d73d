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
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

import stageware
from stageware_codegen import OutputError
from stageware_codegen.write.import_check import ImportChecker
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


class _Recorded(subprocess.Popen[str]):
    """``subprocess.Popen`` that remembers every process it starts."""

    started: ClassVar[list[subprocess.Popen[str]]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _Recorded.started.append(self)


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[str]]:
    """The checker processes started while the test runs (they are started by Popen)."""
    _Recorded.started = []
    monkeypatch.setattr(subprocess, "Popen", _Recorded)
    return _Recorded.started


def _checkers(started: list[subprocess.Popen[str]]) -> list[subprocess.Popen[str]]:
    return [process for process in started if "-B" in process.args]  # type: ignore[operator]


def test_the_warm_checkers_are_reaped_when_the_schema_is_invalid(
    project: Project, cli: Cli, started: list[subprocess.Popen[str]]
) -> None:
    project.edit("doc: Why the model stopped.}", "doc: Why the model stopped.}\n  bogus: 1")

    assert cli("generate").code == 2

    checkers = _checkers(started)
    assert len(checkers) == 2  # the import check and the external types
    # Killed (or ended) and waited for: no process left running, no zombie.
    assert all(process.returncode is not None for process in checkers)


def test_an_unneeded_import_check_is_reaped(
    project: Project, cli: Cli, started: list[subprocess.Popen[str]]
) -> None:
    assert cli("generate").code == 0  # the package is known to import: no import check

    assert all(process.returncode is not None for process in _checkers(started))


def test_the_warm_import_check_names_the_file_and_line(project: Project, tmp_path: Path) -> None:
    files = _broken(project)
    line = files["contexts.py"].count("\n")
    (tmp_path / "staging").mkdir()
    with ImportChecker() as checker:
        time.sleep(0.5)  # warmed up: it waits for the request
        with pytest.raises(OutputError) as caught:
            Staging(tmp_path / "staging").check_imports(files, checker)

    assert str(caught.value) == (
        f"generated contexts.py:{line} fails to import: "
        "ModuleNotFoundError: No module named 'no_such_module'"
    )


def test_a_checker_that_cannot_start_reports_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with ImportChecker() as checker, pytest.raises(OutputError) as caught:
        checker.import_staged(Path("unused"))

    assert str(caught.value).startswith("cannot import the generated package: ")
