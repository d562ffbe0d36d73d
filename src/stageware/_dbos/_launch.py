"""Starting DBOS for durable agent runs: its configuration, the executor id, the shutdown.

An executor id tells DBOS which process runs a workflow. Open-source DBOS recovers the
PENDING workflows of an executor when a process with that id starts, so:

- On **SQLite** (one machine, one worker process) every launch uses the fixed id
  ``stageware-local``: a restarted process recovers what the previous one left.
- On **PostgreSQL** (many workers) each process gets an id of its own
  (``<host>-<pid>-<random>``), so that no starting process takes over the workflows of
  a live one; a dead worker's workflows are handed to the live ones by the watcher of
  ``_liveness``.

Pass ``executor_id=`` to choose it yourself (a worker restarted under its old id
recovers its own workflows).
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Generator
from contextlib import contextmanager
from typing import Final

from dbos import DBOS, DBOSConfig
from dbos import error as dbos_error

from ._liveness import Liveness

__all__ = ["SQLITE_EXECUTOR_ID", "check_not_launched", "launch", "needs_launch", "shutdown"]

SQLITE_EXECUTOR_ID: Final = "stageware-local"

_POSTGRES: Final = ("postgresql", "postgres")

# Whether launch() has run in this process and shutdown() has not: a durable agent built
# after it would have its workflows left out of the recovery that launch started.
_launched = False

# This worker's liveness lock and watcher (PostgreSQL only), from launch() to shutdown().
_liveness: Liveness | None = None


def launch(
    *,
    name: str,
    database_url: str,
    executor_id: str | None = None,
    config: DBOSConfig | None = None,
    watch_seconds: float = 3.0,
    liveness_url: str | None = None,
) -> DBOS:
    """Configure and launch DBOS for this process; build every ``DurableAgent`` before.

    Args:
        name: The application's name (DBOS's ``name``); every worker of one application
            uses the same.
        database_url: DBOS's system database: ``sqlite:///relative.db``,
            ``sqlite:////absolute.db``, or a ``postgresql://`` URL (a Unix socket
            directory as ``?host=/dir``). It may be the database the sessions are in: DBOS
            keeps its tables in a schema of its own (``dbos``).
        executor_id: This process's executor id; by default ``stageware-local`` on SQLite
            and a new one per process on PostgreSQL (see the module).
        config: More DBOS configuration (``DBOSConfig`` keys, such as ``log_level``
            or ``sys_db_pool_size``), applied over the above.
        watch_seconds: On PostgreSQL, how often this worker looks for dead workers, whose
            workflows it hands back to DBOS; a dead worker's workflows
            resume within about this long. Unused on SQLite.
        liveness_url: On PostgreSQL, the same database for the connection that holds this
            worker's liveness lock (*database_url* when ``None``). A session-level advisory
            lock needs a server connection of its own: when *database_url* goes through
            PgBouncer, point this one at PostgreSQL directly. A pooled connection is
            refused (``PooledConnectionError``).

    Returns:
        The DBOS instance, launched: workflows left PENDING by this executor id are being
        recovered.

    Raises:
        ValueError: *database_url* is neither an SQLite nor a PostgreSQL URL, or
            *liveness_url* is given with SQLite or is no PostgreSQL URL.
        PooledConnectionError: The lock's connection goes through a connection pooler.
        RuntimeError: DBOS is already launched by ``launch()`` in this process.
    """
    global _launched, _liveness
    if _launched:
        raise RuntimeError(
            "stageware.dbos.launch(): DBOS is already launched in this process; call "
            "stageware.dbos.shutdown() first to launch it again"
        )
    sqlite = _database_kind(database_url) == "sqlite"
    if liveness_url is not None and (
        sqlite or liveness_url.partition("://")[0].partition("+")[0].lower() not in _POSTGRES
    ):
        raise ValueError(
            "stageware.dbos.launch(liveness_url=...): the liveness lock is PostgreSQL's; "
            "give a postgresql:// URL of DBOS's database, and only with a PostgreSQL "
            "database_url (SQLite has no lock)"
        )
    if executor_id is None:
        executor_id = SQLITE_EXECUTOR_ID if sqlite else _new_executor_id()
    settings: DBOSConfig = {
        "name": name,
        "system_database_url": database_url,
        "executor_id": executor_id,
    }
    settings.update(config or {})
    liveness = None
    if not sqlite:
        liveness = Liveness(
            _libpq_url(liveness_url or database_url),
            executor_id=settings.get("executor_id") or executor_id,
            application_name=name,
            system_schema=settings.get("dbos_system_schema") or "dbos",
            watch_seconds=watch_seconds,
        )
        # Before DBOS launches: no workflow of this executor exists while its lock is free.
        liveness.hold()
    try:
        dbos = DBOS(config=settings)
        DBOS.launch()
    except BaseException:
        if liveness is not None:
            liveness.close()
        raise
    if liveness is not None:
        liveness.start()
    _liveness = liveness
    _launched = True
    return dbos


def shutdown(*, workflow_completion_timeout: int = 0) -> None:
    """Stop DBOS in this process (its workflows stay PENDING, for recovery).

    Args:
        workflow_completion_timeout: Seconds to let running workflows finish first.
    """
    global _launched, _liveness
    # The watcher first: a worker shutting down recovers nobody; its lock goes last, once
    # DBOS stopped running its workflows (they stay PENDING, for the other workers).
    liveness, _liveness = _liveness, None
    if liveness is not None:
        # Stopped before DBOS is: a pass that found a dead worker would otherwise hand its
        # workflows to a DBOS already destroyed ("accessed before DBOS was launched").
        liveness.stop()
    try:
        DBOS.destroy(workflow_completion_timeout_sec=workflow_completion_timeout)
    finally:
        if liveness is not None:
            liveness.close()
    _launched = False


def check_not_launched(what: str) -> None:
    """Refuse to register *what* once ``launch()`` has run (DBOS would not recover it)."""
    if _launched:
        raise RuntimeError(
            f"{what}: build every DurableAgent before stageware.dbos.launch(): DBOS "
            "recovers only the workflows registered when it launches"
        )


@contextmanager
def needs_launch(what: str) -> Generator[None]:
    """Run DBOS calls for *what*; DBOS's own error when it is not launched yet ("No DBOS
    was created yet") is raised as one that names ``stageware.dbos.launch``.

    Only that error: DBOS launched by hand (``DBOS(config=...)``, ``DBOS.launch()``)
    works as well, and its other errors are raised as they are.
    """
    try:
        yield
    except dbos_error.DBOSException as error:
        if _launched or not any(sign in str(error) for sign in _NOT_LAUNCHED):
            raise
        raise RuntimeError(
            f"{what}: DBOS is not launched in this process; call "
            "stageware.dbos.launch(name=..., database_url=...) first, after building every "
            f"DurableAgent (DBOS said: {error})"
        ) from error


# What DBOS 3.4's errors say when it was not created or not launched.
_NOT_LAUNCHED: Final = ("No DBOS was created yet", "before DBOS was launched")


def _database_kind(url: str) -> str:
    scheme = url.partition("://")[0].partition("+")[0].lower()
    if scheme == "sqlite":
        return "sqlite"
    if scheme in _POSTGRES:
        return "postgresql"
    # Only the scheme is shown: the rest may hold a password.
    got = f"a {scheme!r} URL" if "://" in url else "no URL"
    raise ValueError(
        f"stageware.dbos.launch(database_url=...): use sqlite:///PATH or postgresql://..., "
        f"got {got}"
    )


def _libpq_url(url: str) -> str:
    """*url* as libpq reads it: SQLAlchemy's ``postgresql+driver://`` without the driver."""
    scheme, separator, rest = url.partition("://")
    return f"{scheme.partition('+')[0]}{separator}{rest}"


def _new_executor_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
