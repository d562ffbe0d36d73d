"""Durable approvals: the interrupt a ``Suspend`` raises, the answer it waits for, and the
record that answer becomes once verified.

The interrupt id is ``v2:policy:<hook point>:<middleware>:<step key>#<fingerprint>``. The
step key is the tool call's ``toolUseId`` at tool hooks, ``turn-<n>`` at model hooks and
``run-<n>`` at the run's own hooks, where ``n`` is the number of messages in the history
when the step came up (a suspended step adds none, so the resumed step counts the same).
The fingerprint (16 hex digits in the id, the whole SHA-256 in the interrupt's reason)
binds the id to what the step will do: the agent's id, the hook point, the middleware, the
step key, the hook event as the middleware saw it (without the run id, which changes
between the suspending pass and the resumed one), the agent's interrupt-cycle counter and
the length of the history when the step came up. So a step that only looks like an earlier one (the
same ``run-<n>`` after a denied request, a model reusing ``call_0``, in a later turn of
the same cycle or in a later cycle, or another agent, such as a second sub-agent of one
parent, running the same step) asks under a new id, and an answer given for one step
never releases another. (A suspended step and its resumed pass see the same history: the
tool round or the input waits outside it until the step has run.)

An answer is checked before it is stored (``ApprovalCheck``, which the host's
``InterruptState`` runs on every path that records one): the approver is identified (by
the engine's authenticator for an answer in a prompt, by the operating system for the
command line), must be one the ``Suspend`` allowed, and the answer must be for the step
that waits. The stored response is then the verified record, never the credential. An answer to an
approval whose deadline has passed (``Suspend(timeout=...)``) is refused; the approval is
then resolved by a timeout record instead (``_timeouts``, ``ApprovalCheck.lapsed``).

Interrupts of the earlier ``v1:policy:`` scheme (no fingerprint), found in a session
written before this one, are not released by any answer: the middleware is asked again
and suspends under a ``v2`` id. A ``v2`` approval stored before agent ids were part of the
fingerprint is likewise asked again: its answer is recorded, but its fingerprint is not
the step's now, so it releases nothing and the step suspends under its new id.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Final, cast, final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stageware._generated.policy_events import InputEvent, ToolCallEvent
from stageware._runtime import Interrupt

from ._errors import problem_lines
from ._identity import ApprovalRefused, Approver, may_answer
from ._timeouts import deadline_of, lapsed_record, read_timeout

__all__ = [
    "INTERRUPT_PREFIX",
    "LEGACY_PREFIX",
    "Approval",
    "ApprovalCheck",
    "ApprovalRecord",
    "NotAllowed",
    "ParsedId",
    "fingerprint",
    "interrupt_id",
    "interrupt_key",
    "parse_interrupt_id",
    "read_record",
    "step_summary",
]

INTERRUPT_PREFIX: Final = "v2:policy:"
LEGACY_PREFIX: Final = "v1:policy:"

# Fields of a hook event that differ between the suspending pass and the resumed pass of
# the same step; everything else is what the step does.
_VOLATILE: Final = frozenset({"run_id"})
_SHORT: Final = 16


@final
class Approval(BaseModel):
    """An approver's answer to a suspended step: resume with it as the interrupt's response.

    The approver's identity is not part of it: it comes from the credential, which the
    engine's authenticator verifies (``PolicyEngine(authenticator=...)``). Example:

    ```python
    agent([{"interruptResponse": {
        "interruptId": result.interrupts[0].id,
        "response": {"approved": True, "credential": token, "comment": "ok"},
    }}])
    ```
    """

    # Built on first use, like the hook events: importing the policy layer stays cheap.
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    approved: bool = Field(strict=True)
    """Whether the step may go ahead; ``False`` blocks it."""
    comment: str | None = None
    """Why, if they said."""
    credential: str | None = Field(default=None, min_length=1, repr=False)
    """What proves who answers, for the engine's authenticator; required in a prompt."""


@final
@dataclass(frozen=True, slots=True)
class ParsedId:
    """The parts of a ``v2`` policy interrupt id."""

    hook: str
    middleware: str
    step: str
    short: str

    @property
    def key(self) -> str:
        """The id without its fingerprint: which step of which middleware asks."""
        return interrupt_key(self.hook, self.middleware, self.step)


@final
@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """A verified answer, as the session keeps it (the interrupt's stored response)."""

    approved: bool
    approver: str
    roles: tuple[str, ...]
    via: str
    comment: str | None
    fingerprint: str
    answered_at: str

    def verdict(self) -> str:
        """``denied by ana (os-user)``: what was answered, by whom, verified how."""
        verdict = "approved" if self.approved else "denied"
        return f"{verdict} by {self.approver} ({self.via})"

    def describe(self) -> str:
        """``denied by ana (os-user) at 2026-...``: the verdict and when it was given."""
        return f"{self.verdict()} at {self.answered_at}"

    def to_json(self) -> dict[str, Any]:
        return {
            "approved": self.approved,
            "approver": self.approver,
            "roles": list(self.roles),
            "via": self.via,
            "comment": self.comment,
            "fingerprint": self.fingerprint,
            "answered_at": self.answered_at,
        }


