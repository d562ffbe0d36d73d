"""The generator pipeline, and the two things it is run for: ``generate`` and ``check``.

Load and validate the schema (:mod:`.load`), resolve it (:mod:`.resolve`), render every
module (:mod:`.render`), then format, import and write them (:mod:`.write`). Any
problem stops the pipeline before a single file is written. Both runs first finish a
write that a dead process left unfinished in the output directory; what the last
generation did is remembered there (:mod:`.write.cache`), so that work whose answer is
known (datamodel-code-generator, ruff, the import check) is not done again.
"""

from __future__ import annotations

import importlib.util
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._project import (
    is_configured,
    project_root,
    regenerate_command,
    regenerate_directory,
    relative_path,
)
from .resolve.external_types import TypesChecker
from .write.banner import banner
from .write.cache import load_cache, record_of, save_cache
from .write.diff import checked_in, surface_changes, unified_diff
from .write.files import WriteReport, finish_interrupted, open_output
from .write.import_check import ImportChecker
from .write.ownership import check_owner, schema_from_output
from .write.staging import Staging

if TYPE_CHECKING:
    from .render.package import DatamodelAnswers

# The steps that load pydantic, jinja2 and datamodel-code-generator are imported by the
# functions that run them: the checkers' interpreters (started first) warm up meanwhile.
# A missing codegen extra still fails the import of this module, which the command line
# reports with the install command.
for _name in ("yaml", "jinja2", "datamodel_code_generator"):
    if importlib.util.find_spec(_name) is None:
        raise ModuleNotFoundError(f"No module named {_name!r}", name=_name)

__all__ = ["CheckReport", "check", "generate"]


@dataclass(frozen=True, slots=True)
class _Run:
    """Where one run reads and writes, and how the paths are shown."""

    schema: Path
    output: Path
    root: Path

    @staticmethod
    def of(schema: Path, output: Path, root: Path | None) -> _Run:
        return _Run(schema, output, project_root(schema) if root is None else root)

    @property
    def configured(self) -> bool:
        """Whether ``[tool.stageware]`` pairs this schema with this output."""
        return is_configured(self.schema, self.output, self.root)

    def banner(self) -> str:
        """The banner for this schema, output and project root."""
        return banner(
            relative_path(self.schema, self.root),
            regenerate_command(self.schema, self.output, self.root),
            schema_from_output(self.schema, self.output),
            regenerate_directory(self.schema, self.output, self.root),
        )


def _texts(run: _Run, datamodel: DatamodelAnswers, checker: TypesChecker) -> dict[str, str]:
    """Every module of the package, banner on top, before formatting, in output order.

    Messages name files relative to the cwd.

    Raises:
        InvalidSchemaError: For any problem with the schema or its payload files.
    """
    from .load.schema import load_schema
    from .render.package import render_package
    from .resolve.schema import resolve_schema

    cwd = Path.cwd()
    loaded = load_schema(run.schema, relative_path(run.schema, cwd), cwd)
    schema = resolve_schema(loaded, checker)
    # datamodel-code-generator's subprocess dominates a run that needs it; it runs beside
    # the templates.
    with ThreadPoolExecutor(max_workers=1) as pool:
        bodies = render_package(schema, loaded.payloads, loaded.errors, pool, datamodel)
    text = run.banner()
    return {name: text + body for name, body in bodies.items()}


def generate(
    schema: Path, output: Path, *, project_root: Path | None = None, force: bool = False
) -> WriteReport:
    """Generate the package for *schema* into the directory *output*.

    Args:
        schema: The stage schema YAML.
        output: The package directory to write (created if missing).
        project_root: Directory the banner names paths relative to (default: that of the
            ``pyproject.toml`` nearest the schema, else the schema's directory).
        force: Generate even into a directory that holds another schema's package or
            files stageware did not generate (it still never overwrites those files).

    Raises:
        InvalidSchemaError: The schema is invalid; nothing was written.
        OutputError: The directory belongs to another schema or holds other files, or
            formatting, importing or writing failed; nothing was written.
    """
    run = _Run.of(schema, output, project_root)
    # Started first, to warm up while the package is rendered; killed if not asked.
    with ImportChecker() as checker, TypesChecker() as types:
        from .render.package import DatamodelAnswers

        # The record only names work already done for given inputs (formatted texts, an
        # imported package, datamodel answers), so reading it before the lock is safe.
        cache = load_cache(output)
        datamodel = DatamodelAnswers(cache.datamodel)
        texts = _texts(run, datamodel, types)
        # Refused before anything in the directory changes, a dead write's recovery included.
        check_owner(output, schema, root=run.root, configured=run.configured, force=force)
        with open_output(output) as target:
            files = target.staging.finish(texts, cache.formatted(texts, target.current))
            report = target.write(files, import_check=not cache.imported(files), checker=checker)
            # Saved under the output's lock, so it always describes the package on disk.
            record = record_of(texts, files, datamodel.given)
            if record != cache:
                save_cache(output, record)
    return report


@dataclass(frozen=True, slots=True)
class CheckReport:
    """Result of :func:`check`: ``diff`` is empty when the output is up to date.

    Attributes:
        diff: A unified diff from the checked-in package to the fresh one.
        changes: What changed in the typed surface, one line each, for instance
            ``InvokeModelContext: field added: budget (int)``; the handlers to revisit.
        recovered: The modules of a write left unfinished by a dead process, which the
            check finished first; empty if there was none.
    """

    diff: str
    changes: tuple[str, ...] = ()
    recovered: tuple[str, ...] = ()

    @property
    def up_to_date(self) -> bool:
        """Whether the checked-in output matches the schema."""
        return not self.diff


def check(schema: Path, output: Path, *, project_root: Path | None = None) -> CheckReport:
    """Compare the generated package in *output* with what *schema* generates now.

    *project_root* is as for :func:`generate`. Apart from finishing a write a dead
    process left unfinished, it writes nothing.

    Raises:
        InvalidSchemaError: The schema is invalid.
        OutputError: Formatting, compiling or importing the generated package failed, or
            an unfinished write cannot be finished.
    """
    run = _Run.of(schema, output, project_root)
    with ImportChecker() as checker, TypesChecker() as types:
        from .render.package import DatamodelAnswers

        recovered = finish_interrupted(output)
        cache = load_cache(output)
        texts = _texts(run, DatamodelAnswers(cache.datamodel), types)
        current = checked_in(output)
        with tempfile.TemporaryDirectory(prefix="stageware-") as directory:
            staging = Staging(Path(directory))
            files = staging.finish(texts, cache.formatted(texts, current))
            if not cache.imported(files):
                staging.check_imports(files, checker)
    diff = unified_diff(current, files, relative_path(output, Path.cwd()))
    changes = tuple(surface_changes(current, files)) if diff else ()
    return CheckReport(diff, changes, recovered)
