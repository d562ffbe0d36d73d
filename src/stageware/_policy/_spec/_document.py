"""A parsed spec file, and its problems written ``file:line: path: message``.

Every problem with a policy spec is reported where it is, the way the stage schema's
problems are, so that an editor can jump to it. Problems are collected per load rather
than raised one at a time: an operator fixes a whole batch per run, not one per run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stageware._data_paths import format_path
from stageware._policy._errors import SpecError

__all__ = ["DocPath", "Document", "Problem", "spec_error"]

DocPath = tuple[str | int, ...]
"""A place in a document: mapping keys and list positions (``("middleware", 1, "use")``)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem in a spec file, and the middleware it concerns, if one.

    ``line`` is ``None`` for a problem with the file as a whole (too large, not a file);
    ``column`` is given where YAML itself stopped reading.
    """

    file: str
    line: int | None
    path: DocPath
    message: str
    middleware: str | None = None
    column: int | None = None

    def __str__(self) -> str:
        at = self.file
        if self.line is not None:
            at += f":{self.line}" + ("" if self.column is None else f":{self.column}")
        where = format_path(self.path)
        if self._names_its_middleware():
            # An editor has the line; a reader needs the middleware's name, which an
            # entry's position (middleware[3]) does not say.
            below = format_path(self.path[2:])
            where = f"middleware {self.middleware!r}" + (f": {below}" if below else "")
        if where:
            return f"{at}: {where}: {self.message}"
        return f"{at}: {self.message}"

    def _names_its_middleware(self) -> bool:
        """Whether the entry's middleware goes before the message, which does not name it."""
        if self.middleware is None or f"{self.middleware!r}" in self.message:
            return False
        return len(self.path) >= 2 and self.path[0] == "middleware"


@dataclass(frozen=True, slots=True)
class Document:
    """A spec file's content as plain data, with the line of every key and list item.

    Attributes:
        file: The file as the caller named it, for messages.
        data: Dicts with str keys, lists and JSON scalars.
        lines: The 1-based line of each mapping key and list item, by path.
    """

    file: str
    data: Any
    lines: Mapping[DocPath, int]

    def line_of(self, path: DocPath) -> int:
        """The line of the deepest part of *path* the file has (a missing key's mapping)."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return line
        return 1

    def problem(self, path: DocPath, message: str, middleware: str | None = None) -> Problem:
        """A problem at *path*, on its line."""
        return Problem(self.file, self.line_of(path), path, message, middleware)


def spec_error(problems: Iterable[Problem]) -> SpecError:
    """One ``SpecError`` for *problems*, a line each.

    Its ``locations`` are the problems' paths in their documents, and its ``middleware``
    the one middleware they all concern, if there is one.
    """
    found = list(problems)
    concerned = {problem.middleware for problem in found}
    return SpecError(
        "\n".join(map(str, found)),
        middleware=concerned.pop() if len(concerned) == 1 else None,
        locations=[problem.path for problem in found],
    )
