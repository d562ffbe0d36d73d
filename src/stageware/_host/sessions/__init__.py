"""Sessions: what survives a process restart, and the stores that keep it.

- ``_store``: ``SessionSnapshot``, the ``SessionStore`` protocol, the JSON encoding and
  ``MemorySessionStore``.
- ``_sqlite``: ``SQLiteSessionStore``.
"""

from ._sqlite import SQLiteSessionStore
from ._store import (
    SNAPSHOT_VERSION,
    MemorySessionStore,
    SessionError,
    SessionSnapshot,
    SessionStore,
)

__all__ = [
    "SNAPSHOT_VERSION",
    "MemorySessionStore",
    "SQLiteSessionStore",
    "SessionError",
    "SessionSnapshot",
    "SessionStore",
]
