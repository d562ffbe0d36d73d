"""Where a schema problem is, and how a value is described in a message.

Problems are collected rather than raised one at a time, so a user fixes a whole batch
per run instead of one typo per run: an :class:`ErrorCollector` per document turns a
document path into a line and records a :class:`~stageware_codegen._errors.SchemaError`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from stageware._data_paths import format_path
from stageware_codegen._errors import SchemaError

__all__ = [
    "DocPath",
    "ErrorCollector",
    "close_matches",
    "describe_value",
    "did_you_mean",
    "show_value",
]

_SHOWN_LENGTH = 40
_NEAR_MISS = 0.6

DocPath = tuple[str | int, ...]
"""A location inside a YAML or JSON document: mapping keys and sequence indexes."""


def close_matches(word: str, candidates: Iterable[str]) -> list[str]:
    """The candidate closest to *word*, if any is close enough to be a misspelling."""
    return difflib.get_close_matches(word, list(candidates), n=1, cutoff=_NEAR_MISS)


def did_you_mean(word: object, candidates: Iterable[str]) -> str:
    """Return `` (did you mean 'x'?)`` for the closest candidate, or an empty string.

    Only a string can be misspelled: for any other value the hint is empty.
    """
    if not isinstance(word, str):
        return ""
    matches = close_matches(word, candidates)
    return f" (did you mean {matches[0]!r}?)" if matches else ""


def describe_value(value: object) -> str:
    """A document value in YAML terms, for "expected X, got Y" messages.

    Its kind, and the value itself if it is a scalar: ``the integer 1``, ``null``,
    ``a mapping``.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {show_value(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return repr(value)


def show_value(value: object) -> str:
    """A short rendering of a value a message is about: containers by kind only."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= _SHOWN_LENGTH else text[: _SHOWN_LENGTH - 3] + "..."


class ErrorCollector:
    """Collects problems for one document, resolving each path to a line number."""

    def __init__(self, file: str, lines: Mapping[DocPath, int]) -> None:
        self.file = file
        self._lines = lines
        self.errors: list[SchemaError] = []

    def line_of(self, path: DocPath) -> int:
        """Line of the longest prefix of *path* present in the document (1 if none)."""
        for end in range(len(path), -1, -1):
            line = self._lines.get(path[:end])
            if line is not None:
                return line
        return 1

    def add(self, path: DocPath, message: str, *, line: int | None = None) -> None:
        """Record a problem at *path*, on *line* if given, else on the line of *path*."""
        where = self.line_of(path) if line is None else line
        self.errors.append(SchemaError(self.file, where, format_path(path), message))
