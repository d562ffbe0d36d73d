"""The session store ``--store`` names, opened only if it already holds sessions.

Accepted forms:

- ``sqlite:///relative/file.db`` or ``sqlite:////absolute/file.db`` (SQLAlchemy's way of
  writing them: what follows the third slash is the path), or a plain path to the file;
- ``postgresql://...`` (or ``postgres://``): a PostgreSQL URL, with ``--schema`` naming the
  store's schema; it needs the ``postgres`` extra.

A store creates its tables on first use, which an operator's typo should not do: a path
to no file, a file or a schema without the store's tables, is refused before a store is
made. The text of a PostgreSQL URL is never echoed, since it may carry a password.
Importing this module loads nothing of the host (the command line declares
:func:`store_arguments` on every run); opening a store does.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import unquote, urlsplit

from stageware._extras import needs_extra

from ._errors import CommandError

if TYPE_CHECKING:
    from stageware._host.sessions import SessionStore, SQLiteSessionStore

__all__ = ["DEFAULT_SCHEMA", "opened_store", "store_arguments"]

DEFAULT_SCHEMA: Final = "stageware"

_FORMS: Final = (
    "sqlite:///relative/file.db, sqlite:////absolute/file.db, a path to an SQLite file, "
    "or postgresql://..."
)


def store_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``--store`` and ``--schema`` on *parser*."""
    parser.add_argument(
        "--store",
        required=True,
        metavar="URL",
        help=(
            "the session store: sqlite:///relative.db, sqlite:////absolute.db, a path to an "
            "SQLite file, or postgresql://... (needs the postgres extra)"
        ),
    )
    parser.add_argument(
        "--schema",
        metavar="NAME",
        help=f"the PostgreSQL schema of the store (default: {DEFAULT_SCHEMA})",
    )


@contextlib.contextmanager
def opened_store(url: str, *, schema: str | None = None) -> Generator[SessionStore]:
    """The store *url* names, closed at the end of the block.

    Raises:
        CommandError: The URL is of no known form, names no file, or a database without
            the store's tables; or the ``postgres`` extra is missing.
    """
    if url.startswith(("postgresql://", "postgres://")):
        with _postgres(url, schema or DEFAULT_SCHEMA) as store:
            yield store
        return
    if schema is not None:
        raise CommandError("--schema names a PostgreSQL schema; an SQLite store has none")
    yield _sqlite(_sqlite_path(url))


def _sqlite_path(url: str) -> Path:
    if url.startswith("sqlite:"):
        parts = urlsplit(url)
        if parts.netloc or not parts.path.startswith("/") or parts.query or parts.fragment:
            raise CommandError(
                f"--store {url}: an SQLite URL is sqlite:///relative/file.db or "
                "sqlite:////absolute/file.db, with nothing else"
            )
        return Path(unquote(parts.path[1:]))
    scheme, found, _ = url.partition("://")
    if found:
        # Only the scheme: the rest may hold a password.
        raise CommandError(
            f"--store: {scheme}:// is no kind of store stageware knows; use {_FORMS}"
        )
    if not url:
        raise CommandError(f"--store is empty; use {_FORMS}")
    return Path(url)


def _sqlite(path: Path) -> SQLiteSessionStore:
    import sqlite3

    from stageware._host.sessions import SQLiteSessionStore

    shown = path.absolute()
    if not path.is_file():
        # The next step, for someone who has not run an agent with a store yet.
        raise CommandError(
            f"--store {shown}: no such file; an agent makes one when it runs with "
            "SQLiteSessionStore(path) (sqlite:////abs/path.db names an absolute path)"
        )
    try:
        # Read-only, so that a file that is not a store is left exactly as it was.
        connection = sqlite3.connect(f"{shown.as_uri()}?mode=ro", uri=True)
        try:
            row = connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'stageware_sessions'"
            ).fetchone()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise CommandError(
            f"--store {shown}: cannot read it as an SQLite database: {exc}"
        ) from None
    if row is None:
        raise CommandError(
            f"--store {shown}: holds no stageware sessions (no stageware_sessions table)"
        )
    return SQLiteSessionStore(path)


@contextlib.contextmanager
def _postgres(url: str, schema: str) -> Generator[SessionStore]:
    try:
        import psycopg

        from stageware._host.sessions._postgres_conninfo import locate
        from stageware.postgres import PostgresSessionStore
    except ImportError:
        raise CommandError(
            "--store postgresql://...: the PostgreSQL store needs " + needs_extra("postgres")
        ) from None
    try:
        location = locate(url)
    except ValueError as exc:
        raise CommandError(f"--store: {exc}") from None
    shown = f"{location.description} (schema {schema})"
    try:
        with psycopg.connect(url, connect_timeout=10) as connection:
            row = connection.execute(
                "SELECT 1 FROM pg_catalog.pg_class AS c "
                "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relname = 'sessions'",
                (schema,),
            ).fetchone()
    except psycopg.Error as exc:
        problem = location.scrub(" ".join(str(exc).split()))
        raise CommandError(f"--store {shown}: cannot connect: {problem}") from None
    if row is None:
        raise CommandError(f"--store {shown}: holds no stageware sessions (no sessions table)")
    try:
        store = PostgresSessionStore(url, schema=schema)
    except ValueError as exc:
        raise CommandError(f"--schema: {exc}") from None
    try:
        yield store
    finally:
        store.close()
