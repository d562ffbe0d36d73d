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

Copy on read
------------

Even a fast copy of a long conversation is most of a model call's cost when a handler
looks at one message, or none. ``copy_on_read`` returns a ``CopyOnReadList``: a ``list``
whose slots hold the host's own elements until the first read of each, which puts a
``copy_payload`` of the element in the slot and returns that. Reads are every Python-level
way to get an element out (indexing and slicing, iteration and all that iterates, such as
``list()``, ``[*messages]`` and ``json.dumps``; ``reversed``, ``pop``, ``copy``, ``+``,
``*``, ``sort``, ``copy.copy``), so whatever a handler can hold and mutate is a copy, as the
deep-copy rule requires, and two reads of one slot give the same object, as they would from
a list copied up front. ``copy.deepcopy`` and pickling make a detached copy, as they would
of any list, and leave the slots alone. Writes are plain ``list`` writes: a slot a handler
wrote holds the handler's object.

The host's elements are recognised by identity, not position: the list keeps them (alive,
so their ids cannot be reused) in a dict by id, and a slot holds a host element exactly when
the object in it is one of them. So inserts, deletes, sorting and every other write that
moves slots need no bookkeeping. An element read through two slots that held it gives the
same copy both times, as one deep copy of the list would.

What stays raw, on purpose: code that takes a list's items in C without calling its
methods. Comparisons (``==``, ``in``, ``index``, ``count``, ``remove``), ``repr`` and the
host's own ``list.copy`` of the slots only look at the host's elements, which is harmless.
Two kinds of raw read hand an element out, and so are not protected: calling ``list``'s own
methods on the object (``list.__getitem__(messages, 0)``, as ``object.__setattr__`` gets
past a frozen dataclass) and C functions that work on a list's internals (``heapq``,
``operator.concat``). pydantic is one of the latter: it validates the slots in place and
keeps ``Any`` values (a tool's input) by reference, so an event built from a context's list
for other code to mutate is built from ``list(messages)``, which reads (copies) every
element first.

Two things differ from copying the whole list up front. An element is copied when it is
first read, so it shows the host's element as it is then, not as it was when the list was
made; the host replaces messages rather than editing them, so the two are the same. And
``plain += messages``, with ``plain`` a ``list``, rebinds ``plain`` to a new list instead
of extending it in place: Python hands that operation to ``CopyOnReadList.__radd__``, which
is what keeps ``plain + messages`` from taking the host's elements raw.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any, Final, Self, SupportsIndex, TypeVar, cast, final, overload

__all__ = ["CopyOnReadList", "copy_on_read", "copy_payload"]

T = TypeVar("T")
S = TypeVar("S")

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


def copy_on_read(value: list[T]) -> list[T]:
    """Return a deep copy of the list *value* that copies each element when it is first read.

    Anything but a plain ``list`` (a ``CopyOnReadList`` included) is copied with
    ``copy_payload`` at once.
    """
    if type(value) is list:
        return CopyOnReadList(value)
    return copy_payload(value)


_ABSENT: Final = object()


@final
class CopyOnReadList(list[T]):
    """A deep copy of a list, made element by element as elements are read (see the module)."""

    __slots__ = ("_copies", "_originals", "_source")

    _source: list[T]
    _originals: dict[int, T] | None
    _copies: dict[int, T]

    def __init__(self, source: list[T]) -> None:
        super().__init__(source)
        # The host's elements, kept as they were; indexed by id on the first read, since a
        # handler that reads nothing should not pay for the index.
        self._source = source.copy()
        self._originals = None
        self._copies = {}

    def _index(self) -> dict[int, T]:
        originals = self._originals
        if originals is None:
            source = self._source
            originals = self._originals = dict(zip(map(id, source), source, strict=True))
        return originals

    def _own(self, item: T, originals: dict[int, T]) -> T:
        """*item* if it is not a host element, else its copy (the same one each time)."""
        key = id(item)
        if originals.get(key, _ABSENT) is not item:
            return item  # already a copy, or the handler's own object
        copied = self._copies.get(key, _ABSENT)
        if copied is _ABSENT:
            copied = self._copies[key] = copy_payload(item)
        return cast("T", copied)

    def _read(self, index: SupportsIndex) -> T:
        item = super().__getitem__(index)
        owned = self._own(item, self._index())
        if owned is not item:
            super().__setitem__(index, owned)
        return owned

    def _read_all(self) -> list[T]:
        """Read every slot; the copies, as a plain list. One pass in C where it can be."""
        own, originals = self._own, self._index()
        slots = super().copy()
        for index, item in enumerate(slots):
            owned = own(item, originals)
            if owned is not item:
                slots[index] = owned
        super().__setitem__(slice(None), slots)
        return slots

    @overload
    def __getitem__(self, index: SupportsIndex, /) -> T: ...
    @overload
    def __getitem__(self, index: slice, /) -> list[T]: ...
    def __getitem__(self, index: SupportsIndex | slice, /) -> T | list[T]:
        if isinstance(index, slice):
            return [self._read(i) for i in range(*index.indices(len(self)))]
        return self._read(index)

    def __iter__(self) -> Iterator[T]:
        # By index, as list's own iterator does, so writes during the loop behave the same.
        # _read's steps, with the lookups done once: a loop over a long history is common.
        own, originals = self._own, self._index()
        get, put = super().__getitem__, super().__setitem__
        index = 0
        while index < len(self):
            item = get(index)
            owned = own(item, originals)
            if owned is not item:
                put(index, owned)
            yield owned
            index += 1

    def __reversed__(self) -> Iterator[T]:
        index = len(self) - 1
        while 0 <= index < len(self):
            yield self._read(index)
            index -= 1

    def pop(self, index: SupportsIndex = -1, /) -> T:
        item = self._read(index)
        super().pop(index)
        return item

    def copy(self) -> list[T]:
        return self._read_all()

    @overload
    def __add__(self, value: list[T], /) -> list[T]: ...
    @overload
    def __add__(self, value: list[S], /) -> list[S | T]: ...
    def __add__(self, value: list[Any], /) -> list[Any]:
        return self._read_all() + value

    # Without this, ``plain + messages`` would concatenate the raw slots, in C.
    def __radd__(self, value: list[S], /) -> list[S | T]:
        # Python also calls it for ``(1,) + messages``, which must stay a TypeError.
        if not isinstance(value, list):  # pyright: ignore[reportUnnecessaryIsInstance]
            return NotImplemented
        return [*value, *self._read_all()]

    def __mul__(self, value: SupportsIndex, /) -> list[T]:
        return self._read_all() * value

    def __rmul__(self, value: SupportsIndex, /) -> list[T]:
        return self._read_all() * value

    # Defining __mul__ would otherwise make ``messages *= 2`` a __mul__ and a rebinding;
    # list's own repeat copies the slots without reading them, and they stay tracked.
    def __imul__(self, value: SupportsIndex, /) -> Self:
        return super().__imul__(value)

    @overload
    def sort(self, *, key: None = None, reverse: bool = False) -> None: ...
    @overload
    def sort(self, *, key: Callable[[T], Any], reverse: bool = False) -> None: ...
    def sort(self, *, key: Callable[[T], Any] | None = None, reverse: bool = False) -> None:
        # The key function and the comparisons get the elements: copies, then.
        self._read_all()
        if key is None:
            # The first overload's condition (comparable elements) is the caller's to meet.
            super().sort(reverse=reverse)  # pyright: ignore[reportCallIssue]
        else:
            super().sort(key=key, reverse=reverse)

    def __copy__(self) -> list[T]:
        return self._read_all()

    # A deep copy, or a pickle, is detached from the list: it copies the slots as they are
    # (reading a host element to copy it is harmless), and leaves them as they are.

    def __deepcopy__(self, memo: dict[int, Any]) -> list[T]:
        return copy.deepcopy(super().copy(), memo)

    def __reduce_ex__(self, protocol: SupportsIndex, /) -> tuple[Any, ...]:
        return (list, (copy_payload(super().copy()),))

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (copy_payload(super().copy()),))
