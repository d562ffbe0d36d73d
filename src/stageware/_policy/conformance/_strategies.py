"""Hypothesis strategies for hook events, read off the event models' annotations.

Nothing here knows a particular event. It reads whatever the models declare (pydantic
fields, the payload TypedDicts with their ``NotRequired`` keys, literals, unions, lists,
mappings, type aliases, ``Any`` as JSON data), so a change to the stage schema needs no
change here. What an annotation cannot say is left to the model (a drawn value the model
refuses, by a pydantic constraint, is discarded, never fed to a middleware), but for one
convention of the payload types: "set exactly one key" (see ``_record``).

Sizes are kept small: the suite looks for a wrong outcome or a mutation, and a short
event finds those as well as a long one and reads better in a failure.
"""

from __future__ import annotations

import enum
import functools
import string
import types
import typing
from collections.abc import Callable, Mapping, MutableMapping, MutableSequence, Sequence
from typing import Any, TypeVar

import typing_extensions
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from stageware._generated.policy_points import HOOK_POINTS, HookPoint
from stageware._policy._choices import choose

__all__ = ["event_strategy", "model_strategy"]

M = TypeVar("M", bound=BaseModel)

_MAX_ITEMS = 3
# How often a type may appear inside itself, and how deep the named types may nest at all
# (deeper than any real payload: past it, a type can only contain itself unconditionally).
_MAX_NESTING = 2
_MAX_DEPTH = 64
# A fixed alphabet rather than ``st.characters()``: it holds what trips text handling
# (quotes, a backslash, a line break, accents, a wide character, an emoji, a right-to-left
# letter) and, unlike ``characters()``, needs no Unicode table cached on disk. It holds
# every ASCII letter and digit so that hypothesis can mix in the string constants of the
# author's own modules (a tool name, a key), which a middleware's branches test for.
_ALPHABET = string.ascii_letters + string.digits + " _-.:@/\\\"'\n\té€中😀א"
_TEXT = st.text(_ALPHABET, max_size=12)
# JSON data for ``Any``: what a tool's input, a tool's structured output or an approver's
# answer can hold once it has been through a JSON round trip. No NaN, so that equality
# (the mutation check) means what it says.
_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: (
        st.lists(inner, max_size=_MAX_ITEMS) | st.dictionaries(_TEXT, inner, max_size=_MAX_ITEMS)
    ),
    max_leaves=6,
)

_ALIASES: tuple[type[typing_extensions.TypeAliasType], ...] = tuple(
    {
        typing_extensions.TypeAliasType,
        getattr(typing, "TypeAliasType", typing_extensions.TypeAliasType),
    }
)
_KEY_WRAPPERS = {
    typing_extensions.Required,
    typing_extensions.NotRequired,
    typing_extensions.ReadOnly,
}
_SEQUENCES = {list, Sequence, MutableSequence}
_MAPPINGS = {dict, Mapping, MutableMapping}


def event_strategy(point: HookPoint | str) -> st.SearchStrategy[BaseModel]:
    """Valid events of hook point *point*, as its event model declares them.

    Raises:
        ValueError: For an unknown hook point.
    """
    return _event_strategy(choose(HookPoint, point, "hook point"))


@functools.cache
def _event_strategy(point: HookPoint) -> st.SearchStrategy[BaseModel]:
    return model_strategy(HOOK_POINTS[point].event)


def model_strategy(model: type[M]) -> st.SearchStrategy[M]:
    """Valid instances of the pydantic *model*, drawn from its field annotations."""
    valid = _Reader().read(model).map(_validator(model)).filter(_is_valid)
    # The filter leaves only models; no checker narrows a strategy's type through one.
    return typing.cast("st.SearchStrategy[M]", valid)


class _Invalid:
    """A drawn value the model refused (a constraint no annotation shows)."""


_INVALID = _Invalid()


def _validator(model: type[M]) -> Callable[[Any], M | _Invalid]:
    def validate(data: Any) -> M | _Invalid:
        try:
            return model.model_validate(data)
        except ValidationError:
            return _INVALID

    return validate


def _is_valid(value: object) -> bool:
    return value is not _INVALID


