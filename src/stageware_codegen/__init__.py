"""The stageware code generator: turns a stage schema into the typed middleware surface.

Needs the ``codegen`` extra (``pip install 'stageware[codegen]'``); the runtime never
imports this package. :func:`generate` writes the generated package, :func:`check`
reports whether the checked-in one is up to date. Both raise
:class:`InvalidSchemaError` for a bad schema and write nothing in that case.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._errors import InvalidSchemaError, OutputError, SchemaError
from ._generate import build
from ._output import WriteReport, diff_output, write_output
from ._project import relative_path
from ._smoke import check_imports

__all__ = [
    "CheckReport",
    "InvalidSchemaError",
    "OutputError",
    "SchemaError",
    "WriteReport",
    "check",
    "generate",
    "relative_path",
]


def _build(schema: Path, project_root: Path | None) -> dict[str, str]:
    """Render every module.

    Messages name the schema relative to the cwd, the banner relative to *project_root*.
    """
    cwd = Path.cwd()
    banner = relative_path(schema, cwd if project_root is None else project_root)
    return build(schema, relative_path(schema, cwd), banner, cwd)


def generate(schema: Path, output: Path, *, project_root: Path | None = None) -> WriteReport:
    """Generate the package for *schema* into the directory *output*.

    Args:
        schema: The stage schema YAML.
        output: The package directory to write (created if missing).
        project_root: Directory the banner names the schema relative to (default: cwd).

    Raises:
        InvalidSchemaError: The schema is invalid; nothing was written.
        OutputError: Formatting, compiling, importing or writing failed; nothing was
            written.
    """
    return write_output(output, _build(schema, project_root))


@dataclass(frozen=True, slots=True)
class CheckReport:
    """Result of :func:`check`: ``diff`` is empty when the output is up to date."""

    diff: str

    @property
    def up_to_date(self) -> bool:
        """Whether the checked-in output matches the schema."""
        return not self.diff


def check(schema: Path, output: Path, *, project_root: Path | None = None) -> CheckReport:
    """Compare the generated package in *output* with what *schema* generates now.

    Raises:
        InvalidSchemaError: The schema is invalid.
        OutputError: Formatting, compiling or importing the generated package failed.
    """
    files = _build(schema, project_root)
    check_imports(files, output)
    return CheckReport(diff_output(output, files, relative_path(output, Path.cwd())))
