"""The transaction that replaces a package's files: a journal first, then the renames.

Everything happens inside the output directory, so it works when that directory is a
mount point, and nothing is ever renamed but single files within it. The new modules are
staged in a hidden directory there (``.stageware-staging-*``, see :mod:`.files`) and
flushed to disk. Then the plan (which staged modules move in, which stale modules go) is
written to ``.stageware-journal.json``, flushed, and applied; the journal is removed
last. Its presence means a transaction was decided but may not be complete.

When the plan touches more than one module, ``__init__.py`` is taken out first and put
back last, so that while the package is half old and half new it cannot be imported as a
package: importing it fails loudly instead of mixing the two. What happens on failure:

- an error while applying (a rename refused): the old files are put back from the copies
  read beforehand and the journal is removed; nothing changed;
- the process dies while applying: the journal stays; the next ``generate`` or ``check``
  finishes the plan (:func:`finish_interrupted_write`) before anything else, and says so;
- the process dies before the journal exists: only the staging directory stays, and the
  next run removes it; the package was never touched.

Finishing is safe to repeat: a move whose staged file is gone was done, and once the
staged ``__init__.py`` is gone every step before it was done too.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

from stageware_codegen._errors import OutputError

from .import_check import PACKAGE

__all__ = [
    "INIT",
    "JOURNAL",
    "STAGING_PREFIX",
    "Plan",
    "commit",
    "finish_interrupted_write",
]

JOURNAL = ".stageware-journal.json"
STAGING_PREFIX = ".stageware-staging-"
INIT = "__init__.py"
_DRAFT = "journal.json"
"""The journal's name in the staging directory, before it is moved into place."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What one transaction changes in the output directory.

    Attributes:
        staging: The staging directory's name, inside the output directory.
        write: Staged modules to move into place, in order (``__init__.py`` last).
        remove: Stale modules to delete.
        offline: Whether ``__init__.py`` is removed first; it is then the last write.
    """

    staging: str
    write: tuple[str, ...]
    remove: tuple[str, ...]
    offline: bool

    @property
    def touched(self) -> tuple[str, ...]:
        """Every module name the plan writes or removes."""
        return (*self.write, *self.remove)


def _sync(path: Path) -> None:
    """Flush a file, or a directory's entries, to disk."""
    if path.is_dir() and sys.platform == "win32":
        return  # directories cannot be opened there; renames are flushed with the file
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _apply(output: Path, plan: Plan) -> None:
    """Carry out *plan*; a step that was already done is skipped."""
    staged = output / plan.staging / PACKAGE
    if plan.offline:
        (output / INIT).unlink(missing_ok=True)
    for name in plan.write:
        if name == INIT and plan.offline:
            continue
        if (staged / name).exists():
            os.replace(staged / name, output / name)
    for name in plan.remove:
        (output / name).unlink(missing_ok=True)
    if plan.offline:
        os.replace(staged / INIT, output / INIT)
    _sync(output)


def _restore(output: Path, plan: Plan, old: Mapping[str, bytes]) -> None:
    """Put back the files *plan* touched as they were (*old*: the original contents)."""
    scratch = output / plan.staging
    for name in plan.touched:
        if name in old:
            copy = scratch / f"{name}.old"
            copy.write_bytes(old[name])
            os.replace(copy, output / name)
        else:
            (output / name).unlink(missing_ok=True)
    _sync(output)


def commit(output: Path, plan: Plan, old: Mapping[str, bytes]) -> None:
    """Make *plan* durable, apply it and remove the journal.

    Args:
        output: The output directory.
        plan: The transaction; its staged modules are in place.
        old: The current contents of every module the plan touches that exists.

    Raises:
        OSError: Applying failed and the old files are back; or putting them back failed
            too, and the journal stays for the next run to finish the plan.
    """
    staging = output / plan.staging
    for name in plan.write:
        _sync(staging / PACKAGE / name)
    _sync(staging / PACKAGE)
    draft = staging / _DRAFT
    draft.write_text(json.dumps(asdict(plan)), encoding="utf-8")
    _sync(draft)
    os.replace(draft, output / JOURNAL)
    try:
        _sync(output)
        _apply(output, plan)
    except OSError:
        _restore(output, plan, old)
        (output / JOURNAL).unlink()
        raise
    (output / JOURNAL).unlink()
    # Should the removal not reach the disk, finishing the plan again changes nothing.
    with contextlib.suppress(OSError):
        _sync(output)


def _read_plan(journal: Path) -> Plan:
    """The plan a journal holds.

    Raises:
        OutputError: The journal cannot be read or is not one this module wrote.
    """
    try:
        data: object = json.loads(journal.read_text(encoding="utf-8"))
        record = cast("dict[str, object]", data)
        staging, write, remove, offline = (
            record["staging"],
            record["write"],
            record["remove"],
            record["offline"],
        )
        names = [staging, *cast("list[object]", write), *cast("list[object]", remove)]
        if not (isinstance(offline, bool) and all(_plain_name(name) for name in names)):
            raise ValueError("unexpected contents")
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError) as exc:
        raise OutputError(
            f"cannot finish the interrupted write recorded in {journal}: {exc}; restore "
            "the directory from version control, delete the journal and generate again"
        ) from None
    return Plan(
        cast("str", staging),
        tuple(cast("list[str]", write)),
        tuple(cast("list[str]", remove)),
        offline,
    )


def _plain_name(name: object) -> bool:
    """Whether *name* names an entry directly inside a directory."""
    return isinstance(name, str) and name not in {"", ".", ".."} and Path(name).name == name


def finish_interrupted_write(output: Path) -> tuple[str, ...]:
    """Finish a transaction a dead process left in *output*; remove abandoned staging.

    Returns:
        The modules the finished transaction wrote or removed; empty if there was none.

    Raises:
        OutputError: The journal cannot be read, or the plan cannot be finished.
        OSError: The file system refused a step.
    """
    journal = output / JOURNAL
    finished: tuple[str, ...] = ()
    if journal.is_file():
        plan = _read_plan(journal)
        staged_init = output / plan.staging / PACKAGE / INIT
        if not (plan.offline and not staged_init.exists()):
            _apply(output, plan)
        elif not (output / INIT).exists():
            raise OutputError(
                f"cannot finish the interrupted write recorded in {journal}: "
                f"{INIT} is missing from both the package and the staging directory"
            )
        journal.unlink()
        _sync(output)
        finished = plan.touched
    if output.is_dir():
        for entry in output.iterdir():
            if entry.name.startswith(STAGING_PREFIX) and entry.is_dir():
                shutil.rmtree(entry)
    return finished
