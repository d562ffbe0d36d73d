"""The Postgres store through a restart, a stall and a lock, on a server the tests abuse.

A restart (``pg_ctl restart``) ends every connection the pool holds: the store checks
each connection as it takes it from the pool and runs a call that lost its connection
again, so the calls after a restart work. A save whose answer was lost after the server
committed it recognises its own write when it is sent again, and is not refused as a
conflict by its own success. A call held by a row lock, or by a server that stopped
answering (``SIGSTOP``), ends within its bound with ``SessionTimeoutError``, also when
the caller's own cancellation (``anyio.fail_after``) came first; the client cuts a
connection at the call's deadline, and never one whose block had ended. The sessions guide's
example runs against the live and the stalled server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.to_thread
import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

from stageware._host.sessions import (
    Escalation,
    SessionConflictError,
    SessionStore,
    SessionTimeoutError,
)
from stageware._host.sessions._postgres_deadline import CallDeadline
from stageware.postgres import PostgresSessionStore
from tests.readme import readme_blocks

from .private_server import BOUND, STATEMENT_TIMEOUT, PrivateServer, bounded_store
from .stores import StoreSpec, fresh_schema_name, make_snapshot


@pytest.fixture
def store(private_postgres: PrivateServer) -> Iterator[PostgresSessionStore]:
    with bounded_store(private_postgres) as store:
        yield store


def _save(store: SessionStore, version: int, *, turn: int = 0, owner: str = "w") -> int:
    return store.save(
        "s1", make_snapshot(turn), expected_version=version, owner=owner, lease_seconds=30
    )


def _warm(store: PostgresSessionStore) -> None:
    """Fill the pool: both connections in use at once, then back in the pool."""
    both = threading.Barrier(2)

    def use() -> None:
        both.wait()
        store.session_ids()

    threads = [threading.Thread(target=use) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


# --- A restart -----------------------------------------------------------------------------


def _calls(store: PostgresSessionStore) -> list[tuple[str, Callable[[], object]]]:
    escalation = Escalation.new(
        "s2", queue="refunds", hook="tool.before", middleware="limit", reason="r", event={}
    )
    return [
        ("load", lambda: store.load("s1")),
        ("save", lambda: _save(store, 1, turn=2)),
        ("renew", lambda: store.renew("s1", version=2, owner="w", lease_seconds=30)),
        ("session_ids", store.session_ids),
        (
            "save an escalation",
            lambda: store.save(
                "s2",
                make_snapshot(),
                expected_version=0,
                owner="w",
                lease_seconds=None,
                escalation=escalation,
            ),
        ),
        ("open_escalation", lambda: store.open_escalation("s2")),
        ("escalations", lambda: store.escalations("refunds")),
        ("claim", lambda: store.claim_escalation(escalation.id, by="ana")),
        ("resolve", lambda: store.resolve_escalation(escalation.id, by="ana", resolution="ok")),
        ("delete", lambda: store.delete("s2")),
    ]


def test_every_call_works_right_after_a_restart(
    store: PostgresSessionStore, private_postgres: PrivateServer
) -> None:
    _save(store, 0)
    for name, call in _calls(store):
        _warm(store)
        private_postgres.restart()
        try:
            call()
        except Exception as error:
            pytest.fail(f"{name} after a restart: {error!r}")
    stored = store.load("s1")
    assert stored is not None
    assert stored.version == 2


# --- A save whose answer was lost ----------------------------------------------------------


class _LoseAnswerAfterCommit(psycopg.Cursor[Any]):
    """Runs a save, which the server commits, then loses the connection before its answer.

    The answer arrived (psycopg has it), but the caller never sees it: the socket is shut
    down and the next read fails with the driver's own error for a dropped connection,
    as when a connection drops between the server's commit and the client's read.
    ``between`` runs in that gap (another worker's save, say).
    """

    armed: ClassVar[threading.Event] = threading.Event()
    between: ClassVar[list[Callable[[], object]]] = []

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        result = super().execute(query, params, **kwargs)
        text = query.as_string(self.connection) if hasattr(query, "as_string") else str(query)
        if "written AS" in text and self.armed.is_set():
            self.armed.clear()
            for call in self.between:
                call()
            # The socket shut down under the driver, as a dropped connection looks to it.
            with socket.socket(fileno=os.dup(self.connection.pgconn.socket)) as duplicate:
                duplicate.shutdown(socket.SHUT_RDWR)
            super().execute("SELECT 1")  # the read that finds the connection gone
        return result


@pytest.fixture
def losing_pool(postgres_server: str) -> Iterator[ConnectionPool[Any]]:
    with ConnectionPool(
        postgres_server,
        kwargs={"autocommit": True, "cursor_factory": _LoseAnswerAfterCommit},
        min_size=1,
        max_size=2,
    ) as pool:
        yield pool
    _LoseAnswerAfterCommit.armed.clear()
    _LoseAnswerAfterCommit.between.clear()


@pytest.mark.parametrize("lease_seconds", [30.0, None], ids=["claim", "release"])
def test_a_save_whose_answer_was_lost_after_commit_is_its_own_success(
    losing_pool: ConnectionPool[Any], postgres_spec: StoreSpec, lease_seconds: float | None
) -> None:
    store = PostgresSessionStore(losing_pool, schema=postgres_spec.schema)
    assert _save(store, 0) == 1
    _LoseAnswerAfterCommit.armed.set()

    version = store.save(
        "s1", make_snapshot(2), expected_version=1, owner="w", lease_seconds=lease_seconds
    )

    assert not _LoseAnswerAfterCommit.armed.is_set(), "the answer was not lost"
    assert version == 2
    stored = store.load("s1")
    assert stored is not None
    assert stored.version == 2
    assert stored.snapshot == make_snapshot(2)


def test_another_workers_save_in_that_gap_is_still_a_conflict(
    losing_pool: ConnectionPool[Any], postgres_spec: StoreSpec
) -> None:
    store = PostgresSessionStore(losing_pool, schema=postgres_spec.schema)
    other = PostgresSessionStore(postgres_spec.target, schema=postgres_spec.schema)
    _save(store, 0)
    # This worker's save releases its lease; another worker saves on top before the
    # first one reads its answer.
    _LoseAnswerAfterCommit.between.append(lambda: _save(other, 2, turn=9, owner="other"))
    _LoseAnswerAfterCommit.armed.set()

    with pytest.raises(SessionConflictError) as raised:
        store.save("s1", make_snapshot(2), expected_version=1, owner="w", lease_seconds=None)

    assert raised.value.found_version == 3
    other.close()


# --- Bounded calls ---------------------------------------------------------------------------


def _held(url: str, schema: str, seconds: float) -> threading.Thread:
    """A thread that holds session s1's row lock for *seconds* (started once it holds it)."""
    locked = threading.Event()

    def hold() -> None:
        with psycopg.connect(url) as connection, connection.transaction():
            lock = sql.SQL("SELECT 1 FROM {} WHERE session_id = %s FOR UPDATE")
            connection.execute(lock.format(sql.Identifier(schema, "sessions")), ("s1",))
            locked.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold)
    thread.start()
    assert locked.wait(10)
    return thread


