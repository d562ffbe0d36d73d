"""The Postgres store's tables: their layout, creating them, and the statements it runs.

The store keeps to one Postgres schema of its own (``stageware`` unless configured):

* ``sessions``: one row per session, with its version, its JSON document, the lease of
  the worker running it and when it was last saved.
* ``escalations``: one row per escalation (see ``_escalations``), inserted by the same
  statement as the session's save that recorded it.
* ``store_format``: one row, the layout of the schema (``FORMAT``), so that a later
  stageware can migrate it and this one refuses a layout it does not know. Format 1 had
  no escalations; ``create_tables`` migrates it.

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

from ._escalation_rows import COLUMNS

__all__ = ["FORMAT", "Setup", "Statements", "create_tables", "statements"]

FORMAT: Final = 2
"""The layout this module writes, kept in ``store_format``."""

_ESCALATION_TABLES: Final[tuple[LiteralString, ...]] = (
    """
    CREATE TABLE IF NOT EXISTS {schema}.escalations (
        escalation_id text PRIMARY KEY,
        session_id text NOT NULL,
        queue text NOT NULL,
        hook text NOT NULL,
        middleware text NOT NULL,
        reason text NOT NULL,
        -- text, not jsonb, for the reasons the session document is text.
        event text NOT NULL,
        created_at timestamptz NOT NULL,
        status text NOT NULL CHECK (status IN ('open', 'claimed', 'resolved')),
        claimed_by text,
        claimed_at timestamptz,
        resolved_by text,
        resolved_at timestamptz,
        resolution text,
        comment text
    )
    """,
    # A queue's list, oldest first, without a sort.
    "CREATE INDEX IF NOT EXISTS escalations_by_queue "
    "ON {schema}.escalations (queue, status, created_at)",
    # A session's escalations, for delete; the index below holds only unresolved ones.
    "CREATE INDEX IF NOT EXISTS escalations_by_session ON {schema}.escalations (session_id)",
    # One unresolved escalation per session, and the agent's lookup before every claim.
    "CREATE UNIQUE INDEX IF NOT EXISTS escalations_unresolved "
    "ON {schema}.escalations (session_id) WHERE status <> 'resolved'",
)

_MIGRATE_FROM_1: Final[tuple[LiteralString, ...]] = (
    *_ESCALATION_TABLES,
    "UPDATE {schema}.store_format SET format = {format}",
)

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
    *_ESCALATION_TABLES,
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

# A save that records an escalation writes only while the session has no unresolved one,
# so that a refusal is explained (by ``inspect`` and ``pending``), not a unique violation.
_NOT_ESCALATED: Final = """NOT EXISTS (
    SELECT 1 FROM {schema}.escalations AS e
    WHERE e.session_id = %(session_id)s AND e.status <> 'resolved'
)"""

_COLUMNS: Final = ", ".join(COLUMNS)
_E_COLUMNS: Final = ", ".join(f"e.{column}" for column in COLUMNS)
_VALUES: Final = ", ".join(f"%({column})s" for column in COLUMNS)

_CREATE_SESSION: Final = f"""
    INSERT INTO {{schema}}.sessions AS s
        (session_id, version, document, lease_owner, lease_expires_at, updated_at)
    SELECT %(session_id)s, 1, %(document)s, %(lease_owner)s, {_LEASE_UNTIL}, clock.now
    FROM clock, {{schema}}.store_format AS f
    WHERE f.format = {{format}}"""

_UPDATE_SESSION: Final = f"""
    UPDATE {{schema}}.sessions AS s
    SET version = s.version + 1, document = %(document)s, lease_owner = %(lease_owner)s,
        lease_expires_at = {_LEASE_UNTIL}, updated_at = clock.now
    FROM clock, {{schema}}.store_format AS f
    WHERE s.session_id = %(session_id)s AND s.version = %(version)s
        AND f.format = {{format}} AND {_LEASE_ALLOWS}"""

# The escalation is inserted from the session write's RETURNING rows: a refused write
# returns none, so nothing is inserted. Every part of a WITH runs, read or not.
_RECORD_ESCALATION: Final = f"""
    recorded AS (
        INSERT INTO {{schema}}.escalations ({_COLUMNS})
        SELECT {_VALUES} FROM written
    )
    SELECT version FROM written"""

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
        {_CREATE_SESSION}
        ON CONFLICT (session_id) DO NOTHING
        RETURNING s.version
    """,
    "update": f"""
        WITH clock AS (SELECT clock_timestamp() AS now)
        {_UPDATE_SESSION}
        RETURNING s.version
    """,
    "create_escalated": f"""
        WITH clock AS (SELECT clock_timestamp() AS now),
        written AS (
            {_CREATE_SESSION} AND {_NOT_ESCALATED}
            ON CONFLICT (session_id) DO NOTHING
            RETURNING s.version
        ),
        {_RECORD_ESCALATION}
    """,
    "update_escalated": f"""
        WITH clock AS (SELECT clock_timestamp() AS now),
        written AS (
            {_UPDATE_SESSION} AND {_NOT_ESCALATED}
            RETURNING s.version
        ),
        {_RECORD_ESCALATION}
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
    # The DELETEs run whether or not the outer query reads them; the outer query reports
    # the format, so a refused delete can be told from a session that was not there.
    "delete": """
        WITH f AS (SELECT format FROM {schema}.store_format),
        gone AS (
            DELETE FROM {schema}.sessions
            WHERE session_id = %(session_id)s AND (SELECT format FROM f) = {format}
        ),
        escalations_gone AS (
            DELETE FROM {schema}.escalations
            WHERE session_id = %(session_id)s AND (SELECT format FROM f) = {format}
        )
        SELECT format FROM f
    """,
    # COLLATE "C": code point order, whatever the database's collation, as in every store.
    "session_ids": """
        SELECT f.format, s.session_id
        FROM {schema}.store_format AS f
        LEFT JOIN {schema}.sessions AS s ON true
        ORDER BY s.session_id COLLATE "C"
    """,
    "pending": f"""
        SELECT f.format, {_E_COLUMNS}
        FROM {{schema}}.store_format AS f
        LEFT JOIN {{schema}}.escalations AS e
            ON e.session_id = %(session_id)s AND e.status <> 'resolved'
    """,
    "escalation": f"""
        SELECT f.format, {_E_COLUMNS}
        FROM {{schema}}.store_format AS f
        LEFT JOIN {{schema}}.escalations AS e ON e.escalation_id = %(escalation_id)s
    """,
    "escalations": f"""
        SELECT f.format, {_E_COLUMNS}
        FROM {{schema}}.store_format AS f
        LEFT JOIN {{schema}}.escalations AS e
            ON (%(queue)s::text IS NULL OR e.queue = %(queue)s)
            AND (%(status)s::text IS NULL OR e.status = %(status)s)
        ORDER BY e.created_at, e.escalation_id
    """,
    "claim": f"""
        WITH clock AS (SELECT clock_timestamp() AS now)
        UPDATE {{schema}}.escalations AS e
        SET status = 'claimed', claimed_by = %(by)s, claimed_at = clock.now
        FROM clock, {{schema}}.store_format AS f
        WHERE e.escalation_id = %(escalation_id)s AND e.status = 'open'
            AND f.format = {{format}}
        RETURNING {_E_COLUMNS}
    """,
    # The rule of _escalations.resolve; a refusal is explained by reading the row.
    "resolve": f"""
        WITH clock AS (SELECT clock_timestamp() AS now)
        UPDATE {{schema}}.escalations AS e
        SET status = 'resolved', resolved_by = %(by)s, resolved_at = clock.now,
            resolution = %(resolution)s, comment = %(comment)s
        FROM clock, {{schema}}.store_format AS f
        WHERE e.escalation_id = %(escalation_id)s AND f.format = {{format}}
            AND (e.status = 'open' OR (
                e.status = 'claimed' AND (e.claimed_by = %(by)s OR %(take_over)s::boolean)
            ))
        RETURNING {_E_COLUMNS}
    """,
}


@final
@dataclass(frozen=True, slots=True)
class Statements:
    """The store's statements, composed for one schema; parameters are named.

    ``load`` and ``inspect`` return one row (format, then the session's columns, ``NULL``
    for no session); ``create``, ``update`` and ``renew`` return the new version, or no
    row when the rule or the format refused the write; the ``_escalated`` forms of
    ``create`` and ``update`` insert an escalation too, and refuse while the session has
    an unresolved one; ``delete`` returns the format.

    Escalations: ``pending`` and ``escalation`` return one row (format, then an
    escalation's columns in ``COLUMNS`` order, ``NULL`` for none); ``escalations`` and
    ``session_ids`` return the format beside each match, or one row of format and
    ``NULL`` for none; ``claim`` and ``resolve`` return the changed escalation, or no row
    when the rule or the format refused it.
    """

    load: sql.Composed
    inspect: sql.Composed
    create: sql.Composed
    update: sql.Composed
    create_escalated: sql.Composed
    update_escalated: sql.Composed
    renew: sql.Composed
    delete: sql.Composed
    session_ids: sql.Composed
    pending: sql.Composed
    escalation: sql.Composed
    escalations: sql.Composed
    claim: sql.Composed
    resolve: sql.Composed


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
    role that may not create schemas can use tables a DBA set up. A schema at format 1 is
    migrated (its escalations table added) under the same lock.
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
        found = None if row is None else row[0]
        if found == 1:
            for statement in _MIGRATE_FROM_1:
                cursor.execute(_compose(statement, schema))
            return Setup(format=FORMAT)
        return Setup(format=found)
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
