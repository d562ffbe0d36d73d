"""Telling the SQLite store's tables from an application's tables of the same names.

The store shares its file with whatever else the file holds, and keeps to tables named
``stageware_*``. A table of one of those names that the store did not create (other
columns, a table its format does not have yet, or no ``stageware_store_format`` beside
it) would otherwise be taken for the store's, and the store would fail later, on a
statement, with a raw SQL error; ``clash`` finds it when the store opens, before anything
is created or migrated.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from ._approval_rows import APPROVAL_COLUMNS
from ._escalation_rows import COLUMNS

__all__ = ["clash"]

_SESSIONS_1: Final = frozenset({"session_id", "document", "updated_at"})
_SESSIONS_2: Final = _SESSIONS_1 | {"version", "lease_owner", "lease_expires_at"}

# The tables of each format the store has written (format 1 marked the file through
# user_version, and had no store_format table), with their columns.
_LAYOUTS: Final[dict[int, dict[str, frozenset[str]]]] = {
    2: {"stageware_sessions": _SESSIONS_2},
    3: {"stageware_sessions": _SESSIONS_2, "stageware_escalations": frozenset(COLUMNS)},
    4: {
        "stageware_sessions": _SESSIONS_2 | {"message_count"},
        "stageware_escalations": frozenset(COLUMNS),
        "stageware_messages": frozenset({"session_id", "position", "document"}),
    },
    5: {
        "stageware_sessions": _SESSIONS_2 | {"message_count", "approvals_pending"},
        "stageware_escalations": frozenset(COLUMNS),
        "stageware_messages": frozenset({"session_id", "position", "document"}),
        "stageware_approvals": frozenset(APPROVAL_COLUMNS),
    },
}
_FORMAT_COLUMNS: Final = frozenset({"format"})
_NAMES: Final = frozenset({"stageware_store_format"}.union(*_LAYOUTS.values()))


def clash(connection: sqlite3.Connection) -> tuple[str, str] | None:
    """The first store table of the file that is not the store's: its name, and why.

    ``None`` when every table bearing one of the store's names is the store's, at the
    format the file holds (and for a format newer than any known here, which the format
    check refuses as such).
    """
    tables = {name: _columns(connection, name) for name in sorted(_NAMES & _tables(connection))}
    marker = tables.pop("stageware_store_format", None)
    if marker is None:
        # Format 1, or no store at all: only a format-1 sessions table may be here.
        layout = {"stageware_sessions": _SESSIONS_1}
        missing = "there is no stageware_store_format table beside it"
    elif marker != _FORMAT_COLUMNS:
        return "stageware_store_format", _differ(marker, _FORMAT_COLUMNS)
    else:
        row: tuple[object] | None = connection.execute(
            "SELECT format FROM stageware_store_format"
        ).fetchone()
        found = None if row is None else row[0]
        if not isinstance(found, int) or found not in _LAYOUTS:
            return None  # the format check says what is wrong with it
        layout = _LAYOUTS[found]
        missing = f"the store's format {found} has no such table"
    for name, columns in tables.items():
        expected = layout.get(name)
        if expected is None:
            return name, missing
        if columns != expected:
            return name, _differ(columns, expected)
    return None


def _tables(connection: sqlite3.Connection) -> set[str]:
    rows: list[tuple[str]] = connection.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
    ).fetchall()
    return {name for (name,) in rows}


def _columns(connection: sqlite3.Connection, table: str) -> frozenset[str]:
    # The name is one of this module's own, never a caller's.
    rows: list[tuple[object, ...]] = connection.execute(f"PRAGMA table_info({table})").fetchall()
    return frozenset(str(row[1]) for row in rows)


def _differ(found: frozenset[str], expected: frozenset[str]) -> str:
    return (
        f"its columns are ({', '.join(sorted(found))}), not the store's "
        f"({', '.join(sorted(expected))})"
    )
