"""A ``SessionStore`` in an SQLite file, shared by the threads and processes of one machine.

The store keeps to its own five tables, so the file may belong to another application:

* ``stageware_sessions``: one row per session, with its version, its JSON document (the
  snapshot without its messages: see ``_encoding``), how many messages it has and the
  lease of the worker running it.
* ``stageware_messages``: one row per message of a session, keyed by the session and the
  message's position in its history. A save deletes the rows after the messages it keeps
  and inserts the ones it brings, so appending a turn writes the turn, not the history.
* ``stageware_escalations``: one row per escalation (see ``_escalations``), written in the
  transaction of the session's save that recorded it.
* ``stageware_approvals``: the approvals ledger (see ``_approval_rows``), one row per
  policy approval a session asked for, kept by the saves; ``stageware_sessions`` flags
  the sessions with a pending one (``approvals_pending``), so that a save of a session
  with none, bringing none, does not touch it.
* ``stageware_store_format``: one row, the table layout this file holds. It is the store's
  own version marker; the file's ``user_version`` pragma belongs to whoever owns the file.

A table of one of those names that is not the store's is refused when the store opens
(``_sqlite_clash``). A file the store creates is put in WAL mode, which lets readers and
one writer work side by side; a file that already held other tables keeps the journal
mode its owner chose. Each write runs in one ``BEGIN IMMEDIATE`` transaction: read the
version and lease, check them (``check_write``), write.

What a call costs. Calls arrive on worker threads, and an SQLite connection serves one
thread at a time, so the store keeps its open connections in a small pool: a call takes
one, or opens one if none is idle, and gives it back. A kept connection keeps its prepared
statements (the ``sqlite3`` module's statement cache) and the settings made once when it
opened, and the file is not closed after every call, which in WAL mode would checkpoint
the log and sync the file each time. A kept connection is used only while the file at the
path is the one it opened (same device and inode): one deleted or replaced meanwhile is
opened anew, so a call never writes into a file no one else can see.

On a file in WAL mode, a connection commits with ``synchronous=NORMAL`` unless the store
was made with ``synchronous="full"``: a commit is in the log, in the operating system's
hands, when it returns, so a process killed at any point (``kill -9``) loses nothing
committed; only a power cut or an operating-system crash may lose the last commits (never
leaving a torn one), since the log is synced at checkpoints, not at each commit. ``FULL``
syncs the log at each commit, which made an invocation with the store cost 4.1 to 4.9
times one without (against 2.8 to 3.0 with ``NORMAL``). A file in another journal mode
keeps SQLite's default (``FULL``), which ``NORMAL`` would make unsafe there.
A process forked from one that used the store does not use the parent's connections.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Literal, TypeVar, final

from . import _lease_renewer
from ._approval_listing import Query, query
from ._approval_rows import (
    ANSWERED,
    APPROVAL_COLUMNS,
    ApprovalEntry,
    ApprovalListing,
    ApprovalPage,
    ApprovalRow,
    Observed,
    entry_from_row,
    observe,
    observe_document,
)
from ._encoding import decode_snapshot, encode_snapshot, split_document
from ._escalation_rows import (
    COLUMNS,
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
from ._sqlite_clash import clash
from ._store import (
    Lease,
    SessionError,
    SessionSnapshot,
    StoredSession,
    check_kept,
    check_renewal,
    check_session_id,
    check_write,
)

__all__ = ["SQLiteSessionStore", "approval_statements"]

_T = TypeVar("_T")

_FORMAT: Final = 5
"""The table layout this module writes, kept in ``stageware_store_format``.

