"""The generator's building blocks: type expressions, YAML loading, docstring rendering."""

from __future__ import annotations

import ast
import re

import pytest

from stageware._data_paths import format_path
from stageware_codegen import InvalidSchemaError
from stageware_codegen.load.diagnostics import did_you_mean
from stageware_codegen.load.docs import check_doc
from stageware_codegen.load.json_document import load_json
from stageware_codegen.load.yaml_document import load_yaml
from stageware_codegen.render.docstrings import docstring
from stageware_codegen.resolve.defaults import fits
from stageware_codegen.resolve.hooks import json_data_problem
from stageware_codegen.resolve.type_exprs import NameKind, TypeExprError, parse_type

KNOWN = {
    **dict.fromkeys(
        ["str", "int", "float", "bool", "bytes", "object", "list", "dict", "tuple"],
        NameKind.BUILTIN,
    ),
    **dict.fromkeys(["Any", "Literal", "Mapping", "Sequence", "Exception"], NameKind.BUILTIN),
    "Messages": NameKind.PAYLOAD,
    "Model": NameKind.EXTERNAL,
    "Done": NameKind.EVENT,
}


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("str", "str"),
        ("int|None", "int | None"),
        ("list[ Messages ]", "list[Messages]"),
        ("dict[str, Any]", "dict[str, Any]"),
        ("Mapping[str, Sequence[int]]", "Mapping[str, Sequence[int]]"),
        ("tuple[int, ...]", "tuple[int, ...]"),
        ("tuple[int, str]", "tuple[int, str]"),
        ("Literal['a', 1, True, -2]", "Literal['a', 1, True, -2]"),
        ("Model | Done | None", "Model | Done | None"),
        ("type[Any] | None", "type[Any] | None"),
    ],
)
def test_valid_type_expressions_are_rendered_back(text: str, rendered: str) -> None:
    assert parse_type(text, KNOWN).text == rendered


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Mesages", "unknown type 'Mesages' (did you mean 'Messages'?)"),
        ("list", "'list' needs type arguments"),
        ("str[int]", "'str' takes no type arguments"),
        ("dict[str]", "dict[...] takes 2 type argument(s), got 1"),
        ("type[int, str]", "type[...] takes 1 type argument(s), got 2"),
        ("os.PathLike", "dotted name 'os.PathLike' is not allowed"),
        ("Literal[None]", "Literal arguments must be str, int or bool constants"),
        ("Literal[x]", "Literal arguments must be str, int or bool constants"),
        ("__import__('os')", "unsupported type syntax"),
        ("int | 'str'", "unsupported type syntax"),
        ("list[int", "invalid type expression"),
        ("lambda: 1", "unsupported type syntax"),
    ],
)
def test_invalid_type_expressions_are_rejected(text: str, message: str) -> None:
    with pytest.raises(TypeExprError, match=re.escape(message)):
        parse_type(text, KNOWN)


def _payload(name: str, value: object) -> str | None:
    return None if isinstance(value, list) else f"{name}: expected a list"


@pytest.mark.parametrize(
    ("text", "value", "ok"),
    [
        ("int", 1, True),
        ("int", True, False),
        ("int", "1", False),
        ("float", 2, True),
        ("bool", 0, False),
        ("str | None", None, True),
        ("str", None, False),
        ("list[int]", [1, 2], True),
        ("list[int]", [1, "2"], False),
        ("dict[str, int]", {"a": 1}, True),
        ("Literal['a', 1]", 1, True),
        ("Literal[1]", True, False),
        ("Any", {"x": [1]}, True),
        ("Messages", [], True),
        ("Messages", {}, False),
        ("Model | None", None, True),
        ("Model", "x", False),
        ("tuple[int, ...]", [1], False),
    ],
)
def test_defaults_are_checked_against_their_type(text: str, value: object, ok: bool) -> None:
    assert (fits(parse_type(text, KNOWN), value, KNOWN, _payload) is None) is ok


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("list[Messages] | dict[str, int] | Literal['a'] | None", None),
        ("Sequence[Mapping[str, Any]] | float | bool | object", None),
        ("str | Model", "hook payloads are JSON data; 'Model' is not"),
        ("list[Done]", "hook payloads are JSON data; 'Done' is not"),
        ("bytes", "hook payloads are JSON data; 'bytes' is not"),
        ("dict[int, str]", "hook payload mappings must have str keys (JSON objects)"),
        ("tuple[int, ...]", "hook payloads cannot use tuple[...]; use list[...]"),
        ("Exception | Model", "hook payloads are JSON data; 'Exception' is not"),
    ],
)
def test_hook_payloads_are_json_data(text: str, problem: str | None) -> None:
    assert json_data_problem(parse_type(text, KNOWN), KNOWN) == problem


def test_yaml_keys_are_names_and_lines_are_recorded() -> None:
    document = load_yaml("a:\n  on: 1\n  yes: [x, y]\n", "f.yaml")
    assert document.data == {"a": {"on": 1, "yes": ["x", "y"]}}
    assert document.lines[("a", "yes")] == 3
    assert document.lines[("a", "yes", 1)] == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\nb: 2\na: 3\n", "f.yaml:3: a: duplicate key 'a' (first defined on line 1)"),
        ("a: 2024-01-01\n", "f.yaml:1: a: unsupported YAML value"),
        ("a: !!python/name:os.system\n", "f.yaml:1: a: unsupported YAML value"),
        ("a: .inf\n", "f.yaml:1: a: non-finite numbers are not supported"),
        ("", "f.yaml:1: the document is empty"),
        ("a: [\n", "f.yaml:2: "),
        ("a: 1\n---\nb: 2\n", "f.yaml:2: "),
    ],
)
def test_bad_yaml_is_reported_with_a_line(text: str, message: str) -> None:
    with pytest.raises(InvalidSchemaError) as raised:
        load_yaml(text, "f.yaml")
    assert str(raised.value.errors[0]).startswith(message)


def test_json_duplicates_and_syntax_errors_are_reported() -> None:
    with pytest.raises(InvalidSchemaError) as raised:
        load_json('{\n  "a": 1,\n  "a": 2\n}', "p.json")
    assert str(raised.value.errors[0]).startswith("p.json:3: a: duplicate key 'a'")
    with pytest.raises(InvalidSchemaError) as raised:
        load_json('{\n  "a": NaN\n}', "p.json")
    assert "NaN is not valid JSON" in str(raised.value.errors[0])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('a """ b', '\'"""\''),
        ("a \\ b", "backslashes"),
        ("a \t b", "control character"),
        ("a \x00 b", "control character"),
        ("a \u2028 b", "control character"),
        ("   \n  ", "empty"),
    ],
)
def test_docs_that_could_escape_a_docstring_are_rejected(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        check_doc(text)


@pytest.mark.parametrize(
    "text",
    ['Ends with a "quote"', "Two\nlines", "It's 'fine' and ''' too", "x" * 150],
)
def test_docstrings_render_as_the_literal_text(text: str) -> None:
    literal = docstring(check_doc(text), "    ")
    value = ast.literal_eval(literal)
    assert " ".join(value.split()) == " ".join(text.split())


def test_paths_quote_only_ambiguous_keys() -> None:
    assert format_path(("hooks", "points", "tool.before", "payload", 0)) == (
        "hooks.points['tool.before'].payload[0]"
    )
    assert format_path(("$defs", "A", "$ref")) == "$defs.A.$ref"


@pytest.mark.parametrize("word", [1, None, True, ["deep"], {"a": 1}])
def test_only_strings_get_spelling_suggestions(word: object) -> None:
    assert did_you_mean(word, ["deep", "1", "True"]) == ""
