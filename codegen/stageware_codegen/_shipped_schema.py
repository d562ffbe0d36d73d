"""The stage schema stageware ships, for a harness author to extend.

The wheel carries the repository's ``schema/`` (``stages.yaml``, the payload JSON Schema
it names, and the README that describes the format) inside this package as ``schema/``;
the repository's copy is the source, and in a source checkout (an editable install) it
is the only one. ``stageware schema export DIR`` copies it out, layout kept, so that
``stageware generate --schema DIR/stages.yaml`` works on the copy as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["SCHEMA_FILE", "ExportReport", "export_schema", "shipped_schema_dir"]

SCHEMA_FILE = "stages.yaml"

_PACKAGE = Path(__file__).resolve().parent
# Inside the installed wheel, then the repository around a source checkout.
_PLACES = (_PACKAGE / "schema", _PACKAGE.parent.parent / "schema")


def shipped_schema_dir() -> Path:
    """The directory that holds the shipped ``stages.yaml`` and its payload files.

    Raises:
        FileNotFoundError: Neither the installed package nor a source checkout has it.
    """
    for place in _PLACES:
        if (place / SCHEMA_FILE).is_file():
            return place
    raise FileNotFoundError(f"the shipped stage schema is missing (looked in {_PLACES[0]})")


@dataclass(frozen=True, slots=True)
class ExportReport:
    """What :func:`export_schema` did, by path relative to the target directory."""

    written: tuple[str, ...]
    unchanged: tuple[str, ...]


def export_schema(directory: Path) -> ExportReport:
    """Copy the shipped schema into *directory* (created if missing).

    A file that is already there with the same content is left as it is; one with other
    content is never overwritten.

    Raises:
        FileExistsError: Some target files exist with other content; nothing was written.
        OSError: The shipped schema cannot be read or a file cannot be written.
    """
    source = shipped_schema_dir()
    files = {
        path.relative_to(source).as_posix(): path.read_bytes()
        for path in sorted(source.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }
    unchanged = [name for name, data in files.items() if _content(directory / name) == data]
    conflicts = [name for name in files if name not in unchanged and (directory / name).exists()]
    if conflicts:
        shown = ", ".join(str(directory / name) for name in conflicts)
        raise FileExistsError(f"{shown}: exists with other content; move it away first")
    written = [name for name in files if name not in unchanged]
    for name in written:
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[name])
    return ExportReport(tuple(written), tuple(unchanged))


def _content(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None
