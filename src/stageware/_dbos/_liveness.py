"""Which worker processes are alive, and handing a dead one's workflows back to DBOS.

Open-source DBOS recovers a PENDING workflow when a process with the executor id that
ran it starts again, or when something calls its recovery for that id; with worker
processes that each have an id of their own and may never come back, nobody would. This
module is that something, on PostgreSQL:

- Every worker holds, for its whole life, a session-level advisory lock named for its
  executor id, on a connection of its own (``Liveness.hold``). The lock is taken before
  DBOS launches, so no workflow of this executor exists while its lock is free. The server
  drops it the moment the process dies: its connection ends with it. A machine that dies
  ends no connection: TCP keepalives on the lock's connection (a few watch intervals)
  have the server end it.
- A watcher thread in every worker (``Liveness.start``), every ``watch_seconds``, lists the
  executor ids that have PENDING workflows of this application and version, and tries the
  lock of each other one. Got it: that process is gone, so its workflows go back to DBOS's
  queue (DBOS's own recovery), then the lock is released. Whichever worker's queue thread
  takes a workflow replays it from its last recorded step.
- Two watchers racing for one dead executor are safe: the lock lets one in at a time, and
  DBOS re-enqueues only a workflow that is still PENDING *under the dead executor's id*;
  once re-enqueued or taken by a live worker it no longer matches, so a second recovery
  changes nothing.

A database restart drops every lock at once, the live workers' too. A watcher that finds
its connection gone re-takes its own lock first, then recovers nobody for a grace period
(``grace_seconds``, three watch intervals by default): the other workers notice the restart
on their next pass, at most one interval later, and must have their locks back before
anyone reads a free lock as a death. Should a live worker still be taken for dead (its
connection alone was cut, or it was stalled longer than the grace), its workflows are run
twice at the same time; the session's lease is the backstop there: a replay waits while
its own claim's lease is renewed by the worker still running it.

SQLite has no watcher: one process uses the database, and its restart (same executor id)
recovers its own workflows.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Final, final

import psycopg
from dbos import DBOS
from psycopg import sql

__all__ = [
    "ExecutorIdInUseError",
    "Liveness",
    "PooledConnectionError",
    "check_direct",
    "executor_lock_key",
    "recover_with_dbos",
]

_log = logging.getLogger("stageware.dbos")

# Advisory locks share one key space with everything else on the server: the prefix keeps
# ours apart from an application's own keys.
_LOCK_PREFIX: Final = "stageware.dbos.executor:"

# A query of the watcher that takes longer than this is given up (the pass is retried).
_STATEMENT_TIMEOUT_MS: Final = 10_000


class ExecutorIdInUseError(RuntimeError):
    """Another live process holds this executor id's lock: two processes cannot share one."""


class PooledConnectionError(RuntimeError):
    """The lock's connection goes through a pooler: its server process is not its own.

    A session-level advisory lock lives on one server process. Behind a pooler in
    transaction mode (PgBouncer) the client's statements go to whichever server connection
    is free: another worker's try of the lock on that server process succeeds (the lock is
    re-entrant), so a live worker is taken for dead, and a dead worker's lock stays held
    by the pooled connection, so its workflows are never recovered.
    """