def interrupt_key(hook: str, middleware: str, step_key: str) -> str:
    """The id of a middleware's approval at one step, without the fingerprint."""
    return f"{INTERRUPT_PREFIX}{hook}:{middleware}:{step_key}"


def interrupt_id(hook: str, middleware: str, step_key: str, fingerprint: str) -> str:
    """The id of the approval a middleware asks for at one step, bound to *fingerprint*."""
    return f"{interrupt_key(hook, middleware, step_key)}#{fingerprint[:_SHORT]}"


def parse_interrupt_id(value: str) -> ParsedId | None:
    """The parts of a ``v2`` policy interrupt id, or ``None`` for another id."""
    if not value.startswith(INTERRUPT_PREFIX):
        return None
    key, hash_sign, short = value.rpartition("#")
    parts = key[len(INTERRUPT_PREFIX) :].split(":", 2)
    if not hash_sign or len(parts) != 3 or len(short) != _SHORT:
        return None
    hook, middleware, step = parts
    return ParsedId(hook, middleware, step, short)


def _event_data(event: BaseModel) -> dict[str, Any]:
    return event.model_dump(mode="json", exclude=set(_VOLATILE))


def fingerprint(
    hook: str,
    middleware: str,
    step_key: str,
    event: BaseModel,
    cycle: int,
    position: int,
    *,
    agent_id: str,
) -> str:
    """The SHA-256 (hex) of what a suspended step will do; see the module docstring.

    Args:
        cycle: The agent's interrupt-cycle counter.
        position: The number of messages in the history when the step came up.
        agent_id: The agent whose step it is.
    """
    data = {
        "agent": agent_id,
        "hook": hook,
        "middleware": middleware,
        "step": step_key,
        "event": _event_data(event),
        "cycle": cycle,
        "position": position,
    }
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def step_summary(event: BaseModel) -> dict[str, Any]:
    """What the approver is shown of the step: the tool call, the input, or the request."""
    if isinstance(event, ToolCallEvent):
        return {"tool": event.tool_name, "input": event.input}
    if isinstance(event, InputEvent):
        return {"input": _event_data(event)["messages"]}
    return _event_data(event)


def read_record(response: object) -> ApprovalRecord | None:
    """The verified record stored as an interrupt's response, or ``None`` if it is not one."""
    if not isinstance(response, dict):
        return None
    fields = cast(dict[str, Any], response)
    approved = fields.get("approved")
    if not isinstance(approved, bool):
        # bool("false") is True: only a real bool is an answer (as the ledger reads it).
        return None
    try:
        return ApprovalRecord(
            approved=approved,
            approver=str(fields["approver"]),
            roles=tuple(str(role) for role in fields["roles"]),
            via=str(fields["via"]),
            comment=fields["comment"],
            fingerprint=str(fields["fingerprint"]),
            answered_at=str(fields["answered_at"]),
        )
    except (KeyError, TypeError):
        return None


def _who_may(approvers: Collection[str] | None) -> str:
    return "any verified approver" if approvers is None else ", ".join(sorted(approvers))


def _submitted(interrupt: str, response: Any) -> Approval:
    if isinstance(response, dict) and "approver" in response:
        raise ApprovalRefused(
            f"the answer to policy approval {interrupt!r} names an 'approver'; who answers "
            "is not given in the answer but proven by its 'credential', which the policy's "
            "authenticator verifies"
        )
    try:
        return Approval.model_validate(response)
    except ValidationError as error:
        problems = "; ".join(problem_lines(error, "the answer"))
        raise ApprovalRefused(
            f"the answer to policy approval {interrupt!r} is not an approval: {problems}. "
            "Answer with {'approved': true or false, 'credential': '<from the "
            "authenticator>', 'comment': ...}"
        ) from None


class NotAllowed(ApprovalRefused):
    """The approver is verified, but not one the ``Suspend`` allowed to answer the step."""


Identify = Callable[[str, Approval], Approver]
"""Who gives *answer* to the interrupt: verified, or ``ApprovalRefused``."""


