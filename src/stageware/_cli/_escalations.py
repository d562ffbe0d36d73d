"""``stageware policy escalations``: the escalations in a store; claim one, resolve one.

Listing shows the escalations of the statuses asked for (the command's default: open and
claimed, those still holding their session), oldest first. Claims and resolutions go
through the store's own ``claim_escalation`` and ``resolve_escalation``, so the command
refuses exactly what the API refuses, with the same message.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final, TextIO

from stageware._host.sessions import Escalation, EscalationStatus, SessionStore
from stageware._host.sessions._escalations import ESCALATION_STATUSES

from ._table import age, cell, render

__all__ = ["claim", "list_escalations", "resolve"]

_REASON_WIDTH: Final = 60

_HEADERS: Final = ("ID", "QUEUE", "SESSION", "HOOK", "MIDDLEWARE", "REASON", "AGE", "STATUS")


def list_escalations(
    store: SessionStore,
    out: TextIO,
    *,
    queue: str | None,
    statuses: Sequence[EscalationStatus],
) -> None:
    """Print the escalations in *queue* (any if ``None``) with one of *statuses*."""
    if set(statuses) == set(ESCALATION_STATUSES):
        found = store.escalations(queue)
    else:
        found = sorted(
            (e for status in statuses for e in store.escalations(queue, status=status)),
            key=lambda e: (e.created_at, e.id),
        )
    if not found:
        which = " or ".join(statuses)
        where = "" if queue is None else f" in queue {cell(queue)!r}"
        out.write(f"no {which} escalations{where}\n")
        return
    now = datetime.now(UTC)
    rows = [
        (
            e.id,
            cell(e.queue),
            cell(e.session_id),
            cell(e.hook),
            cell(e.middleware),
            cell(e.reason, _REASON_WIDTH),
            age(e.created_at, now),
            _status(e),
        )
        for e in found
    ]
    out.write(render(_HEADERS, rows))


def claim(store: SessionStore, out: TextIO, escalation_id: str, *, by: str) -> None:
    """Claim the escalation for *by*, and say so."""
    escalation = store.claim_escalation(escalation_id, by=by)
    out.write(
        f"claimed escalation {escalation.id} (queue {cell(escalation.queue)!r}, session "
        f"{cell(escalation.session_id)!r}) for {cell(by)!r}\n"
    )


def resolve(
    store: SessionStore,
    out: TextIO,
    escalation_id: str,
    *,
    by: str,
    resolution: str,
    comment: str | None,
    take_over: bool,
) -> None:
    """Resolve the escalation as *by*, and say that its session takes prompts again."""
    escalation = store.resolve_escalation(
        escalation_id, by=by, resolution=resolution, comment=comment, take_over=take_over
    )
    out.write(
        f"resolved escalation {escalation.id} as {cell(by)!r}: {cell(resolution)}; session "
        f"{cell(escalation.session_id)!r} takes prompts again\n"
    )


def _status(escalation: Escalation) -> str:
    if escalation.status == "claimed":
        return f"claimed by {cell(escalation.claimed_by or '')}"
    if escalation.status == "resolved":
        return f"resolved by {cell(escalation.resolved_by or '')}"
    return "open"