def executor_lock_key(executor_id: str) -> int:
    """The advisory lock key (a signed 64-bit integer) that says *executor_id* is alive."""
    digest = hashlib.blake2b((_LOCK_PREFIX + executor_id).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def recover_with_dbos(executor_ids: list[str]) -> None:
    """Hand the PENDING workflows of *executor_ids* (dead) back to DBOS's queues.

    DBOS's own recovery (what its Conductor calls for a dead executor), which open-source
    DBOS exposes only under a private name: it re-enqueues each workflow that is still
    PENDING under one of these ids, so that a live worker's queue thread takes it.
    """
    DBOS._recover_pending_workflows(executor_ids)  # pyright: ignore[reportPrivateUsage]


@final
class Liveness:
    """This worker's lock, and the watcher that recovers the workflows of dead workers.

    Args:
        conninfo: The DBOS system database (a ``postgresql://`` URL or conninfo string).
        executor_id: This process's DBOS executor id.
        application_name: The DBOS application name; only its workflows are recovered.
        system_schema: The schema of DBOS's system tables.
        watch_seconds: How often the watcher looks for dead workers.
        grace_seconds: How long a watcher recovers nobody after re-taking its own lock
            (three ``watch_seconds`` when ``None``).
        hold_seconds: How long ``hold`` waits for its lock, which a watcher recovering
            this executor id's last life holds for a moment (``2 * watch_seconds + 5``
            when ``None``).
    """

    def __init__(
        self,
        conninfo: str,
        *,
        executor_id: str,
        application_name: str,
        system_schema: str = "dbos",
        watch_seconds: float = 3.0,
        grace_seconds: float | None = None,
        hold_seconds: float | None = None,
    ) -> None:
        if watch_seconds <= 0:
            raise ValueError(f"watch_seconds must be positive, not {watch_seconds!r}")
        self._conninfo = conninfo
        self.executor_id = executor_id
        self._application_name = application_name
        self._schema = system_schema
        self.watch_seconds = watch_seconds
        self.grace_seconds = 3 * watch_seconds if grace_seconds is None else grace_seconds
        self._hold_seconds = 2 * watch_seconds + 5 if hold_seconds is None else hold_seconds
        self._key = executor_lock_key(executor_id)
        self._connection: psycopg.Connection[tuple[object, ...]] | None = None
        self._quiet_until = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- this worker's lock --------------------------------------------------------------

    def hold(self) -> None:
        """Take this executor id's lock, before DBOS launches; keep it until ``close``.

        Raises:
            ExecutorIdInUseError: Another process held the lock for ``hold_seconds``.
            psycopg.OperationalError: The database cannot be reached.
        """
        deadline = time.monotonic() + self._hold_seconds
        connection = self._connect()
        try:
            while not self._try_lock(connection, self._key):
                if time.monotonic() >= deadline:
                    raise ExecutorIdInUseError(
                        f"DBOS executor id {self.executor_id!r} is in use by another live "
                        f"process (its liveness lock was held for {self._hold_seconds:g}s); "
                        "give each worker process an executor id of its own"
                    )
                time.sleep(0.2)
        except BaseException:
            connection.close()
            raise
        self._connection = connection

    def stop(self) -> None:
        """Stop the watcher, after its pass under way if any; the lock stays held."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.watch_seconds + _STATEMENT_TIMEOUT_MS / 1000)
            self._thread = None

    def close(self) -> None:
        """Stop the watcher and release the lock (the connection that holds it ends)."""
        self.stop()
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # -- the watcher ---------------------------------------------------------------------

    def start(
        self,
        application_version: str | None = None,
        recover: Callable[[list[str]], object] | None = None,
    ) -> None:
        """Start the watcher thread, once DBOS is launched.

        *application_version* is this process's DBOS version (``DBOS.application_version``
        when ``None``): a worker recovers only the workflows of its own version, which it
        can run. *recover* hands executors' workflows back to DBOS (DBOS's own recovery
        when ``None``).
        """
        if application_version is None:
            application_version = DBOS.application_version
        if recover is None:
            recover = recover_with_dbos
        if self._thread is not None:
            raise RuntimeError("the liveness watcher is already running")
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._watch,
            args=(application_version, recover),
            name=f"stageware-liveness-{self.executor_id}",
            daemon=True,
        )
        self._thread.start()

    def check(self, application_version: str, recover: Callable[[list[str]], object]) -> list[str]:
        """One pass of the watcher: the executor ids found dead, whose workflows were recovered.

        A pass that finds its connection lost (and with it its lock) drops it and returns;
        the next pass re-takes the lock on a new connection.

        Raises:
            psycopg.Error: A query failed on a connection that is still open.
        """
        try:
            return self._check(application_version, recover)
        except psycopg.Error as error:
            connection = self._connection
            if connection is not None and not connection.closed:
                raise
            _log.warning(
                "liveness watcher of DBOS executor %r lost its database connection (%s); "
                "re-taking its lock next pass",
                self.executor_id,
                type(error).__name__,
            )
            self._drop_connection()
            return []

    def _check(self, application_version: str, recover: Callable[[list[str]], object]) -> list[str]:
        connection = self._connection
        if connection is None:
            self._retake()
            return []
        # A query on the lock's own connection: it fails if the server dropped the
        # connection, and with it the lock.
        if time.monotonic() < self._quiet_until:
            connection.execute("SELECT 1")
            return []
        recovered: list[str] = []
        for executor_id in self._executors_with_pending(connection, application_version):
            key = executor_lock_key(executor_id)
            if not self._try_lock(connection, key):
                continue  # alive, or another watcher is recovering it right now
            try:
                _log.warning(
                    "DBOS executor %r is gone (its liveness lock was free): recovering its "
                    "pending workflows on the workers of this application",
                    executor_id,
                )
                recover([executor_id])
                recovered.append(executor_id)
            finally:
                connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
        return recovered

    def _watch(self, application_version: str, recover: Callable[[list[str]], object]) -> None:
        while not self._stop.wait(self.watch_seconds):
            try:
                self.check(application_version, recover)
            except Exception:
                # Retried next pass: a dead worker's lock stays free until it is recovered.
                _log.exception("liveness watcher of DBOS executor %r failed", self.executor_id)

    def _retake(self) -> None:
        """Re-take this worker's own lock on a new connection after the old one was lost."""
        connection = self._connect()
        if not self._try_lock(connection, self._key):
            # Another watcher holds it for a moment, recovering our workflows as if we were
            # dead (the lease keeps the two runs apart): try again next pass.
            connection.close()
            return
        self._connection = connection
        # Every lock on the server may have been dropped with ours (a restart): the other
        # live workers re-take theirs on their next pass, so reading a free lock as a death
        # must wait until they had the time to.
        self._quiet_until = time.monotonic() + self.grace_seconds
        _log.warning(
            "DBOS executor %r re-took its liveness lock; recovering no other worker for %gs",
            self.executor_id,
            self.grace_seconds,
        )

    def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def _executors_with_pending(
        self, connection: psycopg.Connection[tuple[object, ...]], application_version: str
    ) -> list[str]:
        # DISTINCT over the PENDING rows only (DBOS keeps a partial index on them): the
        # watcher's cost grows with the number of in-flight workflows, not the history.
        # Rows without an application name belong to every application, as DBOS reads them.
        query = sql.SQL(
            "SELECT DISTINCT executor_id FROM {}.workflow_status"
            " WHERE status = 'PENDING' AND application_version = %s"
            " AND (application_name = %s OR application_name IS NULL)"
            " AND executor_id IS NOT NULL AND executor_id <> %s"
        ).format(sql.Identifier(self._schema))
        rows = connection.execute(
            query, (application_version, self._application_name, self.executor_id)
        ).fetchall()
        return sorted(str(row[0]) for row in rows)

    def _connect(self) -> psycopg.Connection[tuple[object, ...]]:
        # A process that dies closes its socket and the server ends the session at once;
        # a machine that dies or drops off the network closes nothing, and without TCP
        # keepalives the server would hold its lock for hours (the kernel's default).
        # The server's side is set for this session (the lock must go), the client's so
        # that this watcher notices a server that is gone.
        idle = max(5, round(2 * self.watch_seconds))
        interval = max(2, round(self.watch_seconds))
        connection: psycopg.Connection[tuple[object, ...]] = psycopg.connect(
            self._conninfo,
            autocommit=True,
            connect_timeout=10,
            keepalives=1,
            keepalives_idle=idle,
            keepalives_interval=interval,
            keepalives_count=3,
            application_name=f"stageware-liveness:{self.executor_id}"[:63],
        )
        try:
            # Checked before any SET (not passed as startup options, which PgBouncer
            # refuses with an error of its own): on a pooled connection a SET would stay
            # on a server connection that other clients then get.
            check_direct(connection, self.executor_id)
            for setting, value in (
                ("statement_timeout", _STATEMENT_TIMEOUT_MS),
                ("tcp_keepalives_idle", idle),
                ("tcp_keepalives_interval", interval),
                ("tcp_keepalives_count", 3),
            ):
                connection.execute(
                    sql.SQL("SET {} = {}").format(sql.Identifier(setting), sql.Literal(value))
                )
        except BaseException:
            connection.close()
            raise
        return connection

    @staticmethod
    def _try_lock(connection: psycopg.Connection[tuple[object, ...]], key: int) -> bool:
        row = connection.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        return row is not None and row[0] is True


