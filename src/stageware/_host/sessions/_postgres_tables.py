"""The Postgres store's tables: their layout, creating them, and the statements it runs.

The store keeps to one Postgres schema of its own (``stageware`` unless configured):

* ``sessions``: one row per session, with its version, its JSON document (the snapshot
  without its messages: see ``_encoding``), how many messages it has, the lease of the
  worker running it and when it was last saved.
* ``messages``: one row per message of a session, keyed by the session and the message's
  position in its history, written by the same statement as the session's save. A save
  writes only the messages it brings, after the ones it keeps: it upserts their
  positions and deletes the rows past the new end, so appending a turn writes the turn.
* ``escalations``: one row per escalation (see ``_escalations``), inserted by the same
  statement as the session's save that recorded it.
* ``approvals``: the approvals ledger (see ``_approval_rows``), written by the same
  statement as the session's save, from the policy approvals its interrupt state holds;
  ``sessions.approvals_pending`` says whether the session has a pending one, so that the
  save after the last one leaves lapses those whose interrupts left the state.
* ``store_format``: one row, the layout of the schema (``FORMAT``), so that a later
  stageware can migrate it and this one refuses a layout it does not know. Format 1 had
  no escalations; format 2 kept each session's whole snapshot, messages included, in its
  one document; format 3 had no approvals ledger. ``create_tables`` migrates them all.

Every statement is one round trip that checks and writes at once, on the server's clock
(``clock_timestamp()``, read once per statement): a conditional ``UPDATE`` or an ``INSERT
... ON CONFLICT DO NOTHING`` whose ``WHERE`` is the rule of ``check_write``. The row lock
an ``UPDATE`` takes, and its re-check of the ``WHERE`` against the newest row after waiting
for it, make two writers of one version serialise: one matches, the other matches
nothing. The message rows are written by parts of the same statement that join the
session's write, so a refused save writes none of them; and a load is one statement, so
it reads the record and the messages of one save. Every statement also joins
``store_format`` and acts only at ``FORMAT``, so a store that opened the schema before a
newer stageware migrated it writes nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, LiteralString, final

from psycopg import Cursor, sql
from psycopg.rows import TupleRow

from ._approval_listing import Query
from ._approval_rows import ANSWERED, APPROVAL_COLUMNS, Observed, observe_document
from ._encoding import split_document
from ._escalation_rows import COLUMNS, EscalationQuery

__all__ = [
    "FORMAT",
    "Setup",
    "Statements",
    "approval_listing",
    "approval_params",
    "create_tables",
    "escalation_listing",
    "statements",
]

FORMAT: Final = 4
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

_APPROVAL_TABLES: Final[tuple[LiteralString, ...]] = (
    # COLLATE "C": the listings run in code point order, as in every store, and seek by
    # the index in that order.
    """
    CREATE TABLE IF NOT EXISTS {schema}.approvals (
        session_id text COLLATE "C" NOT NULL,
        interrupt_id text COLLATE "C" NOT NULL,
        hook text NOT NULL,
        middleware text NOT NULL,
        -- text, not jsonb, for the reasons the session document is text.
        reason text NOT NULL,
        asked_at timestamptz NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'lapsed')),
        answered_by text,
        roles text NOT NULL,
        via text,
        comment text,
        answered_at timestamptz,
        PRIMARY KEY (session_id, interrupt_id)
    )
    """,
    # Each listing's order, so that a page is an index seek and a count an index scan:
    # by status oldest asked first (pending), by answer newest first (answered), and
    # newest asked first (any status).
    "CREATE INDEX IF NOT EXISTS approvals_by_status "
    "ON {schema}.approvals (status, asked_at, session_id, interrupt_id)",
    "CREATE INDEX IF NOT EXISTS approvals_by_answer "
    "ON {schema}.approvals (answered_at, session_id, interrupt_id) "
    "WHERE answered_at IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS approvals_by_age "
    "ON {schema}.approvals (asked_at, session_id, interrupt_id)",
)

_MESSAGE_TABLE: Final = """
    CREATE TABLE IF NOT EXISTS {schema}.messages (
        session_id text NOT NULL,
        position integer NOT NULL,
        -- text, not jsonb, for the reasons the session document is text.
        document text NOT NULL,
        PRIMARY KEY (session_id, position)
    )
    """

_MIGRATE_FROM_1: Final[tuple[LiteralString, ...]] = (
    *_ESCALATION_TABLES,
    "UPDATE {schema}.store_format SET format = 2",
)

# Then each session's document is split into its rows (_migrate_from_2).
_MIGRATE_FROM_2: Final[tuple[LiteralString, ...]] = (
    "ALTER TABLE {schema}.sessions ADD COLUMN message_count integer NOT NULL DEFAULT 0",
    _MESSAGE_TABLE,
)

# Then each session's approvals are entered in the ledger (_migrate_from_3).
_MIGRATE_FROM_3: Final[tuple[LiteralString, ...]] = (
    "ALTER TABLE {schema}.sessions ADD COLUMN approvals_pending boolean NOT NULL DEFAULT false",
    *_APPROVAL_TABLES,
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
        updated_at timestamptz NOT NULL,
        message_count integer NOT NULL CHECK (message_count >= 0),
        approvals_pending boolean NOT NULL DEFAULT false
    )
    """,
    _MESSAGE_TABLE,
    *_ESCALATION_TABLES,
    *_APPROVAL_TABLES,
    """
    CREATE TABLE IF NOT EXISTS {schema}.store_format (
        format integer NOT NULL,
        one_row boolean PRIMARY KEY DEFAULT true CHECK (one_row)
    )
    """,
    "INSERT INTO {schema}.store_format (format) VALUES ({format}) ON CONFLICT DO NOTHING",
)

