"""The Postgres store's tables: their layout, creating them, and the statements it runs.

The store keeps to one Postgres schema of its own (``stageware`` unless configured):

* ``sessions``: one row per session, with its version, its JSON document, the lease of
  the worker running it and when it was last saved.
* ``store_format``: one row, the layout of the schema (``FORMAT``), so that a later
  stageware can migrate it and this one refuses a layout it does not know.

Every statement is one round trip that checks and writes at once, on the server's clock
(``clock_timestamp()``, read once per statement): a conditional ``UPDATE`` or an ``INSERT
... ON CONFLICT DO NOTHING`` whose ``WHERE`` is the rule of ``check_write``. The row lock
an ``UPDATE`` takes, and its re-check of the ``WHERE`` against the newest row after waiting
for it, make two writers of one version serialise: one matches, the other matches
nothing. Every statement also joins ``store_format`` and acts only at ``FORMAT``, so a
store that opened the schema before a newer stageware migrated it writes nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Final, LiteralString, final

from psycopg import Cursor, sql
from psycopg.rows import TupleRow

__all__ = ["FORMAT", "Setup", "Statements", "create_tables", "statements"]

FORMAT: Final = 1
"""The layout this module writes, kept in ``store_format``."""

_CREATE: Final[tuple[LiteralString, ...]] = (
    "CREATE SCHEMA IF NOT EXISTS {schema}",
    """
    CREATE TABLE IF NOT EXISTS {schema}.sessions (
        session_id text PRIMARY KEY,
        version bigint NOT NULL CHECK (version > 0),
        -- text, not jsonb: jsonb refuses the escaped NUL and lone surrogates a snapshot
        -- may hold, and would reorder keys; the store checks the JSON itself.
        document text NOT NULL,
        lease_owner text,
        lease_expires_at timestamptz,
        updated_at timestamptz NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS {schema}.store_format (
        format integer NOT NULL,
        one_row boolean PRIMARY KEY DEFAULT true CHECK (one_row)
    )
    """,
    "INSERT INTO {schema}.store_format (format) VALUES ({format}) ON CONFLICT DO NOTHING",
)

# What lets the writer *owner* through, as in check_write: no live lease of another owner.
_LEASE_ALLOWS: Final = """(
    s.lease_owner IS NULL OR s.lease_expires_at IS NULL
    OR s.lease_owner = %(owner)s OR s.lease_expires_at <= clock.now
)"""

_LEASE_UNTIL: Final = "clock.now + %(lease_seconds)s::float8 * interval '1 second'"

_TEXT: Final[dict[str, LiteralString]] = {
    "load": """
        SELECT f.format, s.version, s.document, s.lease_owner, s.lease_expires_at
        FROM {schema}.store_format AS f
        LEFT JOIN {schema}.sessions AS s ON s.session_id = %(session_id)s
    """,
    "inspect": """
        SELECT f.format, s.version, s.lease_owner, s.lease_expires_at, clock_timestamp()
        FROM {schema}.store_format AS f
        LEFT JOIN {schema}.sessions AS s ON s.session_id = %(session_id)s
    """,
    "create": f"""
        WITH clock AS (SELECT clock_timestamp() AS now)
        INSERT INTO {{schema}}.sessions AS s
            (session_id, version, document, lease_owner, lease_expires_at, updated_at)
        SELECT %(session_id)s, 1, %(document)s, %(lease_owner)s, {_LEASE_UNTIL}, clock.now
        FROM clock, {{schema}}.store_format AS f
        WHERE f.format = {{format}}
        ON CONFLICT (session_id) DO NOTHING
        RETURNING s.version
    """,
    "update": f"""
        WITH clock AS (SELECT clock_timestamp() AS now)
        UPDATE {{schema}}.sessions AS s
        SET version = s.version + 1, document = %(document)s, lease_owner = %(lease_owner)s,
            lease_expires_at = {_LEASE_UNTIL}, updated_at = clock.now
        FROM clock, {{schema}}.store_format AS f
        WHERE s.session_id = %(session_id)s AND s.version = %(version)s
            AND f.format = {{format}} AND {_LEASE_ALLOWS}
        RETURNING s.version
    """,
    "renew": f"""
        WITH clock AS (SELECT clock_timestamp() AS now)
        UPDATE {{schema}}.sessions AS s
        SET lease_owner = %(lease_owner)s, lease_expires_at = {_LEASE_UNTIL}
        FROM clock, {{schema}}.store_format AS f
        WHERE s.session_id = %(session_id)s AND s.version = %(version)s
            AND f.format = {{format}} AND {_LEASE_ALLOWS}
        RETURNING s.version
    """,
    # The DELETE runs whether or not the outer query reads it; the outer query reports
    # the format, so a refused delete can be told from a session that was not there.
    "delete": """
        WITH f AS (SELECT format FROM {schema}.store_format),
        gone AS (
            DELETE FROM {schema}.sessions
            WHERE session_id = %(session_id)s AND (SELECT format FROM f) = {format}
        )
        SELECT format FROM f
    """,
}


@final
@dataclass(frozen=True, slots=True)
class Statements:
    """The store's statements, composed for one schema; parameters are named.

    ``load`` and ``inspect`` return one row (format, then the session's columns, ``NULL``
    for no session); ``create``, ``update`` and ``renew`` return the new version, or no
    row when the rule or the format refused the write; ``delete`` returns the format.
    """

    load: sql.Composed
    inspect: sql.Composed
    create: sql.Composed
    update: sql.Composed
    renew: sql.Composed
    delete: sql.Composed


def statements(schema: str) -> Statements:
    """Compose the statements for the tables in *schema*."""
    return Statements(**{name: _compose(text, schema) for name, text in _TEXT.items()})


@final
@dataclass(frozen=True, slots=True)
class Setup:
    """What ``create_tables`` found.

    Attributes:
        format: The format the schema holds (``FORMAT`` if it was just created); ``None``
            if ``store_format`` is empty, or missing.
        foreign: The schema has a ``sessions`` table but no ``store_format``: a table this
            stageware did not write, which it leaves alone.
    """

    format: object
    foreign: bool = False


def create_tables(cursor: Cursor[TupleRow], schema: str) -> Setup:
    """Create the store's schema and tables unless they exist; in the caller's transaction.

    ``CREATE ... IF NOT EXISTS`` alone is not safe when several processes start at once:
    two of them can both find a name free and one then fails on the catalog's unique index.
    A transaction-level advisory lock, keyed by the schema's name, makes them take turns;
    the transaction's end releases it. When the tables exist, nothing is created, so a
    role that may not create schemas can use tables a DBA set up.
    """
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(schema),))
    rows: list[tuple[str]] = cursor.execute(
        "SELECT c.relname FROM pg_catalog.pg_class AS c "
        "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v')",
        (schema,),
    ).fetchall()
    tables = {name for (name,) in rows}
    if "store_format" in tables:
        row: tuple[object] | None = cursor.execute(
            _compose("SELECT format FROM {schema}.store_format", schema)
        ).fetchone()
        return Setup(format=None if row is None else row[0])
    if "sessions" in tables:
        return Setup(format=None, foreign=True)
    for statement in _CREATE:
        cursor.execute(_compose(statement, schema))
    return Setup(format=FORMAT)


def _compose(text: LiteralString, schema: str) -> sql.Composed:
    # The text is this module's own; the schema name is quoted as an identifier.
    return sql.SQL(text).format(schema=sql.Identifier(schema), format=sql.Literal(FORMAT))


def _lock_key(schema: str) -> int:
    """A signed 64-bit advisory-lock key for *schema*, the same in every process."""
    digest = hashlib.blake2b(f"stageware session store {schema}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)
