"""Who a run acts for: the ``Principal`` an application passes with an invocation.

An application that serves users verifies them (its login, an SSO header) before it runs
the agent for them, and says who with ``invocation_state={PRINCIPAL_KEY: Principal(...)}``.
The policy layer reads it once, when the run starts, and gives every middleware of that
run the same value (``PolicyEnv.principal``): what a tool or a handler later writes into
``invocation_state`` changes nothing, and nothing the model or an end user writes in a
prompt reaches it. A resumed run is a new invocation and says again who it is for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, cast, final

__all__ = ["PRINCIPAL_KEY", "Principal", "principal_of"]

PRINCIPAL_KEY: Final = "stageware.principal"
"""The ``invocation_state`` key under which an application passes the run's ``Principal``."""


@final
@dataclass(frozen=True, slots=True)
class Principal:
    """Who a run acts for, as the application verified it.

    Attributes:
        id: The user's id (``dana@example.com``).
        roles: The roles or groups the user holds.
        attributes: JSON data about the user (``{"department": "finance"}``), for policies
            that decide on it. Copied and frozen when the principal is made, at every
            depth (objects become read-only mappings, lists tuples), so that neither the
            caller's dictionary changing later nor one middleware changes what the next
            one sees.

    Raises:
        ValueError: If *id* is empty or *attributes* is not JSON data.
        TypeError: If *roles* is a string or holds something other than strings.
    """

    id: str
    roles: frozenset[str] = field(default_factory=frozenset[str])
    attributes: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        given = cast(object, self.id)  # untyped callers exist
        if not isinstance(given, str) or not given.strip():
            raise ValueError(f"a Principal needs a non-empty id, got {self.id!r}")
        roles = cast(object, self.roles)
        if isinstance(roles, str) or not isinstance(roles, Iterable):
            raise TypeError(f"Principal.roles must be a set of role names, got {self.roles!r}")
        names = frozenset(cast(Iterable[object], roles))
        if not all(isinstance(name, str) and name for name in names):
            raise TypeError(f"Principal.roles must hold non-empty strings, got {self.roles!r}")
        object.__setattr__(self, "roles", names)
        attributes = cast(object, self.attributes)
        if not isinstance(attributes, Mapping):
            raise ValueError(f"Principal.attributes must be a mapping, got {self.attributes!r}")
        plain = cast(dict[str, Any], _thawed(cast(Mapping[str, Any], attributes)))
        try:
            # JSON data only: a policy engine reads it, and a session may record it.
            json.dumps(plain, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise ValueError(f"Principal.attributes must be JSON data: {error}") from None
        object.__setattr__(self, "attributes", _frozen(plain))

    def __reduce__(self) -> tuple[type[Principal], tuple[str, frozenset[str], dict[str, Any]]]:
        # A mapping proxy does not pickle; the principal does, as its plain parts.
        return (Principal, (self.id, self.roles, cast(dict[str, Any], _thawed(self.attributes))))


def _thawed(value: object) -> object:
    """A plain copy of *value*: mappings as dicts, tuples and lists as lists, at every depth."""
    if isinstance(value, Mapping):
        return {key: _thawed(item) for key, item in cast(Mapping[object, object], value).items()}
    if isinstance(value, list | tuple):
        return [_thawed(item) for item in cast("list[object] | tuple[object, ...]", value)]
    return value


def _frozen(value: object) -> Any:
    """*value* (plain JSON data) read-only at every depth: a middleware sharing the run's
    principal must not change what a later one sees (``attributes["org"]["tier"] = ...``)."""
    if isinstance(value, dict):
        items = cast(dict[str, object], value).items()
        return MappingProxyType({key: _frozen(item) for key, item in items})
    if isinstance(value, list):
        return tuple(_frozen(item) for item in cast(list[object], value))
    return value


def principal_of(invocation_state: Mapping[str, Any] | None) -> Principal | None:
    """The ``Principal`` under ``PRINCIPAL_KEY`` in *invocation_state*, or ``None``.

    Raises:
        TypeError: If the key holds something else: the application meant to say who the
            run is for, and a run must not start for nobody in particular by mistake.
    """
    if invocation_state is None:
        return None
    given = invocation_state.get(PRINCIPAL_KEY)
    if given is None:
        return None
    if isinstance(given, Principal):
        # The run's own copy: the caller's object (nested attributes included) may change
        # after the run starts, and the run must not see it.
        return Principal(given.id, given.roles, given.attributes)
    raise TypeError(
        f"invocation_state[{PRINCIPAL_KEY!r}] must be a stageware.policy.Principal, "
        f"got {type(given).__name__}"
    )
