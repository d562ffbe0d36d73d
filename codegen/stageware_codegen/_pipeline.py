"""The generator pipeline, and the two things it is run for: ``generate`` and ``check``.

Load and validate the schema (:mod:`.load`), resolve it (:mod:`.resolve`), render every
module (:mod:`.render`), then format, import and write them (:mod:`.write`). Any
problem stops the pipeline before a single file is written.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ._project import project_root, regenerate_command, relative_path
from .load.schema import load_schema
from .render.package import render_package
from .resolve.schema import resolve_schema
from .write.banner import banner
from .write.diff import checked_in, surface_changes, unified_diff
from .write.files import WriteReport, write_output
from .write.formatting import finish_module
from .write.import_check import check_imports

__all__ = ["CheckReport", "build", "check", "generate"]

_WORKERS = 4


def build(
    schema_path: Path, file_label: str, banner_text: str, display_base: Path
) -> dict[str, str]:
    """Generate every module for the schema at *schema_path*; nothing is written.

    Args:
        schema_path: The stage schema YAML.
        file_label: How the schema file is named in error messages.
        banner_text: The banner every generated module starts with.
        display_base: Directory that payload file names in messages are relative to.

    Returns:
        Module file name to finished source text, in a fixed order.

    Raises:
        InvalidSchemaError: For any problem with the schema or its payload files.
        OutputError: If formatting or compiling the output fails.
    """
    loaded = load_schema(schema_path, file_label, display_base)
    schema = resolve_schema(loaded)
    # The generator subprocesses (datamodel-code-generator, ruff) dominate the run time
    # and are independent, so they run side by side; results are keyed, so the output
    # does not depend on which finishes first.
    with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
        bodies = render_package(schema, loaded.payloads, loaded.errors, pool)
        finished = {
            name: pool.submit(finish_module, name, body, banner_text)
            for name, body in bodies.items()
        }
        return {name: future.result() for name, future in finished.items()}


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
    """Result of :func:`check`: ``diff`` is empty when the output is up to date.

    Attributes:
        diff: A unified diff from the checked-in package to the fresh one.
        changes: What changed in the typed surface, one line each, for instance
            ``InvokeModelContext: field added: budget (int)``; the handlers to revisit.
    """

    diff: str
    changes: tuple[str, ...] = ()

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
    check_imports(files)
    current = checked_in(output)
    diff = unified_diff(current, files, relative_path(output, Path.cwd()))
    return CheckReport(diff, tuple(surface_changes(current, files)) if diff else ())
