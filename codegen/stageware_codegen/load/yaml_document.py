"""YAML as plain data plus a map from document path to line, within the limits.

PyYAML's ``safe_load`` silently keeps the last of two equal keys and forgets where each
value came from. The generator needs both: a duplicate stage or field must be an error,
and every later error must name a line. So the document is composed into nodes and
converted here, recording each node's line and rejecting duplicate keys.

libyaml (PyYAML's C extension, part of its wheels) parses when it is installed, ten
times faster than PyYAML's own parser; the pure-Python parser is the fallback. Composing
the parser's events into nodes stays in Python, in PyYAML's composer, because the
guards live there: it stops at :data:`.documents.MAX_DEPTH` before the recursion does,
and keeps each alias (``*name``) as a node of its own, so a document that aliases its
way past :data:`.documents.MAX_VALUES` or :data:`.documents.MAX_TEXT` is reported at
the alias that did it. Pathological input is an error with a line, never a
``RecursionError``.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, NoReturn

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from stageware._data_paths import format_path
from stageware_codegen._errors import InvalidSchemaError, SchemaError

from .diagnostics import DocPath, ErrorCollector
from .documents import MAX_DEPTH, Document, SizeBudget, not_text, position

__all__ = ["LOADERS", "load_yaml"]

# Only plain mappings, sequences and the JSON-compatible scalar types (null, bool, int,
# float, str) are accepted: anything else (dates, binary, sets, custom tags) would either
# reach generated code as a value whose repr is not a Python literal or be silently read
# as something its tag does not say.
_TAG = "tag:yaml.org,2002:"

# Characters YAML does not allow anywhere in a document, even quoted (both parsers
# refuse them, without saying where).
_NOT_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


_TOO_DEEP = f"collections are nested more than {MAX_DEPTH} levels deep"
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"


class _TooDeep(Exception):
    """The document nests collections deeper than :data:`MAX_DEPTH`."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class _AliasNode(yaml.Node):
    """An alias (``*name``): where the document repeats the node anchored as ``&name``."""

    id = "alias"

    def __init__(self, target: yaml.Node, anchor: str, event: yaml.AliasEvent) -> None:
        # Not Node.__init__: its stub leaves `value` untyped.
        self.tag = target.tag
        self.value = target.value
        self.start_mark = event.start_mark
        self.end_mark = event.end_mark
        self.target = target
        self.anchor = anchor