def check_direct(connection: psycopg.Connection[tuple[object, ...]], executor_id: str) -> None:
    """Refuse *connection* for the lock unless it is one server process of its own.

    Two checks, each sound alone against PgBouncer: the server process id that the server
    announced when the connection opened (libpq keeps it for cancel requests; a pooler
    announces a made-up one of its own) must be the one that runs our statements, in two
    transactions one after the other (a pooler in transaction mode may hand each to
    another server connection).

    Raises:
        PooledConnectionError: The ids differ.
    """
    announced = connection.info.backend_pid
    # Autocommit: each statement below is a transaction of its own.
    seen = [_backend_pid(connection), _backend_pid(connection)]
    if seen != [announced, announced]:
        raise PooledConnectionError(
            f"stageware.dbos.launch(): the liveness lock of DBOS executor {executor_id!r} "
            "needs a connection straight to PostgreSQL, but this one goes through a "
            f"connection pooler (server process {announced} announced at connect, "
            f"{seen[0]} and {seen[1]} in two transactions): a session-level advisory lock "
            "would stay on a pooled server connection. Pass launch(liveness_url=...) a URL "
            "of the same database that bypasses the pooler (PgBouncer's transaction mode "
            "is fine for database_url)"
        )


def _backend_pid(connection: psycopg.Connection[tuple[object, ...]]) -> object:
    row = connection.execute("SELECT pg_backend_pid()").fetchone()
    return None if row is None else row[0]
