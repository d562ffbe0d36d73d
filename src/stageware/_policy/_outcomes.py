"""What a policy middleware decides at a hook point: the six outcomes.

An outcome is a plain frozen value; the engine interprets it (``_engine``), and the table
in ``_rules`` says where each one is allowed. A handler that returns ``None`` means
``Continue()``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeAlias, cast, final

from pydantic import BaseModel

from ._durations import parse_timeout

__all__ = [
    "OUTCOME_TYPES",
    "Block",
    "Continue",
    "Escalate",
    "Guide",
    "Outcome",
    "Retry",
    "Suspend",
    "outcome_name",
    "outcome_reason",
]


class _Outcome:
    """Base of the outcomes; not meant to be subclassed outside this module."""

    __slots__ = ()


@final
@dataclass(frozen=True, slots=True)
class Continue(_Outcome):
    """Proceed. With ``modified``, later middleware and the operation see the new payload.

    Attributes:
        modified: The hook's event with the changes applied (``event.model_copy(update=...)``)
            or a mapping of its fields. It is validated against the hook's event model, and
            only the fields the hook lets a policy change may differ (see the policies
            guide's outcome table); anything else is a middleware error.
    """

    modified: BaseModel | Mapping[str, Any] | None = None


@final
@dataclass(frozen=True, slots=True)
class Block(_Outcome):
    """Refuse. The step never executes and the run ends with stop reason ``blocked``.

    Attributes:
        reason: Why, for the trace, the log and the run's result (not shown to the user:
            the user sees the policy's configured blocked message).
    """

    reason: str


@final
@dataclass(frozen=True, slots=True)
class Suspend(_Outcome):
    """Pause the run durably until an approver answers.

    The run ends with stop reason ``interrupt`` and an interrupt whose id is
    ``v2:policy:<hook>:<middleware>:<step key>#<fingerprint>``, bound to what the step
    will do; answered with an ``Approval`` by a verified approver, the step goes ahead
    (approved) or is blocked (denied).

    Attributes:
        reason: What the approver is asked to decide.
        details: JSON data shown to the approver with the reason.
        approvers: Who may answer: approver ids and ``"role:<name>"`` entries; ``None``
            means any approver the authenticator verifies.
        timeout: How long the approval may wait: a ``timedelta``, seconds, or a duration
            string (``"30m"``, ``"2h"``, ``"P2D"``); ``None`` (the default) waits for ever.
            The deadline counts from when the step first suspended, and an answer after
            it is refused.
        on_timeout: What the step becomes when the run is continued after the deadline
            with no answer: a ``Block`` (the default, as a denial) or an ``Escalate``.
    """

    reason: str
    details: Mapping[str, Any] | None = None
    approvers: Collection[str] | None = None
    timeout: timedelta | float | str | None = None
    on_timeout: Block | Escalate | None = None

    def __post_init__(self) -> None:
        # Read now, so that a bad duration fails where the middleware returns it.
        object.__setattr__(self, "timeout", parse_timeout(self.timeout, "Suspend.timeout"))
        on_timeout = cast(object, self.on_timeout)
        if on_timeout is not None and not isinstance(on_timeout, Block | Escalate):
            raise TypeError(
                f"Suspend.on_timeout must be a Block or an Escalate, got {on_timeout!r}"
            )
        if on_timeout is not None and self.timeout is None:
            raise ValueError(
                "Suspend.on_timeout is given without a timeout; say how long the approval "
                "may wait (timeout='2h')"
            )
        given = cast(object, self.approvers)  # untyped callers exist
        if given is None:
            return
        # A bare string would be read letter by letter as approver ids.
        if isinstance(given, str) or not isinstance(given, Collection):
            raise TypeError(
                f"Suspend.approvers must be a collection of approver ids and 'role:<name>' "
                f"entries, got {self.approvers!r}"
            )
        approvers = frozenset(cast(Collection[object], given))
        bad = [a for a in approvers if not isinstance(a, str) or not a.strip()]
        if bad or not approvers:
            raise ValueError(
                "Suspend.approvers must name at least one approver id or 'role:<name>', each a "
                f"non-empty string, got {self.approvers!r}"
            )
        object.__setattr__(self, "approvers", approvers)


@final
@dataclass(frozen=True, slots=True)
class Escalate(_Outcome):
    """Stop the automated path and hand the run to a human queue.

    The run ends with stop reason ``escalated``; an escalation record is written with the
    session, which refuses new prompts until a human resolves it.

    Attributes:
        reason: Why a human must look.
        queue: The queue the escalation goes to.
    """

    reason: str
    queue: str = "default"

    def __post_init__(self) -> None:
        queue = cast(object, self.queue)  # untyped callers exist
        if not isinstance(queue, str) or not queue:
            raise ValueError(f"Escalate needs a queue name, got {self.queue!r}")


@final
@dataclass(frozen=True, slots=True)
class Retry(_Outcome):
    """Redo the step, within the step's retry budget; once it is spent the run is blocked.

    Attributes:
        reason: Why the step is redone.
    """

    reason: str


@final
@dataclass(frozen=True, slots=True)
class Guide(_Outcome):
    """Refuse the step, tell the model why, and let the run go on.

    At ``tool.before`` the tool does not run: the model gets an error result for the call
    that names the policy and carries *feedback*, and decides what to do next. At
    ``model.response`` and ``stream.chunk`` the response is discarded and the model is
    asked again with *feedback* added to that request (not to the history), within the
    step's retry budget, shared with ``Retry``; once it is spent the run is blocked.

    Attributes:
        feedback: What the model is told: why the step was refused and what to do instead.
            The model reads it, so write it for the model, and leave out what it must not
            know.
    """

    feedback: str

    def __post_init__(self) -> None:
        feedback = cast(object, self.feedback)  # untyped callers exist
        if not isinstance(feedback, str) or not feedback.strip():
            raise ValueError(
                f"Guide needs feedback for the model, a non-empty string, got {self.feedback!r}"
            )


Outcome: TypeAlias = Continue | Block | Suspend | Escalate | Retry | Guide
"""Any outcome a policy middleware may return."""

OUTCOME_TYPES: tuple[type[Outcome], ...] = (Continue, Block, Suspend, Escalate, Retry, Guide)
"""The outcome classes, in the order tables list them; for ``isinstance`` checks."""


def outcome_name(outcome: Outcome) -> str:
    """The outcome's name in traces and tables: ``continue``, ``block``, ..."""
    return type(outcome).__name__.lower()


def outcome_reason(outcome: Outcome) -> str | None:
    """What the outcome says, for traces: its ``reason``, or a ``Guide``'s ``feedback``."""
    if isinstance(outcome, Guide):
        return outcome.feedback
    if isinstance(outcome, Continue):
        return None
    return outcome.reason
