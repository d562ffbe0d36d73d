"""Building the two objects every policy middleware call makes: its ``PolicyEnv`` and its
``Decision`` record.

Both are frozen dataclasses, and a frozen dataclass's ``__init__`` sets each field
through ``object.__setattr__``; with 50 middleware, building them is most of what a call
costs. These builders fill an instance of a private class with the same slots and no
frozen ``__setattr__`` (plain attribute stores, which the interpreter specialises to a
direct slot write), then make it the real class by assigning ``__class__``: CPython allows
that between classes of the same layout, and checks the layout on every assignment, so a
class that gains, loses or reorders a slot makes every build fail loudly (``TypeError``)
rather than produce a wrong object. The result is an
ordinary ``PolicyEnv`` or ``Decision`` (``type(x) is Decision``, frozen, equal to what the
constructor makes: ``tests/policy/test_policy_cost.py`` compares them field by field); only
the policy engine's hot path uses these builders.
"""

from __future__ import annotations

from typing import Any, Final

from stageware._host._halt import Decision

from ._attached import Attached
from ._env import PolicyEnv
from ._principal import Principal

__all__ = ["continue_record", "decision_record", "policy_env"]

_new: Final = object.__new__


class _EnvSlots:
    """``PolicyEnv``'s layout without its frozen ``__setattr__``."""

    __slots__ = PolicyEnv.__slots__


class _DecisionSlots:
    """``Decision``'s layout without its frozen ``__setattr__``."""

    __slots__ = Decision.__slots__


def policy_env(
    middleware: Attached,
    run_id: str,
    session_id: str | None,
    agent_name: str,
    attempt: int,
    principal: Principal | None = None,
) -> PolicyEnv:
    """``PolicyEnv(...)`` of a call of *middleware* in this run, with no notes yet."""
    env: Any = _new(_EnvSlots)
    env.run_id = run_id
    env.session_id = session_id
    env.agent_name = agent_name
    env.hook = middleware.point
    env.middleware = middleware.name
    env.band = middleware.band
    env.attempt = attempt
    env.logger = middleware.logger
    env.principal = principal
    env.notes = []
    env.__class__ = PolicyEnv
    built: PolicyEnv = env
    return built


def continue_record(
    middleware: Attached, run_id: str, duration_ms: float, attempt: int, notes: list[str]
) -> Decision:
    """The ``Decision`` of a call of *middleware* that returned a plain ``Continue``, the
    common record: what the middleware's ``Attached`` resolved, and no error."""
    record: Any = _new(_DecisionSlots)
    record.run_id = run_id
    record.hook = middleware.hook
    record.middleware = middleware.name
    record.band = middleware.band_name
    record.outcome = "continue"
    record.reason = None
    record.modified = False
    record.duration_ms = duration_ms
    record.attempt = attempt
    record.error = None
    record.timed_out = False
    record.notes = tuple(notes) if notes else ()
    record.approver = None
    record.__class__ = Decision
    built: Decision = record
    return built


def decision_record(
    run_id: str,
    hook: str,
    middleware: str,
    band: str,
    outcome: str,
    reason: str | None,
    modified: bool,
    duration_ms: float,
    attempt: int,
    error: str | None,
    timed_out: bool,
    notes: tuple[str, ...],
) -> Decision:
    """``Decision(...)`` of a middleware call (one that carries out no approver's answer)."""
    record: Any = _new(_DecisionSlots)
    record.run_id = run_id
    record.hook = hook
    record.middleware = middleware
    record.band = band
    record.outcome = outcome
    record.reason = reason
    record.modified = modified
    record.duration_ms = duration_ms
    record.attempt = attempt
    record.error = error
    record.timed_out = timed_out
    record.notes = notes
    record.approver = None
    record.__class__ = Decision
    built: Decision = record
    return built
