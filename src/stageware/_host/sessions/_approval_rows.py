"""The approvals ledger: every policy approval a session asked for, and what became of it.

A policy ``Suspend`` stops a run on an interrupt whose id starts with ``v2:policy:``; the
answer, once verified, is stored as that interrupt's response, and the whole interrupt
leaves the session's interrupt state when its cycle ends. The ledger is what a store keeps
of those interrupts beyond that: one entry per (session, interrupt id), written by
``save()`` in the same transaction as the snapshot, derived from
``snapshot["interrupt_state"]``, and read back in pages (``SessionStore.approvals``) so
that a console lists thousands of pending approvals without loading a session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, final

__all__ = [
    "APPROVAL_STATUSES",
    "ApprovalEntry",
    "ApprovalListing",
    "ApprovalPage",
    "ApprovalStatus",
]

ApprovalStatus = Literal["pending", "approved", "denied", "lapsed"]

ApprovalListing = ApprovalStatus | Literal["answered"] | None
"""What ``SessionStore.approvals`` filters on: a status, ``"answered"`` (approved, denied
or lapsed) or ``None`` (any)."""

APPROVAL_STATUSES: Final[tuple[ApprovalStatus, ...]] = ("pending", "approved", "denied", "lapsed")
"""Every status; an entry moves from ``pending`` to one of the other three, once."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalEntry:
    """A policy approval (an interrupt whose id starts with ``v2:policy:``) as a store's
    ledger keeps it.

    Attributes:
        session_id: The session whose run asked.
        interrupt_id: The interrupt's id, ``v2:policy:<hook>:<middleware>:<step>#<16 hex>``.
        hook: The hook point where the middleware suspended (``"tool.before"``), from the id.
        middleware: The name of the middleware that suspended, from the id.
        reason: The interrupt's reason as the ``Suspend`` wrote it (``reason``,
            ``details``, ``step``, ``approvers``, ``deadline``, ``on_timeout``,
            ``fingerprint``...), JSON data.
        asked_at: When the first save that held it pending was made (UTC, store's clock).
        status: ``pending`` until answered; ``approved`` or ``denied`` by a verified
            approver; ``lapsed`` when it timed out, or left the session unanswered.
        answered_by: The verified approver's id, for ``approved`` and ``denied``.
        roles: The approver's roles, as verified.
        via: How the approver was verified (``"os-user"``, an authenticator's name).
        comment: What the approver said, if anything.
        answered_at: When it was answered, timed out or left the session (UTC).
    """

    session_id: str
    interrupt_id: str
    hook: str
    middleware: str
    reason: Mapping[str, Any]
    asked_at: datetime
    status: ApprovalStatus
    answered_by: str | None = None
    roles: tuple[str, ...] = ()
    via: str | None = None
    comment: str | None = None
    answered_at: datetime | None = None


@final
@dataclass(frozen=True, slots=True)
class ApprovalPage:
    """One page of ``SessionStore.approvals``.

    Attributes:
        entries: At most the ``limit`` asked for, in the listing's order.
        total: How many entries match the filters, over all pages.
        next_cursor: Pass as ``after`` for the next page; ``None`` on the last page. Opaque.
    """

    entries: list[ApprovalEntry]
    total: int
    next_cursor: str | None
