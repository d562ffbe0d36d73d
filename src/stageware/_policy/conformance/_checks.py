"""One call of a middleware, and everything the suite checks about it.

The middleware gets its own copy of the event; the pristine one is what its copy is
compared with (the mutation check) and what a ``modified`` payload is validated against,
so that a middleware that both mutates its event and returns it does not validate against
itself.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast, final

import anyio
from pydantic import BaseModel

from stageware._generated.policy_points import HookPoint
from stageware._host.sessions._encoding import json_problem
from stageware._policy._declare import Handler
from stageware._policy._env import PolicyEnv
from stageware._policy._modified import ModificationError, check_modified
from stageware._policy._outcomes import (
    OUTCOME_TYPES,
    Continue,
    Guide,
    Outcome,
    Suspend,
)
from stageware._policy._rules import allowed_names, is_allowed

from ._failures import Check, ConformanceFailure, event_json

__all__ = ["Call", "check_call"]

_MISSING = object()


@final
@dataclass(frozen=True, slots=True)
class Call:
    """What to call and how long it may take.

    Attributes:
        middleware: The middleware's name, for the failures.
        handler: The built middleware.
        point: The hook point.
        limit: Seconds one call may take.
        limit_text: How to name the limit in a message ("its 2s timeout").
    """

    middleware: str
    handler: Handler
    point: HookPoint
    limit: float
    limit_text: str


async def check_call(call: Call, pristine: BaseModel, env: PolicyEnv) -> list[ConformanceFailure]:
    """Call the middleware once with a copy of *pristine* and *env*; return what was wrong."""
    report = _Report(call, pristine)
    event = pristine.model_copy(deep=True)
    started = time.monotonic()
    returned: object = None
    try:
        # A scope of its own, not fail_after: a TimeoutError the middleware raises itself
        # is a crash, not its timeout (as the engine judges it).
        with anyio.move_on_after(call.limit) as scope:
            returned = await call.handler(event, env)
        if scope.cancelled_caught:
            report.fail(Check.TIMEOUT, f"did not return within {call.limit_text}")
            return report.failures
    except Exception as error:
        report.fail(Check.CRASH, f"raised {type(error).__name__}: {error}")
        _check_mutation(report, event)
        return report.failures
    # A middleware that blocks the event loop (time.sleep) cannot be cancelled, and one
    # that swallows the cancellation returns normally: the clock catches both.
    elapsed = time.monotonic() - started
    if elapsed > call.limit:
        report.fail(Check.TIMEOUT, f"took {elapsed:.2f}s, over {call.limit_text}")
    _check_mutation(report, event)
    _check_outcome(report, returned)
    return report.failures


class _Report:
    """The failures of one call, each naming the event as it was before the call."""

    def __init__(self, call: Call, pristine: BaseModel) -> None:
        self.call = call
        self.pristine = pristine
        self.failures: list[ConformanceFailure] = []

    def fail(self, check: Check, message: str) -> None:
        self.failures.append(
            ConformanceFailure(
                self.call.middleware, self.call.point, check, message, event_json(self.pristine)
            )
        )


def _check_mutation(report: _Report, event: BaseModel) -> None:
    pristine = report.pristine
    # vars() too: a field set through object.__setattr__ or a new attribute is a change.
    names = dict.fromkeys([*type(pristine).model_fields, *vars(pristine), *vars(event)])
    changed = [
        name
        for name in names
        if getattr(event, name, _MISSING) != getattr(pristine, name, _MISSING)
    ]
    if changed:
        report.fail(
            Check.MUTATION,
            f"changed its input event in place ({', '.join(changed)}); build a new one "
            "with event.model_copy(update=...) and return Continue(modified=...) instead",
        )


def _check_outcome(report: _Report, returned: object) -> None:
    point = report.call.point
    if returned is None:
        return
    if not isinstance(returned, OUTCOME_TYPES):
        report.fail(
            Check.OUTCOME,
            f"returned {_short_repr(returned)} (a {type(returned).__name__}), which is not an "
            "outcome: return None, Continue(), Block(...), Suspend(...), Escalate(...), "
            "Retry(...) or Guide(...)",
        )
        return
    if not is_allowed(point, returned):
        if isinstance(returned, Continue):
            message = (
                f"returned Continue(modified=...), but {point} lets a policy change nothing; "
                "return Continue() or None"
            )
        else:
            message = (
                f"returned {type(returned).__name__}, which {point} does not allow "
                f"(allowed there: {', '.join(allowed_names(point))})"
            )
        report.fail(Check.OUTCOME, message)
        return
    problem = _field_problem(returned)
    if problem is not None:
        report.fail(Check.OUTCOME, f"returned {type(returned).__name__} with {problem}")
        return
    if isinstance(returned, Continue) and returned.modified is not None:
        try:
            check_modified(point, report.pristine, returned.modified)
        except ModificationError as error:
            report.fail(Check.MODIFIED, f"returned an invalid Continue(modified=...): {error}")


def _field_problem(outcome: Outcome) -> str | None:
    """What is wrong with the outcome's own fields: they reach traces, logs and the store.

    They are typed, but nothing stops a caller passing anything else.
    """
    if isinstance(outcome, Continue):
        return None
    if isinstance(outcome, Guide):
        if _blank(outcome.feedback):
            return f"feedback {outcome.feedback!r}; give a non-empty string, the model reads it"
        return None
    if _blank(outcome.reason):
        return f"reason {outcome.reason!r}; give a non-empty string, it is logged and traced"
    if isinstance(outcome, Suspend) and outcome.details is not None:
        return _json_problem(outcome.details)
    return None


def _blank(text: object) -> bool:
    return not isinstance(text, str) or not text.strip()


def _json_problem(details: object) -> str | None:
    if not isinstance(details, Mapping):
        return f"details of type {type(details).__name__}; give a mapping"
    # The check the engine makes, and the session store after it.
    problem = json_problem(dict(cast("Mapping[str, object]", details)), "Suspend.details")
    if problem is None:
        return None
    return f"details that are not JSON data ({problem}); an approval is kept with the session"


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."
