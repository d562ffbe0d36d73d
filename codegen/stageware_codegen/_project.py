"""The project a schema belongs to: its root, its configuration, and how paths are shown.

A project is the directory of the ``pyproject.toml`` nearest the schema file (or the
schema's own directory when there is none). Generated banners name the schema relative
to that root, so they do not depend on the directory a command ran in, and they give the
exact command that regenerates the output: plain ``stageware generate`` when
``[tool.stageware]`` names these very paths, the explicit options otherwise, with the
directory to run them in (the root) and paths as seen from there, ``..`` included: a
command that names them as the generating run's working directory saw them works from
neither.
"""

from __future__ import annotations

import os
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import cast

__all__ = [
    "ConfigError",
    "ProjectConfig",
    "find_config",
    "is_configured",
    "path_from",
    "project_root",
    "read_config",
    "regenerate_command",
    "regenerate_directory",
    "relative_path",
]

PYPROJECT = "pyproject.toml"
GENERATE = "stageware generate"


class ConfigError(Exception):
    """``pyproject.toml`` cannot be read, or its ``[tool.stageware]`` table is malformed."""


@dataclass(frozen=True, slots=True)
class ProjectConfig:
    """The ``[tool.stageware]`` table of one ``pyproject.toml``, paths resolved.

    Attributes:
        pyproject: The file the table was read from.
        schema: The configured schema, relative to the project root, or None.
        output: The configured output directory, or None.
    """

    pyproject: Path
    schema: Path | None
    output: Path | None

    @property
    def root(self) -> Path:
        """The project root: the directory of ``pyproject.toml``."""
        return self.pyproject.parent


def relative_path(path: Path, base: Path) -> str:
    """*path* relative to *base* in posix form, or *path* as given if it lies outside."""
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _nearest_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    for directory in (start, *start.parents):
        candidate = directory / PYPROJECT
        if candidate.is_file():
            return candidate
    return None


def _table(value: object) -> dict[str, object]:
    """A TOML table as a dict, or an empty one when *value* is missing or not a table."""
    return cast("dict[str, object]", value) if isinstance(value, dict) else {}


def read_config(pyproject: Path) -> ProjectConfig:
    """Read ``[tool.stageware]`` from *pyproject*.

    Raises:
        ConfigError: The file cannot be read or parsed, or a path is not a string.
    """
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{pyproject}: cannot read: {exc}") from None
    table = _table(_table(data.get("tool")).get("stageware"))

    def path(key: str) -> Path | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ConfigError(f"{pyproject}: [tool.stageware] {key} must be a string")
        return pyproject.parent / value

    return ProjectConfig(pyproject, path("schema"), path("output"))


def find_config(start: Path) -> ProjectConfig | None:
    """The configuration of the nearest ``pyproject.toml`` at or above *start*, if any.

    Raises:
        ConfigError: That file cannot be read.
    """
    pyproject = _nearest_pyproject(start)
    return None if pyproject is None else read_config(pyproject)


def project_root(schema: Path) -> Path:
    """The root of the project *schema* belongs to (see the module docstring)."""
    pyproject = _nearest_pyproject(schema.parent)
    return schema.parent.resolve() if pyproject is None else pyproject.parent


def is_configured(schema: Path, output: Path, root: Path) -> bool:
    """Whether the ``[tool.stageware]`` of the project at *root* names these very paths."""
    try:
        config = read_config(root / PYPROJECT) if (root / PYPROJECT).is_file() else None
    except ConfigError:
        return False
    return (
        config is not None
        and config.schema is not None
        and config.output is not None
        and config.schema.resolve() == schema.resolve()
        and config.output.resolve() == output.resolve()
    )


def path_from(path: Path, base: Path) -> str:
    """*path* for a command run in *base*, in posix form.

    Relative, climbing out of *base* with ``..`` where needed, unless *path* was given
    absolute and lies outside *base* (or on another drive): then absolute, as given.
    """
    resolved, start = path.resolve(), base.resolve()
    if resolved.is_relative_to(start) or not path.is_absolute():
        try:
            return Path(os.path.relpath(resolved, start)).as_posix()
        except ValueError:  # another drive: no relative path exists
            pass
    return resolved.as_posix()


def regenerate_command(schema: Path, output: Path, root: Path) -> str:
    """The command that regenerates *output* from *schema*, run in *root*."""
    if is_configured(schema, output, root):
        return GENERATE
    return (
        f"{GENERATE} --schema {shlex.quote(path_from(schema, root))}"
        f" --output {shlex.quote(path_from(output, root))}"
    )


def regenerate_directory(schema: Path, output: Path, root: Path) -> str | None:
    """Where the banner says to run :func:`regenerate_command`, in words; None for anywhere
    in the project (``[tool.stageware]`` names these paths, and is found from there)."""
    if is_configured(schema, output, root):
        return None
    if (root / PYPROJECT).is_file():
        return f"the directory of {PYPROJECT}"
    if root.resolve() == schema.parent.resolve():
        return "the schema's directory"
    return f"{path_from(root, output)} (from this directory)"
