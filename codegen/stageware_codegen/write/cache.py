"""What the last generation did, kept in the output's ``__pycache__`` to skip repeating it.

Most runs regenerate what is already there, and their cost is in subprocesses whose
answer is known: ruff formatting a module it formatted before, datamodel-code-generator
converting the same JSON Schema, the import check of the same package. The record keeps,
for the package last written:

- per module, a digest of its text before formatting and of the file written; a module
  whose text before formatting is the same is the file on disk, if that file still has
  the recorded digest (so an edited or checked-out file is formatted again);
- datamodel-code-generator's output, by a digest of the request;
- implicitly, that this package imported: the record is saved only after a package was
  written, and a package was written only after it imported (or was this same package).

The record is valid only for the same interpreter, the same versions of ruff,
datamodel-code-generator and pydantic, and the same source of the generator and of the
stageware runtime; anything else discards it. ``__pycache__`` is what version control and
wheels leave out; deleting the record costs one slower run. It is best effort: a record
that cannot be read is no record, one that cannot be saved is not saved.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import cast

__all__ = ["RunCache", "digest", "load_cache", "record_of", "save_cache"]

CACHE_DIR = "__pycache__"
CACHE_FILE = "stageware-generate.json"

_TOOLS = ("ruff", "datamodel-code-generator", "pydantic")
_SOURCES = ("stageware_codegen", "stageware")
_SOURCE_SUFFIXES = frozenset({".py", ".jinja"})
# stageware's own generated package: its files are the cached output, checked by their
# own digests, and would otherwise invalidate the record each time they are written.
_NOT_SOURCE = frozenset({"__pycache__", "_generated"})


def digest(text: str) -> str:
    """The digest the record keeps of a text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class RunCache:
    """The record of the last generation into one output directory.

    Attributes:
        modules: Module name to the digests of its text before formatting and after.
        datamodel: Request digest to datamodel-code-generator's output.
    """

    modules: Mapping[str, tuple[str, str]]
    datamodel: Mapping[str, str]

    def formatted(self, texts: Mapping[str, str], current: Mapping[str, str]) -> dict[str, str]:
        """The modules of *texts* whose formatted text is the file already on disk.

        Args:
            texts: Module name to text before formatting.
            current: Module name to the text of the file on disk.
        """
        known: dict[str, str] = {}
        for name, text in texts.items():
            recorded = self.modules.get(name)
            on_disk = current.get(name)
            if (
                recorded is not None
                and on_disk is not None
                and recorded == (digest(text), digest(on_disk))
            ):
                known[name] = on_disk
        return known

    def imported(self, files: Mapping[str, str]) -> bool:
        """Whether *files* is the package last written, which therefore imported."""
        return (
            bool(files)
            and files.keys() == self.modules.keys()
            and all(digest(text) == self.modules[name][1] for name, text in files.items())
        )


@functools.cache
def _fingerprint() -> str:
    """What the record is valid for: interpreter, tool versions, generator and runtime."""
    hasher = hashlib.sha256(sys.version.encode("utf-8"))
    for tool in _TOOLS:
        try:
            hasher.update(f"\0{tool}={version(tool)}".encode())
        except PackageNotFoundError:
            hasher.update(f"\0{tool} missing".encode())
    for package in _SOURCES:
        spec = find_spec(package)
        for location in [] if spec is None else spec.submodule_search_locations or []:
            root = Path(location)
            for path in sorted(root.rglob("*")):
                relative = path.relative_to(root)
                if path.suffix in _SOURCE_SUFFIXES and not _NOT_SOURCE & set(relative.parts):
                    hasher.update(f"\0{package}/{relative.as_posix()}\0".encode())
                    hasher.update(path.read_bytes())
    return hasher.hexdigest()


_NONE = RunCache({}, {})


def _path(output: Path) -> Path:
    return output / CACHE_DIR / CACHE_FILE


def load_cache(output: Path) -> RunCache:
    """The record kept in *output*, or an empty one if there is none that is valid."""
    try:
        data: object = json.loads(_path(output).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return _NONE
    if not isinstance(data, dict):
        return _NONE
    record = cast("dict[str, object]", data)
    modules, datamodel = record.get("modules"), record.get("datamodel")
    if (
        record.get("fingerprint") != _fingerprint()
        or not isinstance(modules, dict)
        or not isinstance(datamodel, dict)
    ):
        return _NONE
    pairs: dict[str, tuple[str, str]] = {}
    for name, pair in cast("dict[str, object]", modules).items():
        match pair:
            case [str(before), str(after)]:
                pairs[name] = (before, after)
            case _:
                return _NONE
    bodies = cast("dict[str, object]", datamodel)
    return RunCache(pairs, {key: body for key, body in bodies.items() if isinstance(body, str)})


def record_of(
    texts: Mapping[str, str], files: Mapping[str, str], datamodel: Mapping[str, str]
) -> RunCache:
    """The record of a generation that wrote *files*, formatted from *texts*."""
    return RunCache(
        {name: (digest(texts[name]), digest(text)) for name, text in files.items()},
        dict(datamodel),
    )


def save_cache(output: Path, record: RunCache) -> None:
    """Keep *record* in *output*, replacing the one there."""
    data = {
        "fingerprint": _fingerprint(),
        "modules": {name: list(pair) for name, pair in record.modules.items()},
        "datamodel": dict(record.datamodel),
    }
    directory = output / CACHE_DIR
    try:
        directory.mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=directory, prefix=f".{CACHE_FILE}.", delete=False
        ) as handle:
            json.dump(data, handle)
        try:
            os.replace(handle.name, _path(output))
        except OSError:
            os.unlink(handle.name)
            raise
    except OSError:
        return
