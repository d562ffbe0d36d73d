"""``PostgresSessionStore``: sessions in PostgreSQL, shared by workers on many machines.

The store gives the guarantees of the SQLite store (conditional saves, leases, renewal) to
workers that do not share a disk. Each call borrows a connection from a psycopg pool and
runs one statement that checks and writes at once (see ``_postgres_tables``); a refused
write is then explained by reading the row and applying ``check_write``, which raises the
same errors as every other store. Leases are judged by the database server's clock, the
one clock all workers share.

The methods are synchronous, like the ``SessionStore`` protocol: the agent calls them on a
worker thread (``anyio.to_thread.run_sync``), which suits asyncio and trio alike, and a
call is one short round trip, so a thread costs little beside it. A thread cannot be
cancelled, so every call is bounded instead (``_postgres_deadline``): the server ends a
statement or a lock wait at ``statement_timeout``, and the client cuts a connection the
server stopped answering, so a call ends within its bound whatever the server does.

A server restart or a dropped connection is survived: the store checks each connection
it takes from the pool, and a call that loses its connection is run again on
another, while its time lasts, when that is safe (see ``_run`` and ``_write``).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Generator, Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Final, Self, TypeVar, cast, final

import psycopg
from psycopg import Cursor, errors, sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)
from tenacity.stop import stop_base

from . import _lease_renewer
from ._approval_listing import query
from ._approval_rows import (
    APPROVAL_COLUMNS,
    ApprovalEntry,
    ApprovalListing,
    ApprovalPage,
    entry_from_row,
    observe,
)
from ._encoding import EncodedSnapshot, decode_snapshot, encode_snapshot
from ._escalation_rows import COLUMNS, check_escalation_id, escalation_query, from_row, to_row
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
    resolve,
    unknown,
)
from ._postgres_conninfo import Location, locate
from ._postgres_deadline import CallDeadline
from ._postgres_tables import (
    FORMAT,
    Statements,
    approval_listing,
    approval_params,
    create_tables,
    escalation_listing,
    statements,
)
from ._store import (
    Lease,
    SessionError,
    SessionSnapshot,
    SessionTimeoutError,
    StoredSession,
    check_kept,
    check_renewal,
    check_session_id,
    check_write,
)

__all__ = ["PostgresSessionStore"]

_T = TypeVar("_T")

_DEFAULT_MIN_SIZE: Final = 1
_DEFAULT_MAX_SIZE: Final = 4
_DEFAULT_TIMEOUT: Final = 10.0
_DEFAULT_STATEMENT_TIMEOUT: Final = 1.0
# A save that writes this many bytes of messages or more is large: if it runs out of time,
# its error says how much it was writing and that statement_timeout is what to raise.
# (Here, about 5,000 messages of 2 KB, 10 MB, fit in the default 1 s.)
_LARGE_WRITE_BYTES: Final = 1_000_000
# The server's timeouts count whole milliseconds; less would round to 0, which is no limit.
_SMALLEST_TIMEOUT: Final = 0.001

# What the client adds to statement_timeout before it cuts a connection itself: time for
# the server's own timeout, whose message says what held the call, to arrive first.
_CLIENT_MARGIN: Final = 0.5
# The server's lock wait ends a little before its statement timeout, so that a call held
# by a lock is reported as such (at equal values the statement timeout would win).
_LOCK_SHARE: Final = 0.8
# Tries of one call whose connection was lost (a restart, a dropped connection), and the
# pause before the first retry, doubled for each next one, all within the call's bound.
_ATTEMPTS: Final = 3
_FIRST_PAUSE: Final = 0.05
# How long a call that got no connection waits to learn why (_timeout_problem).
_PROBE_SECONDS: Final = 0.5
# libpq's connect_timeout is whole seconds, and it treats 1 as 2.
_MIN_CONNECT_TIMEOUT: Final = 2

# Errors after which the connection is gone, whatever the driver says of it.
_LOST: Final = (errors.AdminShutdown, errors.CrashShutdown, errors.CannotConnectNow)

# Postgres truncates longer identifiers, so two long names could meet in one schema.
_MAX_IDENTIFIER_BYTES: Final = 63

# pending, escalation: format, then an escalation's columns.
_ESCALATION_WIDTH: Final = 1 + len(COLUMNS)
# load: format, version, document, lease owner, lease expiry, message count, then the
# messages' positions and documents (NULL for none).
_LoadRow = tuple[
    object,
    int | None,
    str | None,
    str | None,
    datetime | None,
    int | None,
    list[object] | None,
    list[object] | None,
]
# inspect: format, version, lease owner, lease expiry, the server's clock, message count.
_InspectRow = tuple[object, int | None, str | None, datetime | None, datetime, int | None]


@final
class PostgresSessionStore:
    """A ``SessionStore`` in a PostgreSQL database, for many workers on many machines.

    The store creates its schema and tables on first use and
    refuses a schema written by a newer stageware. Each save is one atomic statement, so a
    refused or failed save writes nothing. Lease expiries are computed and compared by the
    database server, so the workers' own clocks do not matter.

    It is thread-safe; from async code, call it on a worker thread
    (``await anyio.to_thread.run_sync(store.load, "s1")``), as the agent does.

    Args:
        database: A conninfo string (``"host=db dbname=app user=app"``) or URL
            (``"postgresql://app@db/app"``), from which the store makes and owns a
            connection pool; or a ``psycopg_pool.ConnectionPool`` that you make, open and
            close yourself. Its connections should keep the default ``READ COMMITTED``
            isolation.
        schema: The Postgres schema that holds the store's tables.
        min_size: Connections the store's own pool keeps open (default 1).
        max_size: Connections the store's own pool may open at once (default 4).
        timeout: Seconds a call waits for a connection from the store's own pool before
            failing with a ``SessionError`` (default 10), within the call's bound.
        statement_timeout: Seconds a statement may run or wait for a lock on the server
            (default 1, the order of the agent's cancel bound; at least 0.001, the
            server's unit, else ``ValueError``). Every call ends within
            ``statement_timeout`` + 0.5 s: then it fails with ``SessionTimeoutError``.

    The store checks each connection as it takes it from the pool, and its own pool sets
    the connections' ``statement_timeout``, ``lock_timeout`` (0.8 of it) and, unless the
    conninfo gives one, ``connect_timeout``. A pool you pass is configured by you; the
    client-side bound of each call holds for it all the same.

    The pool is opened on first use rather than here, so a store made before a server
    forks its workers holds no connection the workers would share. A password in
    *database* never appears in ``repr()`` or in an error.
    """

    __slots__ = (
        "_closed",
        "_location",
        "_lock",
        "_owns_pool",
        "_pool",
        "_ready",
        "_schema",
        "_sql",
        "_statement_timeout",
        "_where",
    )

    def __init__(
        self,
        database: str | ConnectionPool[Any],
        *,
        schema: str = "stageware",
        min_size: int | None = None,
        max_size: int | None = None,
        timeout: float | None = None,
        statement_timeout: float = _DEFAULT_STATEMENT_TIMEOUT,
    ) -> None:
        self._schema = _check_schema_name(schema)
        if not 0 < statement_timeout < math.inf:  # NaN fails both comparisons
            raise ValueError(
                f"statement_timeout must be a positive, finite number of seconds; "
                f"got {statement_timeout!r}"
            )
        if statement_timeout < _SMALLEST_TIMEOUT:
            # The server counts in whole milliseconds, and 0 there means no limit at all.
            raise ValueError(
                f"statement_timeout must be at least {_SMALLEST_TIMEOUT:g} s (1 ms, the "
                f"server's unit); got {statement_timeout!r}"
            )
        self._statement_timeout = float(statement_timeout)
        if isinstance(database, ConnectionPool):
            if (min_size, max_size, timeout) != (None, None, None):
                raise TypeError(
                    "PostgresSessionStore sizes only the pool it makes; give min_size, "
                    "max_size and timeout to the pool you pass where you make it"
                )
            self._location = _locate_pool(database)
            self._pool: ConnectionPool[Any] = database
            self._owns_pool = False
        else:
            self._location = locate(database)
            # Each statement stands alone: no BEGIN and COMMIT round trips around it.
            kwargs: dict[str, Any] = {"autocommit": True}
            if "connect_timeout" not in conninfo_to_dict(database):
                kwargs["connect_timeout"] = max(
                    _MIN_CONNECT_TIMEOUT, math.ceil(self._call_seconds())
                )
            self._pool = ConnectionPool(
                database,
                kwargs=kwargs,
                configure=self._configure,
                min_size=_DEFAULT_MIN_SIZE if min_size is None else min_size,
                max_size=_DEFAULT_MAX_SIZE if max_size is None else max_size,
                timeout=_DEFAULT_TIMEOUT if timeout is None else timeout,
                open=False,
                name=f"stageware-sessions-{self._schema}",
            )
            self._owns_pool = True
        self._where = f"{self._location.description} (schema {self._schema})"
        self._sql: Statements = statements(self._schema)
        self._lock = threading.Lock()
        self._ready = False
        self._closed = False

    @property
    def schema(self) -> str:
        """The Postgres schema that holds the store's tables."""
        return self._schema

    def load(self, session_id: str) -> StoredSession | None:
        """Return the session saved as *session_id*, or ``None`` if there is none."""
        what = f"load session {session_id!r}"

        def read(cursor: Cursor[TupleRow]) -> _LoadRow:
            return cast(_LoadRow, self._one(cursor, self._sql.load, {"session_id": session_id}, 8))

        row = self._run_session(session_id, what, read)
        found, version, document, owner, expires, count, positions, documents = row
        self._check_format(found, what)
        if version is None:
            return None
        messages = list(zip(positions or [], documents or [], strict=True))
        snapshot = decode_snapshot(document, messages, count, session_id, self._where)
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
        """Store *snapshot* if the session is still at *expected_version*, in one statement.

        The same statement keeps the first *kept_messages* message rows and writes
        *snapshot*'s messages after them; with *escalation*, it inserts that too.
        """
        check_session_id(session_id, self._where)
        # A count that is no count would otherwise reach the server as a type error.
        check_kept(session_id, self._where, kept_messages=kept_messages, found_messages=None)
        # Encode before touching the database: a value that is not JSON data fails here.
        encoded = encode_snapshot(snapshot, session_id, self._where, first_message=kept_messages)
        params: dict[str, object] = {
            "session_id": session_id,
            "version": expected_version,
            "document": encoded.document,
            "kept": kept_messages,
            "message_count": kept_messages + len(encoded.messages),
            "messages": encoded.messages,
            "owner": owner,
            "lease_owner": None if lease_seconds is None else owner,
            "lease_seconds": lease_seconds,
            **approval_params(observe(snapshot["interrupt_state"])),
        }
        what = f"save session {session_id!r}"
        explain: Callable[[Cursor[TupleRow]], None] | None = None
        if escalation is None:
            statement = self._sql.create if expected_version == 0 else self._sql.update
        else:
            described = f"{what} in {self._where}"
            check_new(escalation, session_id, described)
            params.update(zip(COLUMNS, to_row(escalation, described), strict=True))
            statement = (
                self._sql.create_escalated if expected_version == 0 else self._sql.update_escalated
            )

            def refuse_a_second(cursor: Cursor[TupleRow]) -> None:
                pending = self._pending(cursor, session_id, what)
                if pending is not None:
                    raise already_escalated(pending, described)

            explain = refuse_a_second

        self._write(
            session_id,
            what,
            statement,
            params,
            expected_version,
            owner,
            explain,
            kept_messages,
            recognise=self._sql.recognise,
            writing=encoded,
        )
        return expected_version + 1

    def renew(self, session_id: str, *, version: int, owner: str, lease_seconds: float) -> None:
        """Extend *owner*'s lease on *session_id*, leaving its snapshot and version alone."""
        check_session_id(session_id, self._where)
        check_renewal(version)
        params = {
            "session_id": session_id,
            "version": version,
            "owner": owner,
            "lease_owner": owner,
            "lease_seconds": lease_seconds,
        }
        what = f"renew the lease of session {session_id!r}"
        self._write(session_id, what, self._sql.renew, params, version, owner)

    def delete(self, session_id: str) -> None:
        """Forget *session_id*, its escalations and its approvals; a session that does not
        exist is fine."""
        what = f"delete session {session_id!r}"

        def remove(cursor: Cursor[TupleRow]) -> object:
            return self._one(cursor, self._sql.delete, {"session_id": session_id}, 1)[0]

        found = self._run_session(session_id, what, remove)
        self._check_format(found, what)

    def session_ids(self) -> list[str]:
        """The ids of every stored session, sorted (by code point, whatever the collation)."""
        what = "list the sessions"

        def read(cursor: Cursor[TupleRow]) -> list[TupleRow]:
            return cursor.execute(self._sql.session_ids, {}).fetchall()

        rows = self._run(what, read)
        self._check_format(rows[0][0] if rows else None, what)
        return [row[1] for row in rows if row[1] is not None]

    def open_escalation(self, session_id: str) -> Escalation | None:
        """The session's unresolved escalation, or ``None``."""
        what = f"look up the escalation of session {session_id!r}"
        return self._run_session(
            session_id, what, lambda cursor: self._pending(cursor, session_id, what)
        )

    def escalation(self, escalation_id: str) -> Escalation | None:
        """The escalation *escalation_id*, or ``None``."""
        check_escalation_id(escalation_id, self._where)
        what = f"look up escalation {escalation_id!r}"

        def read(cursor: Cursor[TupleRow]) -> TupleRow:
            params = {"escalation_id": escalation_id}
            return self._one(cursor, self._sql.escalation, params, _ESCALATION_WIDTH)

        row = self._run(what, read)
        self._check_format(row[0], what)
        return None if row[1] is None else from_row(row[1:], self._where)

    def escalations(
        self, queue: str | None = None, *, status: EscalationStatus | None = None
    ) -> list[Escalation]:
        """The escalations in *queue* with *status*, oldest first."""
        check_listing(queue, status)
        what = "list escalations"

        def read(cursor: Cursor[TupleRow]) -> list[TupleRow]:
            params = {"queue": queue, "status": status}
            return cursor.execute(self._sql.escalations, params).fetchall()

        rows = self._run(what, read)
        self._check_format(rows[0][0] if rows else None, what)
        return [from_row(row[1:], self._where) for row in rows if row[1] is not None]

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
        page, count, params = escalation_listing(self._schema, paging)
        rows, total = self._page("list escalations", page, count, params)
        return paging.finish([from_row(row, self._where) for row in rows], total=total)

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
        page, count, params = approval_listing(self._schema, listing)
        rows, total = self._page("list approvals", page, count, params)
        return listing.finish([entry_from_row(row, self._where) for row in rows], total=total)

    def approval(self, session_id: str, interrupt_id: str) -> ApprovalEntry | None:
        """The ledger's entry for one approval, or ``None``."""
        what = f"look up approval {interrupt_id!r} of session {session_id!r}"
        params = {"session_id": session_id, "interrupt_id": interrupt_id}

        def read(cursor: Cursor[TupleRow]) -> TupleRow:
            return self._one(cursor, self._sql.approval, params, 1 + len(APPROVAL_COLUMNS))

        row = self._run_session(session_id, what, read)
        self._check_format(row[0], what)
        return None if row[1] is None else entry_from_row(row[1:], self._where)

    def _page(
        self, what: str, page: sql.Composed, count: sql.Composed, params: dict[str, object]
    ) -> tuple[list[TupleRow], int]:
        """The rows of a listing's page, and the count of all its matches."""

        def read(cursor: Cursor[TupleRow]) -> tuple[TupleRow, list[TupleRow]]:
            counted = self._one(cursor, count, params, 2)
            self._check_format(counted[0], what)
            return counted, cursor.execute(page, params).fetchall()

        counted, rows = self._run(what, read)
        return rows, int(counted[1])

    def claim_escalation(self, escalation_id: str, *, by: str) -> Escalation:
        """Mark an open escalation as taken by *by*, in one statement."""
        check_claim(escalation_id, by)
        what = f"claim escalation {escalation_id!r}"
        params = {"escalation_id": escalation_id, "by": by}

        def attempt(cursor: Cursor[TupleRow]) -> Escalation:
            while True:
                row = cursor.execute(self._sql.claim, params).fetchone()
                if row is not None:
                    return from_row(row, self._where)
                # Refused: read the row, and let the rule say why (or, for one's own
                # claim, hand it back unchanged).
                current = self._escalation(cursor, escalation_id, "claim", what)
                claimed = claim(current, by=by, now=datetime.now(UTC), where=self._where)
                if claimed is current:
                    return current

        return self._run(what, attempt)

    def resolve_escalation(
        self,
        escalation_id: str,
        *,
        by: str,
        resolution: str,
        comment: str | None = None,
        take_over: bool = False,
    ) -> Escalation:
        """Resolve an open or claimed escalation, in one statement."""
        check_resolution(escalation_id, by, resolution, comment)
        what = f"resolve escalation {escalation_id!r}"
        params = {
            "escalation_id": escalation_id,
            "by": by,
            "resolution": resolution,
            "comment": comment,
            "take_over": take_over,
        }

        def attempt(cursor: Cursor[TupleRow]) -> Escalation:
            while True:
                row = cursor.execute(self._sql.resolve, params).fetchone()
                if row is not None:
                    return from_row(row, self._where)
                # Refused: the rule raises the reason. A record it would resolve changed
                # between the two statements in a way that now allows it: try again.
                current = self._escalation(cursor, escalation_id, "resolve", what)
                resolve(
                    current,
                    by=by,
                    resolution=resolution,
                    comment=comment,
                    take_over=take_over,
                    now=datetime.now(UTC),
                    where=self._where,
                )

        # Not sent twice: a resolution applied whose answer was lost would be refused by
        # the rule as resolved already.
        return self._run(what, attempt, resend=False)

    def close(self) -> None:
        """Close the store, and its pool if the store made it; later calls fail.

        The leases held on the store are no longer renewed (its renewer ends first).
        """
        _lease_renewer.stop(self)
        with self._lock:
            self._closed = True
        if self._owns_pool:
            self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self._location.description!r}, schema={self._schema!r})"

    # --- Statements ---------------------------------------------------------------------

    def _write(
        self,
        session_id: str,
        what: str,
        statement: sql.Composed,
        params: Mapping[str, object],
        version: int,
        owner: str,
        explain: Callable[[Cursor[TupleRow]], None] | None = None,
        kept_messages: int = 0,
        *,
        recognise: sql.Composed | None = None,
        writing: EncodedSnapshot | None = None,
    ) -> None:
        """Run a conditional write; explain a refusal with ``check_write``'s errors.

        A save's refusal is also explained by ``check_kept`` with its *kept_messages*;
        *explain*, if given, raises the reason for a refusal that the version and the
        lease do not account for (an unresolved escalation, for a save that records one).

        A write whose connection was lost is sent again (``_run``). A renewal is the same
        write twice. A save is not: if the first one was applied and only its answer was
        lost (the server committed, then the connection dropped), the second finds the
        version moved on. *recognise* tells that case from another worker's save: the
        session at the next version, holding this save's document, message count and
        lease owner, is this save's own, and it succeeded. *writing*, a save's encoded
        snapshot, lets a timeout say how much the save was writing.
        """
        sends = 0

        def attempt(cursor: Cursor[TupleRow]) -> None:
            nonlocal sends
            sends += 1
            # Each pass that neither writes nor raises saw the session change in between
            # (a lease expired, a deleted row), in a way that now allows the write.
            while cursor.execute(statement, params).fetchone() is None:
                if sends > 1 and recognise is not None:
                    mine = cursor.execute(recognise, params).fetchone()
                    if mine is not None and mine[0] is True:
                        return
                row = cast(_InspectRow, self._one(cursor, self._sql.inspect, params, 6))
                found, found_version, lease_owner, expires, now, found_messages = row
                self._check_format(found, what)
                check_write(
                    session_id,
                    self._where,
                    expected_version=version,
                    owner=owner,
                    found_version=found_version or 0,
                    found_lease=_lease(lease_owner, expires),
                    now=now.astimezone(UTC),
                )
                check_kept(
                    session_id,
                    self._where,
                    kept_messages=kept_messages,
                    found_messages=found_messages or 0,
                )
                if explain is not None:
                    explain(cursor)

        self._run_session(session_id, what, attempt, writing=writing)

    def _pending(self, cursor: Cursor[TupleRow], session_id: str, what: str) -> Escalation | None:
        row = self._one(cursor, self._sql.pending, {"session_id": session_id}, _ESCALATION_WIDTH)
        self._check_format(row[0], what)
        return None if row[1] is None else from_row(row[1:], self._where)

    def _escalation(
        self, cursor: Cursor[TupleRow], escalation_id: str, verb: str, what: str
    ) -> Escalation:
        params = {"escalation_id": escalation_id}
        row = self._one(cursor, self._sql.escalation, params, _ESCALATION_WIDTH)
        self._check_format(row[0], what)
        if row[1] is None:
            raise unknown(escalation_id, verb, self._where)
        return from_row(row[1:], self._where)

    @staticmethod
    def _one(
        cursor: Cursor[TupleRow],
        statement: sql.Composed,
        params: Mapping[str, object],
        width: int,
    ) -> TupleRow:
        """The statement's one row, or *width* ``NULL`` columns if it returned none."""
        row = cursor.execute(statement, params).fetchone()
        # No row means store_format is empty: the format check that follows refuses that.
        return (None,) * width if row is None else row

    def _run_session(
        self,
        session_id: str,
        what: str,
        action: Callable[[Cursor[TupleRow]], _T],
        *,
        writing: EncodedSnapshot | None = None,
    ) -> _T:
        """``_run`` for a call on one session, whose id is checked first."""
        check_session_id(session_id, self._where)
        return self._run(what, action, writing=writing)

    def _run(
        self,
        what: str,
        action: Callable[[Cursor[TupleRow]], _T],
        *,
        resend: bool = True,
        writing: EncodedSnapshot | None = None,
    ) -> _T:
        """Run *action* on a pooled connection, within the call's bound; errors become
        ``SessionError``.

        *what* says what the call does, for messages (``"load session 's1'"``). A call
        whose connection was lost (a server restart, a dropped connection) runs again on
        another while its time lasts: always if the connection was lost before *action*
        was given it, and otherwise only if *resend* (the action reads, or writes the same
        thing twice, or recognises its own earlier write: see ``_write``). A statement the
        server ended for its time, or refused, is not run again. *writing* is what a save
        writes, named by a timeout if it is large. The attempts are tenacity's: at most
        ``_ATTEMPTS``, pausing ``_FIRST_PAUSE`` and twice as long each time after.
        """
        deadline = CallDeadline(self._call_seconds())
        try:
            for attempt in Retrying(
                retry=retry_if_exception_type(_Lost),
                stop=stop_after_attempt(_ATTEMPTS) | _PastDeadline(deadline),
                wait=wait_exponential(multiplier=_FIRST_PAUSE),
                reraise=True,
            ):
                with attempt:
                    return self._attempt(what, action, deadline, resend=resend, writing=writing)
        except _Lost as lost:
            raise self._failure(what, str(lost.error)) from lost.error
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _attempt(
        self,
        what: str,
        action: Callable[[Cursor[TupleRow]], _T],
        deadline: CallDeadline,
        *,
        resend: bool,
        writing: EncodedSnapshot | None,
    ) -> _T:
        """One attempt of ``_run``: *action*'s value, or ``_Lost`` when it may run again."""
        sent = False
        try:
            self._ensure_tables(what, deadline)
            # Each cursor reads rows as tuples, whatever row factory a caller's pool set.
            with (
                self._checked_out(deadline) as connection,
                deadline.guard(connection),
                connection.cursor(row_factory=tuple_row) as cursor,
            ):
                sent = True
                return action(cursor)
        except PoolTimeout as exc:
            raise self._no_connection(what, deadline) from exc
        except (errors.LockNotAvailable, errors.QueryCanceled) as exc:
            raise self._timed_out(what, exc, deadline, sent=sent, writing=writing) from exc
        except psycopg.OperationalError as exc:
            if deadline.cut:
                raise self._timed_out(what, exc, deadline, sent=sent, writing=writing) from exc
            if _lost(exc) and (resend or not sent):
                raise _Lost(exc) from exc
            raise self._failure(what, str(exc)) from exc
        except psycopg.Error as exc:
            raise self._failure(what, str(exc)) from exc

    @contextlib.contextmanager
    def _checked_out(
        self, deadline: CallDeadline
    ) -> Generator[psycopg.Connection[Any], None, None]:
        """A connection of the pool that answers, within the call's bound.

        Each connection is checked as it is handed out (an empty statement: one round
        trip), so the connections a server restart ended are found here, before a
        statement is sent on one, and dropped: the pool makes new ones. The check is the
        pool's own (``ConnectionPool.check_connection``), run here rather than by the pool
        so that it is bounded by the call (a stalled server does not answer it) and does
        not wait out the pool's backoff between dead connections. Like the pool's
        connection block, the block commits at its end, for a pool whose connections are
        not in autocommit mode.
        """
        while True:
            connection = self._pool.getconn(timeout=self._wait(deadline))
            try:
                with deadline.guard(connection):
                    ConnectionPool.check_connection(connection)
            except psycopg.OperationalError:
                self._pool.putconn(connection)  # broken: the pool drops it
                if deadline.cut or not deadline.left():
                    raise
                continue
            except BaseException:
                self._pool.putconn(connection)
                raise
            break
        try:
            with connection:
                yield connection
        finally:
            self._pool.putconn(connection)

    def _wait(self, deadline: CallDeadline) -> float:
        """How long to wait for a pooled connection: the pool's timeout, within the call's."""
        return min(self._pool.timeout, deadline.left())

    def _call_seconds(self) -> float:
        """The bound of one call: the server's statement timeout, then the client's cut."""
        return self._statement_timeout + _CLIENT_MARGIN

    def _configure(self, connection: psycopg.Connection[Any]) -> None:
        """Set a new connection of the store's pool to end what runs past the bound."""
        # At least 1 ms each: 0 turns the server's limit off.
        milliseconds = max(1, round(self._statement_timeout * 1000))
        connection.execute(
            "SELECT set_config('statement_timeout', %s, false), "
            "set_config('lock_timeout', %s, false)",
            (f"{milliseconds}ms", f"{max(1, round(milliseconds * _LOCK_SHARE))}ms"),
        )

    # --- The schema ---------------------------------------------------------------------

    def _ensure_tables(self, what: str, deadline: CallDeadline) -> None:
        """Open the pool and create (or check, or migrate) the store's tables on first use."""
        with self._lock:
            if self._closed:
                raise SessionError(f"cannot {what}: the store for {self._where} is closed")
            if self._ready:
                return
            if self._owns_pool:
                self._pool.open(wait=False)
            with (
                self._checked_out(deadline) as connection,
                deadline.guard(connection),
                connection.transaction(),
                connection.cursor(row_factory=tuple_row) as cursor,
            ):
                setup = create_tables(cursor, self._schema)
            if setup.clash is not None:
                table, problem = setup.clash
                raise SessionError(
                    f"cannot {what}: schema {self._schema!r} of {self._location.description} "
                    f"has a table named {table} that is not the session store's ({problem}). "
                    "The store keeps sessions, messages, escalations, approvals and store_format "
                    'in a schema of its own: give it one, PostgresSessionStore(..., schema="...")'
                )
            self._check_format(setup.format, what)
            self._ready = True

    def _check_format(self, found: object, what: str) -> None:
        if found == FORMAT:
            return
        if isinstance(found, int) and found > FORMAT:
            detail = (
                f"holds sessions in store format {found}, written by a newer stageware; "
                f"this stageware reads format {FORMAT}. Upgrade stageware to use it"
            )
        else:
            detail = (
                f"has a store_format table that holds {found!r}, which is not a store "
                f"format (this stageware reads format {FORMAT})"
            )
        raise SessionError(f"cannot {what}: {self._where} {detail}")

    def _no_connection(self, what: str, deadline: CallDeadline) -> SessionError:
        """The pool had no connection to give in time: say why, as best known."""
        if deadline.cut:
            # A connection was cut in its check: the server stopped answering.
            return self._timed_out(what, None, deadline, sent=False)
        problem = self._timeout_problem(deadline)
        if deadline.left() > 0:  # the pool's own, shorter, timeout
            return self._failure(what, problem)
        message = self._location.scrub(f"cannot {what} in {self._where}: {problem}")
        return SessionTimeoutError(message, seconds=deadline.seconds)

    def _timed_out(
        self,
        what: str,
        error: psycopg.Error | None,
        deadline: CallDeadline,
        *,
        sent: bool,
        writing: EncodedSnapshot | None = None,
    ) -> SessionTimeoutError:
        """A call ended by its bound: by the server (a lock, a statement) or by the client."""
        # The values are the store's settings, which a pool passed in need not have.
        lock_timeout = f" ({self._statement_timeout * _LOCK_SHARE:g} s)" if self._owns_pool else ""
        statement_timeout = f" ({self._statement_timeout:g} s)" if self._owns_pool else ""
        if isinstance(error, errors.LockNotAvailable):
            problem = (
                "it waited for a lock that another connection holds until the server's "
                f"lock_timeout{lock_timeout} ended the wait; nothing was written"
            )
        elif isinstance(error, errors.QueryCanceled):
            problem = (
                f"the statement ran past the server's statement_timeout{statement_timeout} "
                "and the server ended it; nothing was written"
            )
        else:
            outcome = (
                "a write may have been applied before its answer was lost"
                if sent
                else "nothing was sent"
            )
            problem = (
                f"the server did not answer within the call's {deadline.seconds:g} s "
                f"(stalled, or cut off), so the connection was closed; {outcome}"
            )
        if writing is not None and writing.size >= _LARGE_WRITE_BYTES:
            # A busy server looks like a stalled one from here: say what may have held it.
            problem += (
                f". The call was writing {len(writing.messages):,} messages "
                f"({writing.size / 1_000_000:.1f} MB): a rewrite that large (a trimmed or "
                "replaced long history) can take longer than that; give the store a larger "
                "statement_timeout= for it"
            )
        message = self._location.scrub(f"cannot {what} in {self._where}: {problem}")
        return SessionTimeoutError(message, seconds=deadline.seconds)

    def _timeout_problem(self, deadline: CallDeadline) -> str:
        """Say why the pool had no connection to give: the server's answer, or a full pool.

        The pool only logs why its connections fail, so one more connection, outside the
        pool, finds out for the message.
        """
        pool = self._pool
        waited = (
            f"no connection within the pool's timeout ({pool.timeout:g} s)"
            if pool.timeout < deadline.seconds
            else f"no connection within the call's bound ({deadline.seconds:g} s)"
        )
        conninfo, kwargs = pool.conninfo, pool.kwargs
        if callable(conninfo) or callable(kwargs):
            return f"{waited}; the psycopg.pool log says why"
        answer: list[str] = []

        def probe() -> None:
            try:
                connection = pool.connection_class.connect(
                    conninfo, **{**(kwargs or {}), "connect_timeout": _MIN_CONNECT_TIMEOUT}
                )
            except psycopg.Error as exc:
                answer.append(f"{waited}: {exc}")
                return
            connection.close()
            answer.append(
                f"{waited}: all {pool.max_size} of its connections stayed busy; raise max_size"
            )

        # On a thread, waited for only briefly: a server that does not answer holds the
        # probe for libpq's connect_timeout, longer than the call may last.
        thread = threading.Thread(target=probe, name="stageware-postgres-probe", daemon=True)
        thread.start()
        thread.join(_PROBE_SECONDS)
        if answer:
            return answer[0]
        return f"{waited}: the server does not answer (stalled, or cut off)"

    def _failure(self, what: str, problem: str) -> SessionError:
        message = f"cannot {what} in {self._where}: {problem}"
        return SessionError(self._location.scrub(message))