def test_a_save_held_by_a_row_lock_ends_at_the_lock_timeout(
    store: PostgresSessionStore, private_postgres: PrivateServer
) -> None:
    _save(store, 0)
    holder = _held(private_postgres.url, store.schema, 5.0)
    started = time.monotonic()

    with pytest.raises(SessionTimeoutError) as raised:
        _save(store, 1, turn=2)

    elapsed = time.monotonic() - started
    holder.join()
    assert elapsed < BOUND, f"the save waited {elapsed:.2f} s"
    message = str(raised.value)
    assert message.startswith(f"cannot save session 's1' in {private_postgres.url.split('?')[0]}")
    assert "a lock that another connection holds until the server's lock_timeout (0.8 s)" in message
    assert "nothing was written" in message
    stored = store.load("s1")
    assert stored is not None
    assert stored.version == 1


def test_the_client_cuts_a_guarded_block_at_its_deadline_and_only_then(
    postgres_server: str,
) -> None:
    with psycopg.connect(postgres_server, autocommit=True) as finished_early:
        early = CallDeadline(0.2)
        with early.guard(finished_early):
            finished_early.execute("SELECT 1")
        time.sleep(0.5)
        assert finished_early.execute("SELECT 2").fetchone() == (2,)
        assert not early.cut

    with psycopg.connect(postgres_server, autocommit=True) as overran:
        late = CallDeadline(0.3)
        started = time.monotonic()
        with pytest.raises(psycopg.OperationalError), late.guard(overran):
            overran.execute("SELECT pg_sleep(10)")
        assert time.monotonic() - started < BOUND
        assert late.cut
        assert overran.broken


