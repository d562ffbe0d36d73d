"""The exceptions the generator raises, and the record of one problem in the schema.

Every problem the generator finds in user input is a :class:`SchemaError`, shown as
``file:line: path: message`` so an editor can jump to it; a run collects them all and
raises one :class:`InvalidSchemaError` (see :mod:`.load.diagnostics`). Problems with the
output (formatting, importing, writing) are an :class:`OutputError`. This module imports
nothing, so the command line can catch these without loading the generator.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["InvalidSchemaError", "OutputError", "SchemaError"]


@dataclass(frozen=True, slots=True)
class SchemaError:
    """One problem in the schema input.

    Attributes:
        file: The file as shown to the user (relative where possible).
        line: 1-based line of the innermost document node that exists.
        path: Dotted path inside the document, empty for file-level problems.
        message: What is wrong and, where known, what was expected.
    """

    file: str
    line: int
    path: str
    message: str

    def __str__(self) -> str:
        if self.path:
            return f"{self.file}:{self.line}: {self.path}: {self.message}"
        return f"{self.file}:{self.line}: {self.message}"


class InvalidSchemaError(Exception):
    """The schema (or a payload file it names) is invalid; nothing was generated."""

    def __init__(self, errors: Iterable[SchemaError]) -> None:
        self.errors = tuple(errors)
        super().__init__("\n".join(str(error) for error in self.errors))


class OutputError(Exception):
    """Formatting, importing or writing the generated output failed; nothing was written."""
