"""Running the middleware of one hook point in order, and recording every decision.

``decide`` calls each middleware in turn and stops at the first outcome other than
``Continue``. A middleware error (a raise, its timeout, a return value that is not an
outcome, an invalid ``modified``, an outcome the hook does not allow) is settled by its
fail mode: ``closed`` makes it a ``Block``, ``open`` a ``Continue`` with the error in the
trace. Cancellation of the run is never an outcome: it passes through.

A middleware whose approval for this step is already answered is not asked again: an
approval lets the sequence go on, a denial blocks. The answer is found by the step
(hook point, middleware, step key), and the step's fingerprint is computed only then: an
answer whose fingerprint is not the step's (the step changed since it was approved)
releases nothing, and the middleware is asked again. Once an answer has released the
step, a later middleware's ``Continue(modified=...)`` is a middleware error: what runs must
be what the approver was shown. An approval nobody answered by its deadline has a timeout
record in the answer's place (``_timeouts``), bound to the step the same way: the step is
then blocked or escalated, as the ``Suspend`` declared.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, final

import anyio
from pydantic import BaseModel

from stageware._generated.policy_points import HookPoint
from stageware._host._halt import Decision
from stageware._host.sessions._encoding import json_problem
from stageware._runtime import Interrupt

from ._approval import ApprovalRecord, fingerprint, interrupt_key, read_record
from ._attached import Attached
from ._entries import PolicyEntry
from ._env import PolicyEnv
from ._modified import ModificationError, check_modified
from ._outcomes import (
    OUTCOME_TYPES,
    Block,
    Continue,
    Outcome,
    Suspend,
    outcome_name,
    outcome_reason,
)
from ._principal import Principal
from ._records import continue_record, decision_record, policy_env
from ._rules import allowed_names, is_allowed
from ._timeouts import TimeoutRecord, read_timeout

if TYPE_CHECKING:
    from stageware._host.tracing._spans import InvocationTrace

__all__ = ["PolicyRun", "Verdict", "decide"]

logger = logging.getLogger("stageware.policy")


@final
@dataclass(eq=False)
class PolicyRun:
    """What the engine keeps for one run (one agent invocation).

    Attributes:
        run_id: The run's id, in every event and record.
        session_id: The agent's session id, if it has one.
        agent_name: The agent's name.
        agent_id: The agent's id, part of every approval's fingerprint.
        decisions: Where the records go: the pass's list, which the result reports.
        retries: Retries taken per (hook point, step key).
        tool_names: Tool names by ``toolUseId``, for ``tool.after``, whose result does not
            carry one.
        trace: The invocation's spans, when it is traced: each record is a span too.
        principal: Who the run acts for, read from ``invocation_state`` when it started.
    """

    run_id: str
    session_id: str | None
    agent_name: str
    agent_id: str
    decisions: list[Decision]
    retries: dict[tuple[HookPoint, str], int] = field(
        default_factory=dict[tuple[HookPoint, str], int]
    )
    tool_names: dict[str, str] = field(default_factory=dict[str, str])
    trace: InvocationTrace | None = None
    principal: Principal | None = None

    def attempt(self, point: HookPoint, step_key: str) -> int:
        """The step's attempt number at *point*: 1, then one more per retry."""
        return self.retries.get((point, step_key), 0) + 1


@final
@dataclass(frozen=True, slots=True)
class Verdict:
    """Where one hook point's sequence ended.

    Attributes:
        event: The event as the last middleware left it (modifications applied).
        modified: Whether any middleware changed it.
        outcome: The first outcome other than ``Continue``, or ``None``.
        entry: The middleware that gave it.
    """

    event: BaseModel
    modified: bool = False
    outcome: Outcome | None = None
    entry: PolicyEntry | None = None


