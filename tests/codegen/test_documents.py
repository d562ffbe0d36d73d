"""Schema and payload files are read with the line of every value, within the limits.

Both YAML parsers (libyaml's, and PyYAML's own where libyaml is missing) must read a
document alike and hold it to the same limits; JSON gets its lines from its own
grammar, whatever its indentation or escapes; a byte or character that cannot be read
is reported where it is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from stageware_codegen import InvalidSchemaError
from stageware_codegen.load import yaml_document
from stageware_codegen.load.documents import MAX_TEXT, Document, decode_utf8
from stageware_codegen.load.json_document import load_json
from stageware_codegen.load.yaml_document import LOADERS, load_yaml

from .conftest import SCHEMA_DIR, Cli, Project

PAYLOADS = "schema/payloads/converse.schema.json"


@pytest.fixture(params=[loader.__name__ for loader in LOADERS])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each YAML parser in turn."""
    name: str = request.param
    monkeypatch.setattr(yaml_document, "LOADERS", tuple(_named(name)))
    return name


def _named(name: str) -> list[type[object]]:
    return [loader for loader in LOADERS if loader.__name__ == name]


def _error(text: str) -> str:
    with pytest.raises(InvalidSchemaError) as raised:
        load_yaml(text, "f.yaml")
    assert len(raised.value.errors) == 1, raised.value.errors
    return str(raised.value.errors[0])


def test_libyaml_parses_when_pyyaml_has_it() -> None:
    assert len(LOADERS) == (2 if yaml.__with_libyaml__ else 1)


def test_both_parsers_read_the_schema_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (SCHEMA_DIR / "stages.yaml").read_text(encoding="utf-8")
    documents: list[Document] = []
    for loader in LOADERS:
        monkeypatch.setattr(yaml_document, "LOADERS", (loader,))
        documents.append(load_yaml(text, "stages.yaml"))
    assert all(document == documents[0] for document in documents)
    assert documents[0].lines[("stages", "InvokeModel")] == next(
        number for number, line in enumerate(text.splitlines(), 1) if line == "  InvokeModel:"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "big: &big " + "x" * (MAX_TEXT // 3) + "\nlist:\n  - *big\n  - [*big, *big]\n",
            "f.yaml:4: list[1][1]: the document expands to more than 4000000 characters of "
            "text once YAML aliases are resolved: alias *big (anchored on line 1) crosses "
            "the limit",
        ),
        (
            "a0: &a0 x\n"
            + "".join(f"a{n}: &a{n} {'[' * 20}*a{n - 1}{']' * 20}\n" for n in range(1, 5)),
            "the document expands to collections nested more than 64 levels deep once YAML "
            "aliases are resolved: alias *a3",
        ),
        ("text: " + "x" * (MAX_TEXT + 1) + "\n", "f.yaml:1: text: the document has more"),
        ("a: &x 1\nb: &x 2\n", "f.yaml:2: duplicate anchor &x (first defined on line 1)"),
        ("a: &k x\n*k : 1\n", "f.yaml:2: mapping keys must be plain names"),
        ("a: 1\nb: 'x\x07y'\n", "f.yaml:2: character U+0007 at column 6 is not allowed"),
        ("a: 1\nb: x\x7f\n", "f.yaml:2: character U+007F at column 5 is not allowed"),
        ("a:\n  b: " + "1" * 5000 + "\n", "f.yaml:2: a.b: the integer has too many digits"),
        ("a: " + "[" * 100 + "]" * 100 + "\n", "f.yaml:1: collections are nested more than 64"),
        ("a: 1\nb: [\n", "f.yaml:3: "),
    ],
    ids=[
        "text_through_aliases",
        "depth_through_aliases",
        "text_without_aliases",
        "duplicate_anchor",
        "alias_as_key",
        "control_character",
        "delete_character",
        "huge_integer",
        "deep_nesting",
        "syntax",
    ],
)
def test_yaml_problems_are_reported_alike_by_both_parsers(
    parser: str, text: str, message: str
) -> None:
    assert message in _error(text)


