"""``stageware policy escalations``: the escalations in a session store; claim or resolve one.

Listing shows the escalations still holding their session (open and claimed) unless
``--status`` asks for another, oldest first. Who claims or resolves is the operator as
``_operator`` verifies them (the operating-system account by default), not a name typed
in. Claims and resolutions go through the store's
own ``claim_escalation`` and ``resolve_escalation``, so the command refuses exactly what
the API refuses, with the same message. Exit status 0, or 2 with one line on stderr.
Importing this module loads nothing of the host: the command line builds its parser from
:func:`configure` on every run.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, TextIO

from ._errors import CommandError, reported
from ._operator import identity_arguments, operator, refuse_by
from ._options import refuse_without, required
from ._store_url import store_arguments
from ._table import age, cell, render
from ._wake import dbos_arguments, wake_runs

if TYPE_CHECKING:
    from stageware._host.sessions import Escalation, EscalationStatus, SessionStore

__all__ = ["DESCRIPTION", "HELP", "configure", "run"]

HELP = "list the escalations waiting in a session store; claim or resolve one"
DESCRIPTION = (
    "List the escalations in a session store (by default the open and claimed ones, "
    "oldest first), or claim or resolve one. A session whose run escalated takes no new "
    "prompt until its escalation is resolved. Exit status 2 with one line on stderr when "
    "the command cannot do what it is asked."
)

# The statuses a listing shows, by --status; without it, the escalations still waiting.
_LISTED: Final[dict[str | None, tuple[EscalationStatus, ...]]] = {
    None: ("open", "claimed"),
    "open": ("open",),
    "claimed": ("claimed",),
    "resolved": ("resolved",),
    "all": ("open", "claimed", "resolved"),
}

_REASON_WIDTH: Final = 60

_HEADERS: Final = ("ID", "QUEUE", "SESSION", "HOOK", "MIDDLEWARE", "REASON", "AGE", "STATUS")


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the command's arguments on *parser*."""
    store_arguments(parser)
    parser.add_argument("--queue", metavar="Q", help="list only this queue")
    parser.add_argument(
        "--status",
        choices=[name for name in _LISTED if name is not None],
        help="list only this status, or all (default: open and claimed)",
    )
    act = parser.add_mutually_exclusive_group()
    act.add_argument("--claim", metavar="ID", help="claim the escalation ID as yourself")
    act.add_argument("--resolve", metavar="ID", help="resolve the escalation ID as yourself")
    identity_arguments(parser)
    parser.add_argument("--resolution", metavar="TEXT", help="what was decided (with --resolve)")
    parser.add_argument("--comment", metavar="TEXT", help="a note for the record (with --resolve)")
    parser.add_argument(
        "--take-over",
        action="store_true",
        default=None,  # None, not False: "not given", which refuse_without checks
        help="resolve an escalation another human claimed (with --resolve)",
    )
    dbos_arguments(parser)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """List, claim or resolve, as *args* say; return the exit status."""
    return reported("stageware policy escalations", err, lambda: _run(args, out))


def _run(args: argparse.Namespace, out: TextIO) -> None:
    from ._store_url import opened_store

    claim_id: str | None = args.claim
    resolve_id: str | None = args.resolve
    if resolve_id is None:
        refuse_without(
            args,
            "--resolve",
            resolution="--resolution",
            comment="--comment",
            take_over="--take-over",
            dbos="--dbos",
            dbos_schema="--dbos-schema",
        )
    refuse_by(args)
    if claim_id is None and resolve_id is None:
        refuse_without(args, "--claim or --resolve", credential_file="--credential-file")
    else:
        refuse_without(
            args, "a listing (no --claim or --resolve)", queue="--queue", status="--status"
        )
    # Who acts is the verified operator (``_operator``), not a name typed in.
    by = None if claim_id is None and resolve_id is None else operator(args).id
    with opened_store(args.store, schema=args.schema) as store:
        if claim_id is not None and by is not None:
            _claim(store, out, claim_id, by=by)
        elif resolve_id is not None and by is not None:
            _resolve(
                store,
                args,
                out,
                resolve_id,
                by=by,
                resolution=required(args, "resolution", "--resolve"),
                comment=args.comment,
                take_over=args.take_over is not None,
            )
        else:
            _list(store, out, queue=args.queue, statuses=_LISTED[args.status])


def _list(
    store: SessionStore, out: TextIO, *, queue: str | None, statuses: Sequence[EscalationStatus]
) -> None:
    from stageware._host.sessions._escalations import ESCALATION_STATUSES

    if set(statuses) == set(ESCALATION_STATUSES):
        found = store.escalations(queue)
    else:
        found = sorted(
            (e for status in statuses for e in store.escalations(queue, status=status)),
            key=lambda e: (e.created_at, e.id),
        )
    if not found:
        where = "" if queue is None else f" in queue {cell(queue)!r}"
        out.write(f"no {' or '.join(statuses)} escalations{where}\n")
        return
    now = datetime.now(UTC)
    rows = [
        (
            e.id,
            cell(e.queue),
            cell(e.session_id),
            cell(e.hook),
            cell(e.middleware),
            cell(e.reason, _REASON_WIDTH),
            age(e.created_at, now),
            _status(e),
        )
        for e in found
    ]
    out.write(render(_HEADERS, rows))


def _claim(store: SessionStore, out: TextIO, escalation_id: str, *, by: str) -> None:
    escalation = store.claim_escalation(escalation_id, by=by)
    out.write(
        f"claimed escalation {escalation.id} (queue {cell(escalation.queue)!r}, session "
        f"{cell(escalation.session_id)!r}) for {cell(by)!r}\n"
    )


def _resolve(
    store: SessionStore,
    args: argparse.Namespace,
    out: TextIO,
    escalation_id: str,
    *,
    by: str,
    resolution: str,
    comment: str | None,
    take_over: bool,
) -> None:
    escalation = store.resolve_escalation(
        escalation_id, by=by, resolution=resolution, comment=comment, take_over=take_over
    )
    done = (
        f"resolved escalation {escalation.id} as {cell(by)!r}: {cell(resolution)}; session "
        f"{cell(escalation.session_id)!r} takes prompts again"
    )
    try:
        # A durable run waiting on the escalation ends now rather than at its re-check.
        woke = wake_runs(args, escalation.session_id, store)
    except CommandError:
        out.write(f"{done}\n")
        raise
    out.write(f"{done}{woke}\n")


def _status(escalation: Escalation) -> str:
    if escalation.status == "claimed":
        return f"claimed by {cell(escalation.claimed_by or '')}"
    if escalation.status == "resolved":
        return f"resolved by {cell(escalation.resolved_by or '')}"
    return "open"