# The columns of the store's tables at FORMAT, by table, to tell them from an
# application's tables of the same names.
_TABLE_COLUMNS: Final[dict[str, frozenset[str]]] = {
    "sessions": frozenset(
        {
            "session_id",
            "version",
            "document",
            "lease_owner",
            "lease_expires_at",
            "updated_at",
            "message_count",
            "approvals_pending",
        }
    ),
    "messages": frozenset({"session_id", "position", "document"}),
    "escalations": frozenset(COLUMNS),
    "approvals": frozenset(APPROVAL_COLUMNS),
    "store_format": frozenset({"format", "one_row"}),
}
_FORMAT_COLUMNS: Final = _TABLE_COLUMNS["store_format"]

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

# A new session keeps no messages; a save may keep at most the messages stored.
_CREATE_SESSION: Final = f"""
    INSERT INTO {{schema}}.sessions AS s (session_id, version, document, message_count,
        lease_owner, lease_expires_at, updated_at, approvals_pending)
    SELECT %(session_id)s, 1, %(document)s, %(message_count)s, %(lease_owner)s,
        {_LEASE_UNTIL}, clock.now, %(approvals_pending)s
    FROM clock, {{schema}}.store_format AS f
    WHERE f.format = {{format}} AND %(kept)s::integer = 0"""

_UPDATE_SESSION: Final = f"""
    UPDATE {{schema}}.sessions AS s
    SET version = s.version + 1, document = %(document)s, message_count = %(message_count)s,
        lease_owner = %(lease_owner)s, lease_expires_at = {_LEASE_UNTIL}, updated_at = clock.now,
        approvals_pending = %(approvals_pending)s
    FROM clock, {{schema}}.store_format AS f
    WHERE s.session_id = %(session_id)s AND s.version = %(version)s
        AND s.message_count >= %(kept)s::integer
        AND f.format = {{format}} AND {_LEASE_ALLOWS}"""

# The message rows are written from the session write's RETURNING rows: a refused write
# returns none, so nothing is written. Every part of a WITH runs, read or not, and all
# see one snapshot, so the two parts touch disjoint rows: the rows past the new end are
# deleted, and the positions the save brings are upserted (a stored row at one of them is
# a message the save does not keep).
_WRITE_MESSAGES: Final = """
    dropped AS (
        DELETE FROM {schema}.messages AS m USING written
        WHERE m.session_id = %(session_id)s AND m.position >= %(message_count)s::integer
    ),
    added AS (
        INSERT INTO {schema}.messages AS m (session_id, position, document)
        SELECT %(session_id)s, %(kept)s::integer + t.n::integer - 1, t.document
        FROM written, unnest(%(messages)s::text[]) WITH ORDINALITY AS t(document, n)
        ON CONFLICT (session_id, position) DO UPDATE SET document = excluded.document
    )"""

