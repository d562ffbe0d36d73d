"""Load YAML and JSON documents as plain data plus a map from document path to line.

PyYAML's ``safe_load`` silently keeps the last of two equal keys and forgets where each
value came from. The generator needs both: a duplicate stage or field must be an error,
and every later error must name a line. So the document is composed into nodes and
converted here, recording each node's line and rejecting duplicate keys. Pathological
input (deep nesting, recursive or exponentially expanding aliases) is an error with a
line, not a ``RecursionError``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import yaml

from stageware_codegen._errors import InvalidSchemaError, SchemaError

from .diagnostics import DocPath, ErrorCollector

__all__ = [
    "MAX_DEPTH",
    "MAX_VALUES",
    "Document",
    "as_list",
    "as_mapping",
    "load_json",
    "load_yaml",
]

# Only plain mappings, sequences and the JSON-compatible scalar types (null, bool, int,
# float, str) are accepted: anything else (dates, binary, sets, custom tags) would either
# reach generated code as a value whose repr is not a Python literal or be silently read
# as something its tag does not say.
_TAG = "tag:yaml.org,2002:"

MAX_DEPTH = 64
"""How deep collections may nest; far beyond any real schema, well within the stack."""

MAX_VALUES = 100_000
"""How many values a document may expand to once aliases are resolved."""


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


class _TooDeep(Exception):
    """The document nests collections deeper than :data:`MAX_DEPTH`."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class _Loader(yaml.SafeLoader):
    """PyYAML's composer recurses once per nesting level; stop it at :data:`MAX_DEPTH`."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(1 if parent is None else parent.start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _Converter:
    """Turns a composed YAML node tree into plain data, recording lines and problems."""

    def __init__(self, loader: yaml.SafeLoader, file: str) -> None:
        self._loader = loader
        self.lines: dict[DocPath, int] = {(): 1}
        self.errors = ErrorCollector(file, self.lines)
        # Collections being converted, by identity: an alias to one of them is a cycle.
        self._open: set[int] = set()
        self._values = 0

    def convert(self, node: yaml.Node, path: DocPath) -> Any:
        self._values += 1
        if self._values > MAX_VALUES:
            # Aliases can make a short document expand exponentially ("billion laughs").
            raise InvalidSchemaError(
                [
                    SchemaError(
                        self.errors.file,
                        node.start_mark.line + 1,
                        "",
                        f"the document expands to more than {MAX_VALUES} values "
                        "(through YAML aliases?)",
                    )
                ]
            )
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if id(node) in self._open:
            self.errors.add(path, "a YAML alias refers to a collection that contains it")
            return None
        self._open.add(id(node))
        try:
            return self._collection(node, path)
        finally:
            self._open.discard(id(node))

    def _collection(self, node: yaml.Node, path: DocPath) -> Any:
        if isinstance(node, yaml.MappingNode):
            if node.tag != _TAG + "map":
                self.errors.add(path, f"unsupported YAML tag {node.tag!r} on a mapping")
            return self._mapping(node, path)
        assert isinstance(node, yaml.SequenceNode)
        if node.tag != _TAG + "seq":
            self.errors.add(path, f"unsupported YAML tag {node.tag!r} on a sequence")
        items: list[Any] = []
        for index, item in enumerate(node.value):
            self.lines[(*path, index)] = item.start_mark.line + 1
            items.append(self.convert(item, (*path, index)))
        return items

    def _scalar(self, node: yaml.ScalarNode, path: DocPath) -> object:
        tag = node.tag
        if tag == _TAG + "null":
            return None
        if tag == _TAG + "bool":
            return self._loader.construct_yaml_bool(node)
        if tag == _TAG + "int":
            return self._loader.construct_yaml_int(node)
        if tag == _TAG + "float":
            number = self._loader.construct_yaml_float(node)
            if not math.isfinite(number):
                self.errors.add(path, "non-finite numbers are not supported")
            return number
        if tag == _TAG + "str":
            return str(node.value)
        self.errors.add(path, f"unsupported YAML value of type {tag!r}; quote it to make a string")
        return None

    def _mapping(self, node: yaml.MappingNode, path: DocPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                self.errors.add(path, "mapping keys must be plain names", line=line)
                continue
            if key_node.tag == _TAG + "merge":
                self.errors.add(
                    path, "YAML merge keys ('<<') are not supported; write the keys out", line=line
                )
                continue
            # The key's source text, not its YAML 1.1 interpretation: `on:` or `yes:` is a
            # name here, not a boolean.
            key = str(key_node.value)
            if key in first_line:
                message = f"duplicate key {key!r} (first defined on line {first_line[key]})"
                self.errors.add((*path, key), message, line=line)
                continue
            first_line[key] = line
            self.lines[(*path, key)] = line
            result[key] = self.convert(value_node, (*path, key))
        return result


def as_mapping(value: object) -> dict[str, Any] | None:
    """*value* as a JSON object (documents only have str keys), or None if it is not one."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def as_list(value: object) -> list[object] | None:
    """*value* as a JSON array, or None if it is not one."""
    return cast("list[object]", value) if isinstance(value, list) else None


