"""Fixtures for generator tests: a project copy in a temporary directory, and the CLI."""

from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from stageware_codegen.cli import main
from stageware_codegen.write.files import WriteReport, open_output

REPO = Path(__file__).resolve().parents[2]
SCHEMA_DIR = REPO / "schema"
GENERATED = REPO / "src" / "stageware" / "_generated"
DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


Cli = Callable[..., CliResult]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """Run ``stageware`` in-process; return its exit status and output."""

    def run(*argv: str) -> CliResult:
        code = main(list(argv))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@dataclass(frozen=True)
class Project:
    """A copy of the repository's schema and generated code, with its own pyproject."""

    root: Path

    @property
    def schema(self) -> Path:
        return self.root / "schema" / "stages.yaml"

    @property
    def output(self) -> Path:
        return self.root / "out"

    def edit(self, old: str, new: str) -> None:
        """Replace the first *old* in the schema with *new*; *old* must be present."""
        text = self.schema.read_text(encoding="utf-8")
        assert old in text, f"test bug: {old!r} is not in the schema"
        self.schema.write_text(text.replace(old, new, 1), encoding="utf-8")

    def line_of(self, fragment: str, nth: int = 1) -> int:
        """1-based number of the *nth* line of the schema that contains *fragment*."""
        lines = self.schema.read_text(encoding="utf-8").splitlines()
        found = [number for number, line in enumerate(lines, 1) if fragment in line]
        assert len(found) >= nth, f"test bug: {fragment!r} is not in the schema {nth} time(s)"
        return found[nth - 1]

    def snapshot(self) -> dict[str, bytes]:
        """Every file under the output directory, by relative path."""
        return {
            path.relative_to(self.output).as_posix(): path.read_bytes()
            for path in sorted(self.output.rglob("*"))
            if path.is_file()
        }


SCHEMA_LINE = "# Schema file, relative to this directory: "


def relocated(text: str, schema_from_output: str) -> str:
    """A generated module's *text* with the banner's schema path replaced."""
    head, found, rest = text.partition(SCHEMA_LINE)
    assert found, "test bug: the text has no schema line"
    return head + found + schema_from_output + rest[rest.index("\n") :]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """The schema and the checked-in output copied to *tmp_path*, which becomes the cwd.

    The copied package's banners record the schema's new place, as generating it there
    would; no cache comes along.
    """
    shutil.copytree(SCHEMA_DIR, tmp_path / "schema")
    (tmp_path / "out").mkdir()
    for path in GENERATED.glob("*.py"):
        text = relocated(path.read_text(encoding="utf-8"), "../schema/stages.yaml")
        (tmp_path / "out" / path.name).write_text(text, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.stageware]\nschema = "schema/stages.yaml"\noutput = "out"\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    return Project(tmp_path)


def import_package(directory: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import the generated package in *directory*, fresh, under the directory's name."""
    monkeypatch.syspath_prepend(str(directory.parent))
    prefix = directory.name + "."
    for name in [name for name in sys.modules if name == directory.name or name.startswith(prefix)]:
        monkeypatch.delitem(sys.modules, name)
    return importlib.import_module(directory.name)


def write_package(output: Path, files: dict[str, str]) -> WriteReport:
    """Write *files*, formatted module texts, as the generated package in *output*."""
    with open_output(output) as target:
        return target.write(files)
