"""A ``SessionStore`` in an SQLite file, so sessions survive a process restart.

One table, ``stageware_sessions``, holds one JSON document per session. The file's
``user_version`` pragma records the table format; a file from a newer stageware is refused
rather than misread or overwritten. Each call opens its own connection: calls arrive on
worker threads, and an SQLite connection is not something to share between them. WAL mode
and a busy timeout let several processes use one file.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, TypeVar, final

from ._store import SessionError, SessionSnapshot, decode_snapshot, encode_snapshot

__all__ = ["SQLiteSessionStore"]

_T = TypeVar("_T")

_TABLE_FORMAT: Final = 1
"""The table layout this module writes, kept in ``PRAGMA user_version``."""

# The table name carries the library's name so the file can be shared with other tables.
# A rowid table, not WITHOUT ROWID: documents are large, which suits rowid tables better.
_CREATE_TABLE: Final = """
CREATE TABLE IF NOT EXISTS stageware_sessions (
    session_id TEXT PRIMARY KEY NOT NULL,
    document TEXT NOT NULL,
    updated_at TEXT NOT NULL
)
"""

_UPSERT: Final = """
INSERT INTO stageware_sessions (session_id, document, updated_at) VALUES (?, ?, ?)
ON CONFLICT (session_id) DO UPDATE SET
    document = excluded.document, updated_at = excluded.updated_at
