"""The ``stageware policy`` command: its actions, their arguments, and running one.

Each action is a row of ``_ACTIONS``: a name, a help line, a function that declares its
arguments and one that runs it. Declaring needs only ``argparse`` (the command line
declares every command on every run, ``stageware generate`` included); running imports
the host and the stores, on first use.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TextIO, final

from ._errors import CommandError

if TYPE_CHECKING:
    # Only a type: importing the host here would load it for every command.
    from stageware._host.sessions import EscalationStatus

__all__ = ["add_policy_actions", "run_policy"]

# The statuses a listing shows, by --status; without it, the escalations still waiting.
_LISTED: Final[dict[str | None, tuple[EscalationStatus, ...]]] = {
    None: ("open", "claimed"),
    "open": ("open",),
    "claimed": ("claimed",),
    "resolved": ("resolved",),
    "all": ("open", "claimed", "resolved"),
}


@final
@dataclass(frozen=True, slots=True)
class _Action:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, TextIO, TextIO], None]


def _store_arguments(parser: argparse.ArgumentParser) -> None:
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
        "--schema", metavar="NAME", help="the PostgreSQL schema of the store (default: stageware)"
    )


def _escalations_arguments(parser: argparse.ArgumentParser) -> None:
    _store_arguments(parser)
    parser.add_argument("--queue", metavar="Q", help="list only this queue")
    parser.add_argument(
        "--status",
        choices=[name for name in _LISTED if name is not None],
        help="list only this status, or all (default: the unresolved, open and claimed)",
    )
    act = parser.add_mutually_exclusive_group()
    act.add_argument("--claim", metavar="ID", help="claim the escalation ID for --by")
    act.add_argument("--resolve", metavar="ID", help="resolve the escalation ID as --by")
    parser.add_argument("--by", metavar="NAME", help="who claims or resolves")
    parser.add_argument("--resolution", metavar="TEXT", help="what was decided (with --resolve)")
    parser.add_argument("--comment", metavar="TEXT", help="a note for the record (with --resolve)")
    parser.add_argument(
        "--take-over",
        action="store_true",
        default=None,  # None, not False: "not given", which _refuse checks like the others
        help="resolve an escalation another human claimed (with --resolve)",
    )


def _run_escalations(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    from ._escalations import claim, list_escalations, resolve
    from ._store_url import opened_store

    claim_id: str | None = args.claim
    resolve_id: str | None = args.resolve
    if resolve_id is None:
        _refuse(
            args,
            "--resolve",
            resolution="--resolution",
            comment="--comment",
            take_over="--take-over",
        )
    if claim_id is None and resolve_id is None:
        _refuse(args, "--claim or --resolve", by="--by")
    else:
        _refuse(args, "a listing (no --claim or --resolve)", queue="--queue", status="--status")
    with opened_store(args.store, schema=args.schema) as store:
        if claim_id is not None:
            claim(store, out, claim_id, by=_required(args, "by", "--claim"))
        elif resolve_id is not None:
            resolve(
                store,
                out,
                resolve_id,
                by=_required(args, "by", "--resolve"),
                resolution=_required(args, "resolution", "--resolve"),
                comment=args.comment,
                take_over=args.take_over is not None,
            )
        else:
            list_escalations(store, out, queue=args.queue, statuses=_LISTED[args.status])


def _approvals_arguments(parser: argparse.ArgumentParser) -> None:
    _store_arguments(parser)
    act = parser.add_mutually_exclusive_group()
    act.add_argument("--approve", metavar="ID", help="approve the suspended step ID as --by")
    act.add_argument("--deny", metavar="ID", help="deny the suspended step ID as --by")
    parser.add_argument("--by", metavar="NAME", help="who answers")
    parser.add_argument("--comment", metavar="TEXT", help="a note with the answer")
    parser.add_argument(
        "--session",
        metavar="ID",
        help="the session waiting on the approval, if its id waits in several",
    )


def _run_approvals(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    from ._approvals import answer, list_approvals
    from ._store_url import opened_store

    approve_id: str | None = args.approve
    deny_id: str | None = args.deny
    interrupt_id = approve_id if approve_id is not None else deny_id
    if interrupt_id is None:
        _refuse(args, "--approve or --deny", by="--by", comment="--comment", session="--session")
    with opened_store(args.store, schema=args.schema) as store:
        if interrupt_id is None:
            list_approvals(store, out, err)
            return
        answer(
            store,
            out,
            err,
            interrupt_id,
            approved=approve_id is not None,
            by=_required(args, "by", "--approve" if approve_id is not None else "--deny"),
            comment=args.comment,
            session_id=args.session,
        )


_ACTIONS: tuple[_Action, ...] = (
    _Action(
        "escalations",
        "list the escalations waiting in a session store; claim or resolve one",
        _escalations_arguments,
        _run_escalations,
    ),
    _Action(
        "approvals",
        "list the policy approvals suspended in a session store; approve or deny one",
        _approvals_arguments,
        _run_approvals,
    ),
)


def add_policy_actions(parser: argparse.ArgumentParser) -> None:
    """Declare the ``policy`` command's actions on *parser*."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action in _ACTIONS:
        sub = actions.add_parser(action.name, help=action.help, description=action.help)
        action.configure(sub)
        sub.set_defaults(policy_action=action.run)


def run_policy(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the action *args* name, writing to *out* and *err* (by default, the process's
    standard output and error as they are now); return the exit status, 0.

    Raises:
        CommandError: What went wrong, in one line: a bad argument, an unknown id, a
            store that cannot be opened, a refused claim or answer.
    """
    from stageware._host.sessions import SessionError

    run: Callable[[argparse.Namespace, TextIO, TextIO], None] = args.policy_action
    try:
        run(args, sys.stdout if out is None else out, sys.stderr if err is None else err)
    except SessionError as error:
        raise CommandError(" ".join(str(error).split())) from None
    return 0


def _refuse(args: argparse.Namespace, needed: str, **options: str) -> None:
    """Refuse *options* (attribute: option) that were given without *needed*.

    An option that does nothing where it is given is a mistake worth a word, not a
    silent no-op: ``--comment`` without ``--resolve`` would otherwise be lost.
    """
    for attribute, option in options.items():
        if getattr(args, attribute) is not None:
            raise CommandError(f"{option} goes with {needed}")


def _required(args: argparse.Namespace, attribute: str, action: str) -> str:
    value: str | None = getattr(args, attribute)
    if value is None:
        raise CommandError(f"{action} needs --{attribute}")
    return value