@pytest.mark.parametrize("warm", [True, False], ids=["pooled connection", "new connection"])
def test_a_call_to_a_stalled_server_ends_within_its_bound(
    private_postgres: PrivateServer, warm: bool
) -> None:
    with PostgresSessionStore(
        private_postgres.url, schema=fresh_schema_name(), statement_timeout=STATEMENT_TIMEOUT
    ) as store:
        if warm:
            _save(store, 0)
        with private_postgres.stalled():
            started = time.monotonic()
            with pytest.raises(SessionTimeoutError) as raised:
                store.load("s1")
            elapsed = time.monotonic() - started

        assert elapsed < BOUND, f"the load waited {elapsed:.2f} s"
        assert raised.value.seconds == STATEMENT_TIMEOUT + 0.5
        message = str(raised.value)
        assert message.startswith("cannot load session 's1' in postgresql://")
        assert "(stalled, or cut off)" in message
        # The server answers again: so does the store, on a new connection.
        if warm:
            assert store.load("s1") is not None
        else:
            assert store.load("s1") is None


def test_a_stalled_call_ends_within_its_bound_under_the_callers_fail_after(
    store: PostgresSessionStore, private_postgres: PrivateServer
) -> None:
    """``fail_after`` cannot stop a thread; the store's bound ends the call for it."""
    _save(store, 0)

    async def load_with_a_deadline() -> None:
        with anyio.fail_after(0.2):
            await anyio.to_thread.run_sync(store.load, "s1")

    with private_postgres.stalled():
        started = time.monotonic()
        with pytest.raises((TimeoutError, SessionTimeoutError)):
            anyio.run(load_with_a_deadline)
        elapsed = time.monotonic() - started

    assert elapsed < BOUND, f"the load held the caller's deadline for {elapsed:.2f} s"


# --- The sessions guide's example -----------------------------------------------------------


def _readme_example() -> str:
    blocks = readme_blocks("### Sessions in PostgreSQL\n")
    (example,) = [block for block in blocks if "statement_timeout" in block]
    return example


def test_the_readme_example_loads_and_reports_a_stalled_server(
    private_postgres: PrivateServer, tmp_path: Path
) -> None:
    script = tmp_path / "example.py"
    script.write_text(_readme_example(), encoding="utf-8")
    environment = {**os.environ, "DATABASE_URL": private_postgres.url}

    def run() -> str:
        return subprocess.run(
            [sys.executable, str(script)], env=environment, capture_output=True, text=True
        ).stdout

    try:
        assert run() == "None\n"
        with private_postgres.stalled():
            reported = run()
        assert reported.startswith("the database held the call past 2.5 s: cannot load session")
        assert "(stalled, or cut off)" in reported
    finally:
        with psycopg.connect(private_postgres.url, autocommit=True) as connection:
            connection.execute('DROP SCHEMA IF EXISTS "app sessions" CASCADE')