"""


@final
class SQLiteSessionStore:
    """A ``SessionStore`` backed by an SQLite database file.

    The file and its table are created on first use. ``save`` replaces a session's
    snapshot in one transaction, so a crash leaves either the old snapshot or the new one,
    never half of one. The store is thread-safe and several processes may share a file.

    Args:
        path: The database file. A relative path is resolved against the current
            directory now, so a later ``chdir`` does not move the store.
        timeout: Seconds to wait for another connection's lock before giving up with a
            ``SessionError``.
    """

    __slots__ = ("_lock", "_path", "_ready", "_timeout")

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 10.0) -> None:
        raw = os.fspath(path)
        # Every call opens a new connection, and each one would see its own empty
        # in-memory database.
        if raw in ("", ":memory:"):
            raise ValueError(
                f"SQLiteSessionStore needs a database file, not {raw!r}; "
                "use MemorySessionStore for sessions kept in memory"
            )
        self._path = Path(os.path.abspath(raw))
        self._timeout = timeout
        self._lock = threading.Lock()
        self._ready = False

    @property
    def path(self) -> Path:
        """The absolute path of the database file."""
        return self._path

    def load(self, session_id: str) -> SessionSnapshot | None:
        """Return the snapshot saved for *session_id*, or ``None`` if there is none."""

        def read(connection: sqlite3.Connection) -> tuple[object] | None:
            row: tuple[object] | None = connection.execute(
                "SELECT document FROM stageware_sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            return row

        row = self._run(session_id, "load", read, write=False)
        if row is None:
            return None
        return decode_snapshot(row[0], session_id, str(self._path))

    def save(self, session_id: str, snapshot: SessionSnapshot) -> None:
        """Store *snapshot* for *session_id*, replacing any earlier one, in one transaction."""
        # Encode before touching the database: a value that is not JSON data fails here
        # and leaves the stored snapshot as it was.
        document = encode_snapshot(snapshot, session_id, str(self._path))
        updated_at = datetime.now(UTC).isoformat(timespec="milliseconds")

        def write(connection: sqlite3.Connection) -> None:
            connection.execute(_UPSERT, (session_id, document, updated_at))

        self._run(session_id, "save", write, write=True)

    def delete(self, session_id: str) -> None:
        """Forget *session_id*; deleting a session that does not exist is not an error."""

        def remove(connection: sqlite3.Connection) -> None:
            connection.execute("DELETE FROM stageware_sessions WHERE session_id = ?", (session_id,))

        self._run(session_id, "delete", remove, write=True)

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self._path)!r})"

    # --- Connections and transactions -----------------------------------------------------

    def _run(
        self,
        session_id: str,
        verb: str,
        action: Callable[[sqlite3.Connection], _T],
        *,
        write: bool,
    ) -> _T:
        """Run *action* in one transaction on a fresh connection.

        Any ``sqlite3`` failure becomes a ``SessionError`` that names the session and file.
        """
        self._ensure_table(session_id, verb)
        connection = self._connect(session_id, verb)
        try:
            # IMMEDIATE takes the write lock up front, so a writer waits (up to the
            # timeout) at BEGIN instead of failing halfway through with SQLITE_BUSY.
            connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            # Checked in every transaction, not only once: a newer stageware in another
            # process may have migrated the file since this store first opened it.
            self._check_format(connection, session_id, verb)
            result = action(connection)
            connection.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            raise self._failure(session_id, verb, exc) from exc
        finally:
            # Closing with a transaction still open rolls it back.
            connection.close()

    def _ensure_table(self, session_id: str, verb: str) -> None:
        """Create the table (and the file) on this store's first use."""
        with self._lock:
            if self._ready:
                return
            connection = self._connect(session_id, verb)
            try:
                self._use_wal(connection)
                connection.execute("BEGIN IMMEDIATE")
                found = self._user_version(connection)
                if found == 0:
                    connection.execute(_CREATE_TABLE)
                    connection.execute(f"PRAGMA user_version = {_TABLE_FORMAT}")
                else:
                    self._check_format(connection, session_id, verb)
                connection.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._failure(session_id, verb, exc) from exc
            finally:
                connection.close()
            self._ready = True

    def _use_wal(self, connection: sqlite3.Connection) -> None:
        """Put the file in WAL mode, which lets readers and one writer work side by side.

        The mode is a property of the file, so this is needed once, not per connection.
        """
        # A connection learns that the file is already in WAL mode only once it has read
        # from it; without this read the check below would report the default mode.
        self._user_version(connection)
        mode: tuple[str] = connection.execute("PRAGMA journal_mode").fetchone()
        if mode[0].lower() == "wal":
            return
        # Switching needs an exclusive lock. When two connections switch a new file at once,
        # SQLite fails one of them with SQLITE_BUSY straight away rather than let both wait
        # on each other, so retry by hand, up to the timeout.
        deadline = time.monotonic() + self._timeout
        delay = 0.001
        while True:
            try:
                connection.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                busy = exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
                if not busy or time.monotonic() >= deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _connect(self, session_id: str, verb: str) -> sqlite3.Connection:
        try:
            # isolation_level=None: transactions are begun and committed explicitly above,
            # not implicitly by the sqlite3 module. timeout sets SQLite's busy timeout.
            return sqlite3.connect(self._path, timeout=self._timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise self._failure(session_id, verb, exc) from exc

    def _check_format(self, connection: sqlite3.Connection, session_id: str, verb: str) -> None:
        found = self._user_version(connection)
        if found == _TABLE_FORMAT:
            return
        if found > _TABLE_FORMAT:
            detail = (
                f"it holds sessions in store format {found}, written by a newer stageware; "
                f"this stageware reads format {_TABLE_FORMAT}. Upgrade stageware to use it"
            )
        else:
            detail = (
                f"its user_version is {found}, which is not a stageware session store format "
                f"(this stageware reads format {_TABLE_FORMAT})"
            )
        raise SessionError(f"cannot {verb} session {session_id!r}: {self._path} {detail}")

    @staticmethod
    def _user_version(connection: sqlite3.Connection) -> int:
        row: tuple[int] = connection.execute("PRAGMA user_version").fetchone()
        return row[0]

    def _failure(self, session_id: str, verb: str, exc: sqlite3.Error) -> SessionError:
        return SessionError(f"cannot {verb} session {session_id!r} in {self._path}: {exc}")
