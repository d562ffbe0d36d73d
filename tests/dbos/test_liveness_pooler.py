"""The liveness lock's own connection (``launch(liveness_url=...)``), and a pooled one refused.

On the real PostgreSQL server (``STAGEWARE_TEST_POSTGRES_URL``) and, for the pooled cases,
a real PgBouncer in transaction mode in front of it, started here on a Unix socket of its
own (Debian's ``pgbouncer``; without it those cases skip, and fail when ``CI`` is set).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from stageware._dbos._liveness import Liveness, check_direct, executor_lock_key

dbos = pytest.importorskip("dbos")

from stageware.dbos import PooledConnectionError, launch, shutdown  # noqa: E402
from tests.ci import skip_or_fail  # noqa: E402
from tests.host.sessions.conftest import worker_database  # noqa: E402
from tests.host.sessions.stores import HOW_TO_RUN_POSTGRES, postgres_url  # noqa: E402

_POOLER_PORT = 6432  # names the socket file only: PgBouncer listens on no TCP port here


@pytest.fixture
def postgres() -> str:
    return postgres_url() or skip_or_fail(HOW_TO_RUN_POSTGRES)


@pytest.fixture
def pooled(postgres: str) -> Iterator[str]:
    """A URL of the test database through PgBouncer in transaction mode, one server connection."""
    binary = shutil.which("pgbouncer") or shutil.which("/usr/sbin/pgbouncer")
    if binary is None:
        skip_or_fail("the pooled cases need PgBouncer: apt-get install pgbouncer")
    parts = urlsplit(postgres)
    query = parse_qs(parts.query)
    server = (
        f"host={query.get('host', [parts.hostname or 'localhost'])[0]}"
        f" port={query.get('port', [str(parts.port or 5432)])[0]}"
        f" dbname={parts.path.lstrip('/')} user={parts.username or 'postgres'}"
    )
    directory = Path(tempfile.mkdtemp(prefix="stageware-pgbouncer-"))
    (directory / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"pooled = {server}\n"
        "[pgbouncer]\n"
        "listen_addr =\n"
        f"listen_port = {_POOLER_PORT}\n"
        f"unix_socket_dir = {directory}\n"
        "auth_type = any\n"
        "pool_mode = transaction\n"
        # One server connection: every client's transactions share it, as under load.
        "default_pool_size = 1\n"
        f"logfile = {directory}/pgbouncer.log\n"
    )
    command = [binary, str(directory / "pgbouncer.ini")]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root
        shutil.chown(directory, "postgres")
        shutil.chown(directory / "pgbouncer.ini", "postgres")
        command = ["runuser", "-u", "postgres", "--", *command]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        socket = directory / f".s.PGSQL.{_POOLER_PORT}"
        deadline = time.monotonic() + 10
        while not socket.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                output = process.stdout.read().decode() if process.stdout else ""
                raise AssertionError(f"PgBouncer did not start: {output}")
            time.sleep(0.05)
        yield f"postgresql://postgres@/pooled?host={directory}&port={_POOLER_PORT}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
        shutil.rmtree(directory, ignore_errors=True)


def test_through_a_transaction_pooler_another_client_gets_the_lock(pooled: str) -> None:
    # Why a pooled connection is refused: the lock stays on the server connection, and the
    # next client handed that connection "takes" it again, so a live worker looks dead.
    key = executor_lock_key(f"pooled-{uuid.uuid4().hex[:6]}")
    with (
        psycopg.connect(pooled, autocommit=True) as first,
        psycopg.connect(pooled, autocommit=True) as second,
    ):
        assert first.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone() == (True,)
        assert second.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone() == (True,)
        second.execute("SELECT pg_advisory_unlock_all()")


def test_a_pooled_connection_is_refused_for_the_lock(pooled: str) -> None:
    liveness = Liveness(pooled, executor_id=f"pooled-{uuid.uuid4().hex[:6]}", application_name="x")
    with pytest.raises(PooledConnectionError, match=r"liveness_url=.*bypasses the pooler"):
        liveness.hold()
    liveness.close()


def test_a_direct_connection_passes_the_check(postgres: str) -> None:
    with psycopg.connect(postgres, autocommit=True) as connection:
        check_direct(connection, "direct")  # raises if not


@pytest.fixture
def database(postgres: str) -> Iterator[str]:
    """A database of the test's own for DBOS's tables, dropped after."""
    yield from worker_database(postgres, f"dbos_pool_{uuid.uuid4().hex[:10]}")


def _lock_holder(url: str, executor_id: str) -> str | None:
    """The application name of the server process that holds *executor_id*'s lock."""
    key = executor_lock_key(executor_id)
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
            " WHERE l.locktype = 'advisory' AND l.granted"
            " AND ((l.classid::bigint << 32) | l.objid::bigint) = %s",
            (key,),
        ).fetchone()
    return None if row is None else str(row[0])


def test_launch_takes_the_lock_on_liveness_url(database: str, pooled: str) -> None:
    executor_id = f"own-{uuid.uuid4().hex[:6]}"
    # The lock goes where liveness_url says: through the pooler it is refused, although
    # database_url is direct, and DBOS is not launched.
    with pytest.raises(PooledConnectionError, match=executor_id):
        launch(name="pooled", database_url=database, executor_id=executor_id, liveness_url=pooled)
    # Without liveness_url the lock goes where DBOS goes: refused there too.
    with pytest.raises(PooledConnectionError, match="liveness_url"):
        launch(name="pooled", database_url=pooled, executor_id=executor_id)

    launch(name="pooled", database_url=database, executor_id=executor_id, liveness_url=database)
    try:
        assert _lock_holder(database, executor_id) == f"stageware-liveness:{executor_id}"
    finally:
        shutdown()
    assert _lock_holder(database, executor_id) is None


def test_liveness_url_is_postgresql_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="liveness_url"):
        launch(
            name="x",
            database_url=f"sqlite:///{tmp_path / 'dbos.db'}",
            liveness_url="postgresql://localhost/x",
        )
    with pytest.raises(ValueError, match="liveness_url"):
        launch(name="x", database_url="postgresql://localhost/x", liveness_url="mysql://h/x")