@final
class ApprovalCheck:
    """The host's answer check for policy approvals (``InterruptState.resume``'s checks).

    Args:
        identify: Who answers: the engine's authenticator for answers in a prompt, the
            operating-system account for the command line.
        now: The time an answer is recorded at; for tests.
    """

    __slots__ = ("_identify", "_now")

    def __init__(
        self, identify: Identify, *, now: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self._identify = identify
        self._now = now

    def owns(self, interrupt_id: str) -> bool:
        """Whether *interrupt_id* is a policy approval's (v2, or v1 from an older session)."""
        return interrupt_id.startswith((INTERRUPT_PREFIX, LEGACY_PREFIX))

    def stale(
        self, interrupt_id: str, response: Any, registered: Mapping[str, Interrupt]
    ) -> str | None:
        """Why *interrupt_id*, not registered, is stale: the step now waits under another id.

        The answerer is identified first: what the step would now run is told only to
        someone who may answer it.

        Raises:
            ApprovalRefused: The answer cannot be authenticated, or its approver may not
                answer the step that waits.
        """
        parsed = parse_interrupt_id(interrupt_id)
        if parsed is None:
            return None
        for other in registered.values():
            now = parse_interrupt_id(other.id)
            if now is not None and now.key == parsed.key and not other.answered:
                self._approver(other.id, response, other)
                return (
                    f"policy approval {interrupt_id!r} is stale: that step changed since it "
                    f"was listed, and now waits as {other.id!r}, which would run "
                    f"{json.dumps(_reason_of(other).get('step'), sort_keys=True)}; an answer "
                    "is bound to the step it was given for, so nothing was recorded"
                )
        return None

    def verify(self, interrupt_id: str, response: Any, interrupt: Interrupt) -> Any:
        """The record to store for *response* to *interrupt*.

        Raises:
            ApprovalRefused: The answer is malformed, names its approver, cannot be
                authenticated, comes from someone the ``Suspend`` did not allow, or is for
                another step.
        """
        parsed = parse_interrupt_id(interrupt_id)
        if parsed is None:
            # A v1 approval (no fingerprint): acknowledged, never releasing the step; the
            # middleware is asked again and suspends under a v2 id.
            return {"superseded": "asked again under a v2 id"}
        answer, approver = self._approver(interrupt_id, response, interrupt)
        reason = _reason_of(interrupt)
        bound = reason.get("fingerprint")
        if not isinstance(bound, str) or not bound.startswith(parsed.short):
            raise ApprovalRefused(
                f"policy approval {interrupt_id!r} is not bound to the step that waits under "
                "it (its fingerprint differs); nothing was recorded"
            )
        deadline = deadline_of(reason)
        now = self._now()
        # Answered already (in time, or by its timeout), finality decides; else the clock.
        if not interrupt.answered and deadline is not None and now >= deadline:
            raise ApprovalRefused(
                f"policy approval {interrupt_id!r} could be answered until "
                f"{deadline.isoformat(timespec='seconds')}, and it is now "
                f"{now.isoformat(timespec='seconds')}; nothing was recorded. When the run "
                "is continued, the step is resolved as the policy declared for a timeout "
                f"({_on_timeout(reason)})"
            )
        return ApprovalRecord(
            approved=answer.approved,
            approver=approver.id,
            roles=tuple(sorted(approver.roles)),
            via=approver.via,
            comment=answer.comment,
            fingerprint=bound,
            answered_at=now.isoformat(timespec="seconds"),
        ).to_json()

    def lapsed(self, interrupt: Interrupt) -> Any:
        """The timeout record to store for *interrupt*, unanswered and past its deadline,
        or ``None`` (no deadline, or not yet)."""
        if parse_interrupt_id(interrupt.id) is None:
            return None
        record = lapsed_record(_reason_of(interrupt), self._now())
        return None if record is None else record.to_json()

    def _approver(
        self, interrupt_id: str, response: Any, interrupt: Interrupt
    ) -> tuple[Approval, Approver]:
        """The answer, and its approver once identified and found allowed by *interrupt*."""
        answer = _submitted(interrupt_id, response)
        approver = self._identify(interrupt_id, answer)
        approvers = _approvers_of(_reason_of(interrupt))
        if not may_answer(approver, approvers):
            roles = ", ".join(sorted(approver.roles)) or "none"
            raise NotAllowed(
                f"{approver.id} (roles: {roles}; via {approver.via}) may not answer policy "
                f"approval {interrupt.id!r}; it may be answered by: {_who_may(approvers)}"
            )
        return answer, approver

    def decision(self, record: Any) -> object:
        """What finality compares: whether the step was approved, or that it timed out."""
        verified = read_record(record)
        if verified is not None:
            return verified.approved
        return "timed out" if read_timeout(record) is not None else record

    def describe(self, record: Any) -> str:
        """Who answered what, and when, for the refusal of a different answer."""
        verified = read_record(record)
        if verified is not None:
            return verified.describe()
        timed_out = read_timeout(record)
        return f"answered {record!r}" if timed_out is None else timed_out.describe()


def _reason_of(interrupt: Interrupt) -> dict[str, Any]:
    reason = interrupt.reason
    return reason if isinstance(reason, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _on_timeout(reason: Mapping[str, Any]) -> str:
    then = reason.get("on_timeout")
    return str(cast(dict[str, Any], then).get("outcome")) if isinstance(then, dict) else "block"


def _approvers_of(reason: Mapping[str, Any]) -> frozenset[str] | None:
    approvers = reason.get("approvers")
    return None if approvers is None else frozenset(str(a) for a in approvers)
