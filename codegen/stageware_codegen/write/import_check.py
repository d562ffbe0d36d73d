"""Import a rendered package in a fresh interpreter before it replaces anything.

``compile()`` only proves the syntax. Generated code can still fail when it runs: a
dataclass default the class machinery rejects, a regular expression pydantic cannot
compile, a name two definitions share. So the whole package is written to a staging
directory (see :mod:`.staging`) and every module is imported there, in a subprocess that
cannot disturb the generator's own imports, before a single file of the real output
changes. The subprocess (:class:`ImportChecker`) is started when the pipeline starts and
imports the runtime and pydantic while the package is rendered; it is killed if the
package turns out to be known to import, or the run fails.

The staged package imports the runtime through ``stageware.runtime``; ``stageware``'s
own ``__init__`` loads nothing eagerly, so the old generated package, which may be the
broken one being replaced, is never imported. External types are imported only for the
type checkers, so the check does not import them either: the resolve step checks them.
"""

from __future__ import annotations

import json
from pathlib import Path

from stageware_codegen._checker import Checker
from stageware_codegen._errors import OutputError

__all__ = ["PACKAGE", "ImportChecker", "import_staged"]

PACKAGE = "_stageware_candidate"
"""The name the staged package is imported under; generated imports are relative."""

_MARKER = "stageware-import-failure"

# Runs in the subprocess. It first imports what every generated package imports (the
# runtime, pydantic), while the generator is still rendering; a failure there is left to
# the import of the module that needs it, which reports it. Then it reads the request:
# the staging root and the modules to import, as JSON on one line (none: exit). On failure
# it prints a marker line with the innermost generated file and line and the exception on
# one line, tab-separated.
_SCRIPT = f"""\
import importlib, json, os, sys, traceback
try:
    import stageware.runtime
    from pydantic import BaseModel, Field
    import typing_extensions
except BaseException:
    pass
request = sys.stdin.readline()
if not request.strip():
    sys.exit(0)
root, modules = json.loads(request)
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


class ImportChecker(Checker):
    """A fresh interpreter, started now, that imports a staged package when asked.

    Use it as a context manager: one that was not asked is killed when the block ends.
    """

    def __init__(self) -> None:
        super().__init__(["-c", _SCRIPT], _MARKER, "cannot import the generated package")

    def import_staged(self, package: Path) -> None:
        """Import every module of the staged *package*, the package itself first.

        Args:
            package: A directory named :data:`PACKAGE` that holds the whole package.

        Raises:
            OutputError: Naming the generated file, line and exception of the first
                failure.
        """
        modules = sorted(
            # The package first: it imports everything it re-exports.
            (path.stem for path in package.glob("*.py")),
            key=lambda name: name != "__init__",
        )
        answer = self.ask(json.dumps([str(package.parent.resolve()), modules]))
        if answer.returncode == 0:
            return
        for report in answer.reports:
            where, _, error = report.partition("\t")
            raise OutputError(f"generated {where} fails to import: {error}")
        # The interpreter itself failed (a crash, or an import hook that exited).
        raise OutputError(f"the generated package fails to import: {answer.error}")


def import_staged(package: Path, checker: ImportChecker | None = None) -> None:
    """Import every module of the staged *package* with *checker*, else a fresh one.

    Raises:
        OutputError: Naming the generated file, line and exception of the first failure.
    """
    if checker is not None:
        checker.import_staged(package)
        return
    with ImportChecker() as fresh:
        fresh.import_staged(package)
