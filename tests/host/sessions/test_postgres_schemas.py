"""The Postgres store's names: hostile schema names, and application tables in its schema.

A schema name is quoted wherever the store builds SQL text, so the name given is the
schema used, whatever it holds (``%`` that psycopg would read as a placeholder, quotes,
spaces, any script); one Postgres cannot keep is refused before anything is sent. A
table that bears one of the store's names but is not the store's is found when the store
opens, and refused with a message that names it, before anything is created or written.
"""

from __future__ import annotations

from typing import LiteralString

import psycopg
import pytest
from psycopg import sql

from stageware._host.sessions import SessionError
from stageware.postgres import PostgresSessionStore

from .stores import make_snapshot


def _schemas(url: str) -> set[str]:
    with psycopg.connect(url, autocommit=True) as connection:
        rows = connection.execute("SELECT nspname FROM pg_catalog.pg_namespace").fetchall()
    return {name for (name,) in rows}


def _tables(url: str, schema: str) -> list[str]:
    with psycopg.connect(url, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "ORDER BY table_name",
            (schema,),
        ).fetchall()
    return [name for (name,) in rows]


def _drop(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param("%(session_id)s", id="named placeholder"),
        pytest.param("%s", id="placeholder"),
        pytest.param("%", id="percent"),
        pytest.param("100%%", id="doubled percent"),
        pytest.param('a"b', id="double quote"),
        pytest.param("it's", id="single quote"),
        pytest.param("two words", id="space"),
        pytest.param("Upper", id="upper case"),
        pytest.param("sessions; DROP SCHEMA public", id="statement"),
        pytest.param("réservations_東京", id="unicode"),
        pytest.param("é" * 31, id="62 bytes"),
    ],
)
def test_a_hostile_schema_name_is_the_schema_used(postgres_server: str, schema: str) -> None:
    schemas_before = _schemas(postgres_server)
    assert schema not in schemas_before
    try:
        with PostgresSessionStore(postgres_server, schema=schema) as store:
            store.save("s1", make_snapshot(1), expected_version=0, owner="w", lease_seconds=30)
            stored = store.load("s1")
            store.renew("s1", version=1, owner="w", lease_seconds=30)
            assert store.session_ids() == ["s1"]

        assert stored is not None
        assert stored.snapshot == make_snapshot(1)
        # Exactly one schema more, named as given, holding the store's tables.
        assert _schemas(postgres_server) - schemas_before == {schema}
        assert _tables(postgres_server, schema) == [
            "approvals",
            "escalations",
            "messages",
            "sessions",
            "store_format",
        ]
        # Another store on the same name finds the same session.
        with PostgresSessionStore(postgres_server, schema=schema) as again:
            found = again.load("s1")
        assert found is not None
        assert found.version == 1
    finally:
        _drop(postgres_server, schema)


@pytest.mark.parametrize(
    "schema", ["é" * 32, "x" * 64, "", "a\x00b"], ids=["64 bytes", "64 chars", "empty", "NUL"]
)
def test_a_schema_name_postgres_would_cut_or_refuse_is_refused_first(schema: str) -> None:
    with pytest.raises(ValueError, match="schema must be a name PostgreSQL can keep"):
        PostgresSessionStore("postgresql://nobody@127.0.0.1:1/none", schema=schema)


_STORE_TABLES: dict[str, LiteralString] = {
    "sessions": "CREATE TABLE {t} (session_id text PRIMARY KEY, body text)",
    "messages": "CREATE TABLE {t} (id serial PRIMARY KEY, body text)",
    "escalations": "CREATE TABLE {t} ()",
    "store_format": "CREATE TABLE {t} (format integer)",
}


@pytest.mark.parametrize("table", sorted(_STORE_TABLES))
def test_an_application_table_named_like_the_stores_is_refused_when_it_opens(
    postgres_server: str, table: str
) -> None:
    schema = f"stageware_clash_{table}"
    _drop(postgres_server, schema)
    try:
        with psycopg.connect(postgres_server, autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            create = sql.SQL(_STORE_TABLES[table]).format(t=sql.Identifier(schema, table))
            connection.execute(create)
            connection.execute(
                sql.SQL("CREATE TABLE {} (x int)").format(sql.Identifier(schema, "orders"))
            )

        with (
            PostgresSessionStore(postgres_server, schema=schema) as store,
            pytest.raises(SessionError) as raised,
        ):
            store.save("s1", make_snapshot(), expected_version=0, owner="w", lease_seconds=None)

        message = str(raised.value)
        assert f"schema {schema!r}" in message
        assert f"has a table named {table} that is not the session store's" in message
        assert 'schema="..."' in message
        # Nothing of the store's was created beside the application's tables.
        assert _tables(postgres_server, schema) == sorted([table, "orders"])
    finally:
        _drop(postgres_server, schema)


def test_a_messages_table_in_a_format_2_schema_is_not_adopted(postgres_server: str) -> None:
    """A store of format 2 had no messages table: one there is an application's."""
    schema = "stageware_clash_format_2"
    _drop(postgres_server, schema)
    try:
        with PostgresSessionStore(postgres_server, schema=schema) as store:
            store.session_ids()  # creates the store's tables, at the current format
        with psycopg.connect(postgres_server, autocommit=True) as connection:
            # Back to format 2's layout, with the application's own messages table.
            for text in (
                "DROP TABLE {s}.approvals",
                "ALTER TABLE {s}.sessions DROP COLUMN approvals_pending",
                "DROP TABLE {s}.messages",
                "ALTER TABLE {s}.sessions DROP COLUMN message_count",
                "UPDATE {s}.store_format SET format = 2",
                "CREATE TABLE {s}.messages (session_id text, position integer, document text)",
            ):
                connection.execute(sql.SQL(text).format(s=sql.Identifier(schema)))

        with (
            PostgresSessionStore(postgres_server, schema=schema) as store,
            pytest.raises(SessionError, match=r"named messages .* format 2 has no such table"),
        ):
            store.load("s1")
    finally:
        _drop(postgres_server, schema)


def test_the_stores_own_tables_open_again(postgres_server: str) -> None:
    schema = "stageware_clash_none"
    _drop(postgres_server, schema)
    try:
        with PostgresSessionStore(postgres_server, schema=schema) as store:
            store.save("s1", make_snapshot(), expected_version=0, owner="w", lease_seconds=None)
        with PostgresSessionStore(postgres_server, schema=schema) as store:
            assert store.session_ids() == ["s1"]
    finally:
        _drop(postgres_server, schema)