def _mark_line(error: yaml.MarkedYAMLError) -> int:
    mark = error.problem_mark or error.context_mark
    return mark.line + 1 if mark is not None else 1


class _SyntaxProblem(Exception):
    """The text is not YAML (the parser failed before any node was built)."""

    def __init__(self, error: SchemaError) -> None:
        super().__init__(str(error))
        self.error = error


def _parse(text: str, file: str) -> Document:
    """Compose and convert *text*; raise :class:`_SyntaxProblem` for a syntax error."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        problem = exc.problem or "invalid YAML"
        raise _SyntaxProblem(SchemaError(file, _mark_line(exc), "", problem)) from None
    except yaml.YAMLError as exc:
        raise _SyntaxProblem(SchemaError(file, 1, "", f"invalid YAML: {exc}")) from None
    except _TooDeep as exc:
        message = f"collections are nested more than {MAX_DEPTH} levels deep"
        raise InvalidSchemaError([SchemaError(file, exc.line, "", message)]) from None
    if node is None:
        raise InvalidSchemaError([SchemaError(file, 1, "", "the document is empty")])
    converter = _Converter(loader, file)
    data = converter.convert(node, ())
    if converter.errors.errors:
        raise InvalidSchemaError(converter.errors.errors)
    return Document(file, data, converter.lines)


def load_yaml(text: str, file: str) -> Document:
    """Parse one YAML document from *text*.

    Raises:
        InvalidSchemaError: On a syntax error, a duplicate key, a non-plain value, an
            empty document, or a document nested or expanding beyond the limits.
    """
    try:
        return _parse(text, file)
    except _SyntaxProblem as exc:
        raise InvalidSchemaError([exc.error]) from None
    except (RecursionError, MemoryError) as exc:
        raise InvalidSchemaError([_too_big(file, exc)]) from None


def load_json(text: str, file: str) -> Document:
    """Parse a JSON document from *text*, with the same line map and checks.

    JSON semantics come from :mod:`json`; the YAML composer (JSON is valid YAML for
    the documents we accept) supplies line numbers and finds duplicate keys and
    excessive nesting.

    Raises:
        InvalidSchemaError: On a syntax error, a duplicate key or excessive nesting.
    """
    failure: SchemaError | None = None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InvalidSchemaError([SchemaError(file, exc.lineno, "", exc.msg)]) from None
    except ValueError as exc:
        raise InvalidSchemaError([SchemaError(file, 1, "", str(exc))]) from None
    except (RecursionError, MemoryError) as exc:
        # Let the composer find the line where the nesting goes too deep.
        data, failure = None, _too_big(file, exc)
    try:
        located = _parse(text, file)
    except _SyntaxProblem:
        if failure is not None:
            raise InvalidSchemaError([failure]) from None
        # Valid JSON that this YAML parser reads differently: keep the data, lose lines.
        return Document(file, data, {(): 1})
    except (RecursionError, MemoryError) as exc:
        raise InvalidSchemaError([_too_big(file, exc)]) from None
    if failure is not None:
        raise InvalidSchemaError([failure])
    return Document(file, data, located.lines)


def _too_big(file: str, exc: RecursionError | MemoryError) -> SchemaError:
    what = "nested too deeply" if isinstance(exc, RecursionError) else "too large"
    return SchemaError(file, 1, "", f"the document is {what} to load")


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")
