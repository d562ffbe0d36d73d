"""Import a rendered package in a fresh interpreter before it replaces anything.

``compile()`` only proves the syntax. Generated code can still fail when it runs: a
dataclass default the class machinery rejects, a regular expression pydantic cannot
compile, a name two definitions share. So the whole package is written to a staging
directory (see :mod:`.staging`) and every module is imported there, in a subprocess that
cannot disturb the generator's own imports, before a single file of the real output
changes.

The staged package imports the runtime through ``stageware.runtime``; ``stageware``'s
own ``__init__`` loads nothing eagerly, so the old generated package, which may be the
broken one being replaced, is never imported. External types are imported only for the
type checkers, so the check does not import them either: the resolve step checks them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from stageware_codegen._errors import OutputError

__all__ = ["PACKAGE", "import_staged"]

PACKAGE = "_stageware_candidate"
"""The name the staged package is imported under; generated imports are relative."""

_TIMEOUT = 120.0
_MARKER = "stageware-import-failure"

# Runs in the subprocess: argv is the staging root and the modules to import. On failure
# it prints a marker line with the innermost generated file and line and the exception on
# one line, tab-separated, so that output an imported module prints cannot be mistaken
# for it.
_SCRIPT = f"""\
import importlib, os, sys, traceback
root, *modules = sys.argv[1:]
root = os.path.abspath(root)
package = {PACKAGE!r}
sys.path.insert(0, root)
here = os.path.join(root, package)
for module in modules:
    try:
        importlib.import_module(package if module == "__init__" else package + "." + module)
    except BaseException as exc:
        where = module + ".py"
        for frame in traceback.extract_tb(exc.__traceback__):
            if os.path.dirname(os.path.abspath(frame.filename)) == here:
                where = os.path.basename(frame.filename) + ":" + str(frame.lineno)
        lines = "".join(traceback.format_exception_only(exc)).splitlines()
        error = "; ".join(line.strip() for line in lines if line.strip())
        print({_MARKER!r}, where, error, sep="\\t")
        sys.exit(1)
"""


def import_staged(package: Path) -> None:
    """Import every module of the staged *package*, the package itself first.

    Args:
        package: A directory named :data:`PACKAGE` that holds the whole package.

    Raises:
        OutputError: Naming the generated file, line and exception of the first failure.
    """
    command = [
        sys.executable,
        "-B",
        "-c",
        _SCRIPT,
        str(package.parent.resolve()),
        # The package first: it imports everything it re-exports.
        *sorted((path.stem for path in package.glob("*.py")), key=lambda name: name != "__init__"),
    ]
    try:
        completed = subprocess.run(
            command,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OutputError(f"cannot import the generated package: {exc}") from None
    if completed.returncode == 0:
        return
    for line in completed.stdout.splitlines():
        marker, _, report = line.partition("\t")
        if marker == _MARKER:
            where, _, error = report.partition("\t")
            raise OutputError(f"generated {where} fails to import: {error}")
    # The interpreter itself failed (a crash, or an import hook that exited).
    detail = completed.stderr.strip().splitlines()
    error = detail[-1] if detail else f"exit status {completed.returncode}"
    raise OutputError(f"the generated package fails to import: {error}")
