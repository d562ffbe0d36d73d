"""What a durable run returns: a small, frozen, JSON-able record of the request's end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, final

__all__ = ["DurableResult"]


@final
@dataclass(frozen=True, slots=True)
class DurableResult:
    """How one request (a prompt, or answers to a pending interrupt) to a durable agent ended.

    It is the workflow's result, kept by DBOS: ``DBOS.retrieve_workflow(workflow_id)``
    hands it back later, from any process. The conversation itself is in the session
    store.

    Attributes:
        session_id: The session the request ran on.
        workflow_id: The request's DBOS workflow id
            (``stageware:<kind>:<session id>:<unique part>``).
        stop_reason: The last invocation's stop reason (``end_turn``, ``interrupt``,
            ``blocked``, ``escalated``, ...), or ``"error"`` when it raised.
        text: The text of the last invocation's final message (empty when it raised).
        error: ``"<exception type>: <message>"`` when the invocation raised (a model
            error, a session refused: ``SessionLeasedError`` while another run holds the
            session, ...); ``None`` otherwise.
        interrupts: The ids of the interrupts the run waits for when ``stop_reason`` is
            ``interrupt`` (with ``wait_for_approvals=False``, or after a wait that ended
            with some unanswered).
        escalation_id: The escalation recorded when ``stop_reason`` is ``escalated``
            (``None`` when it is not known: a run recovered after its final save).
    """

    session_id: str
    workflow_id: str
    stop_reason: str
    text: str
    error: str | None = None
    interrupts: tuple[str, ...] = field(default=())
    escalation_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON data."""
        return {
            "session_id": self.session_id,
            "workflow_id": self.workflow_id,
            "stop_reason": self.stop_reason,
            "text": self.text,
            "error": self.error,
            "interrupts": list(self.interrupts),
            "escalation_id": self.escalation_id,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DurableResult:
        """The result ``to_dict`` made *data* from."""
        return cls(
            session_id=data["session_id"],
            workflow_id=data["workflow_id"],
            stop_reason=data["stop_reason"],
            text=data["text"],
            error=data["error"],
            interrupts=tuple(data["interrupts"]),
            escalation_id=data["escalation_id"],
        )
