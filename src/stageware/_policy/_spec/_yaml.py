"""A policy spec's YAML as plain data, with the line of every key and list item.

PyYAML's ``safe_load`` forgets where each value came from and silently keeps the last of
two equal keys; a spec needs a line for every problem and an error for a repeated key. So
the document is composed into nodes (which keep their position) and converted here.

The generator reads the stage schema the same way (``stageware_codegen.load``), but the
runtime cannot import the generator, an optional extra, and a spec needs less: it is a
short file written by hand. So anchors and aliases, which no spec needs, are refused
outright, and with them the documents that aliases expand past any size; nesting is
bounded before the composer's recursion is. Only PyYAML's pure-Python parser is used:
speed does not matter for a file this size, and its marks are the ones messages quote.

PyYAML comes with the ``policy`` extra; this module is imported only to read a spec.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import yaml

from ._document import DocPath, Document, Problem

__all__ = ["MAX_DEPTH", "parse_yaml"]

MAX_DEPTH = 32
"""How deep collections may nest in a spec: far beyond what settings need."""

_TAG = "tag:yaml.org,2002:"


class _Refused(Exception):
    """Something the spec's YAML may not contain, at a line."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class _Loader(yaml.SafeLoader):
    """The safe loader, refusing anchors and aliases and stopping at :data:`MAX_DEPTH`."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._depth = 0

    if TYPE_CHECKING:  # untyped in PyYAML's stubs

        def peek_event(self) -> yaml.Event: ...

        def resolve(
            self, kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]
        ) -> str: ...

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        line = 1 if event.start_mark is None else event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(line, "YAML anchors and aliases are not supported; write it out")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(line, f"collections are nested more than {MAX_DEPTH} deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def parse_yaml(data: bytes, file: str) -> Document | list[Problem]:
    """The YAML document in *data*, or the problems that stop reading it.

    Whatever PyYAML refuses (a character YAML does not allow, such as a form feed, NUL or
    ESC; a token it cannot scan; a structure it cannot parse) is a problem at its line and
    column, never PyYAML's own exception.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, column = _position(data[: exc.start].decode("utf-8", "replace"))
        return [
            Problem(file, line, (), f"byte 0x{data[exc.start]:02x} is not UTF-8", column=column)
        ]
    loader: _Loader | None = None
    try:
        # The reader checks every character when it is built, so building it can fail too.
        loader = _Loader(text)
        node = loader.get_single_node()
    except _Refused as exc:
        return [Problem(file, exc.line, (), exc.message)]
    except yaml.reader.ReaderError as exc:
        line, column = _position(text[: exc.position])
        return [Problem(file, line, (), _refused_character(exc.character), column=column)]
    except yaml.MarkedYAMLError as exc:
        message = exc.problem or exc.context or "invalid YAML"
        if exc.context and message.startswith("but "):  # "but found another document"
            message = f"{exc.context}, {message}"
        mark = exc.problem_mark or exc.context_mark
        if mark is None:
            return [Problem(file, 1, (), message)]
        return [Problem(file, mark.line + 1, (), message, column=mark.column + 1)]
    finally:
        if loader is not None:
            loader.dispose()
    if node is None:
        return [Problem(file, 1, (), "the file is empty; a spec starts with 'version: 1'")]
    assert loader is not None  # built, since a node was composed
    converter = _Converter(loader, file)
    result = converter.convert(node, ())
    if converter.problems:
        return converter.problems
    return Document(file, result, converter.lines)


_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
"""What YAML counts as a line break, so that lines match the ones its marks give."""


def _position(before: str) -> tuple[int, int]:
    """The 1-based line and column of the character after *before*."""
    lines = _LINE_BREAK.split(before)
    return len(lines), len(lines[-1]) + 1


def _refused_character(code: int) -> str:
    """What is wrong with the character PyYAML refused, given as its code point."""
    return f"the character U+{code:04X} ({chr(code)!r}) is not allowed in YAML; remove it"


class _Converter:
    """Turns composed nodes into plain data, recording lines and problems."""

    def __init__(self, loader: _Loader, file: str) -> None:
        self._loader = loader
        self._file = file
        self.lines: dict[DocPath, int] = {(): 1}
        self.problems: list[Problem] = []

    def _problem(self, line: int, path: DocPath, message: str) -> None:
        self.problems.append(Problem(self._file, line, path, message))

    def convert(self, node: yaml.Node, path: DocPath) -> Any:
        line = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path, line)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _TAG + "seq":
                self._problem(line, path, f"unsupported YAML tag {node.tag!r}")
            items: list[Any] = []
            for index, item in enumerate(node.value):
                self.lines[(*path, index)] = item.start_mark.line + 1
                items.append(self.convert(item, (*path, index)))
            return items
        assert isinstance(node, yaml.MappingNode)
        if node.tag != _TAG + "map":
            self._problem(line, path, f"unsupported YAML tag {node.tag!r}")
        return self._mapping(node, path)

    def _mapping(self, node: yaml.MappingNode, path: DocPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _TAG + "merge":
                self._problem(line, path, "a key must be a plain name (no '<<', lists or maps)")
                continue
            # The key as written: `on:` or `1:` is a name here, not YAML 1.1's boolean or int.
            key = str(key_node.value)
            if key in result:
                first = self.lines[(*path, key)]
                self._problem(line, (*path, key), f"duplicate key (first on line {first})")
                continue
            self.lines[(*path, key)] = line
            result[key] = self.convert(value_node, (*path, key))
        return result

    def _scalar(self, node: yaml.ScalarNode, path: DocPath, line: int) -> object:
        # Only JSON's kinds of value: a date, a set or a custom tag would reach settings as
        # something their model never sees from a JSON config.
        tag = node.tag
        if tag == _TAG + "str":
            return str(node.value)
        if tag not in _JSON_TAGS:
            self._problem(line, path, f"unsupported YAML value of type {tag!r}; quote it for text")
            return None
        # An explicit tag makes PyYAML convert text that is not of its kind (`!!float abc`);
        # only `!!float 1` is a value written another way.
        written = self._loader.resolve(yaml.ScalarNode, node.value, (True, False))
        if written != tag and (tag, written) != (_TAG + "float", _TAG + "int"):
            kind = tag.removeprefix(_TAG)
            self._problem(line, path, f"{node.value!r} is not a valid !!{kind} value")
            return None
        if tag == _TAG + "null":
            return None
        if tag == _TAG + "bool":
            return self._loader.construct_yaml_bool(node)
        if tag == _TAG + "int":
            try:
                return self._loader.construct_yaml_int(node)
            except ValueError:  # more digits than Python converts
                self._problem(line, path, "the integer has too many digits")
                return None
        number = self._loader.construct_yaml_float(node)
        if not math.isfinite(number):
            self._problem(line, path, "infinite and NaN numbers are not supported")
        return number


_JSON_TAGS = frozenset(_TAG + kind for kind in ("null", "bool", "int", "float"))
"""The tags of JSON's scalars besides text, which a spec may hold."""