class _Reader:
    """Turns one annotation into a strategy for its JSON-shaped input data.

    Everything is read up front, so a type that refers to itself (a tree of nodes) is
    read again one level down, up to ``_MAX_NESTING`` levels. Below that, lists and
    mappings are empty and optional keys left out, which ends the recursion; a drawn
    tree stays small instead of growing until hypothesis discards it.
    """

    def __init__(self) -> None:
        self._named: dict[tuple[object, int], st.SearchStrategy[Any]] = {}
        self._reading: list[object] = []

    @property
    def _at_the_bottom(self) -> bool:
        return any(self._reading.count(named) > _MAX_NESTING for named in self._reading)

    def read(self, annotation: Any) -> st.SearchStrategy[Any]:
        if isinstance(annotation, _ALIASES) or typing_extensions.is_typeddict(annotation):
            return self._named_type(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return self._named_type(annotation)
        origin = typing_extensions.get_origin(annotation)
        args = typing_extensions.get_args(annotation)
        if origin is typing_extensions.Annotated or origin in _KEY_WRAPPERS:
            # Constraints in Annotated metadata are the model's to enforce (see the filter).
            return self.read(args[0])
        if origin is typing_extensions.Literal:
            return st.sampled_from(args)
        if origin is typing.Union or origin is types.UnionType:
            # None first, so that the simplest events come first and failures read short.
            options = sorted(args, key=lambda arg: arg is not type(None))
            return st.one_of([self.read(arg) for arg in options])
        if origin in _SEQUENCES:
            if self._at_the_bottom:
                return st.builds(_empty_list)
            return st.lists(self.read(args[0]) if args else _JSON, max_size=_MAX_ITEMS)
        if origin in _MAPPINGS:
            if self._at_the_bottom:
                return st.builds(_empty_dict)
            keys = self.read(args[0]) if args else _TEXT
            values = self.read(args[1]) if args else _JSON
            return st.dictionaries(keys, values, max_size=_MAX_ITEMS)
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                if self._at_the_bottom:
                    return st.just(())
                return st.lists(self.read(args[0]), max_size=_MAX_ITEMS).map(tuple)
            return st.tuples(*(self.read(arg) for arg in args))
        return self._simple(annotation)

    def _simple(self, annotation: Any) -> st.SearchStrategy[Any]:
        if annotation is Any or annotation is object:
            return _JSON
        if annotation is None or annotation is type(None):
            return st.none()
        if annotation is bool:
            return st.booleans()
        if annotation is int:
            return st.integers(min_value=-(2**53), max_value=2**53)
        if annotation is float:
            return st.floats(allow_nan=False, allow_infinity=False)
        if annotation is str:
            return _TEXT
        if annotation in _SEQUENCES:
            return st.lists(_JSON, max_size=_MAX_ITEMS)
        if annotation in _MAPPINGS:
            return st.dictionaries(_TEXT, _JSON, max_size=_MAX_ITEMS)
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            return st.sampled_from(list(annotation))
        # Anything else (datetime, UUID, ...) hypothesis knows how to build itself.
        return st.from_type(typing.cast("type[object]", annotation))

    def _named_type(self, annotation: Any) -> st.SearchStrategy[Any]:
        key = (annotation, self._reading.count(annotation))
        if key in self._named:
            return self._named[key]
        if len(self._reading) > _MAX_DEPTH:
            raise TypeError(
                f"cannot draw a finite value of {annotation!r}: it contains itself "
                "other than through a list, a mapping or an optional key"
            )
        self._reading.append(annotation)
        try:
            if isinstance(annotation, _ALIASES):
                strategy = self.read(annotation.__value__)
            elif typing_extensions.is_typeddict(annotation):
                strategy = self._typed_dict(annotation)
            else:
                strategy = self._model(annotation)
        finally:
            self._reading.pop()
        self._named[key] = strategy
        return strategy

    def _typed_dict(self, typed_dict: Any) -> st.SearchStrategy[dict[str, Any]]:
        hints = typing_extensions.get_type_hints(typed_dict, include_extras=True)
        required: dict[str, st.SearchStrategy[Any]] = {}
        optional: dict[str, st.SearchStrategy[Any]] = {}
        for key, hint in hints.items():
            if _is_required_key(typed_dict, key, hint):
                required[key] = self.read(hint)
            elif not self._at_the_bottom:
                optional[key] = self.read(hint)
        return _record(required, optional)

    def _model(self, model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
        required: dict[str, st.SearchStrategy[Any]] = {}
        optional: dict[str, st.SearchStrategy[Any]] = {}
        for name, field in model.model_fields.items():
            key = field.validation_alias if isinstance(field.validation_alias, str) else None
            key = key or field.alias or name
            if field.is_required():
                required[key] = self.read(field.annotation)
            elif not self._at_the_bottom:
                optional[key] = self.read(field.annotation)
        return _record(required, optional)


def _record(
    required: dict[str, st.SearchStrategy[Any]], optional: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[dict[str, Any]]:
    """A mapping with the *required* keys and some of the *optional* ones.

    A payload type whose keys are all optional, two or more of them, is a union in the
    Converse style: a content block, a stream event, a delta sets exactly one key. No
    annotation says so, but the host never sends two (or none), and an event it never
    sends would fail a middleware for nothing; so such a type gets exactly one key.
    """
    if not required and len(optional) >= 2:
        return st.one_of([st.fixed_dictionaries({key: value}) for key, value in optional.items()])
    return st.fixed_dictionaries(required, optional=optional)


def _empty_list() -> list[Any]:
    return []


def _empty_dict() -> dict[Any, Any]:
    return {}


def _is_required_key(typed_dict: Any, key: str, hint: Any) -> bool:
    """Whether *key* of *typed_dict* is required.

    Under ``from __future__ import annotations`` the class's own ``__required_keys__``
    lists a ``NotRequired`` key as required (the wrapper was still a string when the
    class was made), so the wrapper in the resolved hint decides when there is one.
    """
    while True:
        origin = typing_extensions.get_origin(hint)
        if origin is typing_extensions.NotRequired:
            return False
        if origin is typing_extensions.Required:
            return True
        if origin in (typing_extensions.Annotated, typing_extensions.ReadOnly):
            hint = typing_extensions.get_args(hint)[0]
            continue
        return key in typed_dict.__required_keys__
