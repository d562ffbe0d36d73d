"""``AgentState``: the agent's key-value state, JSON data checked where it is set."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, final

from .sessions._encoding import json_problem

__all__ = ["AgentState"]


@final
class AgentState(MutableMapping[str, Any]):
    """The agent's JSON key-value state, kept with its session.

    A dict whose values must be JSON data: a value that is not (a set, a datetime, an
    object) is refused with a ``ValueError`` when it is set, naming the key and where in
    the value the problem sits, instead of failing the session save after the run's tools
    have already acted. Values are copied when set, so a later change to the caller's
    object does not slip past the check.

    It also answers to the Strands ``AgentState`` methods: ``get(key)`` returns a copy of
    the value (``get()``, of everything), ``set(key, value)`` and ``delete(key)``.

    A value changed in place (``state["cart"].append(item)``) is checked at the next
    session save; the save at the start of every invocation catches it before anything
    runs.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {}
        for key, value in (values or {}).items():
            self[key] = value

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"agent state keys are strings, got {type(key).__qualname__} {key!r}")
        problem = json_problem(value, f"agent.state[{key!r}]")
        if problem is not None:
            raise ValueError(
                f"{problem}; agent state must be JSON data, to be kept with the session"
            )
        self._values[key] = copy.deepcopy(value)

    def __delitem__(self, key: str) -> None:
        del self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: str | None = None, default: Any = None) -> Any:
        """A deep copy of the value of *key* (or *default*); with no key, of the whole state.

        A copy, as in Strands: changing what ``get`` returned changes nothing until it is
        ``set`` back, where it is checked. ``state[key]`` is the live value.
        """
        if key is None:
            return self.to_dict()
        return copy.deepcopy(self._values.get(key, default))

    def set(self, key: str, value: Any) -> None:
        """Set *key* to a copy of *value* (Strands' spelling of ``state[key] = value``)."""
        self[key] = value

    def delete(self, key: str) -> None:
        """Remove *key*, if it is there (Strands' spelling; no error when it is absent)."""
        self._values.pop(key, None)

    def to_dict(self) -> dict[str, Any]:
        """A deep copy of the state as a plain dict."""
        return copy.deepcopy(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AgentState):
            return self._values == other._values
        if isinstance(other, Mapping):
            return self._values == dict(other)  # pyright: ignore[reportUnknownArgumentType]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like dict

    def __repr__(self) -> str:
        return f"AgentState({self._values!r})"
