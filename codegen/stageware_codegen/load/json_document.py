"""JSON as plain data plus a map from document path to line, within the limits.

:mod:`json` decides what the data is, but it keeps no positions and silently keeps the
last of two equal keys. So a small scanner walks the text as well, without recursion:
it records the line of every key and array item, and finds duplicate keys, ``NaN`` and
``Infinity`` (which :mod:`json` accepts and JSON does not), and documents past the
limits of :mod:`.documents`. It reads JSON's own grammar, so any file :mod:`json`
reads gets its lines, whatever its indentation or escapes.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from stageware_codegen._errors import InvalidSchemaError, SchemaError

from .diagnostics import DocPath, ErrorCollector
from .documents import MAX_DEPTH, Document, SizeBudget, not_text

__all__ = ["load_json"]

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_LITERAL = re.compile(r"[^ \t\n\r,:\[\]{}\"]+")  # a number, true, false or null
_NOT_JSON = frozenset({"NaN", "Infinity", "-Infinity"})
_DECODER = json.JSONDecoder()


def _string(text: str, offset: int) -> tuple[str, int]:
    """The JSON string whose opening quote is at *offset*, and the offset after it."""
    value, end = _DECODER.raw_decode(text, offset)
    if not isinstance(value, str):
        raise _Malformed
    return value, end


class _Malformed(Exception):
    """The text is not JSON where the scanner stands (json reports it, or already did)."""


@dataclass
class _Container:
    """An object or array the scanner is inside of."""

    path: DocPath
    is_object: bool
    index: int = 0
    keys: dict[str, int] = field(default_factory=dict[str, int])


class _Scanner:
    """Walks JSON text once, recording lines and problems; see the module docstring."""

    def __init__(self, text: str, file: str) -> None:
        self._text = text
        self._newlines = [match.start() for match in re.finditer("\n", text)]
        self.lines: dict[DocPath, int] = {(): 1}
        self.errors = ErrorCollector(file, self.lines)
        self._budget = SizeBudget()

    def line(self, offset: int) -> int:
        """The 1-based line of the character at *offset*."""
        return bisect.bisect_left(self._newlines, offset) + 1

    def scan(self) -> None:
        """Scan the whole text; stop quietly where it is not JSON."""
        with contextlib.suppress(_Malformed, IndexError, ValueError):
            self._scan()

    def _skip(self, offset: int) -> int:
        match = _WHITESPACE.match(self._text, offset)
        return offset if match is None else match.end()

    def _expect(self, offset: int, char: str) -> int:
        offset = self._skip(offset)
        if self._text[offset] != char:
            raise _Malformed
        return offset + 1

    def _scan(self) -> None:
        text = self._text
        stack: list[_Container] = []
        path: DocPath = ()
        offset = self._skip(0)
        self.lines[()] = self.line(offset)
        while True:
            # A value starts at `offset`, at `path`.
            offset = self._skip(offset)
            char = text[offset]
            if char in "{[":
                if len(stack) >= MAX_DEPTH:
                    message = f"collections are nested more than {MAX_DEPTH} levels deep"
                    self.errors.add((), message, line=self.line(offset))
                    return
                self._spend(path, offset, 0)
                offset = self._skip(offset + 1)
                if text[offset] not in "}]":
                    stack.append(_Container(path, char == "{"))
                    offset, path = self._next_item(stack[-1], offset)
                    continue
                offset += 1  # empty
            elif char == '"':
                line = self.line(offset)
                value, offset = _string(text, offset)
                self._spend(path, offset, len(value))
                problem = not_text(value)
                if problem is not None:
                    self.errors.add(path, problem, line=line)
            else:
                literal = _LITERAL.match(text, offset)
                if literal is None:
                    raise _Malformed
                if literal.group() in _NOT_JSON:
                    message = f"{literal.group()} is not valid JSON"
                    self.errors.add(path, message, line=self.line(offset))
                self._spend(path, offset, 0)
                offset = literal.end()
            # The value ended: close containers until one has a next item.
            while stack:
                offset = self._skip(offset)
                if text[offset] == ",":
                    offset, path = self._next_item(stack[-1], offset + 1)
                    break
                if text[offset] not in "}]":
                    raise _Malformed
                stack.pop()
                offset += 1
            else:
                return

    def _next_item(self, container: _Container, offset: int) -> tuple[int, DocPath]:
        """Read up to the next value of *container*; return where it starts, and its path."""
        if not container.is_object:
            path = (*container.path, container.index)
            container.index += 1
            offset = self._skip(offset)
            self.lines[path] = self.line(offset)
            return offset, path
        offset = self._skip(offset)
        if self._text[offset] != '"':
            raise _Malformed
        line = self.line(offset)
        key, offset = _string(self._text, offset)
        path = (*container.path, key)
        self._spend(path, offset, len(key), values=0)
        problem = not_text(key)
        if problem is not None:
            self.errors.add(container.path, problem, line=line)
        first = container.keys.get(key)
        if first is not None:
            message = f"duplicate key {key!r} (first defined on line {first})"
            self.errors.add(path, message, line=line)
        else:
            container.keys[key] = line
            self.lines[path] = line
        return self._expect(offset, ":"), path

    def _spend(self, path: DocPath, offset: int, length: int, values: int = 1) -> None:
        """Count *values* holding *length* characters; stop the scan past a limit."""
        passed = self._budget.spend(length, values)
        if passed is not None:
            self.errors.add(path, f"the document has more than {passed}", line=self.line(offset))
            raise _Malformed


def load_json(text: str, file: str) -> Document:
    """Parse a JSON document from *text*, with the line of every key and array item.

    Raises:
        InvalidSchemaError: On a syntax error, a duplicate key, ``NaN`` or
            ``Infinity``, or a document nested or holding more than the limits.
    """
    data: Any = None
    loaded = False
    try:
        data, loaded = json.loads(text), True
    except json.JSONDecodeError as exc:
        message = f"{exc.msg} (column {exc.colno})"
        raise InvalidSchemaError([SchemaError(file, exc.lineno, "", message)]) from None
    except (RecursionError, MemoryError):
        pass  # the scanner finds where the document passes a limit
    scanner = _Scanner(text, file)
    scanner.scan()
    if scanner.errors.errors:
        raise InvalidSchemaError(scanner.errors.errors)
    if not loaded:
        raise InvalidSchemaError([SchemaError(file, 1, "", "the document is too large to load")])
    return Document(file, data, scanner.lines)
