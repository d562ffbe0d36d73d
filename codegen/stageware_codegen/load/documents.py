"""A parsed document (plain data plus the line of every node), and the limits on one.

:mod:`.yaml_document` and :mod:`.json_document` build a :class:`Document` from text.
Both hold a document to the same limits, so that no input, however it is written,
makes the generator recurse without bound, run for minutes or write gigabytes:
:data:`MAX_DEPTH`, :data:`MAX_VALUES` and :data:`MAX_TEXT`. Text reaches them through
:func:`decode_utf8`, which says where a byte that is not UTF-8 is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from stageware_codegen._errors import InvalidSchemaError, SchemaError

from .diagnostics import DocPath, ErrorCollector

__all__ = [
    "MAX_DEPTH",
    "MAX_TEXT",
    "MAX_VALUES",
    "Document",
    "SizeBudget",
    "as_list",
    "as_mapping",
    "decode_utf8",
    "not_text",
    "position",
]

MAX_DEPTH = 64
"""How deep collections may nest; far beyond any real schema, well within the stack."""

MAX_VALUES = 100_000
"""How many values a document may hold once YAML aliases are resolved."""

MAX_TEXT = 4_000_000
"""How many characters of text (keys and scalar values) a document may hold once YAML
aliases are resolved. The built-in schema holds about 11 000; the limit stops a short
document from repeating a long anchored string into hundreds of megabytes of output."""


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed document.

    Attributes:
        file: The file as shown in error messages.
        data: Plain data: dicts with str keys (in document order), lists and scalars.
        lines: 1-based line of every mapping key and sequence item, by document path.
    """

    file: str
    data: Any
    lines: Mapping[DocPath, int]

    def collector(self) -> ErrorCollector:
        """Return an error collector bound to this document's lines."""
        return ErrorCollector(self.file, self.lines)


class SizeBudget:
    """Counts the values and the characters of text of a document against the limits."""

    def __init__(self) -> None:
        self._values = 0
        self._text = 0

    def spend(self, text: int, values: int = 1) -> str | None:
        """Count *values* holding *text* characters; return the limit passed, or None."""
        self._values += values
        self._text += text
        if self._values > MAX_VALUES:
            return f"{MAX_VALUES} values"
        if self._text > MAX_TEXT:
            return f"{MAX_TEXT} characters of text"
        return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def not_text(value: str) -> str | None:
    """Why *value* cannot be written as UTF-8, or None.

    An escape (``"\\ud800"``) can produce half of a surrogate pair, which is no
    character: no file, and no generated module, can hold it.
    """
    found = _SURROGATE.search(value)
    if found is None:
        return None
    return f"\\u{ord(found.group()):04x} is half of a surrogate pair, not a character"


def as_mapping(value: object) -> dict[str, Any] | None:
    """*value* as a JSON object (documents only have str keys), or None if it is not one."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def as_list(value: object) -> list[object] | None:
    """*value* as a JSON array, or None if it is not one."""
    return cast("list[object]", value) if isinstance(value, list) else None


def position(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of the character at *offset* in *text*."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def decode_utf8(data: bytes, file: str) -> str:
    """*data* as text; a leading byte-order mark is dropped.

    Raises:
        InvalidSchemaError: At the line and column of the first byte that is not UTF-8.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # Everything before the bad byte decoded, so it can be counted in characters.
        before = data[: exc.start].decode("utf-8-sig")
        line, column = position(before, len(before))
        byte = data[exc.start]
        message = f"byte 0x{byte:02x} at column {column} is not UTF-8; save the file as UTF-8"
        raise InvalidSchemaError([SchemaError(file, line, "", message)]) from None
