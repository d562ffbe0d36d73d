"""The PostgreSQL session store, for agents served by many workers on many machines.

``PostgresSessionStore`` keeps sessions in a PostgreSQL database, with the guarantees of
``SQLiteSessionStore`` (conditional saves, leases) across machines. It needs psycopg 3 and
its connection pool:

```bash
pip install 'stageware[postgres]'
```
"""

from __future__ import annotations

try:
    from stageware._host.sessions._postgres import PostgresSessionStore
except ModuleNotFoundError as _missing:
    # Only a missing driver gets the install hint; any other missing module is a real bug.
    if _missing.name is None or _missing.name.partition(".")[0] not in ("psycopg", "psycopg_pool"):
        raise
    raise ImportError(
        "stageware.postgres needs the 'psycopg' and 'psycopg_pool' packages: "
        "pip install 'stageware[postgres]'"
    ) from _missing

__all__ = ["PostgresSessionStore"]
