"""Building the two objects every policy middleware call makes: its ``PolicyEnv`` and its
``Decision`` record.

Both are frozen dataclasses, and a frozen dataclass's ``__init__`` sets each field
through ``object.__setattr__``, looking the attribute up on every field of every call:
with 50 middleware that is most of what a call costs. These builders set the slots
through their descriptors, looked up once, here. The objects are the very ones the
constructors make (``tests/policy/test_policy_cost.py`` compares them field by field, and
fails when either class gains a field these do not set); only the policy engine's hot
path uses them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from stageware._generated.policy_points import Band, HookPoint
from stageware._host._halt import Decision

from ._env import PolicyEnv

__all__ = ["decision_record", "policy_env"]

_new: Final = object.__new__


def _setters(cls: type, *names: str) -> tuple[Callable[[Any, Any], None], ...]:
    return tuple(cls.__dict__[name].__set__ for name in names)


(
    _env_run_id,
    _env_session_id,
    _env_agent_name,
    _env_hook,
    _env_middleware,
    _env_band,
    _env_attempt,
    _env_logger,
    _env_notes,
) = _setters(
    PolicyEnv,
    "run_id",
    "session_id",
    "agent_name",
    "hook",
    "middleware",
    "band",
    "attempt",
    "logger",
    "notes",
)


def policy_env(
    run_id: str,
    session_id: str | None,
    agent_name: str,
    hook: HookPoint,
    middleware: str,
    band: Band,
    attempt: int,
    logger: logging.Logger,
) -> PolicyEnv:
    """``PolicyEnv(...)`` with these fields and no notes yet."""
    env: PolicyEnv = _new(PolicyEnv)
    _env_run_id(env, run_id)
    _env_session_id(env, session_id)
    _env_agent_name(env, agent_name)
    _env_hook(env, hook)
    _env_middleware(env, middleware)
    _env_band(env, band)
    _env_attempt(env, attempt)
    _env_logger(env, logger)
    _env_notes(env, [])
    return env


(
    _run_id,
    _hook,
    _middleware,
    _band,
    _outcome,
    _reason,
    _modified,
    _duration_ms,
    _attempt,
    _error,
    _timed_out,
    _notes,
    _approver,
) = _setters(
    Decision,
    "run_id",
    "hook",
    "middleware",
    "band",
    "outcome",
    "reason",
    "modified",
    "duration_ms",
    "attempt",
    "error",
    "timed_out",
    "notes",
    "approver",
)


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
    record: Decision = _new(Decision)
    _run_id(record, run_id)
    _hook(record, hook)
    _middleware(record, middleware)
    _band(record, band)
    _outcome(record, outcome)
    _reason(record, reason)
    _modified(record, modified)
    _duration_ms(record, duration_ms)
    _attempt(record, attempt)
    _error(record, error)
    _timed_out(record, timed_out)
    _notes(record, notes)
    _approver(record, None)
    return record