# The ledger, from the session write's RETURNING rows too (see _approval_rows): the
# approvals the save holds are upserted (an answer changes a pending entry only), and the
# pending ones it no longer holds lapse, looked for only if the session, as it was before
# this statement (every part of a WITH sees that snapshot), had a pending one.
_A_COLUMNS: Final = ", ".join(APPROVAL_COLUMNS)
_WRITE_LEDGER: Final = f"""
    before AS (
        SELECT approvals_pending FROM {{schema}}.sessions WHERE session_id = %(session_id)s
    ),
    lapsed AS (
        UPDATE {{schema}}.approvals AS a SET status = 'lapsed', answered_at = clock.now
        FROM written, clock, before
        WHERE before.approvals_pending AND a.session_id = %(session_id)s
            AND a.status = 'pending' AND NOT (a.interrupt_id = ANY(%(a_ids)s::text[]))
    ),
    entered AS (
        INSERT INTO {{schema}}.approvals AS a ({_A_COLUMNS})
        SELECT %(session_id)s, t.interrupt_id, t.hook, t.middleware, t.reason, clock.now,
            t.status, t.answered_by, t.roles, t.via, t.comment,
            coalesce(t.answered_at::timestamptz,
                CASE WHEN t.status <> 'pending' THEN clock.now END)
        FROM written, clock, unnest(%(a_ids)s::text[], %(a_hooks)s::text[],
            %(a_middlewares)s::text[], %(a_reasons)s::text[], %(a_statuses)s::text[],
            %(a_answered_by)s::text[], %(a_roles)s::text[], %(a_via)s::text[],
            %(a_comments)s::text[], %(a_answered_at)s::text[])
            AS t(interrupt_id, hook, middleware, reason, status, answered_by, roles, via,
                comment, answered_at)
        ON CONFLICT (session_id, interrupt_id) DO UPDATE SET status = excluded.status,
            answered_by = excluded.answered_by, roles = excluded.roles, via = excluded.via,
            comment = excluded.comment, answered_at = excluded.answered_at
        WHERE a.status = 'pending' AND excluded.status <> 'pending'
    )"""

# The escalation is inserted from the session write's RETURNING rows, like the messages.
_RECORD_ESCALATION: Final = f"""
    recorded AS (
        INSERT INTO {{schema}}.escalations ({_COLUMNS})
        SELECT {_VALUES} FROM written
    )"""

_CREATE_WRITE: Final = f"""
    {_CREATE_SESSION}
    ON CONFLICT (session_id) DO NOTHING
    RETURNING s.version"""

_CREATE_ESCALATED_WRITE: Final = f"""
    {_CREATE_SESSION} AND {_NOT_ESCALATED}
    ON CONFLICT (session_id) DO NOTHING
    RETURNING s.version"""

_UPDATE_WRITE: Final = f"""
    {_UPDATE_SESSION}
    RETURNING s.version"""

_UPDATE_ESCALATED_WRITE: Final = f"""
    {_UPDATE_SESSION} AND {_NOT_ESCALATED}
    RETURNING s.version"""


def _save(write: LiteralString, *, escalated: bool) -> LiteralString:
    """A save: the session's conditional *write*, then what joins it."""
    recorded: LiteralString = f", {_RECORD_ESCALATION}" if escalated else ""
    return f"""
        WITH clock AS (SELECT clock_timestamp() AS now),
        written AS ({write}),
        {_WRITE_MESSAGES},
        {_WRITE_LEDGER}{recorded}
        SELECT version FROM written
    """


