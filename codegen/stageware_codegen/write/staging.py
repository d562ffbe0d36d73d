"""A generated package assembled in a staging directory: formatted there, imported there.

The staging directory holds the package as :data:`~.import_check.PACKAGE`: rendered
modules are written into it and formatted in one ruff run, modules known to be unchanged
are copied in from the output only when the import check needs the whole package, and
the import check runs on it. ``generate`` stages inside the output directory, so that
the transaction (:mod:`.journal`) only renames files within one file system; ``check``
stages in a temporary directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .formatting import format_modules
from .import_check import PACKAGE, ImportChecker, import_staged

__all__ = ["Staging"]


class Staging:
    """The package being assembled under *parent* (an existing, empty directory)."""

    def __init__(self, parent: Path) -> None:
        self.package = parent / PACKAGE
        self.package.mkdir()

    def finish(self, texts: Mapping[str, str], known: Mapping[str, str]) -> dict[str, str]:
        """Every module of *texts*, formatted: from *known* where given, else by ruff.

        Args:
            texts: Module name to text before formatting, in output order.
            known: Module name to its formatted text, for modules formatted before.

        Raises:
            OutputError: ruff cannot format a module.
        """
        formatted = format_modules(
            {name: text for name, text in texts.items() if name not in known}, self.package
        )
        return {name: known[name] if name in known else formatted[name] for name in texts}

    def add(self, files: Mapping[str, str]) -> None:
        """Write the modules of *files* that are not staged yet."""
        for name, text in files.items():
            path = self.package / name
            if not path.exists():
                path.write_text(text, encoding="utf-8", newline="\n")

    def check_imports(self, files: Mapping[str, str], checker: ImportChecker | None = None) -> None:
        """Import the package *files* make up, after staging those not staged yet.

        The import runs in *checker*, started earlier, else in a fresh interpreter.

        Raises:
            OutputError: A module fails to import.
        """
        self.add(files)
        import_staged(self.package, checker)