class _GuardedComposer(Composer, SafeConstructor, Resolver):
    """PyYAML's composer, stopped at :data:`MAX_DEPTH`, keeping aliases as nodes.

    A subclass supplies the parser the events come from. The constructor is only used
    for its scalar conversions.
    """

    def __init__(self, text: str) -> None:
        self._start_parser(text)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0

    def _start_parser(self, text: str) -> None:
        raise NotImplementedError

    if TYPE_CHECKING:

        def peek_event(self) -> yaml.Event: ...

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            target = super().compose_node(parent, index)  # raises for an undefined alias
            assert target is not None
            return _AliasNode(target, str(event.anchor), event)
        anchor = getattr(event, "anchor", None)
        if anchor is not None and anchor in self.anchors:
            first = self.anchors[anchor].start_mark.line + 1
            message = f"duplicate anchor &{anchor} (first defined on line {first})"
            mark: Any = event.start_mark  # the stub does not know libyaml's marks
            raise ComposerError(None, None, message, mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(1 if parent is None else parent.start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _PythonLoader(_GuardedComposer, Reader, Scanner, Parser):
    """The guarded composer on PyYAML's pure-Python parser."""

    def _start_parser(self, text: str) -> None:
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)


def _loaders() -> tuple[type[_GuardedComposer], ...]:
    if not yaml.__with_libyaml__:
        return (_PythonLoader,)
    from yaml._yaml import CParser

    class _LibyamlLoader(_GuardedComposer, CParser):
        """The guarded composer on libyaml's parser."""

        def _start_parser(self, text: str) -> None:
            CParser.__init__(self, text)

    return (_LibyamlLoader, _PythonLoader)


LOADERS = _loaders()
"""The loaders available; :func:`load_yaml` uses the first: libyaml's if PyYAML has it."""


class _Converter:
    """Turns a composed YAML node tree into plain data, recording lines and problems."""

    def __init__(self, loader: _GuardedComposer, file: str) -> None:
        self._loader = loader
        self.lines: dict[DocPath, int] = {(): 1}
        self.errors = ErrorCollector(file, self.lines)
        # Collections being converted, by identity: an alias to one of them is a cycle.
        self._open: set[int] = set()
        # Aliases being expanded, outermost first, with the path each is used at.
        self._aliases: list[tuple[_AliasNode, DocPath]] = []
        self._budget = SizeBudget()

    def convert(self, node: yaml.Node, path: DocPath) -> Any:
        if isinstance(node, _AliasNode):
            self._aliases.append((node, path))
            try:
                return self.convert(node.target, path)
            finally:
                self._aliases.pop()
        scalar = node if isinstance(node, yaml.ScalarNode) else None
        passed = self._budget.spend(0 if scalar is None else len(scalar.value))
        if passed is not None:
            # Aliases can make a short document expand exponentially ("billion laughs").
            self._stop(node, path, f"more than {passed}")
        if scalar is not None:
            return self._scalar(scalar, path)
        if id(node) in self._open:
            self.errors.add(path, "a YAML alias refers to a collection that contains it")
            return None
        if len(path) >= MAX_DEPTH:
            # Only aliases get here: the composer stopped deeper nesting already.
            self._stop(node, path, f"collections nested more than {MAX_DEPTH} levels deep")
        self._open.add(id(node))
        try:
            return self._collection(node, path)
        finally:
            self._open.discard(id(node))

    def _stop(self, node: yaml.Node, path: DocPath, what: str) -> NoReturn:
        """Raise the error for a document past a limit, at the alias that took it there."""
        if not self._aliases:
            line, where, message = node.start_mark.line + 1, path, f"the document has {what}"
        else:
            alias, where = self._aliases[0]
            line = alias.start_mark.line + 1
            message = (
                f"the document expands to {what} once YAML aliases are resolved: alias "
                f"*{alias.anchor} (anchored on line {alias.target.start_mark.line + 1}) "
                "crosses the limit"
            )
        raise InvalidSchemaError([SchemaError(self.errors.file, line, format_path(where), message)])

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
        if tag == _TAG + "str":
            text = str(node.value)
            problem = not_text(text)
            if problem is not None:
                self.errors.add(path, problem)
            return text
        if tag == _TAG + "null":
            return None
        if tag == _TAG + "bool":
            return self._loader.construct_yaml_bool(node)
        if tag == _TAG + "int":
            try:
                return self._loader.construct_yaml_int(node)
            except ValueError:  # more digits than Python converts
                self.errors.add(path, "the integer has too many digits")
                return None
        if tag == _TAG + "float":
            number = self._loader.construct_yaml_float(node)
            if not math.isfinite(number):
                self.errors.add(path, "non-finite numbers are not supported")
            return number
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
            problem = not_text(key)
            if problem is not None:
                self.errors.add(path, problem, line=line)
                continue
            if key in first_line:
                message = f"duplicate key {key!r} (first defined on line {first_line[key]})"
                self.errors.add((*path, key), message, line=line)
                continue
            first_line[key] = line
            self.lines[(*path, key)] = line
            result[key] = self.convert(value_node, (*path, key))
        return result


def _syntax_error(file: str, exc: yaml.MarkedYAMLError) -> SchemaError:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else 1
    if exc.problem == _LIBYAML_TOO_DEEP:
        # libyaml reads ahead, and may find its own, higher limit before the composer
        # reaches this one.
        return SchemaError(file, line, "", _TOO_DEEP)
    message = exc.problem or exc.context or "invalid YAML"
    if exc.problem and exc.context and exc.context_mark is not None:
        message += f" ({exc.context}, line {exc.context_mark.line + 1})"
    return SchemaError(file, line, "", message)


def load_yaml(text: str, file: str) -> Document:
    """Parse one YAML document from *text*.

    Raises:
        InvalidSchemaError: On a character YAML does not allow, a syntax error, a
            duplicate key or anchor, a non-plain value, an empty document, or a
            document nested or expanding beyond the limits.
    """
    bad = _NOT_PRINTABLE.search(text)
    if bad is not None:
        line, column = position(text, bad.start())
        message = (
            f"character U+{ord(bad.group()):04X} at column {column} is not allowed in YAML; "
            "write it as an escape in a double-quoted string"
        )
        raise InvalidSchemaError([SchemaError(file, line, "", message)])
    loader = LOADERS[0](text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise InvalidSchemaError([SchemaError(file, 1, "", "the document is empty")])
        converter = _Converter(loader, file)
        data = converter.convert(node, ())
        if converter.errors.errors:
            raise InvalidSchemaError(converter.errors.errors)
        return Document(file, data, converter.lines)
    except yaml.MarkedYAMLError as exc:
        raise InvalidSchemaError([_syntax_error(file, exc)]) from None
    except yaml.YAMLError as exc:
        raise InvalidSchemaError([SchemaError(file, 1, "", f"invalid YAML: {exc}")]) from None
    except _TooDeep as exc:
        raise InvalidSchemaError([SchemaError(file, exc.line, "", _TOO_DEEP)]) from None
    except (RecursionError, MemoryError) as exc:
        what = "nested too deeply" if isinstance(exc, RecursionError) else "too large"
        message = f"the document is {what} to load"
        raise InvalidSchemaError([SchemaError(file, 1, "", message)]) from None
