"""Sessions: what survives a process restart, and the stores that keep it.

- ``_store``: ``SessionSnapshot``, ``StoredSession`` and ``Lease``, the ``SessionStore``
  protocol, its errors (``SessionTimeoutError`` among them) and the rule every
  conditional write follows (``check_write``).
- ``_encoding``: snapshots as the JSON documents the stores keep (the snapshot without its
  messages, and one document per message), checked both ways; shared by the stores.
- ``_approval_rows``: the approvals ledger (``ApprovalEntry``, ``ApprovalPage``): what a
  store keeps of every policy approval, derived from the interrupt state it saves;
  ``_approval_listing``: its paged listing, checked and ordered alike by every store;
  ``_paging``: the cursors of the paged listings (approvals, escalations).
- ``_escalations``: ``Escalation`` (a run handed to a human queue), its errors and the
  rule of a claim and a resolution; ``_escalation_rows``: escalations as table rows,
  shared by the stores.
- ``_lease_renewer``: one thread per store that renews every lease held on it in this
  process, for as long as any is held.
- ``_memory``: ``MemorySessionStore``.
- ``_sqlite``: ``SQLiteSessionStore``, with ``_sqlite_clash`` (telling its tables from an
  application's of the same names).
- ``_postgres``: ``PostgresSessionStore`` (public as ``stageware.postgres``; it needs the
  ``postgres`` extra, so it is not imported here), with ``_postgres_tables`` (its schema and
  statements), ``_postgres_conninfo`` (naming its database without the password) and
  ``_postgres_deadline`` (a call's client-side time bound).
"""

from ._approval_rows import ApprovalEntry, ApprovalPage, ApprovalStatus
from ._escalations import (
    Escalation,
    EscalationError,
    EscalationPage,
    EscalationStatus,
    SessionEscalatedError,
)
from ._memory import MemorySessionStore
from ._sqlite import SQLiteSessionStore
from ._store import (
    SNAPSHOT_VERSION,
    Lease,
    SessionConflictError,
    SessionError,
    SessionLeasedError,
    SessionSnapshot,
    SessionStore,
    SessionTimeoutError,
    SessionUnfinishedError,
    StoredSession,
)

__all__ = [
    "SNAPSHOT_VERSION",
    "ApprovalEntry",
    "ApprovalPage",
    "ApprovalStatus",
    "Escalation",
    "EscalationError",
    "EscalationPage",
    "EscalationStatus",
    "Lease",
    "MemorySessionStore",
    "SQLiteSessionStore",
    "SessionConflictError",
    "SessionError",
    "SessionEscalatedError",
    "SessionLeasedError",
    "SessionSnapshot",
    "SessionStore",
    "SessionTimeoutError",
    "SessionUnfinishedError",
    "StoredSession",
]
