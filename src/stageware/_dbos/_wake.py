"""Waking the durable runs that wait on a session: a DBOS message, and nothing more.

A run that stopped on an approval or an escalation waits in its workflow
(``_waits.wait_for_answers``) for a message on ``WAKE_TOPIC``. The answer itself is never
in the message: it is stored in the session by the usual path (the command line or a
resume, identity-checked, final, bound to its step's fingerprint). A wake-up only makes
the waiting run read its session again, sooner than its periodic re-check would; anyone
who can send one can do no more than that, so the message carries no authority and is
not checked.

The waiting workflows are found by their id, ``stageware:<agent kind>:<session id>:...``,
among the PENDING and ENQUEUED workflows of the DBOS system database, listed by that
prefix for each agent kind the caller names (by default, in a worker, the kinds
registered in its process; the command line names the kind of the session's last
durable invocation), so that a wake-up reads the session's own requests, not every
waiting request of the application; only when no kind is known are all ``stageware:``
workflows listed. PENDING and ENQUEUED: a request whose worker died is ENQUEUED once
recovered, until a worker takes it up, and a message sent to it then waits for it (a
wake-up sent only to PENDING ones would be lost on it, and the replayed wait would sleep
its whole re-check interval).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from stageware._host._journal_session import released_by

from ._ids import PREFIX, parse

if TYPE_CHECKING:
    from dbos import DBOSClient

    from stageware._host.sessions import StoredSession

__all__ = ["WAKE_TOPIC", "WORKFLOW_PREFIX", "kinds_of", "waiting_on", "wake"]

WAKE_TOPIC: Final = "stageware:wake"
"""The DBOS message topic a waiting run receives wake-ups on."""

WORKFLOW_PREFIX: Final = PREFIX
"""How every durable agent run's workflow id starts: ``stageware:<kind>:<session id>:``."""


_WAITING: Final = ["PENDING", "ENQUEUED"]
"""The statuses of a request that may be waiting: running, or recovered after its worker
died and queued to run again (it finds the message when its replay reaches the wait)."""


def waiting_on(session_id: str, workflow_ids: list[str]) -> list[str]:
    """Those of *workflow_ids* that are requests on session *session_id*, whatever the
    agent kind (the invocations they run as child workflows wait on nothing)."""
    found: list[str] = []
    for workflow_id in workflow_ids:
        name = parse(workflow_id)
        if name is not None and name.session_id == session_id and name.invocation is None:
            found.append(workflow_id)
    return found


def kinds_of(stored: StoredSession | None) -> list[str]:
    """The agent kind of the last durable invocation whose final save *stored* holds (the
    request that waits on the session is that invocation's), or none if there is none."""
    key = None if stored is None else released_by(stored)
    name = None if key is None else parse(key)
    return [] if name is None else [name.kind]


def _prefixes(session_id: str, kinds: Iterable[str] | None) -> str | list[str]:
    if kinds is None:
        return WORKFLOW_PREFIX
    prefixes = sorted({f"{PREFIX}{kind}:{session_id}:" for kind in kinds})
    return prefixes or WORKFLOW_PREFIX


def wake(
    session_id: str,
    *,
    kinds: Iterable[str] | None = None,
    system_database_url: str | None = None,
    system_schema: str = "dbos",
) -> list[str]:
    """Wake the durable runs waiting on *session_id*; return their workflow ids.

    In a process that launched DBOS (``stageware.dbos.launch``) the launched DBOS is
    used; elsewhere (the command line, an admin service) pass the DBOS system database's
    URL (and *system_schema*, if DBOS was launched with another ``dbos_system_schema``),
    and a ``DBOSClient`` sends the message.

    Only the requests of the agent *kinds* are looked for (their ids start with
    ``stageware:<kind>:<session id>:``); by default, with the launched DBOS, those of the
    kinds registered in this process (its ``DurableAgent``s). With no kind given (or
    registered), every waiting ``stageware:`` workflow is listed and the session's picked
    out: a read that grows with the number of waiting requests.

    A run that is not waiting (still running, or between two checks) finds the message
    when it next waits: it re-reads its session then, which is all a wake-up asks.
    """
    if system_database_url is None:
        from dbos import DBOS

        from ._agent import registered_kinds

        prefixes = _prefixes(session_id, registered_kinds() if kinds is None else kinds)
        pending = DBOS.list_workflows(
            status=_WAITING,
            workflow_id_prefix=prefixes,
            load_input=False,
            load_output=False,
        )
        targets = waiting_on(session_id, [w.workflow_id for w in pending])
        for target in targets:
            DBOS.send(target, {"session_id": session_id}, WAKE_TOPIC)
        return targets
    prefixes = _prefixes(session_id, kinds)
    client = _client(system_database_url, system_schema)
    try:
        pending = client.list_workflows(
            status=_WAITING,
            workflow_id_prefix=prefixes,
            load_input=False,
            load_output=False,
        )
        targets = waiting_on(session_id, [w.workflow_id for w in pending])
        for target in targets:
            client.send(target, {"session_id": session_id}, WAKE_TOPIC)
        return targets
    finally:
        client.destroy()


def _client(system_database_url: str, system_schema: str) -> DBOSClient:
    from dbos import DBOSClient

    return DBOSClient(system_database_url=system_database_url, dbos_system_schema=system_schema)
