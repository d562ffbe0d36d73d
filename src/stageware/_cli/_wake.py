"""``--dbos URL``: after an answer or a resolution is stored, wake the durable run waiting.

A run on DBOS (``stageware.dbos``) that waits for an approval or an escalation re-reads its
session every ``RECHECK_SECONDS``; given the DBOS system database (``--dbos`` or
``STAGEWARE_DBOS_URL``, and ``--dbos-schema`` when DBOS keeps its tables in a schema other
than ``dbos``), the command sends it a wake-up so that it goes on at once. The
wake-up is sent only after the answer was stored, and carries nothing but the session id:
what releases the run is the stored answer, checked as always.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Final

from stageware._extras import needs_extra

from ._errors import CommandError
from ._table import cell

if TYPE_CHECKING:
    from stageware._host.sessions import SessionStore

__all__ = ["DBOS_VARIABLE", "SCHEMA_VARIABLE", "dbos_arguments", "wake_runs", "wake_session"]

DBOS_VARIABLE: Final = "STAGEWARE_DBOS_URL"
SCHEMA_VARIABLE: Final = "STAGEWARE_DBOS_SCHEMA"


def dbos_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``--dbos URL`` on *parser*."""
    parser.add_argument(
        "--dbos",
        metavar="URL",
        help=(
            "the DBOS system database of the durable runs (default: $STAGEWARE_DBOS_URL); "
            "the run waiting on the session is woken once the answer is stored"
        ),
    )
    parser.add_argument(
        "--dbos-schema",
        metavar="NAME",
        help=(
            "the schema of DBOS's tables in that database, if DBOS was launched with "
            "another dbos_system_schema (default: $STAGEWARE_DBOS_SCHEMA, else dbos)"
        ),
    )


def wake_runs(args: argparse.Namespace, session_id: str, store: SessionStore) -> str:
    """Wake the runs waiting on *session_id*, if ``--dbos`` (or the environment) names a
    DBOS database; see :func:`wake_session`.

    Raises:
        CommandError: As :func:`wake_session`.
    """
    return wake_session(args.dbos, args.dbos_schema, session_id, store)


def wake_session(given: str | None, named: str | None, session_id: str, store: SessionStore) -> str:
    """Wake the runs waiting on *session_id*, if a DBOS database is named (*given*, else
    ``$STAGEWARE_DBOS_URL``) in schema *named* (else ``$STAGEWARE_DBOS_SCHEMA``, else
    ``dbos``); what was done, as the end of a sentence (empty when none is named).

    The requests looked for are those of the agent kind whose invocation made the
    session's last durable final save, read from *store* (all waiting requests if none).

    Raises:
        CommandError: The ``dbos`` package is missing, or the database cannot be reached;
            the answer is stored all the same, and the run finds it at its next re-check.
    """
    url = given if given is not None else os.environ.get(DBOS_VARIABLE) or None
    schema = named if named is not None else os.environ.get(SCHEMA_VARIABLE) or "dbos"
    if url is None:
        if named is not None:
            raise CommandError("--dbos-schema goes with --dbos (or STAGEWARE_DBOS_URL)")
        return ""
    stored = "the answer is stored, and the waiting run finds it at its next re-check"
    try:
        from stageware._dbos._wake import kinds_of, wake
    except ModuleNotFoundError:
        raise CommandError(
            f"{stored}; waking it needs the dbos package, from {needs_extra('dbos')}"
        ) from None
    try:
        kinds = kinds_of(store.load(session_id)) or None
        woken = wake(session_id, kinds=kinds, system_database_url=url, system_schema=schema)
    except Exception as error:  # the DBOS client raises its own and SQLAlchemy's errors
        raise CommandError(
            f"{stored}; waking it through the DBOS database failed: {type(error).__name__}: {error}"
        ) from None
    if not woken:
        return f"; no durable run waits on session {cell(session_id)!r}"
    return f"; woke {', '.join(cell(w) for w in woken)}"