def test_json_lines_do_not_depend_on_indentation_or_escapes() -> None:
    document = {"$defs": {"A": {"description": "Smile \U0001f600 \x7f", "type": "string"}}}
    spaced = json.dumps(document, indent=2)  # \ud83d\ude00: what json.dumps writes
    tabbed = json.dumps(document, indent="\t", ensure_ascii=False)
    for text in (spaced, tabbed):
        loaded = load_json(text, "p.json")
        assert loaded.data == document
        assert loaded.lines[("$defs", "A", "type")] == 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{\n  "a": 1,\n  "a": 2\n}', "p.json:3: a: duplicate key 'a' (first defined on line 2)"),
        ('{\n  "a": [1,\n    NaN]\n}', "p.json:3: a[1]: NaN is not valid JSON"),
        ('{\n  "a": -Infinity\n}', "p.json:2: a: -Infinity is not valid JSON"),
        ('{\n  "a": 1,\n}', "p.json:3: Expecting property name enclosed in double quotes"),
        ('{"k' + "x" * 2000 + '": 1,\n "b": 1,\n "b": 2}', "p.json:3: b: duplicate key 'b'"),
        ('{\n"a":\n' + "[" * 3000 + "]" * 3000 + "}", "p.json:3: collections are nested more"),
    ],
    ids=["duplicate", "nan", "infinity", "syntax", "long_key", "deep_nesting"],
)
def test_json_problems_are_reported_at_their_line(text: str, message: str) -> None:
    with pytest.raises(InvalidSchemaError) as raised:
        load_json(text, "p.json")
    assert str(raised.value.errors[0]).startswith(message), raised.value.errors


def test_a_byte_that_is_not_utf8_is_reported_at_its_line_and_column() -> None:
    with pytest.raises(InvalidSchemaError) as raised:
        decode_utf8("a: 1\nb: 'é\xff'\n".encode("latin-1"), "f.yaml")
    assert [str(error) for error in raised.value.errors] == [
        "f.yaml:2: byte 0xe9 at column 5 is not UTF-8; save the file as UTF-8"
    ]
    assert decode_utf8("\ufeffa: 1\n".encode(), "f.yaml") == "a: 1\n"


def _line(path: Path, fragment: str) -> int:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return next(number for number, line in enumerate(lines, 1) if fragment in line)


def test_a_schema_that_is_not_utf8_is_reported_where_the_byte_is(
    project: Project, cli: Cli
) -> None:
    before = project.snapshot()
    text = project.schema.read_text(encoding="utf-8")
    edited = text.replace(
        "    result: EventLoopStopEvent\n", "    result: EventLoopStopEvent # caf\udce9\n", 1
    )
    project.schema.write_bytes(edited.encode("utf-8", errors="surrogateescape"))

    result = cli("generate")

    assert result.code == 2
    line = _line(project.schema, "result: EventLoopStopEvent # caf")
    assert result.err.splitlines() == [
        f"schema/stages.yaml:{line}: byte 0xe9 at column 37 is not UTF-8; save the file as UTF-8"
    ]
    assert project.snapshot() == before


def test_a_payload_file_that_is_not_utf8_is_reported_in_that_file(
    project: Project, cli: Cli
) -> None:
    path = project.root / PAYLOADS
    text = path.read_text(encoding="utf-8").replace('"Usage": {', '"Usage": {"$comment": "\xe9",')
    path.write_bytes(text.encode("latin-1"))

    result = cli("generate")

    assert result.code == 2
    line = _line(path, '"Usage": {')
    assert result.err.startswith(f"{PAYLOADS}:{line}: byte 0xe9 at column "), result.err


def test_a_tab_indented_payload_file_is_reported_at_the_right_line(
    project: Project, cli: Cli
) -> None:
    path = project.root / PAYLOADS
    document = json.loads(path.read_text(encoding="utf-8"))
    document["$defs"]["Message"]["properties"]["role"] = {"$ref": "#/$defs/Rol"}
    path.write_text(json.dumps(document, indent="\t"), encoding="utf-8")

    result = cli("generate")

    assert result.code == 2
    line = _line(path, '"#/$defs/Rol"')
    assert result.err.splitlines() == [
        f"{PAYLOADS}:{line}: $defs.Message.properties.role.$ref: "
        "$ref '#/$defs/Rol' names no payload definition"
    ], result.err


def test_half_a_surrogate_pair_is_not_text(parser: str) -> None:
    # Escapes can spell one; no file (generated or not) can hold it. libyaml refuses
    # the escape itself, PyYAML's parser reads it and the loader refuses the value.
    assert _error('a: 1\nb: "x\\ud800"\n').startswith("f.yaml:2: ")
    with pytest.raises(InvalidSchemaError) as raised:
        load_json('{\n  "a": 1,\n  "b": "x\\ud800"\n}', "p.json")
    assert [str(error) for error in raised.value.errors] == [
        "p.json:3: b: \\ud800 is half of a surrogate pair, not a character"
    ]


def test_half_a_surrogate_pair_in_a_payload_file_is_reported_there(
    project: Project, cli: Cli
) -> None:
    # It used to reach datamodel-code-generator's input and fail there, a traceback.
    path = project.root / PAYLOADS
    document = json.loads(path.read_text(encoding="utf-8"))
    document["$defs"]["Usage"]["description"] = "Token \ud800 counts."
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")

    result = cli("generate")

    assert result.code == 2
    line = _line(path, "Token \\ud800 counts.")
    assert result.err.splitlines() == [
        f"{PAYLOADS}:{line}: $defs.Usage.description: \\ud800 is half of a surrogate pair, "
        "not a character"
    ]
