"""What only the Postgres store does: its schema, formats, pools, and hiding passwords.

Tests that need a server take ``postgres_spec`` (a fresh schema on the test server); the
others run everywhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, LiteralString
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from stageware import Agent, ScriptedModel
from stageware._host.sessions import (
    Escalation,
    SessionError,
    SessionStore,
    SessionTimeoutError,
    StoredSession,
)
from stageware.postgres import PostgresSessionStore
from tests.readme import page_of, readme_blocks

from .approvals import answered, approval_id, asked, utc
from .approvals import save as save_interrupts
from .stores import StoreSpec, fresh_database, make_snapshot, run_threads

SECRET = "hunter2-s3cr3t"


def execute(
    spec: StoreSpec, statement: sql.SQL | sql.Composed, *params: object
) -> list[tuple[Any, ...]]:
    """Run *statement* on the test server, outside any store; return its rows."""
    with psycopg.connect(spec.target, autocommit=True) as connection:
        cursor = connection.execute(statement, params or None)
        return cursor.fetchall() if cursor.description else []


def in_schema(spec: StoreSpec, text: LiteralString) -> sql.Composed:
    """*text* with ``{schema}`` replaced by the spec's schema, quoted."""
    return sql.SQL(text).format(schema=sql.Identifier(spec.schema))


def formats(spec: StoreSpec) -> list[tuple[Any, ...]]:
    return execute(spec, in_schema(spec, "SELECT format FROM {schema}.store_format"))


def index_names(spec: StoreSpec, table: str) -> list[str]:
    rows = execute(
        spec,
        sql.SQL("SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = %s"),
        spec.schema,
        table,
    )
    return sorted(name for (name,) in rows)


def table_names(spec: StoreSpec) -> list[str]:
    rows = execute(
        spec,
        sql.SQL(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = %s ORDER BY table_name"
        ),
        spec.schema,
    )
    return [name for (name,) in rows]


def save(store: SessionStore, session_id: str, version: int, turn: int = 0) -> int:
    return store.save(
        session_id, make_snapshot(turn), expected_version=version, owner="w", lease_seconds=None
    )


def every_call(store: SessionStore) -> list[Callable[[], object]]:
    return [
        lambda: store.load("s1"),
        lambda: save(store, "s1", 1, 2),
        lambda: store.renew("s1", version=1, owner="w", lease_seconds=1),
        lambda: store.delete("s1"),
        store.session_ids,
        lambda: store.open_escalation("s1"),
        lambda: store.escalations("refunds", status="open"),
        lambda: store.claim_escalation("e1", by="ana"),
        lambda: store.resolve_escalation("e1", by="ana", resolution="done"),
    ]


def escalation(session_id: str = "s1") -> Escalation:
    return Escalation.new(
        session_id,
        queue="refunds",
        hook="tool.before",
        middleware="limit",
        reason="too much",
        event={"amount": 900},
    )


@pytest.fixture
def open_postgres(
    opener: Callable[[StoreSpec], SessionStore],
) -> Callable[[StoreSpec], PostgresSessionStore]:
    def open_(spec: StoreSpec) -> PostgresSessionStore:
        store = opener(spec)
        assert isinstance(store, PostgresSessionStore)
        return store

    return open_


# --- The schema ----------------------------------------------------------------------------