def _check_schema_name(schema: str) -> str:
    try:
        size = len(schema.encode())
    except UnicodeEncodeError:  # a lone surrogate
        size = 0
    if not 0 < size <= _MAX_IDENTIFIER_BYTES or "\x00" in schema:
        raise ValueError(
            f"schema must be a name PostgreSQL can keep, 1 to {_MAX_IDENTIFIER_BYTES} bytes "
            f"of UTF-8 text without NUL; got {schema!r}"
        )
    return schema


@final
class _PastDeadline(stop_base):
    """Stops ``_run``'s attempts before a pause that would end at or past its deadline."""

    def __init__(self, deadline: CallDeadline) -> None:
        self._deadline = deadline

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self._deadline.left() <= retry_state.upcoming_sleep


class _Lost(Exception):
    """An attempt whose connection was lost, and which ``_run`` may make again."""

    def __init__(self, error: psycopg.OperationalError) -> None:
        super().__init__(str(error))
        self.error = error


def _lost(error: psycopg.OperationalError) -> bool:
    """Whether *error* says the connection is gone (no SQLSTATE: the driver's own)."""
    state = error.sqlstate
    return isinstance(error, _LOST) or state is None or state.startswith("08")


def _locate_pool(pool: ConnectionPool[Any]) -> Location:
    conninfo, kwargs = pool.conninfo, pool.kwargs
    if callable(conninfo) or callable(kwargs):
        # Computed per connection (a rotating password, say): not called just to name it.
        return Location(f"the database of pool {pool.name!r}", ())
    return locate(conninfo, kwargs)


def _lease(owner: str | None, expires: datetime | None) -> Lease | None:
    if owner is None or expires is None:
        return None
    return Lease(owner=owner, expires_at=expires.astimezone(UTC))
