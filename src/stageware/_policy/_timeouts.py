"""Approvals that may wait only so long: a ``Suspend``'s deadline and what it becomes after.

A ``Suspend(timeout=...)`` puts two fields in its interrupt's reason, next to the step and
its fingerprint: ``deadline`` (UTC, ISO 8601, counted from when the step first suspended;
asking again for the same step keeps it) and ``on_timeout`` (``{"outcome": "block" |
"escalate", "reason": ..., "queue": ...}``). The approver sees both.

The clock is read at two places only, both in ``ApprovalCheck``:

- an answer recorded after the deadline is refused (nothing is stored);
- a run continued after the deadline (``agent()`` with no prompt, or a resume that answers
  other interrupts) stores, for each unanswered approval past its deadline, a timeout
  record in the answer's place: ``{"timed_out": true, "outcome", "reason", "queue",
  "deadline", "fingerprint", "recorded_at"}``. Like an approver's answer it is final and
  bound to the step's fingerprint, so it resolves that step and no other; the policy
  engine then carries it out as the ``Block`` or ``Escalate`` it names.

Nothing runs on a timer: a run nobody continues stays suspended, and an application (or
``stageware.dbos``, which waits durably until the earliest deadline) continues it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast, final

from ._outcomes import Block, Escalate, Suspend

__all__ = ["TimeoutRecord", "deadline_fields", "deadline_of", "lapsed_record", "read_timeout"]


@final
@dataclass(frozen=True, slots=True)
class TimeoutRecord:
    """What an approval that nobody answered in time became, as the session keeps it."""

    outcome: str
    reason: str
    queue: str
    deadline: str
    fingerprint: str
    recorded_at: str

    def carried_out(self) -> Block | Escalate:
        """The outcome the policy declared for the timeout."""
        if self.outcome == "escalate":
            return Escalate(self.reason, queue=self.queue)
        return Block(self.reason)

    def describe(self) -> str:
        """``timed out at <deadline> (block)``: for a refusal of a later answer."""
        return f"timed out at {self.deadline} ({self.outcome})"

    def to_json(self) -> dict[str, Any]:
        return {
            "timed_out": True,
            "outcome": self.outcome,
            "reason": self.reason,
            "queue": self.queue,
            "deadline": self.deadline,
            "fingerprint": self.fingerprint,
            "recorded_at": self.recorded_at,
        }


def deadline_fields(
    outcome: Suspend, now: datetime, earlier: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The ``deadline`` and ``on_timeout`` of a suspending step's reason, or nothing.

    *earlier* is the reason of the same step's interrupt when it is asked again (a resume
    that answered others): its deadline stands, so asking again never extends the wait.
    """
    limit = outcome.timeout
    if not isinstance(limit, timedelta):  # None: waits for ever (__post_init__ parsed it)
        return {}
    kept = None if earlier is None else earlier.get("deadline")
    deadline = kept if isinstance(kept, str) else (now + limit).isoformat()
    on_timeout = outcome.on_timeout
    if isinstance(on_timeout, Escalate):
        then: dict[str, Any] = {
            "outcome": "escalate",
            "reason": on_timeout.reason,
            "queue": on_timeout.queue,
        }
    else:
        reason = (
            on_timeout.reason
            if on_timeout is not None
            else f"approval timed out: nobody answered {outcome.reason!r} by {deadline}"
        )
        then = {"outcome": "block", "reason": reason, "queue": ""}
    return {"deadline": deadline, "on_timeout": then}


def deadline_of(reason: Mapping[str, Any]) -> datetime | None:
    """The deadline a policy interrupt's reason carries, or ``None`` (no timeout)."""
    value = reason.get("deadline")
    if not isinstance(value, str):
        return None
    try:
        deadline = datetime.fromisoformat(value)
    except ValueError:
        # A reason the policy layer wrote always parses; one edited by hand waits for ever
        # rather than block a step on a date nobody can read.
        return None
    return deadline if deadline.tzinfo is not None else deadline.replace(tzinfo=UTC)


def lapsed_record(reason: Mapping[str, Any], now: datetime) -> TimeoutRecord | None:
    """The timeout record of an unanswered approval whose deadline is past at *now*."""
    deadline = deadline_of(reason)
    fingerprint = reason.get("fingerprint")
    if deadline is None or now < deadline or not isinstance(fingerprint, str):
        return None
    then = reason.get("on_timeout")
    declared = cast(dict[str, Any], then) if isinstance(then, dict) else {}
    outcome = "escalate" if declared.get("outcome") == "escalate" else "block"
    return TimeoutRecord(
        outcome=outcome,
        reason=str(declared.get("reason") or f"approval timed out at {reason['deadline']}"),
        queue=str(declared.get("queue") or "default") if outcome == "escalate" else "",
        deadline=str(reason["deadline"]),
        fingerprint=fingerprint,
        recorded_at=now.isoformat(timespec="seconds"),
    )


def read_timeout(response: object) -> TimeoutRecord | None:
    """The timeout record stored as an interrupt's response, or ``None`` if it is not one."""
    if not isinstance(response, dict):
        return None
    fields = cast(dict[str, Any], response)
    if fields.get("timed_out") is not True:
        return None
    try:
        return TimeoutRecord(
            outcome=str(fields["outcome"]),
            reason=str(fields["reason"]),
            queue=str(fields["queue"]),
            deadline=str(fields["deadline"]),
            fingerprint=str(fields["fingerprint"]),
            recorded_at=str(fields["recorded_at"]),
        )
    except KeyError:
        return None
