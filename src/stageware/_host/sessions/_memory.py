"""``MemorySessionStore``: sessions kept in this process, for tests and short-lived agents.

A session is kept as the database stores keep it: the encoded snapshot without its
messages, and a list of encoded messages that a save cuts back to the messages it keeps
and extends with the ones it brings, in place, so that a save copies only the new turn.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, final

from ._approval_listing import query
from ._approval_rows import (
    ApprovalEntry,
    ApprovalListing,
    ApprovalPage,
    ApprovalRow,
    entry_from_row,
    observe,
    settle,
)
from ._encoding import decode_snapshot, encode_snapshot
from ._escalation_rows import (
    EscalationRow,
    check_escalation_id,
    escalation_query,
    from_row,
    to_row,
)
from ._escalations import (
    Escalation,
    EscalationPage,
    EscalationStatus,
    already_escalated,
    check_claim,
    check_listing,
    check_new,
    check_resolution,
    claim,
    duplicate,
    resolve,
    unknown,
)
from ._store import (
    Lease,
    SessionSnapshot,
    StoredSession,
    check_kept,
    check_renewal,
    check_session_id,
    check_write,
)

__all__ = ["MemorySessionStore"]

_WHERE: Final = "the memory store"


@final
@dataclass(frozen=True, slots=True)
class _Record:
    document: str
    # Changed in place by saves, under the store's lock, and never handed out.
    messages: list[str]
    version: int
    lease: Lease | None


@final
class MemorySessionStore:
    """A ``SessionStore`` that keeps sessions in this process.

    It holds the encoded JSON rather than the caller's objects, so a snapshot is copied on
    the way in and out (later changes by the caller never reach the store, nor the other
    way round) and the same values are refused as by the database stores. Versions and
    leases follow the same rule too: swapping one store for another does not change what
    an agent may save, or when. Escalations are kept as the rows a database store writes,
    in the order they were recorded.
    """

    __slots__ = ("_approvals", "_escalations", "_lock", "_records")

    def __init__(self) -> None:
        self._records: dict[str, _Record] = {}
        self._escalations: dict[str, EscalationRow] = {}
        # The approvals ledger: by session, then interrupt id.
        self._approvals: dict[str, dict[str, ApprovalRow]] = {}
        # Each save reads, checks and writes; the lock makes that one step.
        self._lock = threading.Lock()

    def load(self, session_id: str) -> StoredSession | None:
        """Return a fresh copy of the session saved as *session_id*, or ``None``."""
        check_session_id(session_id, _WHERE)
        with self._lock:
            record = self._records.get(session_id)
            if record is None:
                return None
            # Strings are immutable, so a copy of the list is a snapshot of the history.
            messages = list(enumerate(record.messages))
        snapshot = decode_snapshot(record.document, messages, len(messages), session_id, _WHERE)
        return StoredSession(snapshot=snapshot, version=record.version, lease=record.lease)

    def save(
        self,
        session_id: str,
        snapshot: SessionSnapshot,
        *,
        expected_version: int,
        owner: str,
        lease_seconds: float | None,
        escalation: Escalation | None = None,
        kept_messages: int = 0,
    ) -> int:
        """Store a copy of *snapshot* if the session is still at *expected_version*.

        The history keeps the first *kept_messages* stored messages. With *escalation*,
        record it too, in the same step.
        """
        check_session_id(session_id, _WHERE)
        check_kept(session_id, _WHERE, kept_messages=kept_messages, found_messages=None)
        encoded = encode_snapshot(snapshot, session_id, _WHERE, first_message=kept_messages)
        what = f"save session {session_id!r} in {_WHERE}"
        observed = observe(snapshot["interrupt_state"])
        row: EscalationRow | None = None
        if escalation is not None:
            check_new(escalation, session_id, what)
            row = to_row(escalation, what)
        with self._lock:
            now = datetime.now(UTC)
            record = self._check(session_id, expected_version, owner, now)
            messages = [] if record is None else record.messages
            check_kept(
                session_id, _WHERE, kept_messages=kept_messages, found_messages=len(messages)
            )
            if row is not None:
                pending = self._pending(session_id)
                if pending is not None:
                    raise already_escalated(pending, what)
                if row[0] in self._escalations:
                    raise duplicate(row[0], what)
                self._escalations[row[0]] = row
            # Every check has passed: from here on nothing raises, so nothing is half done.
            del messages[kept_messages:]
            messages.extend(encoded.messages)
            lease = _lease(owner, lease_seconds, now)
            if observed or session_id in self._approvals:
                settle(self._approvals.setdefault(session_id, {}), session_id, observed, now)
            self._records[session_id] = _Record(
                encoded.document, messages, expected_version + 1, lease
            )
        return expected_version + 1

    def renew(self, session_id: str, *, version: int, owner: str, lease_seconds: float) -> None:
        """Extend *owner*'s lease on *session_id*."""
        check_session_id(session_id, _WHERE)
        check_renewal(version)
        with self._lock:
            now = datetime.now(UTC)
            record = self._check(session_id, version, owner, now)
            assert record is not None  # check_write refuses a missing session at version > 0
            self._records[session_id] = _Record(
                record.document, record.messages, version, _lease(owner, lease_seconds, now)
            )

    def delete(self, session_id: str) -> None:
        """Forget *session_id* and its escalations, if it was saved."""
        check_session_id(session_id, _WHERE)
        with self._lock:
            self._records.pop(session_id, None)
            self._approvals.pop(session_id, None)
            self._escalations = {
                key: row
                for key, row in self._escalations.items()
                if from_row(row, _WHERE).session_id != session_id
            }

    def session_ids(self) -> list[str]:
        """The ids of every stored session, sorted."""
        with self._lock:
            return sorted(self._records)

    def open_escalation(self, session_id: str) -> Escalation | None:
        """The session's unresolved escalation, or ``None``."""
        check_session_id(session_id, _WHERE)
        with self._lock:
            return self._pending(session_id)

    def escalation(self, escalation_id: str) -> Escalation | None:
        """The escalation *escalation_id*, or ``None``."""
        check_escalation_id(escalation_id, _WHERE)
        with self._lock:
            row = self._escalations.get(escalation_id)
        return None if row is None else from_row(row, _WHERE)

    def escalations(
        self, queue: str | None = None, *, status: EscalationStatus | None = None
    ) -> list[Escalation]:
        """The escalations in *queue* with *status*, oldest first."""
        check_listing(queue, status)
        with self._lock:
            rows = list(self._escalations.values())
        found = [from_row(row, _WHERE) for row in rows]
        return sorted(
            (e for e in found if queue in (None, e.queue) and status in (None, e.status)),
            key=lambda e: (e.created_at, e.id),
        )

    def escalation_page(
        self,
        queue: str | None = None,
        *,
        status: EscalationStatus | None = None,
        created_before: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
        newest_first: bool = False,
    ) -> EscalationPage:
        """One page of the escalations in *queue* with *status*, oldest or newest first."""
        paging = escalation_query(
            queue,
            status=status,
            created_before=created_before,
            limit=limit,
            after=after,
            newest_first=newest_first,
        )
        return paging.page(self.escalations(queue, status=status))

    def approvals(
        self,
        *,
        status: ApprovalListing = "pending",
        hook: str | None = None,
        middleware: str | None = None,
        session_id: str | None = None,
        asked_before: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> ApprovalPage:
        """One page of the approvals ledger."""
        listing = query(
            status=status,
            hook=hook,
            middleware=middleware,
            session_id=session_id,
            asked_before=asked_before,
            limit=limit,
            after=after,
        )
        with self._lock:
            rows = [row for rows in self._approvals.values() for row in rows.values()]
        return listing.page(entry_from_row(row, _WHERE) for row in rows)

    def approval(self, session_id: str, interrupt_id: str) -> ApprovalEntry | None:
        """The ledger's entry for one approval, or ``None``."""
        check_session_id(session_id, _WHERE)
        with self._lock:
            row = self._approvals.get(session_id, {}).get(interrupt_id)
        return None if row is None else entry_from_row(row, _WHERE)

    def claim_escalation(self, escalation_id: str, *, by: str) -> Escalation:
        """Mark an open escalation as taken by *by*."""
        check_claim(escalation_id, by)
        with self._lock:
            current = self._escalation(escalation_id, "claim")
            claimed = claim(current, by=by, now=datetime.now(UTC), where=_WHERE)
            self._escalations[escalation_id] = to_row(
                claimed, f"claim escalation {escalation_id!r}"
            )
        return claimed

    def resolve_escalation(
        self,
        escalation_id: str,
        *,
        by: str,
        resolution: str,
        comment: str | None = None,
        take_over: bool = False,
    ) -> Escalation:
        """Resolve an open or claimed escalation."""
        check_resolution(escalation_id, by, resolution, comment)
        with self._lock:
            current = self._escalation(escalation_id, "resolve")
            resolved = resolve(
                current,
                by=by,
                resolution=resolution,
                comment=comment,
                take_over=take_over,
                now=datetime.now(UTC),
                where=_WHERE,
            )
            self._escalations[escalation_id] = to_row(
                resolved, f"resolve escalation {escalation_id!r}"
            )
        return resolved

    def _escalation(self, escalation_id: str, verb: str) -> Escalation:
        row = self._escalations.get(escalation_id)
        if row is None:
            raise unknown(escalation_id, verb, _WHERE)
        return from_row(row, _WHERE)

    def _pending(self, session_id: str) -> Escalation | None:
        for row in self._escalations.values():
            escalation = from_row(row, _WHERE)
            if escalation.session_id == session_id and escalation.unresolved:
                return escalation
        return None

    def _check(self, session_id: str, version: int, owner: str, now: datetime) -> _Record | None:
        record = self._records.get(session_id)
        check_write(
            session_id,
            _WHERE,
            expected_version=version,
            owner=owner,
            found_version=0 if record is None else record.version,
            found_lease=None if record is None else record.lease,
            now=now,
        )
        return record

    def __repr__(self) -> str:
        with self._lock:
            count = len(self._records)
        return f"MemorySessionStore(<{count} sessions>)"


def _lease(owner: str, lease_seconds: float | None, now: datetime) -> Lease | None:
    if lease_seconds is None:
        return None
    return Lease(owner=owner, expires_at=now + timedelta(seconds=lease_seconds))
