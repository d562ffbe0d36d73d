"""Fixtures: DBOS launched for a test on SQLite and on PostgreSQL, with a session store.

``durable`` runs a test twice: DBOS's system database and the sessions in SQLite files
of the test's own, then in fresh schemas on the PostgreSQL server the session store tests
use (``STAGEWARE_TEST_POSTGRES_URL``; without it the case skips, and fails when ``CI`` is
set). DBOS is launched with ``tests.dbos.kinds.SETUP`` filled in, and shut down after.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ci import skip_or_fail
from tests.host.sessions.conftest import (
    postgres_server,
    postgres_spec,
    shared_spec,
    worker_database,
)
from tests.host.sessions.stores import (
    HOW_TO_RUN_POSTGRES,
    StoreSpec,
    fresh_database,
    fresh_schema_name,
    postgres_url,
)

from .kinds import SETUP, Setup, launch_for_tests, shutdown_for_tests

# The session store tests' fixtures, for the tests of the durable waits.
__all__ = ["postgres_server", "postgres_spec", "shared_spec"]


def setup_for(backend: str, directory: Path) -> Iterator[Setup]:
    """A ``Setup`` on *backend* (``sqlite`` or ``postgres``) with its files in *directory*.

    On PostgreSQL the sessions are in a schema of the test's own, and DBOS in a database
    of the test's own (dropped after), where the command line's DBOS client finds it.
    """
    if backend == "sqlite":
        yield Setup(
            store_spec=StoreSpec("sqlite", str(directory / "sessions.db")).to_json(),
            dbos_url=f"sqlite:///{directory / 'dbos.db'}",
            tool_log=str(directory / "tools.log"),
        )
        return
    url = postgres_url()
    if url is None:
        skip_or_fail(HOW_TO_RUN_POSTGRES)
    for dbos_url in worker_database(url, f"dbos_{uuid.uuid4().hex[:12]}"):
        yield Setup(
            store_spec=StoreSpec("postgres", url, fresh_schema_name()).to_json(),
            dbos_url=dbos_url,
            executor_id=f"tests-{uuid.uuid4().hex[:12]}",
            tool_log=str(directory / "tools.log"),
        )


@pytest.fixture
def database() -> Iterator[str]:
    """A database of the test's own on the test server, its URL; dropped afterwards."""
    with fresh_database(postgres_url() or skip_or_fail(HOW_TO_RUN_POSTGRES)) as fresh:
        yield fresh


def use(setup: Setup) -> None:
    """Make *setup* this process's ``SETUP``."""
    for name, value in vars(setup).items():
        setattr(SETUP, name, value)
    SETUP.model_calls = []


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def setup(backend: str, tmp_path: Path) -> Iterator[Setup]:
    """``SETUP`` for the test, not launched yet."""
    for made in setup_for(backend, tmp_path):
        use(made)
        yield SETUP


@pytest.fixture
def durable(setup: Setup) -> Iterator[Setup]:
    """DBOS launched on the test's databases, and ``SETUP`` with its store open."""
    launch_for_tests()
    try:
        yield setup
    finally:
        shutdown_for_tests()
