"""``stageware policy approvals``: suspended policy approvals in a store; answer one.

A policy middleware that returns ``Suspend`` stops the run on an interrupt whose id starts
with ``v1:policy:``; the session keeps it, unanswered, in its interrupt state. Listing
reads every session's interrupt state; answering records an ``Approval`` (approved or
not, the approver, a comment) as the interrupt's response, through ``InterruptState`` (the
host's own reading and writing of that state) and one conditional save: a session a
worker is running (a live lease) or that changed in between is refused, and nothing is
written. The application then continues the run with ``agent()`` and no prompt, as after
any resume whose answers are all in. Exit status 0, or 2 with one line on stderr.
Importing this module loads nothing of the host or the policy layer: the command line
builds its parser from :func:`configure` on every run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TextIO, cast, final

from ._errors import CommandError, reported
from ._options import refuse_without, required
from ._store_url import store_arguments
from ._table import cell, render

if TYPE_CHECKING:
    from stageware._host._interrupt_state import InterruptState
    from stageware._host.sessions import SessionStore, StoredSession
    from stageware._runtime import Interrupt

__all__ = ["DESCRIPTION", "HELP", "configure", "run"]

HELP = "list the policy approvals suspended in a session store; approve or deny one"
DESCRIPTION = (
    "List the unanswered policy approvals (interrupts whose id starts with v1:policy:) of "
    "every session in a session store, or approve or deny one. The answer is saved in the "
    "session unless a worker is running it; the application then continues the run with "
    "agent() and no prompt. Exit status 2 with one line on stderr when the command cannot "
    "do what it is asked."
)

_COMMAND: Final = "stageware policy approvals"

_REASON_WIDTH: Final = 70

_HEADERS: Final = ("SESSION", "INTERRUPT", "REASON")


@final
@dataclass(frozen=True, slots=True)
class _Suspended:
    session_id: str
    interrupt: Interrupt


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the command's arguments on *parser*."""
    store_arguments(parser)
    act = parser.add_mutually_exclusive_group()
    act.add_argument("--approve", metavar="ID", help="approve the suspended step ID as --by")
    act.add_argument("--deny", metavar="ID", help="deny the suspended step ID as --by")
    parser.add_argument("--by", metavar="NAME", help="who answers")
    parser.add_argument("--comment", metavar="TEXT", help="a note with the answer")
    parser.add_argument(
        "--session",
        metavar="ID",
        help="the session waiting on the approval, when its id waits in several",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """List or answer, as *args* say; return the exit status."""
    return reported(_COMMAND, err, lambda: _run(args, out, err))


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    from ._store_url import opened_store

    approve_id: str | None = args.approve
    deny_id: str | None = args.deny
    interrupt_id = approve_id if approve_id is not None else deny_id
    if interrupt_id is None:
        refuse_without(
            args, "--approve or --deny", by="--by", comment="--comment", session="--session"
        )
    with opened_store(args.store, schema=args.schema) as store:
        if interrupt_id is None:
            _list(store, out, err)
            return
        _answer(
            store,
            out,
            err,
            interrupt_id,
            approved=approve_id is not None,
            by=required(args, "by", "--approve" if approve_id is not None else "--deny"),
            comment=args.comment,
            session_id=args.session,
        )


def _list(store: SessionStore, out: TextIO, err: TextIO) -> None:
    """Print every unanswered policy interrupt of every session, by session."""
    found = [
        waiting
        for session_id in store.session_ids()
        for waiting in _suspended(store, session_id, err)
    ]
    if not found:
        out.write("no suspended approvals\n")
        return
    rows = [(cell(s.session_id), cell(s.interrupt.id), _reason(s.interrupt.reason)) for s in found]
    out.write(render(_HEADERS, rows))


def _answer(
    store: SessionStore,
    out: TextIO,
    err: TextIO,
    interrupt_id: str,
    *,
    approved: bool,
    by: str,
    comment: str | None,
    session_id: str | None,
) -> None:
    """Record the approver's answer to *interrupt_id*, in the one session waiting on it.

    Raises:
        CommandError: The id is no policy interrupt, no session (or several) waits on it,
            or the save was refused.
    """
    from stageware._host.sessions._escalations import text_problem
    from stageware._policy._approval import INTERRUPT_PREFIX, Approval, parse_interrupt_id

    problem = text_problem(by, "--by")
    if problem is not None:
        raise CommandError(problem)
    if parse_interrupt_id(interrupt_id) is None:
        raise CommandError(
            f"interrupt {cell(interrupt_id)!r} is not a policy approval (its id is not "
            f"{INTERRUPT_PREFIX}<hook>:<middleware>:<step>); answer it through the "
            "application that asked"
        )
    candidates = store.session_ids() if session_id is None else [session_id]
    waiting = [
        s.session_id
        for candidate in candidates
        for s in _suspended(store, candidate, err)
        if s.interrupt.id == interrupt_id
    ]
    if not waiting:
        where = "no session" if session_id is None else f"session {cell(session_id)!r}"
        raise CommandError(
            f"{where} waits on an approval {cell(interrupt_id)!r}; "
            "`stageware policy approvals --store URL` lists those that do"
        )
    if len(waiting) > 1:
        names = ", ".join(repr(cell(name)) for name in waiting)
        raise CommandError(
            f"approval {cell(interrupt_id)!r} waits in several sessions ({names}); "
            "name one with --session"
        )
    [target] = waiting
    # The policy layer's own model of an answer, so that what is stored is what it reads.
    response = Approval(approved=approved, approver=by, comment=comment).model_dump(mode="json")
    left = _record(store, target, interrupt_id, response)
    verb = "approved" if approved else "denied"
    then = (
        f"{left} more approval(s) of this session still wait for an answer"
        if left
        else "the application continues the run with agent() and no prompt"
    )
    out.write(f"{verb} {interrupt_id} in session {cell(target)!r} as {cell(by)!r}; {then}\n")


def _record(store: SessionStore, session_id: str, interrupt_id: str, response: Any) -> int:
    """Store *response* for the interrupt in one conditional save; return how many wait."""
    from stageware._host.sessions import SessionConflictError, SessionLeasedError

    stored = store.load(session_id)
    if stored is None:
        raise CommandError(f"session {cell(session_id)!r} was deleted; nothing was written")
    state = _state(stored, session_id)
    if interrupt_id not in {i.id for i in state.pending()}:
        raise CommandError(
            f"approval {cell(interrupt_id)!r} of session {cell(session_id)!r} was answered "
            "meanwhile; nothing was written"
        )
    try:
        state.resume([(interrupt_id, response)])
    except (RuntimeError, ValueError) as error:
        raise CommandError(
            f"cannot answer {cell(interrupt_id)!r} in session {cell(session_id)!r}: {error}"
        ) from None
    snapshot = stored.snapshot
    snapshot["interrupt_state"] = state.to_dict()
    # The answer changes no message: keep them all and send none.
    kept = len(snapshot["messages"])
    snapshot["messages"] = []
    # No lease: the answer is one write, and a run picks the session up afterwards.
    owner = f"stageware policy approvals:{socket.gethostname()}:{os.getpid()}"
    try:
        store.save(
            session_id,
            snapshot,
            expected_version=stored.version,
            owner=owner,
            lease_seconds=None,
            kept_messages=kept,
        )
    except SessionLeasedError as error:
        raise CommandError(
            f"session {cell(session_id)!r} is in use by worker {cell(error.lease.owner)!r} "
            f"until {error.lease.expires_at.isoformat(timespec='seconds')}; nothing was "
            "written. Answer once its run has stopped"
        ) from None
    except SessionConflictError:
        raise CommandError(
            f"session {cell(session_id)!r} changed while the answer was being recorded; "
            "nothing was written. Run the command again"
        ) from None
    return len(state.pending())


def _suspended(store: SessionStore, session_id: str, err: TextIO) -> list[_Suspended]:
    """The session's unanswered policy interrupts; a session that cannot be read is
    reported on *err* and skipped, so that one damaged session hides no other."""
    from stageware._host.sessions import SessionError
    from stageware._policy._approval import INTERRUPT_PREFIX

    try:
        stored = store.load(session_id)
        if stored is None:
            return []
        state = _state(stored, session_id)
    except (SessionError, CommandError) as error:
        err.write(f"{_COMMAND}: skipped: {error}\n")
        return []
    return [
        _Suspended(session_id, interrupt)
        for interrupt in state.pending()
        if interrupt.id.startswith(INTERRUPT_PREFIX)
    ]


def _state(stored: StoredSession, session_id: str) -> InterruptState:
    from stageware._host._interrupt_state import InterruptState, InterruptStateError

    try:
        return InterruptState.from_dict(stored.snapshot["interrupt_state"])
    except InterruptStateError as error:
        raise CommandError(
            f"session {cell(session_id)!r} has interrupt state this stageware cannot read: {error}"
        ) from None


def _reason(reason: object) -> str:
    """What the approver is asked: a policy Suspend's ``reason``, or the reason as JSON."""
    if isinstance(reason, dict):
        asked = cast(dict[str, object], reason).get("reason")
        if isinstance(asked, str):
            return cell(asked, _REASON_WIDTH)
    text = reason if isinstance(reason, str) else json.dumps(reason, ensure_ascii=False)
    return cell(text, _REASON_WIDTH)