Format 1 (stageware 0.x before versioned sessions) had no version or lease columns and
marked the file through ``user_version``; format 2 had no escalations; format 3 kept each
session's whole snapshot, messages included, in its one document; format 4 had no
approvals ledger. All are migrated in place on first use, one format after the other.
"""

_APPROVAL_TABLES: Final = (
    """
    CREATE TABLE stageware_approvals (
        session_id TEXT NOT NULL,
        interrupt_id TEXT NOT NULL,
        hook TEXT NOT NULL,
        middleware TEXT NOT NULL,
        reason TEXT NOT NULL,
        asked_at TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'lapsed')),
        answered_by TEXT,
        roles TEXT NOT NULL,
        via TEXT,
        comment TEXT,
        answered_at TEXT,
        PRIMARY KEY (session_id, interrupt_id)
    )
    """,
    # Each listing's order, so that a page is an index seek and a count an index scan:
    # by status oldest asked first (pending), by answer newest first (answered), and
    # newest asked first (any status).
    "CREATE INDEX stageware_approvals_by_status "
    "ON stageware_approvals (status, asked_at, session_id, interrupt_id)",
    "CREATE INDEX stageware_approvals_by_answer "
    "ON stageware_approvals (answered_at, session_id, interrupt_id) "
    "WHERE answered_at IS NOT NULL",
    "CREATE INDEX stageware_approvals_by_age "
    "ON stageware_approvals (asked_at, session_id, interrupt_id)",
)

_ESCALATION_TABLES: Final = (
    """
    CREATE TABLE stageware_escalations (
        escalation_id TEXT PRIMARY KEY NOT NULL,
        session_id TEXT NOT NULL,
        queue TEXT NOT NULL,
        hook TEXT NOT NULL,
        middleware TEXT NOT NULL,
        reason TEXT NOT NULL,
        event TEXT NOT NULL,
        created_at TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('open', 'claimed', 'resolved')),
        claimed_by TEXT,
        claimed_at TEXT,
        resolved_by TEXT,
        resolved_at TEXT,
        resolution TEXT,
        comment TEXT
    )
    """,
    # A queue's list, oldest first, without a sort.
    "CREATE INDEX stageware_escalations_by_queue "
    "ON stageware_escalations (queue, status, created_at)",
    # A session's escalations, for delete; the index below holds only unresolved ones.
    "CREATE INDEX stageware_escalations_by_session ON stageware_escalations (session_id)",
    # One unresolved escalation per session, and the agent's lookup before every claim.
    "CREATE UNIQUE INDEX stageware_escalations_unresolved "
    "ON stageware_escalations (session_id) WHERE status <> 'resolved'",
)

# A rowid table with the key as its index, not WITHOUT ROWID: a message row often holds
# a tool result of kilobytes, which SQLite's guidance keeps out of WITHOUT ROWID tables.
_MESSAGE_TABLE: Final = """
    CREATE TABLE stageware_messages (
        session_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        document TEXT NOT NULL,
        PRIMARY KEY (session_id, position)
    )
    """

_CREATE: Final = (
    """
    CREATE TABLE stageware_sessions (
        session_id TEXT PRIMARY KEY NOT NULL,
        version INTEGER NOT NULL,
        document TEXT NOT NULL,
        lease_owner TEXT,
        lease_expires_at TEXT,
        updated_at TEXT NOT NULL,
        message_count INTEGER NOT NULL,
        approvals_pending INTEGER NOT NULL DEFAULT 0
    )
    """,
    _MESSAGE_TABLE,
    *_ESCALATION_TABLES,
    *_APPROVAL_TABLES,
    "CREATE TABLE stageware_store_format (format INTEGER NOT NULL)",
    f"INSERT INTO stageware_store_format (format) VALUES ({_FORMAT})",
)

_MIGRATE_FROM_1: Final = (
    "ALTER TABLE stageware_sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 1",
    "ALTER TABLE stageware_sessions ADD COLUMN lease_owner TEXT",
    "ALTER TABLE stageware_sessions ADD COLUMN lease_expires_at TEXT",
    "CREATE TABLE stageware_store_format (format INTEGER NOT NULL)",
    "INSERT INTO stageware_store_format (format) VALUES (2)",
    # Format 1 set the pragma; it is the file owner's again.
    "PRAGMA user_version = 0",
)

_MIGRATE_FROM_2: Final = (
    *_ESCALATION_TABLES,
    "UPDATE stageware_store_format SET format = 3",
)

# Then each session's document is split into its rows (_migrate_from_3).
_MIGRATE_FROM_3: Final = (
    "ALTER TABLE stageware_sessions ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0",
    _MESSAGE_TABLE,
)

# Then each session's pending approvals are entered in the ledger (_migrate_from_4).
_MIGRATE_FROM_4: Final = (
    "ALTER TABLE stageware_sessions ADD COLUMN approvals_pending INTEGER NOT NULL DEFAULT 0",
    *_APPROVAL_TABLES,
)

_SELECT: Final = """
SELECT version, document, lease_owner, lease_expires_at, message_count, approvals_pending
FROM stageware_sessions WHERE session_id = ?
"""

_APPROVAL_COLUMNS: Final = ", ".join(APPROVAL_COLUMNS)

_SELECT_APPROVALS: Final = f"SELECT {_APPROVAL_COLUMNS} FROM stageware_approvals"

# An approval is entered once; an answer changes a pending entry, never an answered one.
_UPSERT_APPROVAL: Final = (
    f"INSERT INTO stageware_approvals ({_APPROVAL_COLUMNS}) "
    f"VALUES ({', '.join('?' * len(APPROVAL_COLUMNS))}) "
    "ON CONFLICT (session_id, interrupt_id) DO UPDATE SET status = excluded.status, "
    "answered_by = excluded.answered_by, roles = excluded.roles, via = excluded.via, "
    "comment = excluded.comment, answered_at = excluded.answered_at "
    "WHERE stageware_approvals.status = 'pending' AND excluded.status <> 'pending'"
)

_LAPSE_APPROVAL: Final = (
    "UPDATE stageware_approvals SET status = 'lapsed', answered_at = ? "
    "WHERE session_id = ? AND interrupt_id = ? AND status = 'pending'"
)

_SELECT_MESSAGES: Final = (
    "SELECT position, document FROM stageware_messages WHERE session_id = ? ORDER BY position"
)

_INSERT_MESSAGE: Final = (
    "INSERT INTO stageware_messages (session_id, position, document) VALUES (?, ?, ?)"
)

# The messages after those a save keeps.
_DELETE_MESSAGES: Final = "DELETE FROM stageware_messages WHERE session_id = ? AND position >= ?"

_ESCALATION_COLUMNS: Final = ", ".join(COLUMNS)

_INSERT_ESCALATION: Final = (
    f"INSERT INTO stageware_escalations ({_ESCALATION_COLUMNS}) "
    f"VALUES ({', '.join('?' * len(COLUMNS))})"
)

_SELECT_ESCALATIONS: Final = f"SELECT {_ESCALATION_COLUMNS} FROM stageware_escalations"

_UPDATE_ESCALATION: Final = (
    "UPDATE stageware_escalations SET status = ?, claimed_by = ?, claimed_at = ?, "
    "resolved_by = ?, resolved_at = ?, resolution = ?, comment = ? WHERE escalation_id = ?"
)

_Row = tuple[int, object, str | None, str | None, int, int]

_IDLE_CONNECTIONS: Final = 4
"""Open connections a store keeps for its next calls; more are closed when given back."""

_Pooled = tuple[sqlite3.Connection, tuple[int, int] | None]
"""A connection and the file it opened (``_file_id``; ``None``: the path was missing)."""


def _file_id(path: Path) -> tuple[int, int] | None:
    """The device and inode of the file at *path*, or ``None`` if there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