_TEXT: Final[dict[str, LiteralString]] = {
    # One statement, so the record and its messages are those of one save.
    "load": """
        SELECT f.format, s.version, s.document, s.lease_owner, s.lease_expires_at,
            s.message_count, m.positions, m.documents
        FROM {schema}.store_format AS f
        LEFT JOIN {schema}.sessions AS s ON s.session_id = %(session_id)s
        LEFT JOIN LATERAL (
            SELECT array_agg(position ORDER BY position) AS positions,
                array_agg(document ORDER BY position) AS documents
            FROM {schema}.messages WHERE session_id = s.session_id
        ) AS m ON true
    """,
    "inspect": """
        SELECT f.format, s.version, s.lease_owner, s.lease_expires_at, clock_timestamp(),
            s.message_count
        FROM {schema}.store_format AS f
        LEFT JOIN {schema}.sessions AS s ON s.session_id = %(session_id)s
    """,
    # Whether the session is at the version after a save's, as that save wrote it: its
    # document, message count and lease owner (NULL for a save that released the lease).
    "recognise": """
        SELECT s.version = %(version)s::bigint + 1 AND s.document = %(document)s
            AND s.message_count = %(message_count)s::integer
            AND s.lease_owner IS NOT DISTINCT FROM %(lease_owner)s::text
        FROM {schema}.sessions AS s WHERE s.session_id = %(session_id)s
    """,
    "create": _save(_CREATE_WRITE, escalated=False),
    "update": _save(_UPDATE_WRITE, escalated=False),
    "create_escalated": _save(_CREATE_ESCALATED_WRITE, escalated=True),
    "update_escalated": _save(_UPDATE_ESCALATED_WRITE, escalated=True),
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
        messages_gone AS (
            DELETE FROM {schema}.messages
            WHERE session_id = %(session_id)s AND (SELECT format FROM f) = {format}
        ),
        escalations_gone AS (
            DELETE FROM {schema}.escalations
            WHERE session_id = %(session_id)s AND (SELECT format FROM f) = {format}
        ),
        approvals_gone AS (
            DELETE FROM {schema}.approvals
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
    "approval": f"""
        SELECT f.format, {", ".join(f"a.{column}" for column in APPROVAL_COLUMNS)}
        FROM {{schema}}.store_format AS f
        LEFT JOIN {{schema}}.approvals AS a
            ON a.session_id = %(session_id)s AND a.interrupt_id = %(interrupt_id)s
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
    for no session; ``load`` ends with the message count and the arrays of the messages'
    positions and documents); ``create``, ``update`` and ``renew`` return the new version,
    or no row when the rule, the messages kept or the format refused the write (a save
    names the messages it keeps as ``kept``, the count after it as ``message_count`` and
    the documents it brings as ``messages``); the ``_escalated`` forms of
    ``create`` and ``update`` insert an escalation too, and refuse while the session has
    an unresolved one; ``recognise`` returns whether a save's parameters are what the
    session holds at the version after theirs (no row for no session); ``delete``
    returns the format. Every statement runs with parameters (see ``_compose``).

    Escalations: ``pending`` and ``escalation`` return one row (format, then an
    escalation's columns in ``COLUMNS`` order, ``NULL`` for none); ``escalations`` and
    ``session_ids`` return the format beside each match, or one row of format and
    ``NULL`` for none; ``claim`` and ``resolve`` return the changed escalation, or no row
    when the rule or the format refused it.

    The approvals ledger: a save's statement keeps it, from ``approval_params``;
    ``approval`` returns one row (format, then an entry's columns, ``NULL`` for none).
    The paged listings are composed per call (``approval_listing``,
    ``escalation_listing``).
    """

    load: sql.Composed
    inspect: sql.Composed
    recognise: sql.Composed
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
    approval: sql.Composed
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
            if ``store_format`` is empty.
        clash: Set when a table of the schema bears the name of one of the store's tables
            but is not the store's (other columns, or no ``store_format`` beside it): the
            table's name, then what is wrong with it. The store leaves such a schema alone.
    """

    format: object
    clash: tuple[str, str] | None = None


def create_tables(cursor: Cursor[TupleRow], schema: str) -> Setup:
    """Create the store's schema and tables unless they exist; in the caller's transaction.

    ``CREATE ... IF NOT EXISTS`` alone is not safe when several processes start at once:
    two of them can both find a name free and one then fails on the catalog's unique index.
    A transaction-level advisory lock, keyed by the schema's name, makes them take turns;
    the transaction's end releases it. When the tables exist, nothing is created, so a
    role that may not create schemas can use tables a DBA set up. A schema at format 1 or
    2 is migrated under the same lock, in the caller's transaction: the format's marker
    moves with the tables, so a store of an older stageware writes nothing from then on.

    Before anything is created or migrated, every table of the schema that bears one of
    the store's names is checked to be the store's (``_clash``): ``CREATE TABLE IF NOT
    EXISTS`` would otherwise take an application's ``messages`` table for its own, and
    the store would fail later, on a statement, with a raw SQL error.
    """
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(schema),))
    rows: list[tuple[str, list[str]]] = cursor.execute(
        # LEFT JOIN: a table without columns is listed too, with none.
        "SELECT c.relname, array_remove(array_agg(a.attname::text ORDER BY a.attname), NULL) "
        "FROM pg_catalog.pg_class AS c "
        "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
        "LEFT JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid "
        "AND a.attnum > 0 AND NOT a.attisdropped "
        "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f') "
        "GROUP BY c.relname",
        (schema,),
    ).fetchall()
    tables = {name: frozenset(columns) for name, columns in rows}
    found: object = None
    if "store_format" in tables and tables["store_format"] == _FORMAT_COLUMNS:
        row: tuple[object] | None = cursor.execute(
            _compose("SELECT format FROM {schema}.store_format", schema), {}
        ).fetchone()
        found = None if row is None else row[0]
    elif not tables.keys() & _TABLE_COLUMNS.keys():
        for statement in _CREATE:
            cursor.execute(_compose(statement, schema), {})
        return Setup(format=FORMAT)
    if isinstance(found, int) and found > FORMAT:
        return Setup(format=found)  # a newer layout: refused as such, not as a clash
    clash = _clash(tables, found)
    if clash is not None:
        return Setup(format=found, clash=clash)
    if found == 1:
        for statement in _MIGRATE_FROM_1:
            cursor.execute(_compose(statement, schema), {})
        found = 2
    if found == 2:
        _migrate_from_2(cursor, schema)
        found = 3
    if found == 3:
        _migrate_from_3(cursor, schema)
        found = FORMAT
    return Setup(format=found)


def _clash(tables: dict[str, frozenset[str]], found: object) -> tuple[str, str] | None:
    """The first of the store's names that *tables* uses for a table not the store's.

    *found* is the format ``store_format`` holds (``None`` without one): a table that
    format does not have yet (``messages`` at format 2) is an application's, whatever its
    columns, since the migration would otherwise adopt it.
    """
    if "store_format" not in tables:
        name = min(tables.keys() & _TABLE_COLUMNS.keys())
        return name, "there is no store_format table beside it, so stageware did not create it"
    for name, columns in _TABLE_COLUMNS.items():
        present = tables.get(name)
        if present is None:
            continue
        expected = _FORMAT_COLUMNS if name == "store_format" else columns
        if name == "sessions" and found in (1, 2):
            expected = columns - {"message_count", "approvals_pending"}
        elif name == "sessions" and found == 3:
            expected = columns - {"approvals_pending"}
        if (
            (name == "escalations" and found == 1)
            or (name == "messages" and found in (1, 2))
            or (name == "approvals" and found in (1, 2, 3))
        ):
            return name, f"the store's format {found} has no such table"
        if present != expected:
            return name, (
                f"its columns are ({', '.join(sorted(present))}), not the store's "
                f"({', '.join(sorted(expected))})"
            )
    return None


def _migrate_from_2(cursor: Cursor[TupleRow], schema: str) -> None:
    """Split each session's whole document into its record and its message rows.

    A document that is no snapshot is left as it was, for a load to report as damaged.
    """
    for statement in _MIGRATE_FROM_2:
        cursor.execute(_compose(statement, schema), {})
    rows: list[tuple[str, object]] = cursor.execute(
        _compose("SELECT session_id, document FROM {schema}.sessions", schema), {}
    ).fetchall()
    insert = _compose(
        "INSERT INTO {schema}.messages (session_id, position, document) VALUES (%s, %s, %s)",
        schema,
    )
    update = _compose(
        "UPDATE {schema}.sessions SET document = %s, message_count = %s WHERE session_id = %s",
        schema,
    )
    for session_id, document in rows:
        pieces = split_document(document)
        if pieces is None:
            continue
        if pieces.messages:
            cursor.executemany(
                insert,
                [(session_id, position, text) for position, text in enumerate(pieces.messages)],
            )
        cursor.execute(update, (pieces.document, len(pieces.messages), session_id))
    cursor.execute(_compose("UPDATE {schema}.store_format SET format = 3", schema), {})


def _migrate_from_3(cursor: Cursor[TupleRow], schema: str) -> None:
    """Add the approvals ledger, and enter each session's approvals in it.

    What a format-3 schema knows of an approval is what its session's interrupt state
    holds now: the approvals of open cycles, pending or answered. Their ``asked_at`` is
    the session's last save. A document that is no JSON is left for a load to report.
    """
    for statement in _MIGRATE_FROM_3:
        cursor.execute(_compose(statement, schema), {})
    rows: list[tuple[str, object, datetime]] = cursor.execute(
        _compose(
            "SELECT session_id, document, updated_at FROM {schema}.sessions "
            "WHERE document LIKE '%%v2:policy:%%'",
            schema,
        ),
        {},
    ).fetchall()
    insert = _compose(
        f"INSERT INTO {{schema}}.approvals ({_A_COLUMNS}) "
        f"VALUES ({', '.join(f'%({column})s' for column in APPROVAL_COLUMNS)})",
        schema,
    )
    flag = _compose(
        "UPDATE {schema}.sessions SET approvals_pending = %s WHERE session_id = %s", schema
    )
    for session_id, document, updated_at in rows:
        observed = observe_document(document)
        if not observed:
            continue
        saved_at = updated_at.astimezone(UTC)
        cursor.executemany(
            insert,
            [
                dict(zip(APPROVAL_COLUMNS, o.row(session_id, saved_at, saved_at), strict=True))
                for o in observed
            ],
        )
        cursor.execute(flag, (any(o.status == "pending" for o in observed), session_id))
    cursor.execute(_compose("UPDATE {schema}.store_format SET format = {format}", schema), {})


def approval_params(observed: list[Observed]) -> dict[str, object]:
    """The parameters of a save's statement that keep the ledger (see ``_WRITE_LEDGER``)."""
    return {
        "approvals_pending": any(o.status == "pending" for o in observed),
        "a_ids": [o.interrupt_id for o in observed],
        "a_hooks": [o.hook for o in observed],
        "a_middlewares": [o.middleware for o in observed],
        "a_reasons": [o.reason for o in observed],
        "a_statuses": [o.status for o in observed],
        "a_answered_by": [o.answered_by for o in observed],
        "a_roles": [o.roles for o in observed],
        "a_via": [o.via for o in observed],
        "a_comments": [o.comment for o in observed],
        "a_answered_at": [
            None if o.answered_at is None else o.answered_at.isoformat() for o in observed
        ],
    }


def approval_listing(
    schema: str, listing: Query
) -> tuple[sql.Composed, sql.Composed, dict[str, object]]:
    """The statements of one page of the ledger: the page (``limit + 1`` rows, in order),
    then the format beside the count of every match; and their parameters."""
    conditions: list[LiteralString] = []
    params: dict[str, object] = {}
    if listing.order == "answered":
        # Answered entries, and only they, have an answer time: the partial index's
        # condition, so that the planner seeks in it.
        conditions.append("a.answered_at IS NOT NULL")
    if listing.statuses is not None and listing.statuses != ANSWERED:
        # One status is all a listing names (or all three): equality keeps the index's
        # order, where = ANY(...) would need a sort.
        [status] = listing.statuses
        conditions.append("a.status = %(status)s")
        params["status"] = status
    if listing.hook is not None:
        conditions.append("a.hook = %(hook)s")
        params["hook"] = listing.hook
    if listing.middleware is not None:
        conditions.append("a.middleware = %(middleware)s")
        params["middleware"] = listing.middleware
    if listing.session_id is not None:
        conditions.append("a.session_id = %(session_id)s")
        params["session_id"] = listing.session_id
    if listing.asked_before is not None:
        conditions.append("a.asked_at < %(asked_before)s")
        params["asked_before"] = listing.asked_before
    where: LiteralString = " AND ".join(conditions) or "true"
    column: LiteralString = "a.answered_at" if listing.order == "answered" else "a.asked_at"
    direction: LiteralString = "DESC" if listing.descending else "ASC"
    seek: LiteralString = where
    if listing.after is not None:
        comparison: LiteralString = "<" if listing.descending else ">"
        seek = (
            f"{where} AND ({column}, a.session_id, a.interrupt_id) {comparison} "
            "(%(after_time)s, %(after_session)s, %(after_id)s)"
        )
        params.update(
            after_time=listing.after[0],
            after_session=listing.after[1],
            after_id=listing.after[2],
        )
    params["limit"] = listing.limit + 1
    columns: LiteralString = ", ".join(f"a.{name}" for name in APPROVAL_COLUMNS)
    page = _compose(
        f"SELECT {columns} FROM {{schema}}.approvals AS a WHERE {seek} "
        f"ORDER BY {column} {direction}, a.session_id {direction}, a.interrupt_id {direction} "
        "LIMIT %(limit)s",
        schema,
    )
    count = _compose(
        "SELECT (SELECT format FROM {schema}.store_format), "
        f"(SELECT count(*) FROM {{schema}}.approvals AS a WHERE {where})",
        schema,
    )
    return page, count, params


def escalation_listing(
    schema: str, listing: EscalationQuery
) -> tuple[sql.Composed, sql.Composed, dict[str, object]]:
    """The statements of one page of escalations, as ``approval_listing``."""
    conditions: list[LiteralString] = []
    params: dict[str, object] = {}
    if listing.queue is not None:
        conditions.append("e.queue = %(queue)s")
        params["queue"] = listing.queue
    if listing.status is not None:
        conditions.append("e.status = %(status)s")
        params["status"] = listing.status
    if listing.created_before is not None:
        conditions.append("e.created_at < %(created_before)s")
        params["created_before"] = listing.created_before
    where: LiteralString = " AND ".join(conditions) or "true"
    seek: LiteralString = where
    # The newest first walks the same index backwards.
    past: LiteralString = "<" if listing.newest_first else ">"
    order: LiteralString = " DESC" if listing.newest_first else ""
    if listing.after is not None:
        seek = f"{where} AND (e.created_at, e.escalation_id) {past} (%(after_time)s, %(after_id)s)"
        params.update(after_time=listing.after[0], after_id=listing.after[1])
    params["limit"] = listing.limit + 1
    page = _compose(
        f"SELECT {_E_COLUMNS} FROM {{schema}}.escalations AS e WHERE {seek} "
        f"ORDER BY e.created_at{order}, e.escalation_id{order} LIMIT %(limit)s",
        schema,
    )
    count = _compose(
        "SELECT (SELECT format FROM {schema}.store_format), "
        f"(SELECT count(*) FROM {{schema}}.escalations AS e WHERE {where})",
        schema,
    )
    return page, count, params


def _compose(text: LiteralString, schema: str) -> sql.Composed:
    """*text* (this module's own) for *schema*, to run WITH parameters, ``{}`` for none.

    The schema name is quoted as an identifier, but psycopg reads placeholders in the
    whole text, quoted identifiers included: a ``%`` in the name would be taken for one
    (``"%(session_id)s"`` would become ``"$1"``). Doubled, it is read back as one ``%``,
    and only when the statement runs with parameters; so every statement does.
    """
    quoted = sql.Identifier(schema.replace("%", "%%"))
    return sql.SQL(text).format(schema=quoted, format=sql.Literal(FORMAT))


def _lock_key(schema: str) -> int:
    """A signed 64-bit advisory-lock key for *schema*, the same in every process."""
    digest = hashlib.blake2b(f"stageware session store {schema}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)
