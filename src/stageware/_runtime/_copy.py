"""Deep copies of payloads, the way a context's copy rules make them, faster than ``deepcopy``.

A context's deep-copied fields (a conversation, a system prompt, tool specs) are JSON-like
data: dicts, lists and immutable leaves, thousands of them in a long conversation.
``copy.deepcopy`` pays for generality on every one of them (a memo lookup, a dispatch, a
keep-alive list). ``copy_payload`` copies dicts and lists itself and shares immutable
leaves, which makes a long conversation's copy about ten times faster; anything else (a
tuple, a set, a str subclass, a user's object) goes to ``copy.deepcopy``, so the result is
always a deep copy.

It gives up two things ``deepcopy`` does, neither of which a payload relies on: an object
reached twice is copied twice rather than once, and a cycle is not followed. A cycle, or a
structure nested deeper than the recursion limit, is detected as ``RecursionError`` and
the whole value is copied with ``copy.deepcopy`` instead.
"""

from __future__ import annotations

import copy
from typing import Any, Final, TypeVar

__all__ = ["copy_payload"]

T = TypeVar("T")

# Leaves that are never changed in place, so the copy can share them.
_IMMUTABLE: Final = frozenset({str, int, float, bool, bytes, type(None)})


def copy_payload(value: T) -> T:
    """Return a deep copy of *value*, which is usually JSON-like data."""
    kind = type(value)
    copied: T
    try:
        if kind is list:
            copied = _copy_list(value)
            return copied
        if kind is dict:
            copied = _copy_dict(value)
            return copied
    except RecursionError:
        pass  # A cycle, or nesting deeper than the recursion limit: deepcopy handles both.
    if kind in _IMMUTABLE:
        return value
    return copy.deepcopy(value)


# Each container is copied shallowly at C speed, then only its containers and its unusual
# leaves are replaced: most leaves (strings, numbers) are never touched by Python code.


def _copy_dict(value: Any) -> Any:
    copied = value.copy()
    item: object
    for key, item in copied.items():  # Replacing values does not resize: safe to iterate.
        kind = type(item)
        if kind is dict:
            copied[key] = _copy_dict(item)
        elif kind is list:
            copied[key] = _copy_list(item)
        elif kind not in _IMMUTABLE:
            copied[key] = copy.deepcopy(item)
    return copied


def _copy_list(value: Any) -> Any:
    copied = value.copy()
    item: object
    for index, item in enumerate(copied):
        kind = type(item)
        if kind is dict:
            copied[index] = _copy_dict(item)
        elif kind is list:
            copied[index] = _copy_list(item)
        elif kind not in _IMMUTABLE:
            copied[index] = copy.deepcopy(item)
    return copied