async def decide(
    point: HookPoint,
    event: BaseModel,
    attached: Sequence[Attached],
    run: PolicyRun,
    step_key: str,
    answers: Mapping[str, Sequence[Interrupt]],
    cycle: int,
    position: int,
    check: Callable[[BaseModel], None] | None = None,
) -> Verdict:
    """Run the middleware *attached* at *point* on *event*; see the module docstring.

    A middleware that returns a plain ``Continue`` (or ``None``), the common answer, is
    recorded here; anything else (an outcome to check, an error) goes to ``_conclude``.

    Args:
        answers: The answered policy approvals, by ``interrupt_key`` (id without the
            fingerprint).
        cycle: The agent's interrupt-cycle counter, part of the fingerprint.
        position: The number of messages in the history, part of the fingerprint.
        check: A further check of a modified event (``route.select`` checks that the model
            exists); it raises ``ModificationError`` to refuse.
    """
    modified = False
    approved_by: str | None = None
    # Retries are counted after the sequence, so every middleware sees the same attempt.
    attempt = run.attempt(point, step_key)
    run_id, session_id, agent_name = run.run_id, run.session_id, run.agent_name
    principal = run.principal
    # The wall clock is only read for a span's start: an untraced run has none.
    trace = run.trace
    decisions = run.decisions
    # Read once per hook point, not per call: Continue is logged at DEBUG only.
    log_continue = logger.isEnabledFor(logging.DEBUG)
    for middleware in attached:
        # Only a resumed run has answers: the common pass skips the lookup altogether.
        if answers:
            entry = middleware.entry
            answered = answers.get(interrupt_key(point.value, entry.name, step_key))
            found = (
                None
                if answered is None
                else _bound(
                    answered, point, entry, step_key, event, (run.agent_id, cycle, position)
                )
            )
            if found is not None:
                outcome = _from_answer(point, entry, *found, run)
                if outcome is None:
                    approved_by = entry.name
                    continue
                return Verdict(event, modified, outcome, entry)
        env = policy_env(middleware, run_id, session_id, agent_name, attempt, principal)
        began = 0 if trace is None else time.time_ns()
        started = time.perf_counter()
        failure: str | None = None
        timed_out = False
        returned: object
        try:
            if middleware.limit is None:
                # No timeout, no cancel scope: the run's own cancellation still reaches it.
                returned = await middleware.handler(event, env)
            else:
                returned, timed_out = await _within_limit(middleware, event, env)
                if timed_out:
                    failure = f"timed out after {middleware.limit:g}s"
        except Exception as raised:
            returned, failure = None, f"raised {type(raised).__name__}: {raised}"
        # In ms, to the µs: round() to a whole number is a fraction of round(x, 3)'s cost.
        duration = round((time.perf_counter() - started) * 1e6) / 1000
        if failure is None and (
            returned is None or (type(returned) is Continue and returned.modified is None)
        ):
            notes = env.notes
            record = continue_record(middleware, run_id, duration, attempt, notes)
            # What _record does, inline for the common record.
            if log_continue:
                _log(record)
            decisions.append(record)
            if trace is not None:
                trace.decision(record, began)
            continue
        checked = check if approved_by is None else _unchanged_since(approved_by)
        outcome, changed = _conclude(
            middleware, event, env, returned, failure, timed_out, checked, duration, run, began
        )
        if changed is not None:
            event, modified = changed, True
        if type(outcome) is not Continue:
            return Verdict(event, modified, outcome, middleware.entry)
    return Verdict(event, modified)


async def _within_limit(
    middleware: Attached, event: BaseModel, env: PolicyEnv
) -> tuple[object, bool]:
    """Await the middleware's call within its timeout: what it returned, and whether the
    timeout cut it short (then ``None``)."""
    # A scope of its own, not fail_after: a TimeoutError the middleware raises itself is
    # its error, not its timeout.
    with anyio.move_on_after(middleware.limit):
        return await middleware.handler(event, env), False
    return None, True


def _conclude(
    middleware: Attached,
    event: BaseModel,
    env: PolicyEnv,
    returned: object,
    failure: str | None,
    timed_out: bool,
    check: Callable[[BaseModel], None] | None,
    duration: float,
    run: PolicyRun,
    began: int,
) -> tuple[Outcome, BaseModel | None]:
    """Settle what a middleware returned other than a plain Continue, or its *failure*,
    by its fail mode; record the decision; return the outcome and any modified event."""
    outcome: Outcome = Continue()
    changed: BaseModel | None = None
    error = failure
    if error is None:
        outcome, changed, error = _settle(middleware.point, event, returned, check)
    if error is not None:
        changed = None
        outcome = (
            Block(f"{middleware.name} failed at {middleware.hook} (fail closed): {error}")
            if middleware.fails_to_block
            else Continue()
        )
    record = decision_record(
        run.run_id,
        middleware.hook,
        middleware.name,
        middleware.band_name,
        outcome_name(outcome),
        outcome_reason(outcome),
        changed is not None,
        duration,
        env.attempt,
        error,
        timed_out,
        tuple(env.notes),
    )
    _record(run, record, began)
    return outcome, changed