@final
class SQLiteSessionStore:
    """A ``SessionStore`` backed by an SQLite database file.

    The file and the store's tables are created on first use. A save is one transaction,
    so a crash leaves either the old snapshot or the new one, never half of one. The store
    is thread-safe, and several processes on one machine may share a file (not over a
    network file system, where SQLite's locks do not hold: use ``PostgresSessionStore``).

    Args:
        path: The database file. A relative path is resolved against the current
            directory now, so a later ``chdir`` does not move the store.
        timeout: Seconds to wait for another connection's lock before giving up with a
            ``SessionError``.
        synchronous: ``"normal"`` (the default): on a file in WAL mode, a save is in the
            operating system's hands when it returns; it survives the process being
            killed, but a power cut or an operating-system crash may lose the last saves.
            ``"full"``: a save is on the disk when it returns, and survives a power cut;
            each save then waits for the disk (about 1.6 times the cost of a save). A file
            in another journal mode always commits with ``FULL``.
    """

    __slots__ = (
        "_forked_from",
        "_idle",
        "_lock",
        "_path",
        "_pid",
        "_ready",
        "_synchronous",
        "_timeout",
    )

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 10.0,
        synchronous: Literal["full", "normal"] = "normal",
    ) -> None:
        raw = os.fspath(path)
        # Every call opens a new connection, and each one would see its own empty
        # in-memory database.
        if raw in ("", ":memory:"):
            raise ValueError(
                f"SQLiteSessionStore needs a database file, not {raw!r}; "
                "use MemorySessionStore for sessions kept in memory"
            )
        if synchronous not in ("full", "normal"):
            raise ValueError(
                f"SQLiteSessionStore: synchronous must be 'full' or 'normal', not {synchronous!r}"
            )
        self._path = Path(os.path.abspath(raw))
        self._timeout = timeout
        self._synchronous: Final = synchronous
        self._lock = threading.Lock()
        self._ready = False
        # Open connections no call is using, and the process they belong to.
        self._idle: list[_Pooled] = []
        self._pid = os.getpid()
        # The connections a forked child found idle: its parent's, never used nor closed
        # here (closing them would act on the parent's open file).
        self._forked_from: list[_Pooled] = []

    @property
    def path(self) -> Path:
        """The absolute path of the database file."""
        return self._path

    def load(self, session_id: str) -> StoredSession | None:
        """Return the session saved as *session_id*, or ``None`` if there is none."""

        def read(connection: sqlite3.Connection) -> tuple[_Row, list[tuple[object, object]]] | None:
            # One read transaction: the record and its messages are of one save.
            row = _read(connection, session_id)
            if row is None:
                return None
            messages: list[tuple[object, object]] = connection.execute(
                _SELECT_MESSAGES, (session_id,)
            ).fetchall()
            return row, messages

        found = self._run_session(session_id, "load", read, write=False)
        if found is None:
            return None
        (version, document, owner, expires, count, _), messages = found
        snapshot = decode_snapshot(document, messages, count, session_id, str(self._path))
        return StoredSession(snapshot=snapshot, version=version, lease=_lease(owner, expires))

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
        """Store *snapshot* if the session is still at *expected_version*, in one transaction.

        The rows of the first *kept_messages* messages stay; the rest are replaced by
        *snapshot*'s messages. With *escalation*, its row is inserted in the same
        transaction.
        """
        check_session_id(session_id, str(self._path))
        # A count that is no count would otherwise fail in the sum below, as a TypeError.
        check_kept(session_id, str(self._path), kept_messages=kept_messages, found_messages=None)
        # Encode before touching the database: a value that is not JSON data fails here
        # and leaves the stored session as it was.
        encoded = encode_snapshot(
            snapshot, session_id, str(self._path), first_message=kept_messages
        )
        count = kept_messages + len(encoded.messages)
        what = f"save session {session_id!r} in {self._path}"
        observed = observe(snapshot["interrupt_state"])
        waiting = int(any(o.status == "pending" for o in observed))
        escalation_row: EscalationRow | None = None
        if escalation is not None:
            check_new(escalation, session_id, what)
            escalation_row = to_row(escalation, what)
        version = expected_version + 1

        def write(connection: sqlite3.Connection) -> None:
            now = datetime.now(UTC)
            row = self._check(connection, session_id, expected_version, owner, now)
            check_kept(
                session_id,
                str(self._path),
                kept_messages=kept_messages,
                found_messages=0 if row is None else row[4],
            )
            lease_owner, expires = _lease_columns(owner, lease_seconds, now)
            stamp = now.isoformat(timespec="milliseconds")
            connection.execute(_DELETE_MESSAGES, (session_id, kept_messages))
            connection.executemany(
                _INSERT_MESSAGE,
                (
                    (session_id, position, message)
                    for position, message in enumerate(encoded.messages, kept_messages)
                ),
            )
            if expected_version == 0:
                connection.execute(
                    "INSERT INTO stageware_sessions (session_id, version, document, "
                    "lease_owner, lease_expires_at, updated_at, message_count, "
                    "approvals_pending) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session_id,
                        version,
                        encoded.document,
                        lease_owner,
                        expires,
                        stamp,
                        count,
                        waiting,
                    ),
                )
            else:
                connection.execute(
                    "UPDATE stageware_sessions SET version = ?, document = ?, lease_owner = ?, "
                    "lease_expires_at = ?, updated_at = ?, message_count = ?, "
                    "approvals_pending = ? WHERE session_id = ?",
                    (
                        version,
                        encoded.document,
                        lease_owner,
                        expires,
                        stamp,
                        count,
                        waiting,
                        session_id,
                    ),
                )
            if observed or (row is not None and row[5]):
                _settle(connection, session_id, observed, now)
            if escalation_row is not None:
                # Checked first for messages that name the escalation in the way; the
                # unique indexes would refuse the insert anyway. Raised after the session's
                # write, the error rolls that back with the transaction.
                pending = _pending(connection, session_id, str(self._path))
                if pending is not None:
                    raise already_escalated(pending, what)
                if connection.execute(
                    "SELECT 1 FROM stageware_escalations WHERE escalation_id = ?",
                    (escalation_row[0],),
                ).fetchone():
                    raise duplicate(escalation_row[0], what)
                connection.execute(_INSERT_ESCALATION, _sqlite_values(escalation_row))

        self._run_session(session_id, "save", write, write=True)
        return version

    def renew(self, session_id: str, *, version: int, owner: str, lease_seconds: float) -> None:
        """Extend *owner*'s lease on *session_id*, leaving its snapshot and version alone."""
        check_renewal(version)

        def write(connection: sqlite3.Connection) -> None:
            now = datetime.now(UTC)
            self._check(connection, session_id, version, owner, now)
            lease_owner, expires = _lease_columns(owner, lease_seconds, now)
            connection.execute(
                "UPDATE stageware_sessions SET lease_owner = ?, lease_expires_at = ? "
                "WHERE session_id = ?",
                (lease_owner, expires, session_id),
            )

        self._run_session(session_id, "renew the lease of", write, write=True)

    def delete(self, session_id: str) -> None:
        """Forget *session_id*, its escalations and its approvals; a session that does not
        exist is fine."""

        def remove(connection: sqlite3.Connection) -> None:
            connection.execute("DELETE FROM stageware_sessions WHERE session_id = ?", (session_id,))
            connection.execute(_DELETE_MESSAGES, (session_id, 0))
            connection.execute(
                "DELETE FROM stageware_escalations WHERE session_id = ?", (session_id,)
            )
            connection.execute(
                "DELETE FROM stageware_approvals WHERE session_id = ?", (session_id,)
            )

        self._run_session(session_id, "delete", remove, write=True)

    def session_ids(self) -> list[str]:
        """The ids of every stored session, sorted (SQLite's binary order is code points')."""

        def read(connection: sqlite3.Connection) -> list[str]:
            rows: list[tuple[str]] = connection.execute(
                "SELECT session_id FROM stageware_sessions ORDER BY session_id"
            ).fetchall()
            return [session_id for (session_id,) in rows]

        return self._run("list the sessions", read, write=False)

    def open_escalation(self, session_id: str) -> Escalation | None:
        """The session's unresolved escalation, or ``None``."""
        return self._run_session(
            session_id,
            "look up the escalation of",
            lambda c: _pending(c, session_id, str(self._path)),
            write=False,
        )

    def escalation(self, escalation_id: str) -> Escalation | None:
        """The escalation *escalation_id*, or ``None``."""
        check_escalation_id(escalation_id, str(self._path))

        def read(connection: sqlite3.Connection) -> tuple[object, ...] | None:
            row: tuple[object, ...] | None = connection.execute(
                f"{_SELECT_ESCALATIONS} WHERE escalation_id = ?", (escalation_id,)
            ).fetchone()
            return row

        row = self._run(f"look up escalation {escalation_id!r}", read, write=False)
        return None if row is None else from_row(row, str(self._path))

    def escalations(
        self, queue: str | None = None, *, status: EscalationStatus | None = None
    ) -> list[Escalation]:
        """The escalations in *queue* with *status*, oldest first."""
        check_listing(queue, status)
        conditions: list[str] = []
        params: list[str] = []
        for column, value in (("queue", queue), ("status", status)):
            if value is not None:
                conditions.append(f"{column} = ?")
                params.append(value)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        statement = f"{_SELECT_ESCALATIONS}{where} ORDER BY created_at, escalation_id"

        def read(connection: sqlite3.Connection) -> list[tuple[object, ...]]:
            rows: list[tuple[object, ...]] = connection.execute(statement, params).fetchall()
            return rows

        rows = self._run("list escalations", read, write=False)
        return [from_row(row, str(self._path)) for row in rows]

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
        conditions: list[str] = []
        params: list[object] = []
        for column, value in (("queue", paging.queue), ("status", paging.status)):
            if value is not None:
                conditions.append(f"{column} = ?")
                params.append(value)
        if paging.created_before is not None:
            conditions.append("created_at < ?")
            params.append(_sqlite_time(paging.created_before))
        where = " AND ".join(conditions) or "1"
        seek = where
        seek_params = list(params)
        # The newest first walks the same index backwards.
        past, order = ("<", " DESC") if paging.newest_first else (">", "")
        if paging.after is not None:
            seek = f"{where} AND (created_at, escalation_id) {past} (?, ?)"
            seek_params += [_sqlite_time(paging.after[0]), paging.after[1]]
        ordered = f"ORDER BY created_at{order}, escalation_id{order}"

        def read(connection: sqlite3.Connection) -> tuple[list[tuple[object, ...]], int]:
            rows: list[tuple[object, ...]] = connection.execute(
                f"{_SELECT_ESCALATIONS} WHERE {seek} {ordered} LIMIT ?",
                (*seek_params, paging.limit + 1),
            ).fetchall()
            (total,) = connection.execute(
                f"SELECT count(*) FROM stageware_escalations WHERE {where}", params
            ).fetchone()
            return rows, total

        rows, total = self._run("list escalations", read, write=False)
        return paging.finish([from_row(row, str(self._path)) for row in rows], total=total)

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
        page, page_params, count, params = approval_statements(listing)

        def read(connection: sqlite3.Connection) -> tuple[list[tuple[object, ...]], int]:
            rows: list[tuple[object, ...]] = connection.execute(page, page_params).fetchall()
            (total,) = connection.execute(count, params).fetchone()
            return rows, total

        rows, total = self._run("list approvals", read, write=False)
        return listing.finish([entry_from_row(row, str(self._path)) for row in rows], total=total)

    def approval(self, session_id: str, interrupt_id: str) -> ApprovalEntry | None:
        """The ledger's entry for one approval, or ``None``."""

        def read(connection: sqlite3.Connection) -> tuple[object, ...] | None:
            row: tuple[object, ...] | None = connection.execute(
                f"{_SELECT_APPROVALS} WHERE session_id = ? AND interrupt_id = ?",
                (session_id, interrupt_id),
            ).fetchone()
            return row

        row = self._run_session(session_id, "look up an approval of", read, write=False)
        return None if row is None else entry_from_row(row, str(self._path))

    def claim_escalation(self, escalation_id: str, *, by: str) -> Escalation:
        """Mark an open escalation as taken by *by*, in one transaction."""
        check_claim(escalation_id, by)

        def write(connection: sqlite3.Connection) -> Escalation:
            current = self._escalation(connection, escalation_id, "claim")
            claimed = claim(current, by=by, now=datetime.now(UTC), where=str(self._path))
            if claimed is not current:
                self._update(connection, claimed, "claim")
            return claimed

        return self._run(f"claim escalation {escalation_id!r}", write, write=True)

    def resolve_escalation(
        self,
        escalation_id: str,
        *,
        by: str,
        resolution: str,
        comment: str | None = None,
        take_over: bool = False,
    ) -> Escalation:
        """Resolve an open or claimed escalation, in one transaction."""
        check_resolution(escalation_id, by, resolution, comment)

        def write(connection: sqlite3.Connection) -> Escalation:
            current = self._escalation(connection, escalation_id, "resolve")
            resolved = resolve(
                current,
                by=by,
                resolution=resolution,
                comment=comment,
                take_over=take_over,
                now=datetime.now(UTC),
                where=str(self._path),
            )
            self._update(connection, resolved, "resolve")
            return resolved

        return self._run(f"resolve escalation {escalation_id!r}", write, write=True)

    def close(self) -> None:
        """Stop renewing the leases held on the store, and close its idle connections.

        The store stays usable: a later call opens a connection again. Calls under way
        keep theirs until they finish; a connection given back after this is kept. An
        invocation still running on the store keeps running, but its lease is no longer
        renewed: close a store once its agents are done.
        """
        _lease_renewer.stop(self)
        with self._lock:
            idle, self._idle = self._idle, []
        for connection, _ in idle:
            connection.close()

    def __enter__(self) -> SQLiteSessionStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self._path)!r})"

    # --- Transactions -----------------------------------------------------------------

    def _check(
        self,
        connection: sqlite3.Connection,
        session_id: str,
        expected_version: int,
        owner: str,
        now: datetime,
    ) -> _Row | None:
        row = _read(connection, session_id)
        check_write(
            session_id,
            str(self._path),
            expected_version=expected_version,
            owner=owner,
            found_version=0 if row is None else row[0],
            found_lease=None if row is None else _lease(row[2], row[3]),
            now=now,
        )
        return row

    def _escalation(
        self, connection: sqlite3.Connection, escalation_id: str, verb: str
    ) -> Escalation:
        row: tuple[object, ...] | None = connection.execute(
            f"{_SELECT_ESCALATIONS} WHERE escalation_id = ?", (escalation_id,)
        ).fetchone()
        if row is None:
            raise unknown(escalation_id, verb, str(self._path))
        return from_row(row, str(self._path))

    def _update(self, connection: sqlite3.Connection, escalation: Escalation, verb: str) -> None:
        row = _sqlite_values(to_row(escalation, f"{verb} escalation {escalation.id!r}"))
        # The columns a claim or a resolution may change, as COLUMNS orders them.
        connection.execute(_UPDATE_ESCALATION, (*row[8:], escalation.id))

    def _run_session(
        self,
        session_id: str,
        verb: str,
        action: Callable[[sqlite3.Connection], _T],
        *,
        write: bool,
    ) -> _T:
        """``_run`` for a call on one session, whose id is checked first."""
        check_session_id(session_id, str(self._path))
        return self._run(f"{verb} session {session_id!r}", action, write=write)

    def _run(self, what: str, action: Callable[[sqlite3.Connection], _T], *, write: bool) -> _T:
        """Run *action* in one transaction on a fresh connection.

        *what* says what the call does, for messages (``"load session 's1'"``). Any
        ``sqlite3`` failure becomes a ``SessionError`` that names it and the file.
        """
        self._ensure_tables(what)
        connection, file = self._take(what)
        try:
            # IMMEDIATE takes the write lock up front, so a writer waits (up to the
            # timeout) at BEGIN instead of failing halfway through with SQLITE_BUSY, and
            # no other writer can slip in between the check and the write.
            connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            # Checked in every transaction, not only once: a newer stageware in another
            # process may have migrated the file since this store first opened it.
            self._check_format(connection, what)
            result = action(connection)
            connection.execute("COMMIT")
        except BaseException as exc:
            # Closing with a transaction still open rolls it back; a connection whose
            # call failed is not trusted with another.
            connection.close()
            if isinstance(exc, sqlite3.Error):
                raise self._failure(what, exc) from exc
            raise
        self._give_back((connection, file))
        return result

    def _take(self, what: str) -> _Pooled:
        """An idle connection of this process to the file now at the path, or a new one."""
        with self._lock:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._forked_from += self._idle
                self._idle = []
            idle = self._idle.pop() if self._idle else None
        if idle is not None:
            if idle[1] is not None and idle[1] == _file_id(self._path):
                return idle
            # The file was deleted or replaced since this connection opened it, which
            # would keep reading and writing the old one: open the path anew, as a store
            # that opened a connection per call did (a missing file is then created empty,
            # and the call fails on its missing tables).
            idle[0].close()
        # Read before opening: a file replaced in between costs a needless reopen later,
        # never a connection kept on a file that is no longer at the path.
        file = _file_id(self._path)
        connection = self._connect(what)
        try:
            mode: tuple[str] = connection.execute("PRAGMA journal_mode").fetchone()
            # FULL is SQLite's default; NORMAL is safe only in WAL mode.
            if self._synchronous == "normal" and mode[0].lower() == "wal":
                connection.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            connection.close()
            raise self._failure(what, exc) from exc
        return connection, file

    def _give_back(self, pooled: _Pooled) -> None:
        with self._lock:
            if self._pid == os.getpid() and len(self._idle) < _IDLE_CONNECTIONS:
                self._idle.append(pooled)
                return
        pooled[0].close()

    # --- The file and its tables ------------------------------------------------------

    def _ensure_tables(self, what: str) -> None:
        """Create (or migrate) the store's tables on this store's first use."""
        with self._lock:
            if self._ready:
                return
            connection = self._connect(what)
            try:
                if not _table_names(connection):
                    # A new, empty file is the store's own: WAL suits many workers. A file
                    # with other tables keeps the journal mode its owner chose.
                    self._use_wal(connection)
                connection.execute("BEGIN IMMEDIATE")
                self._refuse_a_clash(connection, what)
                tables = _table_names(connection)
                if "stageware_store_format" in tables:
                    self._migrate(connection)
                elif "stageware_sessions" in tables:
                    self._migrate_from_1(connection, what)
                    self._migrate(connection)
                else:
                    for statement in _CREATE:
                        connection.execute(statement)
                self._check_format(connection, what)
                connection.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._failure(what, exc) from exc
            finally:
                connection.close()
            self._ready = True

    def _refuse_a_clash(self, connection: sqlite3.Connection, what: str) -> None:
        found = clash(connection)
        if found is not None:
            table, problem = found
            raise SessionError(
                f"cannot {what}: {self._path} has a table named {table} that is not the "
                f"session store's ({problem}). The store keeps to its stageware_* tables: "
                "give it a file of its own, or drop or rename that table"
            )

    def _migrate_from_1(self, connection: sqlite3.Connection, what: str) -> None:
        found: tuple[int] = connection.execute("PRAGMA user_version").fetchone()
        if found[0] != 1:
            raise SessionError(
                f"cannot {what}: {self._path} has a table named "
                "stageware_sessions that this stageware did not write (no "
                "stageware_store_format table, user_version "
                f"{found[0]}); use another file"
            )
        for statement in _MIGRATE_FROM_1:
            connection.execute(statement)

    @staticmethod
    def _migrate(connection: sqlite3.Connection) -> None:
        """Bring a file at format 2 to 4 to ``_FORMAT``; any other format is left alone."""
        row: tuple[object] | None = connection.execute(
            "SELECT format FROM stageware_store_format"
        ).fetchone()
        found = None if row is None else row[0]
        if found == 2:
            for statement in _MIGRATE_FROM_2:
                connection.execute(statement)
            found = 3
        if found == 3:
            _migrate_from_3(connection)
            found = 4
        if found == 4:
            _migrate_from_4(connection)

    def _use_wal(self, connection: sqlite3.Connection) -> None:
        """Put the file in WAL mode; the mode is the file's, so this is needed once."""
        mode: tuple[str] = connection.execute("PRAGMA journal_mode").fetchone()
        if mode[0].lower() == "wal":
            return
        # Switching needs an exclusive lock. When two connections switch a new file at once,
        # SQLite fails one of them with SQLITE_BUSY straight away rather than let both wait
        # on each other, so retry, with waits from 1 ms doubling up to 50 ms, until the
        # timeout. Imported here: tenacity costs more to import than the store.
        from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

        for attempt in Retrying(
            retry=retry_if_exception(_busy),
            stop=stop_after_delay(self._timeout),
            wait=wait_exponential(multiplier=0.001, max=0.05),
            reraise=True,
        ):
            with attempt:
                connection.execute("PRAGMA journal_mode = WAL")

    def _connect(self, what: str) -> sqlite3.Connection:
        try:
            # isolation_level=None: transactions are begun and committed explicitly above,
            # not implicitly by the sqlite3 module. timeout sets SQLite's busy timeout.
            # check_same_thread=False: a pooled connection serves one call at a time, but
            # not always on the thread that opened it.
            return sqlite3.connect(
                self._path,
                timeout=self._timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise self._failure(what, exc) from exc

    def _check_format(self, connection: sqlite3.Connection, what: str) -> None:
        row: tuple[object] | None = connection.execute(
            "SELECT format FROM stageware_store_format"
        ).fetchone()
        found = None if row is None else row[0]
        if found == _FORMAT:
            return
        if isinstance(found, int) and found > _FORMAT:
            detail = (
                f"it holds sessions in store format {found}, written by a newer stageware; "
                f"this stageware reads format {_FORMAT}. Upgrade stageware to use it"
            )
        else:
            detail = (
                f"its stageware_store_format table holds {found!r}, which is not a store "
                f"format (this stageware reads format {_FORMAT})"
            )
        raise SessionError(f"cannot {what}: {self._path} {detail}")

    def _failure(self, what: str, exc: sqlite3.Error) -> SessionError:
        return SessionError(f"cannot {what} in {self._path}: {exc}")


def _read(connection: sqlite3.Connection, session_id: str) -> _Row | None:
    row: _Row | None = connection.execute(_SELECT, (session_id,)).fetchone()
    return row


def _migrate_from_3(connection: sqlite3.Connection) -> None:
    """Split each session's whole document into its record and its message rows.

    A document that is no snapshot is left as it was, for a load to report as damaged.
    """
    for statement in _MIGRATE_FROM_3:
        connection.execute(statement)
    rows: list[tuple[str, object]] = connection.execute(
        "SELECT session_id, document FROM stageware_sessions"
    ).fetchall()
    for session_id, document in rows:
        pieces = split_document(document)
        if pieces is None:
            continue
        connection.executemany(
            _INSERT_MESSAGE,
            ((session_id, position, message) for position, message in enumerate(pieces.messages)),
        )
        connection.execute(
            "UPDATE stageware_sessions SET document = ?, message_count = ? WHERE session_id = ?",
            (pieces.document, len(pieces.messages), session_id),
        )
    connection.execute("UPDATE stageware_store_format SET format = 4")


def _migrate_from_4(connection: sqlite3.Connection) -> None:
    """Add the approvals ledger, and enter each session's approvals in it.

    What a format-4 file knows of an approval is what its session's interrupt state holds
    now: the approvals of open cycles, pending or answered (answered ones that left the
    state before are not known). Their ``asked_at`` is the session's last save. A document
    that is no JSON is left as it was, for a load to report as damaged.
    """
    for statement in _MIGRATE_FROM_4:
        connection.execute(statement)
    rows: list[tuple[str, object, str]] = connection.execute(
        "SELECT session_id, document, updated_at FROM stageware_sessions "
        "WHERE document LIKE '%v2:policy:%'"
    ).fetchall()
    for session_id, document, updated_at in rows:
        observed = observe_document(document)
        try:
            saved_at = datetime.fromisoformat(updated_at)
        except ValueError:  # a hand edit: the migration's own time stands in
            saved_at = datetime.now(UTC)
        if observed:
            _settle(connection, session_id, observed, saved_at)
            connection.execute(
                "UPDATE stageware_sessions SET approvals_pending = ? WHERE session_id = ?",
                (int(any(o.status == "pending" for o in observed)), session_id),
            )
    connection.execute(f"UPDATE stageware_store_format SET format = {_FORMAT}")


def _settle(
    connection: sqlite3.Connection, session_id: str, observed: list[Observed], now: datetime
) -> None:
    """Apply a save to the session's ledger entries (the rules of ``_approval_rows``)."""
    seen = {o.interrupt_id for o in observed}
    pending: list[tuple[str]] = connection.execute(
        "SELECT interrupt_id FROM stageware_approvals WHERE session_id = ? AND status = 'pending'",
        (session_id,),
    ).fetchall()
    stamp = _sqlite_time(now)
    connection.executemany(
        _LAPSE_APPROVAL,
        ((stamp, session_id, gone) for (gone,) in pending if gone not in seen),
    )
    connection.executemany(
        _UPSERT_APPROVAL, (_approval_values(o.row(session_id, now, now)) for o in observed)
    )


def approval_statements(listing: Query) -> tuple[str, list[object], str, list[object]]:
    """The statements of one page of the ledger, and their parameters: the page
    (``limit + 1`` rows, in order), then the count of every match."""
    conditions: list[str] = []
    params: list[object] = []
    if listing.order == "answered":
        # Answered entries, and only they, have an answer time: the partial index's
        # condition, so that the planner seeks in it.
        conditions.append("answered_at IS NOT NULL")
    if listing.statuses is not None and listing.statuses != ANSWERED:
        [status] = listing.statuses  # one status, or all three answered ones
        conditions.append("status = ?")
        params.append(status)
    for column, value in (
        ("hook", listing.hook),
        ("middleware", listing.middleware),
        ("session_id", listing.session_id),
    ):
        if value is not None:
            conditions.append(f"{column} = ?")
            params.append(value)
    if listing.asked_before is not None:
        conditions.append("asked_at < ?")
        params.append(_sqlite_time(listing.asked_before))
    where = " AND ".join(conditions) or "1"
    seek, seek_params = where, list(params)
    direction = "DESC" if listing.descending else "ASC"
    column = listing.time_column
    if listing.after is not None:
        moment, after_session, after_id = listing.after
        seek += (
            f" AND ({column}, session_id, interrupt_id) "
            f"{'<' if listing.descending else '>'} (?, ?, ?)"
        )
        seek_params += [_sqlite_time(moment), after_session, after_id]
    order = f"{column} {direction}, session_id {direction}, interrupt_id {direction}"
    return (
        f"{_SELECT_APPROVALS} WHERE {seek} ORDER BY {order} LIMIT ?",
        [*seek_params, listing.limit + 1],
        f"SELECT count(*) FROM stageware_approvals WHERE {where}",
        params,
    )


def _approval_values(row: ApprovalRow) -> tuple[object, ...]:
    return tuple(_sqlite_time(value) if isinstance(value, datetime) else value for value in row)


def _sqlite_time(moment: datetime) -> str:
    """A time as the store keeps it: ISO 8601 in UTC, of one width, so that text order is
    time order."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _pending(connection: sqlite3.Connection, session_id: str, where: str) -> Escalation | None:
    row: tuple[object, ...] | None = connection.execute(
        f"{_SELECT_ESCALATIONS} WHERE session_id = ? AND status <> 'resolved'", (session_id,)
    ).fetchone()
    return None if row is None else from_row(row, where)


def _sqlite_values(row: EscalationRow) -> tuple[object, ...]:
    """*row* as SQLite keeps it: times as ISO 8601 text, in UTC, of one width, so that
    text order is time order."""
    return tuple(_sqlite_time(value) if isinstance(value, datetime) else value for value in row)


def _table_names(connection: sqlite3.Connection) -> set[str]:
    rows: list[tuple[str]] = connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'"
    ).fetchall()
    return {name for (name,) in rows}


def _lease(owner: str | None, expires: str | None) -> Lease | None:
    if owner is None or expires is None:
        return None
    return Lease(owner=owner, expires_at=datetime.fromisoformat(expires))


def _lease_columns(
    owner: str, lease_seconds: float | None, now: datetime
) -> tuple[str | None, str | None]:
    if lease_seconds is None:
        return None, None
    return owner, (now + timedelta(seconds=lease_seconds)).isoformat()


def _busy(error: BaseException) -> bool:
    """Whether *error* is SQLite's SQLITE_BUSY (the database is locked: try again)."""
    return (
        isinstance(error, sqlite3.OperationalError)
        and error.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
    )
