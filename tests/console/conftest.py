"""Fixtures: the session-store tests' own, so the console runs on every kind of store.

``store`` runs a test on the memory, SQLite and Postgres stores (a schema per test on the
test server; without ``STAGEWARE_TEST_POSTGRES_URL`` those cases skip, and fail in CI);
``shared_spec`` names an SQLite or Postgres database another process can open.
"""

from __future__ import annotations

from tests.host.sessions.conftest import (
    opener,
    postgres_server,
    postgres_spec,
    shared_spec,
    spec,
    store,
)

__all__ = ["opener", "postgres_server", "postgres_spec", "shared_spec", "spec", "store"]
