"""A spec file checked against its models, with pydantic's errors said in the file's terms.

pydantic says ``Extra inputs are not permitted`` and ``Input should be a valid dictionary
or instance of SpecEntry``; someone editing YAML needs ``unknown key 'bnad' (did you mean
'band'?)`` and ``expected a mapping``, at the line of the key.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from stageware._policy._author_code import PASSING, describe_failure
from stageware._policy._declare import settings_context

from ._document import DocPath, Document, Problem
from ._finite import non_finite
from ._model import SpecEntry, SpecFile

__all__ = ["CheckedSpec", "validate_settings", "validate_spec"]

_EXPECTED = {
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "list_type": "a list",
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "true or false",
}
"""What a value of the wrong kind should have been, by pydantic error type."""


class CheckedSpec(NamedTuple):
    """A spec file checked for shape: what of it is valid, and its problems."""

    spec: SpecFile | None
    """What remains valid once every entry and every other key with a problem is left
    out, so that the rest can be checked in the same run; ``None`` if that is nothing
    worth checking (not a mapping, or no valid ``version``)."""
    positions: tuple[int, ...]
    """Where each of ``spec.middleware`` is in the file's ``middleware`` list."""
    problems: list[Problem]
    """The problems, in document order."""


def validate_spec(document: Document) -> CheckedSpec:
    """*document* checked against the spec's shape."""
    try:
        spec = SpecFile.model_validate(document.data)
        return CheckedSpec(spec, tuple(range(len(spec.middleware))), [])
    except ValidationError as error:
        details = error.errors()
    found = [document.problem(*_explain(detail)) for detail in details]
    # pydantic reports by field, unknown keys last; a reader goes down the file.
    found.sort(key=lambda problem: problem.line or 0)
    data: object = document.data  # plain data: dicts with str keys, lists and scalars
    if not isinstance(data, dict):
        return CheckedSpec(None, (), found)
    rest = dict(cast("dict[str, Any]", data))
    broken: set[object] = set()  # entries with a problem, by position
    for detail in details:
        loc = detail["loc"]
        if loc[:1] == ("middleware",) and len(loc) >= 2 and isinstance(loc[1], int):
            broken.add(loc[1])
        elif loc:
            rest.pop(str(loc[0]), None)
    if "version" not in rest:
        return CheckedSpec(None, (), found)  # of another version, or of none
    entries = cast("list[Any]", rest.get("middleware", []))
    positions = tuple(at for at in range(len(entries)) if at not in broken)
    rest["middleware"] = [entries[at] for at in positions]
    try:
        return CheckedSpec(SpecFile.model_validate(rest), positions, found)
    except ValidationError:  # not expected: every key with a problem was left out
        return CheckedSpec(None, (), found)


def validate_settings(
    document: Document,
    path: DocPath,
    config: type[BaseModel],
    settings: Mapping[str, Any] | None,
    middleware: str,
    settings_dir: Path | None = None,
) -> list[Problem]:
    """The problems of *settings* (at *path*) for *middleware*'s *config* model.

    *settings_dir* is the spec's folder, for validators that read relative paths.

    In pydantic's words, which are the words of the model's author; each at the line of
    the setting it is about. An infinite or NaN number the model accepts is a problem too
    (see ``_finite``).
    """
    try:
        validated = config.model_validate(
            dict(settings or {}), context=settings_context(settings_dir)
        )
    except ValidationError as error:
        return [
            document.problem((*path, *_key_path(detail)), detail["msg"], middleware)
            for detail in error.errors()
        ]
    except PASSING:
        raise
    except BaseException as exc:  # a validator that is not pydantic's, and fails otherwise
        return [document.problem(path, f"validating failed: {describe_failure(exc)}", middleware)]
    return [
        document.problem((*path, *where), "infinite and NaN numbers are not supported", middleware)
        for where in non_finite(validated)
    ]


def _key_path(detail: ErrorDetails) -> DocPath:
    path: DocPath = tuple(detail["loc"])
    # An error about a mapping's key carries a "[key]" marker after the key itself.
    return path[:-1] if path and path[-1] == "[key]" else path


def _explain(detail: ErrorDetails) -> tuple[DocPath, str]:
    path = _key_path(detail)
    kind = detail["type"]
    if kind == "extra_forbidden":
        keys = list(_model_at(path[:-1]).model_fields)
        close = difflib.get_close_matches(str(path[-1]), keys, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (valid keys: {', '.join(keys)})"
        return path, f"unknown key {path[-1]!r}{hint}"
    if kind == "missing":
        return path, f"missing required key {path[-1]!r}"
    if kind == "value_error":
        return path, str((detail.get("ctx") or {}).get("error", detail["msg"]))
    if kind == "too_short":
        return path, "must not be empty"
    expected = _EXPECTED.get(kind)
    if expected is not None:
        return path, f"expected {expected}, got {_describe(detail['input'])}"
    return path, f"{detail['msg']}, got {_describe(detail['input'])}"


def _model_at(path: DocPath) -> type[BaseModel]:
    # Only the file and its entries are models; anything below them (settings) is a plain
    # mapping, which accepts any key.
    return SpecEntry if path[:1] == ("middleware",) else SpecFile


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r:.60}"
    if isinstance(value, list):
        return "a list"
    return "a mapping" if isinstance(value, dict) else repr(value)