def test_creates_its_schema_tables_and_format_on_first_use(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    store = open_postgres(postgres_spec)
    assert store.schema == postgres_spec.schema
    assert table_names(postgres_spec) == []  # made on first use

    save(store, "s1", 0)

    assert table_names(postgres_spec) == [
        "approvals",
        "escalations",
        "messages",
        "sessions",
        "store_format",
    ]
    assert formats(postgres_spec) == [(4,)]
    assert index_names(postgres_spec, "escalations") == [
        "escalations_by_queue",
        "escalations_by_session",
        "escalations_pkey",
        "escalations_unresolved",
    ]
    [(version, document, owner)] = execute(
        postgres_spec,
        in_schema(postgres_spec, "SELECT version, document, lease_owner FROM {schema}.sessions"),
    )
    assert (version, owner) == (1, None)
    assert isinstance(document, str)


def test_the_lease_expiry_is_the_servers_clock_plus_the_lease(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    store = open_postgres(postgres_spec)
    store.save("s1", make_snapshot(), expected_version=0, owner="w", lease_seconds=12.5)

    [(written, expires)] = execute(
        postgres_spec,
        in_schema(postgres_spec, "SELECT updated_at, lease_expires_at FROM {schema}.sessions"),
    )

    # Both instants come from one reading of the server's clock, never from this process.
    assert expires - written == timedelta(seconds=12.5)
    loaded = store.load("s1")
    assert loaded is not None
    assert loaded.lease is not None
    assert loaded.lease.expires_at == expires


def test_schemas_keep_their_sessions_apart(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    odd = StoreSpec("postgres", postgres_spec.target, f'{postgres_spec.schema} "Odd"; --')
    try:
        plain, quoted = open_postgres(postgres_spec), open_postgres(odd)
        save(plain, "s1", 0, 1)
        save(quoted, "s1", 0, 2)

        assert plain.load("s1") == StoredSession(make_snapshot(1), 1, None)
        assert quoted.load("s1") == StoredSession(make_snapshot(2), 1, None)
    finally:
        execute(odd, in_schema(odd, "DROP SCHEMA IF EXISTS {schema} CASCADE"))


def test_stores_that_start_together_create_the_schema_once(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    stores = [open_postgres(postgres_spec) for _ in range(8)]

    def create(index: int) -> None:
        save(stores[index], f"s{index}", 0, index)

    run_threads(len(stores), create)

    for index, store in enumerate(stores):
        assert store.load(f"s{index}") == StoredSession(make_snapshot(index), 1, None)
    assert formats(postgres_spec) == [(4,)]


def test_a_role_that_may_not_create_schemas_uses_tables_set_up_for_it(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    save(open_postgres(postgres_spec), "s1", 0)
    role = f"stageware_test_{uuid.uuid4().hex[:12]}"
    names = {"role": sql.Identifier(role), "schema": sql.Identifier(postgres_spec.schema)}
    # Not granted CREATE on the database: this role cannot create a schema, even one that
    # exists already (Postgres checks the privilege before IF NOT EXISTS).
    grants: list[LiteralString] = [
        "CREATE ROLE {role} LOGIN",
        "GRANT USAGE ON SCHEMA {schema} TO {role}",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}",
    ]
    for grant in grants:
        execute(postgres_spec, sql.SQL(grant).format(**names))
    try:
        conninfo = make_conninfo(postgres_spec.target, user=role)
        with PostgresSessionStore(conninfo, schema=postgres_spec.schema) as store:
            assert save(store, "s1", 1, 1) == 2
            assert store.load("s1") == StoredSession(make_snapshot(1), 2, None)
    finally:
        drops: list[LiteralString] = ["DROP OWNED BY {role}", "DROP ROLE {role}"]
        for statement in drops:
            execute(postgres_spec, sql.SQL(statement).format(**names))


# --- Formats -------------------------------------------------------------------------------


def set_format(spec: StoreSpec, value: LiteralString) -> None:
    execute(spec, in_schema(spec, f"UPDATE {{schema}}.store_format SET format = {value}"))


def test_refuses_a_newer_store_format(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    save(open_postgres(postgres_spec), "s1", 0)
    set_format(postgres_spec, "5")

    store = open_postgres(postgres_spec)
    for call in every_call(store):
        with pytest.raises(
            SessionError, match=r"store format 5, written by a newer stageware.*Upgrade"
        ) as caught:
            call()
        assert f"(schema {postgres_spec.schema})" in str(caught.value)

    set_format(postgres_spec, "4")
    assert open_postgres(postgres_spec).load("s1") == StoredSession(make_snapshot(), 1, None)


def test_an_open_store_notices_a_newer_format_and_writes_nothing(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    store = open_postgres(postgres_spec)
    save(store, "s1", 0)
    recorded = escalation("s1")
    store.save(
        "s2",
        make_snapshot(),
        expected_version=0,
        owner="w",
        lease_seconds=None,
        escalation=escalation("s2"),
    )
    set_format(postgres_spec, "5")

    calls: list[Callable[[], object]] = [
        *every_call(store),
        lambda: save(store, "s3", 0),
        lambda: store.save(
            "s1",
            make_snapshot(1),
            expected_version=1,
            owner="w",
            lease_seconds=None,
            escalation=recorded,
        ),
    ]
    for call in calls:
        with pytest.raises(SessionError, match="store format 5"):
            call()

    set_format(postgres_spec, "4")
    assert store.load("s1") == StoredSession(make_snapshot(), 1, None)
    assert store.load("s3") is None
    assert [e.session_id for e in store.escalations()] == ["s2"]


# The layout of format 1, as the stageware before escalations created it.
FORMAT_1: tuple[LiteralString, ...] = (
    "CREATE SCHEMA {schema}",
    "CREATE TABLE {schema}.sessions (session_id text PRIMARY KEY, "
    "version bigint NOT NULL CHECK (version > 0), document text NOT NULL, lease_owner text, "
    "lease_expires_at timestamptz, updated_at timestamptz NOT NULL)",
    "CREATE TABLE {schema}.store_format (format integer NOT NULL, "
    "one_row boolean PRIMARY KEY DEFAULT true CHECK (one_row))",
    "INSERT INTO {schema}.store_format (format) VALUES (1)",
)


def test_a_format_1_schema_gets_its_escalations_table(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    for statement in FORMAT_1:
        execute(postgres_spec, in_schema(postgres_spec, statement))
    execute(
        postgres_spec,
        in_schema(
            postgres_spec,
            "INSERT INTO {schema}.sessions VALUES ('old', 3, %s, NULL, NULL, now())",
        ),
        json.dumps(make_snapshot(5)),
    )

    stores = [open_postgres(postgres_spec) for _ in range(4)]

    def open_(index: int) -> None:
        stores[index].session_ids()

    run_threads(len(stores), open_)

    # On to format 4 in the same step.
    assert formats(postgres_spec) == [(4,)]
    assert table_names(postgres_spec) == [
        "approvals",
        "escalations",
        "messages",
        "sessions",
        "store_format",
    ]
    store = stores[0]
    assert store.load("old") == StoredSession(make_snapshot(5), 3, None)
    recorded = escalation("old")
    store.save(
        "old",
        make_snapshot(6),
        expected_version=3,
        owner="w",
        lease_seconds=None,
        escalation=recorded,
    )
    assert open_postgres(postgres_spec).open_escalation("old") == recorded


# The layout of format 2, as the stageware before append-only messages created it.
FORMAT_2: tuple[LiteralString, ...] = (
    *FORMAT_1[:-1],
    "INSERT INTO {schema}.store_format (format) VALUES (2)",
    "CREATE TABLE {schema}.escalations (escalation_id text PRIMARY KEY, "
    "session_id text NOT NULL, queue text NOT NULL, hook text NOT NULL, "
    "middleware text NOT NULL, reason text NOT NULL, event text NOT NULL, "
    "created_at timestamptz NOT NULL, status text NOT NULL, claimed_by text, "
    "claimed_at timestamptz, resolved_by text, resolved_at timestamptz, resolution text, "
    "comment text)",
)


def test_a_format_2_schema_is_split_into_message_rows_and_reads_back_the_same(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    for statement in FORMAT_2:
        execute(postgres_spec, in_schema(postgres_spec, statement))
    insert = in_schema(
        postgres_spec,
        "INSERT INTO {schema}.sessions VALUES (%s, %s, %s, 'w', now() + interval '1 hour', now())",
    )
    # As format 2 wrote them: the encoder's compact JSON, a lone surrogate escaped.
    old = make_snapshot(5)
    empty = {**make_snapshot(6), "messages": []}
    for session_id, version, snapshot in (("old", 4, old), ("empty", 1, empty)):
        document = json.dumps(snapshot, separators=(",", ":"))
        execute(postgres_spec, insert, session_id, version, document)
    execute(postgres_spec, insert, "damaged", 1, '{"version": 1, "messages": "no list"}')

    stores = [open_postgres(postgres_spec) for _ in range(4)]

    def open_(index: int) -> None:
        stores[index].session_ids()

    run_threads(len(stores), open_)

    assert formats(postgres_spec) == [(4,)]
    store = stores[0]
    loaded = store.load("old")
    assert loaded is not None
    assert (loaded.snapshot, loaded.version, loaded.lease is not None) == (old, 4, True)
    assert json.dumps(loaded.snapshot) == json.dumps(old)  # the same, key order included
    empty_loaded = store.load("empty")
    assert empty_loaded is not None
    assert empty_loaded.snapshot == empty
    counted = in_schema(postgres_spec, "SELECT count(*) FROM {schema}.messages")
    assert execute(postgres_spec, counted) == [(3,)]
    with pytest.raises(SessionError, match=r"'damaged'.*is damaged"):
        store.load("damaged")
    # And it goes on append-only.
    turn = make_snapshot(7)
    assert (
        store.save("old", turn, expected_version=4, owner="w", lease_seconds=None, kept_messages=3)
        == 5
    )
    appended = store.load("old")
    assert appended is not None
    assert appended.snapshot == {**turn, "messages": old["messages"] + turn["messages"]}


def test_an_empty_format_table_is_refused(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    save(open_postgres(postgres_spec), "s1", 0)
    execute(postgres_spec, in_schema(postgres_spec, "DELETE FROM {schema}.store_format"))

    for call in every_call(open_postgres(postgres_spec)):
        with pytest.raises(SessionError, match="holds None, which is not a store format"):
            call()


# --- Pools and the store's life ------------------------------------------------------------


@pytest.fixture
def caller_pool(postgres_spec: StoreSpec) -> Iterator[ConnectionPool[Any]]:
    # Not in autocommit mode, and reading rows as dicts: the store must cope with both.
    with ConnectionPool(
        postgres_spec.target, kwargs={"row_factory": dict_row}, min_size=1, max_size=2
    ) as pool:
        yield pool


def test_a_pool_you_pass_is_used_and_stays_yours(
    postgres_spec: StoreSpec, caller_pool: ConnectionPool[Any]
) -> None:
    with PostgresSessionStore(caller_pool, schema=postgres_spec.schema) as store:
        save(store, "s1", 0)
        save(store, "s1", 1, 1)
        store.renew("s1", version=2, owner="w", lease_seconds=5)
        loaded = store.load("s1")
        store.delete("s2")

    assert not caller_pool.closed
    with caller_pool.connection() as connection:
        row = connection.execute(
            in_schema(postgres_spec, "SELECT version, lease_owner FROM {schema}.sessions")
        ).fetchone()
    assert row == {"version": 2, "lease_owner": "w"}  # committed, seen on another connection
    assert loaded is not None
    assert (loaded.snapshot, loaded.version) == (make_snapshot(1), 2)
    assert loaded.lease is not None
    assert loaded.lease.owner == "w"


def test_a_pool_you_pass_is_sized_where_you_make_it(caller_pool: ConnectionPool[Any]) -> None:
    with pytest.raises(TypeError, match="give min_size, max_size and timeout to the pool"):
        PostgresSessionStore(caller_pool, max_size=8)


def test_a_closed_store_refuses_calls(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    with PostgresSessionStore(postgres_spec.target, schema=postgres_spec.schema) as store:
        save(store, "s1", 0)

    store.close()  # closing twice is fine
    for call in every_call(store):
        with pytest.raises(SessionError, match=r": the store for .* is closed"):
            call()
    assert open_postgres(postgres_spec).load("s1") == StoredSession(make_snapshot(), 1, None)


def test_a_store_never_used_closes_without_connecting() -> None:
    store = PostgresSessionStore("postgresql://nobody@127.0.0.1:1/none")
    store.close()

    with pytest.raises(SessionError, match="closed"):
        store.load("s1")


@pytest.mark.parametrize("schema", ["", "a\x00b", "x" * 64, "\ud800"])
def test_a_schema_name_postgres_cannot_keep_is_refused(schema: str) -> None:
    with pytest.raises(ValueError, match="schema"):
        PostgresSessionStore("postgresql://nobody@127.0.0.1:1/none", schema=schema)


@pytest.mark.parametrize("seconds", [0.0004, 0.0009999])
def test_a_statement_timeout_under_the_servers_millisecond_is_refused(seconds: float) -> None:
    # Rounded to 0 ms, it would turn the server's limits off instead of tightening them.
    with pytest.raises(ValueError, match=r"statement_timeout must be at least 0\.001 s"):
        PostgresSessionStore("postgresql://nobody@127.0.0.1:1/none", statement_timeout=seconds)


def test_the_smallest_statement_timeout_reaches_the_server_as_one_millisecond(
    postgres_spec: StoreSpec,
) -> None:
    store = PostgresSessionStore(postgres_spec.target, statement_timeout=0.001)
    with psycopg.connect(postgres_spec.target, autocommit=True) as connection:
        store._configure(connection)  # pyright: ignore[reportPrivateUsage]
        # SHOW runs under that 1 ms limit itself; on a busy machine it may need a retry.
        for _ in range(20):
            try:
                shown = [
                    connection.execute(f"SHOW {name}").fetchone()
                    for name in ("statement_timeout", "lock_timeout")
                ]
                break
            except psycopg.errors.QueryCanceled:
                continue
        else:
            pytest.fail("SHOW never finished within 1 ms")
    assert shown == [("1ms",), ("1ms",)]
    store.close()


def test_a_large_save_that_runs_out_of_time_says_how_much_it_was_writing(
    postgres_spec: StoreSpec,
) -> None:
    # 5,000 messages of 2 KB take about 1 s to write here; the store gives them 0.05 s.
    # The server ends the statement: nothing was written.
    snapshot = make_snapshot()
    snapshot["messages"] = [
        {"role": "user", "content": [{"text": f"{index:05} " + "x" * 2000}]}
        for index in range(5000)
    ]
    with PostgresSessionStore(
        postgres_spec.target, schema=postgres_spec.schema, statement_timeout=0.05
    ) as store:
        assert store.load("big") is None  # the tables are set up before the timed save
        with pytest.raises(SessionTimeoutError) as raised:
            store.save("big", snapshot, expected_version=0, owner="w", lease_seconds=None)
        assert store.load("big") is None

    message = str(raised.value)
    assert "cannot save session 'big'" in message
    assert ". The call was writing 5,000 messages (10.2 MB): " in message
    assert "a larger statement_timeout= for it" in message


def test_a_small_save_that_runs_out_of_time_does_not_blame_its_size(
    postgres_spec: StoreSpec,
) -> None:
    with PostgresSessionStore(
        postgres_spec.target, schema=postgres_spec.schema, statement_timeout=0.3
    ) as store:
        save(store, "s1", 0)
        with psycopg.connect(postgres_spec.target) as holder:
            # Another connection holds the session's row: the save waits for the lock.
            holder.execute(in_schema(postgres_spec, "SELECT 1 FROM {schema}.sessions FOR UPDATE"))
            with pytest.raises(SessionTimeoutError) as raised:
                save(store, "s1", 1, turn=1)

    assert "lock_timeout" in str(raised.value)
    assert "writing" not in str(raised.value)


# --- Passwords -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conninfo", "shown"),
    [
        pytest.param(
            f"postgresql://app:{SECRET}@db.example:6543/orders?sslmode=require",
            "postgresql://app:***@db.example:6543/orders",
            id="url",
        ),
        pytest.param(
            f"postgresql://app:{quote(SECRET + '@:/ ', safe='')}@db.example/orders",
            "postgresql://app:***@db.example/orders",
            id="url, escaped",
        ),
        pytest.param(
            f"host=db.example dbname=orders user=app password='{SECRET}'",
            "postgresql://app:***@db.example/orders",
            id="key-value",
        ),
        pytest.param(
            f"host=/run/pg dbname=orders password={SECRET}",
            "postgresql://:***@/orders?host=/run/pg",
            id="socket",
        ),
        pytest.param(
            "host=db.example dbname=orders user=app",
            "postgresql://app@db.example/orders",
            id="no password",
        ),
    ],
)
def test_repr_names_the_database_without_its_password(conninfo: str, shown: str) -> None:
    store = PostgresSessionStore(conninfo, schema="sessions")

    assert repr(store) == f"PostgresSessionStore({shown!r}, schema='sessions')"
    assert SECRET not in repr(store)
    store.close()


def test_a_conninfo_that_cannot_be_parsed_is_not_echoed() -> None:
    with pytest.raises(ValueError, match="cannot be parsed") as caught:
        PostgresSessionStore(f"host=db password={SECRET} garbage")

    assert SECRET not in "".join(traceback.format_exception(caught.value))


def test_an_unreachable_server_is_a_session_error_without_the_password() -> None:
    store = PostgresSessionStore(
        f"postgresql://app:{SECRET}@127.0.0.1:1/orders", schema="sessions", timeout=0.3
    )

    with pytest.raises(SessionError) as caught:
        store.save("s1", make_snapshot(), expected_version=0, owner="w", lease_seconds=None)
    store.close()

    message = str(caught.value)
    assert message.startswith(
        "cannot save session 's1' in postgresql://app:***@127.0.0.1:1/orders (schema sessions): "
        "no connection within the pool's timeout (0.3 s): connection failed:"
    )
    assert "Connection refused" in message
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    assert SECRET not in "".join(traceback.format_exception(caught.value))


def test_a_server_error_is_scrubbed_of_the_password(postgres_spec: StoreSpec) -> None:
    # The database's name is the password, so the server's own error quotes it.
    conninfo = make_conninfo(postgres_spec.target, dbname=SECRET, password=SECRET)
    with (
        PostgresSessionStore(conninfo, timeout=0.3) as store,
        pytest.raises(SessionError) as caught,
    ):
        store.load("s1")

    message = str(caught.value)
    assert 'database "***" does not exist' in message
    assert SECRET not in message
    assert SECRET not in repr(store)


def test_a_pool_you_pass_is_named_without_its_password() -> None:
    pool: ConnectionPool[Any] = ConnectionPool(
        "host=db.example dbname=orders", kwargs={"password": SECRET, "user": "app"}, open=False
    )

    assert repr(PostgresSessionStore(pool)) == (
        "PostgresSessionStore('postgresql://app:***@db.example/orders', schema='stageware')"
    )


def test_a_pool_with_computed_conninfo_is_named_by_the_pool() -> None:
    pool: ConnectionPool[Any] = ConnectionPool(
        lambda: f"host=db.example password={SECRET}", open=False, name="orders-pool"
    )

    assert repr(PostgresSessionStore(pool)) == (
        "PostgresSessionStore(\"the database of pool 'orders-pool'\", schema='stageware')"
    )


# --- The extra -----------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["psycopg", "psycopg_pool"])
def test_without_the_extra_the_import_says_what_to_install(missing: str) -> None:
    code = f"import sys; sys.modules[{missing!r}] = None; import stageware.postgres"
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )

    assert completed.returncode == 1
    last = completed.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: stageware.postgres needs psycopg and psycopg_pool, from the `postgres` "
        "extra: pip install -e '.[postgres]' in a clone, "
        "or pip install 'stageware[postgres] @ git+https://<your-git-host>/stageware.git'"
    )


def test_a_format_3_schema_gets_the_approvals_ledger_with_its_pending_approvals(
    postgres_spec: StoreSpec, open_postgres: Callable[[StoreSpec], PostgresSessionStore]
) -> None:
    waiting, given = approval_id("t1"), approval_id("t2")
    store = open_postgres(postgres_spec)
    save_interrupts(store, "asked", asked(waiting), answered(given))
    save_interrupts(store, "plain")
    # Back to format 3's layout, as the stageware before the ledger left the schema.
    for statement in (
        "DROP TABLE {schema}.approvals",
        "ALTER TABLE {schema}.sessions DROP COLUMN approvals_pending",
        "UPDATE {schema}.sessions SET updated_at = '2026-04-01T09:00:00+00:00'",
        "UPDATE {schema}.store_format SET format = 3",
    ):
        execute(postgres_spec, in_schema(postgres_spec, statement))

    stores = [open_postgres(postgres_spec) for _ in range(4)]

    def open_(index: int) -> None:
        stores[index].session_ids()

    run_threads(len(stores), open_)

    assert formats(postgres_spec) == [(4,)]
    migrated = stores[0]
    [pending] = migrated.approvals().entries
    assert (pending.session_id, pending.interrupt_id) == ("asked", waiting)
    assert pending.asked_at == utc("2026-04-01T09:00:00+00:00")
    approved = migrated.approval("asked", given)
    assert approved is not None
    assert (approved.status, approved.answered_by) == ("approved", "ana")
    save_interrupts(migrated, "asked")
    lapsed = migrated.approval("asked", waiting)
    assert lapsed is not None
    assert lapsed.status == "lapsed"


def test_a_save_keeps_the_ledger_in_its_one_statement(
    postgres_spec: StoreSpec,
    open_postgres: Callable[[StoreSpec], PostgresSessionStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ledger costs a save no statement more, with approvals or without."""
    store = open_postgres(postgres_spec)
    store.session_ids()  # the tables
    sent: list[str] = []
    execute_ = psycopg.Cursor.execute

    def counted(self: psycopg.Cursor[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        sent.append(str(query))
        return execute_(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    waiting = approval_id("t1")
    counts: list[int] = []
    for interrupts in ([], [], [asked(waiting)], [answered(waiting)], [], []):
        sent.clear()
        save_interrupts(store, "s1", *interrupts)
        counts.append(len(sent))

    # Each round loads the session and saves it: per call, the pool's check of its
    # connection, then the call's one statement, whether the ledger is kept or not.
    assert counts == [4] * 6, counts
    entry = store.approval("s1", waiting)
    assert entry is not None
    assert entry.status == "approved"


# --- The guide's example --------------------------------------------------------------------


def test_the_guide_s_example_keeps_the_agent_s_session_in_postgresql(postgres_server: str) -> None:
    # The first block of "Sessions in PostgreSQL", on a database of its own in place of the
    # one it names: building the agent loads its session, which makes the store's schema.
    heading = "### Sessions in PostgreSQL\n"
    code = readme_blocks(heading)[0]
    shown = '"postgresql://app@db.internal/app"'
    assert shown in code
    with fresh_database(postgres_server) as url:
        namespace: dict[str, Any] = {"Agent": Agent, "model": ScriptedModel(["Hello."])}
        exec(compile(code.replace(shown, repr(url)), page_of(heading), "exec"), namespace)

        assert isinstance(namespace["agent"], Agent)
        with psycopg.connect(url) as connection:
            rows = connection.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = 'stageware' ORDER BY table_name"
            ).fetchall()
        assert [name for (name,) in rows] == [
            "approvals",
            "escalations",
            "messages",
            "sessions",
            "store_format",
        ]
