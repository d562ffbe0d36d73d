"""The PostgreSQL session store, for agents served by many workers on many machines.

``PostgresSessionStore`` keeps sessions in a PostgreSQL database, with the guarantees of
``SQLiteSessionStore`` (conditional saves, leases) across machines. It needs psycopg 3 and
its connection pool:

```bash
pip install -e '.[postgres]'    # in a clone; the README's Install gives a git URL form
```
"""

from __future__ import annotations

from stageware import _extras

try:
    from stageware._host.sessions._postgres import PostgresSessionStore
except ModuleNotFoundError as _missing:
    # Only a missing driver gets the install hint; any other missing module is a real bug.
    if _missing.name is None or _missing.name.partition(".")[0] not in ("psycopg", "psycopg_pool"):
        raise
    raise ImportError(
        "stageware.postgres needs psycopg and psycopg_pool, from " + _extras.needs_extra("postgres")
    ) from _missing

__all__ = ["PostgresSessionStore"]
