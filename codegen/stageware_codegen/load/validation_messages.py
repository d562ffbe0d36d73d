"""Pydantic's validation errors, translated into schema diagnostics.

Pydantic reports in its own terms (``Input should be a valid dictionary or instance of
ContextFieldSpec``), one error per failed check. Users need schema terms: which key is
unknown and what it was probably meant to be, what a value should have been and what it
was in YAML words. A misspelled required key is one mistake, so it is one message.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from .diagnostics import DocPath, close_matches, describe_value, did_you_mean

__all__ = ["Problem", "translate"]

_EXPECTED: dict[str, str] = {
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
}
"""What a value of the wrong type should have been, by pydantic error type."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One translated validation error."""

    path: DocPath
    message: str


def translate(details: Sequence[ErrorDetails], root: type[BaseModel]) -> list[Problem]:
    """Translate the errors of validating a document against *root*, in their order."""
    # A missing key that an unknown sibling key was probably meant to be is reported
    # once, as the unknown key with its suggestion.
    meant: set[DocPath] = set()
    for detail in details:
        if detail["type"] == "extra_forbidden":
            loc = _path(detail)
            expected = _expected_keys(root, loc[:-1])
            meant.update((*loc[:-1], match) for match in close_matches(str(loc[-1]), expected))
    return [
        Problem(_path(detail), _message(detail, _path(detail), root))
        for detail in details
        if not (detail["type"] == "missing" and _path(detail) in meant)
    ]


def _path(detail: ErrorDetails) -> DocPath:
    loc = tuple(detail["loc"])
    # Errors about a mapping key carry a "[key]" marker: the path is the key itself.
    return loc[:-1] if loc and loc[-1] == "[key]" else loc


def _message(detail: ErrorDetails, loc: DocPath, root: type[BaseModel]) -> str:
    kind = detail["type"]
    got = detail.get("input")
    ctx: dict[str, Any] = dict(detail.get("ctx") or {})
    if kind == "extra_forbidden":
        key = str(loc[-1])
        return f"unknown key {key!r}" + did_you_mean(key, _expected_keys(root, loc[:-1]))
    if kind == "missing":
        return f"missing required key {loc[-1]!r}"
    if kind in ("value_error", "assertion_error"):
        return str(ctx.get("error", detail["msg"]))
    if kind == "literal_error":
        return _literal_message(_literal_values(root, loc), got)
    if kind == "too_short":
        least = int(ctx.get("min_length", 1))
        return "must not be empty" if least == 1 else f"needs at least {least} entries"
    expected = _EXPECTED.get(kind)
    if expected is not None:
        return f"expected {expected}, got {describe_value(got)}"
    msg = detail["msg"]
    return f"{msg[0].lower()}{msg[1:]}, got {describe_value(got)}"


def _literal_message(values: tuple[object, ...], got: object) -> str:
    if len(values) == 1 and type(values[0]) is int:
        return f"must be the integer {values[0]}, got {describe_value(got)}"
    expected = _one_of([repr(value) for value in values])
    if not all(isinstance(value, str) for value in values):
        return f"expected {expected}, got {describe_value(got)}"
    if isinstance(got, str):
        return f"expected {expected}, got {got!r}" + did_you_mean(got, map(str, values))
    if isinstance(got, bool):
        # YAML 1.1 reads unquoted yes/no/on/off as booleans.
        return f"expected {expected}, got {describe_value(got)}; quote the value if you meant text"
    return f"expected {expected}, got {describe_value(got)}"


def _one_of(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _literal_values(root: type[BaseModel], loc: DocPath) -> tuple[object, ...]:
    annotation = _annotation_at(root, loc)
    if typing.get_origin(annotation) is Literal:
        return typing.get_args(annotation)
    return ()


def _expected_keys(root: type[BaseModel], loc: DocPath) -> list[str]:
    """The keys the model at *loc* accepts, as written in the document."""
    model = _unwrap_model(_annotation_at(root, loc))
    if model is None:
        return []
    return [field.alias or name for name, field in model.model_fields.items()]


def _annotation_at(root: type[BaseModel], loc: DocPath) -> Any:
    annotation: Any = root
    for part in loc:
        annotation = _step(annotation, part)
        if annotation is None:
            return None
    return annotation


def _step(annotation: Any, part: int | str) -> Any:
    model = _unwrap_model(annotation)
    if model is not None:
        for name, field in model.model_fields.items():
            if (field.alias or name) == part:
                return field.annotation
        return None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        return args[1]
    if origin is list and args:
        return args[0]
    return None


def _unwrap_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    return None
