"""Fixtures: a store of every kind, and more stores on the same database.

``store`` runs a test on the memory, SQLite and Postgres stores; ``reopen()`` makes
another store on the same database, as another process would have one (for memory, the
same store: nothing else can reach its sessions). ``shared_spec`` names an SQLite or
Postgres database for tests that start worker processes.

``private_postgres`` is a server of a test module's own, to restart and stall.

Without ``STAGEWARE_TEST_POSTGRES_URL`` the Postgres cases skip, saying how to run them;
when ``CI`` is set they fail instead, so CI never passes without having run them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from stageware._host.sessions import SessionStore
from tests.ci import skip_or_fail

from .private_server import PrivateServer, server_binaries_present
from .stores import (
    HOW_TO_RUN_POSTGRES,
    POSTGRES_URL_VARIABLE,
    StoreSpec,
    close_store,
    fresh_schema_name,
    open_store,
    postgres_url,
    with_database,
)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of the test server's database: under pytest-xdist, a database per worker.

    Each test works in a schema of its own, but some tests count the database's schemas,
    so parallel workers must not share one database.
    """
    url = postgres_url()
    if url is None:
        skip_or_fail(HOW_TO_RUN_POSTGRES)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        yield url
        return
    yield from worker_database(url, worker)


def worker_database(url: str, worker: str) -> Iterator[str]:
    """A fresh database for pytest-xdist's *worker* on *url*'s server: its URL, then dropped.

    Made anew (a crashed run may have left one), and dropped with its connections at the
    end. The server's user must be allowed to create databases (the CI server's is).
    """
    import psycopg
    from psycopg import sql

    name = f"{_database_name(url)}_{worker}"
    create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with psycopg.connect(url, autocommit=True) as connection:
        try:
            connection.execute(drop)
            connection.execute(create)
        except psycopg.errors.InsufficientPrivilege:
            pytest.fail(
                f"under pytest-xdist (-n) each worker makes a database of its own, {name!r}, "
                f"and the user of {POSTGRES_URL_VARIABLE} may not: grant it CREATEDB, or "
                "run the Postgres tests without -n",
                pytrace=False,
            )
    try:
        yield with_database(url, name)
    finally:
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(drop)


def _database_name(url: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    name = conninfo_to_dict(url).get("dbname")
    return str(name) if name else "stageware_test"


@pytest.fixture(scope="module")
def private_postgres() -> Iterator[PrivateServer]:
    """A server of the module's own, which its tests restart and stall (see private_server).

    It needs the server's binaries (as the CI server does): without them the tests skip,
    and fail when ``CI`` is set.
    """
    if not server_binaries_present():
        message = "the Postgres outage tests start a server of their own: install postgresql"
        skip_or_fail(message)
    # Not under pytest's own temporary directory, which the postgres user (the server's,
    # when the tests run as root) may not enter; `stop` deletes it.
    server = PrivateServer.start(Path(tempfile.mkdtemp(prefix="stageware-pg-")))
    yield server
    server.stop()


@pytest.fixture
def postgres_spec(postgres_server: str) -> Iterator[StoreSpec]:
    """A schema of this test's own on the test server, dropped afterwards."""
    import psycopg
    from psycopg import sql

    spec = StoreSpec("postgres", postgres_server, fresh_schema_name())
    yield spec
    with psycopg.connect(postgres_server, autocommit=True) as connection:
        connection.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(spec.schema))
        )


def _spec(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    if kind == "memory":
        return StoreSpec("memory")
    if kind == "sqlite":
        return StoreSpec("sqlite", str(tmp_path / "sessions.db"))
    spec: StoreSpec = request.getfixturevalue("postgres_spec")
    return spec


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    return _spec(request.param, request, tmp_path)


@pytest.fixture(params=["sqlite", "postgres"])
def shared_spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    """A database that several processes can share."""
    return _spec(request.param, request, tmp_path)


@pytest.fixture
def opener() -> Iterator[Callable[[StoreSpec], SessionStore]]:
    """``opener(spec)``: a new store on *spec*'s database, closed after the test."""
    opened: list[SessionStore] = []

    def open_(spec: StoreSpec) -> SessionStore:
        store = open_store(spec)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        close_store(store)


@pytest.fixture
def store(spec: StoreSpec, opener: Callable[[StoreSpec], SessionStore]) -> SessionStore:
    return opener(spec)


@pytest.fixture
def reopen(
    spec: StoreSpec, store: SessionStore, opener: Callable[[StoreSpec], SessionStore]
) -> Callable[[], SessionStore]:
    """Another store on ``store``'s database (the same one for memory)."""
    if spec.kind == "memory":
        return lambda: store
    return lambda: opener(spec)