def _settle(
    point: HookPoint,
    event: BaseModel,
    returned: object,
    check: Callable[[BaseModel], None] | None,
) -> tuple[Outcome, BaseModel | None, str | None]:
    """The outcome a middleware returned, its modified event, or what is wrong with it."""
    if returned is None:
        return Continue(), None, None
    if not isinstance(returned, OUTCOME_TYPES):
        return (
            Continue(),
            None,
            f"returned {type(returned).__name__}, not an outcome (Continue, Block, Suspend, "
            "Escalate, Retry, Guide) or None",
        )
    outcome: Outcome = returned
    if not is_allowed(point, outcome):
        what = type(outcome).__name__
        if isinstance(outcome, Continue):
            what = "Continue(modified=...)"
        return (
            Continue(),
            None,
            f"returned {what}, which {point.value} does not allow "
            f"(allowed: {', '.join(allowed_names(point))})",
        )
    if isinstance(outcome, Suspend) and outcome.details is not None:
        problem = json_problem(dict(outcome.details), "Suspend.details")
        if problem is not None:
            return Continue(), None, f"{problem}; an approval is kept with the session"
    if isinstance(outcome, Continue) and outcome.modified is not None:
        try:
            changed = check_modified(point, event, outcome.modified)
            if check is not None:
                check(changed)
        except ModificationError as problem:
            return Continue(), None, str(problem)
        return outcome, changed, None
    return outcome, None, None


def _unchanged_since(approver: str) -> Callable[[BaseModel], None]:
    """A check that refuses every modification: the step was approved as it stands.

    A middleware after the one whose answer released the step may not change it, or what
    runs is not what the approver was shown. (One before it may: the approval's fingerprint
    covers the step as modified.)
    """

    def refuse(_: BaseModel) -> None:
        raise ModificationError(
            f"modifies a step that {approver} already had approved as shown; a middleware "
            f"that changes a step must come before the one that asks for its approval"
        )

    return refuse


def _bound(
    answered: Sequence[Interrupt],
    point: HookPoint,
    entry: PolicyEntry,
    step_key: str,
    event: BaseModel,
    where: tuple[str, int, int],
) -> tuple[Interrupt, ApprovalRecord | TimeoutRecord] | None:
    """The answer given for this very step (its fingerprint), if one is among *answered*.

    *where* is the agent id, the interrupt cycle and the history's length.
    """
    agent_id, cycle, position = where
    step = fingerprint(point.value, entry.name, step_key, event, cycle, position, agent_id=agent_id)
    for interrupt in answered:
        record: ApprovalRecord | TimeoutRecord | None = read_record(interrupt.response)
        if record is None:
            record = read_timeout(interrupt.response)
        if record is not None and record.fingerprint == step:
            return interrupt, record
    return None


def _from_answer(
    point: HookPoint,
    entry: PolicyEntry,
    answered: Interrupt,
    approval: ApprovalRecord | TimeoutRecord,
    run: PolicyRun,
) -> Outcome | None:
    """What an answered approval means for the step: go on (``None``), a denial's Block,
    or, nobody having answered in time, the Block or Escalate the Suspend declared."""
    if isinstance(approval, TimeoutRecord):
        timed_out = approval.carried_out()
        record = Decision(
            run_id=run.run_id,
            hook=point.value,
            middleware=entry.name,
            band=entry.effective_band.value,
            outcome=outcome_name(timed_out),
            reason=timed_out.reason,
            notes=(f"{answered.id} {approval.describe()}",),
        )
        _record(run, record, time.time_ns())
        return timed_out
    reason = approval.verdict() + (f": {approval.comment}" if approval.comment else "")
    outcome: Outcome | None = None if approval.approved else Block(reason)
    record = Decision(
        run_id=run.run_id,
        hook=point.value,
        middleware=entry.name,
        band=entry.effective_band.value,
        outcome="continue" if outcome is None else "block",
        reason=reason,
        notes=(f"answer to {answered.id}",),
        approver=approval.approver,
    )
    _record(run, record, time.time_ns())
    return outcome


def _record(run: PolicyRun, record: Decision, began: int) -> None:
    """Keep *record* for the result, log it and, in a traced run, make it a span."""
    if logger.isEnabledFor(_level(record)):
        _log(record)
    run.decisions.append(record)
    if run.trace is not None:
        run.trace.decision(record, began)


def _level(record: Decision) -> int:
    """Continue is logged at DEBUG; everything else and every middleware error at WARNING."""
    if record.outcome != "continue" or record.error is not None:
        return logging.WARNING
    return logging.DEBUG


def _log(record: Decision) -> None:
    level = _level(record)
    detail = f": {record.reason}" if record.reason else ""
    error = f" [middleware error: {record.error}]" if record.error else ""
    logger.log(
        level,
        "%s at %s by %s (%s band)%s%s",
        record.outcome,
        record.hook,
        record.middleware,
        record.band,
        detail,
        error,
        extra={"stageware_decision": record},
    )
