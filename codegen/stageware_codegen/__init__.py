"""The stageware code generator: turns a stage schema into the typed middleware surface.

Needs the ``codegen`` extra (``pip install 'stageware[codegen]'``); the runtime never
imports this package. :func:`generate` writes the generated package, :func:`check`
reports whether the checked-in one is up to date. Both raise
:class:`InvalidSchemaError` for a bad schema and write nothing in that case.
:func:`find_config` reads ``[tool.stageware]``, as the command line does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._errors import InvalidSchemaError, OutputError, SchemaError
from ._generate import build
from ._output import WriteReport, banner, diff_output, write_output
from ._project import (
    ConfigError,
    ProjectConfig,
    find_config,
    project_root,
    regenerate_command,
    relative_path,
)
from ._smoke import check_imports

__all__ = [
    "CheckReport",
    "ConfigError",
    "InvalidSchemaError",
    "OutputError",
    "ProjectConfig",
    "SchemaError",
    "WriteReport",
    "check",
    "find_config",
    "generate",
    "relative_path",
]


def _build(schema: Path, output: Path, root: Path | None) -> dict[str, str]:
    """Render every module.

    Messages name files relative to the cwd; the banner names the schema relative to the
    project root and gives the command that regenerates *output* from there.
    """
    cwd = Path.cwd()
    root = project_root(schema) if root is None else root
    text = banner(relative_path(schema, root), regenerate_command(schema, output, root))
    return build(schema, relative_path(schema, cwd), text, cwd)


def generate(schema: Path, output: Path, *, project_root: Path | None = None) -> WriteReport:
    """Generate the package for *schema* into the directory *output*.

    Args:
        schema: The stage schema YAML.
        output: The package directory to write (created if missing).
        project_root: Directory the banner names paths relative to (default: that of the
            ``pyproject.toml`` nearest the schema, else the schema's directory).

    Raises:
        InvalidSchemaError: The schema is invalid; nothing was written.
        OutputError: Formatting, compiling, importing or writing failed; nothing was
            written.
    """
    return write_output(output, _build(schema, output, project_root))


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

    *project_root* is as for :func:`generate`.

    Raises:
        InvalidSchemaError: The schema is invalid.
        OutputError: Formatting, compiling or importing the generated package failed.
    """
    files = _build(schema, output, project_root)
    check_imports(files, output)
    return CheckReport(diff_output(output, files, relative_path(output, Path.cwd())))
