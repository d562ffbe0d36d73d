"""``stageware policy approvals``: suspended policy approvals in a store; answer one.

A policy middleware that returns ``Suspend`` stops the run on an interrupt whose id starts
with ``v2:policy:``; the session keeps it, unanswered, in its interrupt state, and the
store's approvals ledger lists it. Listing reads the ledger (no session is loaded) and
shows each step as the fingerprint binds it. Answering loads only the sessions the ledger
says hold the step, and records the verified answer (approved or not, the operator as
``_operator`` identifies them, a comment) through the policy layer's ``_answering``, the
path the web console takes too: ``InterruptState.resume`` and the ``ApprovalCheck``, the
same rule a resume in a prompt goes through (an answer is final, bound to its step, and
given by someone the ``Suspend`` allowed), then one conditional save: a session a worker
is running (a live lease) or that changed in between is refused, and nothing is written.
The application then continues the run with ``agent()`` and no prompt, as after any
resume whose answers are all in. Exit status 0, or 2 with one line on stderr.
Importing this module loads nothing of the host or the policy layer: the command line
builds its parser from :func:`configure` on every run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TextIO, cast, final

from ._errors import CommandError, reported
from ._operator import identity_arguments, operator, refuse_by
from ._options import refuse_without
from ._store_url import store_arguments
from ._table import cell, render
from ._wake import dbos_arguments, wake_runs

if TYPE_CHECKING:
    from stageware._host._interrupt_state import InterruptState
    from stageware._host.sessions import ApprovalEntry, SessionStore, StoredSession
    from stageware._policy._identity import Approver
    from stageware._runtime import Interrupt

__all__ = ["DESCRIPTION", "HELP", "configure", "run"]

HELP = "list the policy approvals suspended in a session store; approve or deny one"
DESCRIPTION = (
    "List the unanswered policy approvals (interrupts whose id starts with v2:policy:) of "
    "every session in a session store, or approve or deny one as the operating-system "
    "account running the command (or the credential the authenticator named in "
    "STAGEWARE_APPROVAL_AUTHENTICATOR verifies). The answer is saved in the session unless "
    "a worker is running it; the application then continues the run with agent() and no "
    "prompt. Exit status 2 with one line on stderr when the command cannot do what it is "
    "asked."
)

_COMMAND: Final = "stageware policy approvals"

_REASON_WIDTH: Final = 50
# The ledger's largest page: the listing shows every pending approval.
_PAGE: Final = 500
_STEP_WIDTH: Final = 80

_HEADERS: Final = ("SESSION", "INTERRUPT", "REASON", "STEP", "WHO MAY ANSWER", "DEADLINE")


@final
@dataclass(frozen=True, slots=True)
class _Suspended:
    session_id: str
    interrupt: Interrupt


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the command's arguments on *parser*."""
    store_arguments(parser)
    act = parser.add_mutually_exclusive_group()
    act.add_argument("--approve", metavar="ID", help="approve the suspended step ID")
    act.add_argument("--deny", metavar="ID", help="deny the suspended step ID")
    act.add_argument(
        "--show", metavar="ID", help="show the whole step ID would run, and who may answer"
    )
    identity_arguments(parser)
    parser.add_argument("--comment", metavar="TEXT", help="a note with the answer")
    parser.add_argument(
        "--session",
        metavar="ID",
        help="the session waiting on the approval, when its id waits in several",
    )
    dbos_arguments(parser)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """List or answer, as *args* say; return the exit status."""
    return reported(_COMMAND, err, lambda: _run(args, out, err))


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    from ._store_url import opened_store

    approve_id: str | None = args.approve
    deny_id: str | None = args.deny
    show_id: str | None = args.show
    interrupt_id = approve_id if approve_id is not None else deny_id
    refuse_by(args)
    if interrupt_id is None:
        refuse_without(
            args,
            "--approve or --deny",
            comment="--comment",
            dbos="--dbos",
            dbos_schema="--dbos-schema",
        )
        if show_id is None:
            refuse_without(args, "--approve, --deny or --show", session="--session")
    if interrupt_id is None:
        refuse_without(
            args,
            "--approve or --deny",
            credential_file="--credential-file",
        )
    # Identified before the store is opened: who answers does not depend on what it holds.
    approver = None if interrupt_id is None else operator(args)
    with opened_store(args.store, schema=args.schema) as store:
        if show_id is not None:
            _show(store, out, show_id, args.session)
            return
        if interrupt_id is None or approver is None:
            _list(store, out)
            return
        _answer(
            store,
            args,
            out,
            err,
            interrupt_id,
            approved=approve_id is not None,
            approver=approver,
            comment=args.comment,
            session_id=args.session,
        )


def _list(store: SessionStore, out: TextIO) -> None:
    """Print every pending policy approval, oldest first, from the store's ledger (no
    session is loaded)."""
    found = _pending(store)
    if not found:
        out.write("no suspended approvals\n")
        return
    rows = [
        (
            cell(e.session_id),
            cell(e.interrupt_id),
            _reason(e.reason),
            _shown(e.reason, "step", _STEP_WIDTH),
            _shown(e.reason, "approvers", None),
            _deadline(e.reason),
        )
        for e in found
    ]
    out.write(render(_HEADERS, rows))


def _pending(
    store: SessionStore, *, hook: str | None = None, middleware: str | None = None
) -> list[ApprovalEntry]:
    """Every pending approval of the store's ledger, oldest first, page by page."""
    found: list[ApprovalEntry] = []
    after: str | None = None
    while True:
        page = store.approvals(hook=hook, middleware=middleware, limit=_PAGE, after=after)
        found += page.entries
        after = page.next_cursor
        if after is None:
            return found


def _asked_in(store: SessionStore, hook: str, middleware: str, key: str) -> list[str]:
    """The sessions whose ledger holds the step *key* (any fingerprint, any status): the
    only ones an answer to it may be for, found without loading a session."""
    found: set[str] = set()
    after: str | None = None
    while True:
        page = store.approvals(
            status=None, hook=hook, middleware=middleware, limit=_PAGE, after=after
        )
        found.update(e.session_id for e in page.entries if _key(e.interrupt_id) == key)
        after = page.next_cursor
        if after is None:
            return sorted(found)


def _answer(
    store: SessionStore,
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    interrupt_id: str,
    *,
    approved: bool,
    approver: Approver,
    comment: str | None,
    session_id: str | None,
) -> None:
    """Record *approver*'s answer to *interrupt_id*, in the one session waiting on it.

    Raises:
        CommandError: The id is no policy interrupt, no session (or several) waits on it,
            the answer is refused (stale, final, not this approver's), or the save was.
    """
    from stageware._policy._approval import INTERRUPT_PREFIX, LEGACY_PREFIX, parse_interrupt_id

    if interrupt_id.startswith(LEGACY_PREFIX):
        raise CommandError(
            f"approval {cell(interrupt_id)!r} was asked before approvals were bound to their "
            "step; it cannot be answered, and the step is asked again under a v2:policy: id "
            "when the application next resumes the session"
        )
    parsed = parse_interrupt_id(interrupt_id)
    if parsed is None:
        raise CommandError(
            f"interrupt {cell(interrupt_id)!r} is not a policy approval (its id is not "
            f"{INTERRUPT_PREFIX}<hook>:<middleware>:<step>#<fingerprint>); answer it through "
            "the application that asked"
        )
    candidates = (
        _asked_in(store, parsed.hook, parsed.middleware, parsed.key)
        if session_id is None
        else [session_id]
    )
    # The sessions that hold this id, or (stale) the same step under another: the answer
    # goes through the same check there, which says which.
    waiting = sorted(
        {
            s.session_id
            for candidate in candidates
            for s in _suspended(store, candidate, err, answered=True)
            if s.interrupt.id == interrupt_id
            or (not s.interrupt.answered and _key(s.interrupt.id) == parsed.key)
        }
    )
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
    from stageware._policy._answering import AnswerError, record_answer

    try:
        done_now = record_answer(
            store,
            target,
            interrupt_id,
            approved=approved,
            comment=comment,
            approver=approver,
            owner=f"{_COMMAND}:{socket.gethostname()}:{os.getpid()}",
        )
    except AnswerError as error:
        raise CommandError(str(error)) from None
    recorded, left = done_now.recorded, done_now.waiting
    verb = "approved" if approved else "denied"
    who = f"{cell(approver.id)!r} ({approver.via})"
    if not recorded:
        out.write(
            f"{interrupt_id} in session {cell(target)!r} was already {verb}; the first answer "
            "stands and nothing was written\n"
        )
        return
    then = (
        f"{left} more approval(s) of this session still wait for an answer"
        if left
        else "the application continues the run with agent() and no prompt"
    )
    done = f"{verb} {interrupt_id} in session {cell(target)!r} as {who}; {then}"
    try:
        # Only once the answer is stored (a run woken before would find nothing new), and
        # when nothing else waits (the run would only wait again).
        woke = "" if left else wake_runs(args, target, store)
    except CommandError:
        out.write(f"{done}\n")
        raise
    out.write(f"{done}{woke}\n")


def _show(store: SessionStore, out: TextIO, interrupt_id: str, session_id: str | None) -> None:
    """Print what *interrupt_id* asks, whole: the listing cuts the step to fit a line.

    Raises:
        CommandError: No session waits on it.
    """
    from stageware._policy._approval import parse_interrupt_id

    parsed = parse_interrupt_id(interrupt_id)
    if session_id is not None:
        entry = store.approval(session_id, interrupt_id)
        found = [] if entry is None or entry.status != "pending" else [entry]
    elif parsed is None:
        found = []
    else:
        candidates = _pending(store, hook=parsed.hook, middleware=parsed.middleware)
        found = [e for e in candidates if e.interrupt_id == interrupt_id]
    if not found:
        where = "no session" if session_id is None else f"session {cell(session_id)!r}"
        raise CommandError(f"{where} waits on an approval {cell(interrupt_id)!r}")
    for waiting in found:
        reason: object = waiting.reason
        out.write(f"approval {interrupt_id} in session {cell(waiting.session_id)!r}\n")
        out.write(f"  reason: {_reason(reason)}\n")
        out.write(f"  who may answer: {_shown(reason, 'approvers', None)}\n")
        timed = _deadline(reason) != "-"
        if timed:
            out.write(f"  deadline: {_deadline(reason)}\n")
        for key in ("details", "step", "on_timeout") if timed else ("details", "step"):
            # Whole, on one line, escaped like a table cell: nothing reaches the terminal raw.
            out.write(f"  {key}: {_shown(reason, key, None)}\n")


def _key(interrupt_id: str) -> str | None:
    from stageware._policy._approval import parse_interrupt_id

    parsed = parse_interrupt_id(interrupt_id)
    return None if parsed is None else parsed.key


def _suspended(
    store: SessionStore, session_id: str, err: TextIO, *, answered: bool = False
) -> list[_Suspended]:
    """The session's unanswered policy interrupts (with *answered*, the answered ones
    too); a session that cannot be read is reported on *err* and skipped, so that one
    damaged session hides no other."""
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
    interrupts = state.interrupts.values() if answered else state.pending()
    return [
        _Suspended(session_id, interrupt)
        for interrupt in interrupts
        if interrupt.id.startswith(INTERRUPT_PREFIX)
    ]


def _state(stored: StoredSession, session_id: str) -> InterruptState:
    from stageware._policy._answering import AnswerError, interrupt_state_of

    try:
        return interrupt_state_of(stored, session_id)
    except AnswerError as error:
        raise CommandError(str(error)) from None


def _reason(reason: object) -> str:
    """What the approver is asked: a policy Suspend's ``reason``, or the reason as JSON."""
    if isinstance(reason, dict):
        asked = cast(dict[str, object], reason).get("reason")
        if isinstance(asked, str):
            return cell(asked, _REASON_WIDTH)
    text = reason if isinstance(reason, str) else json.dumps(reason, ensure_ascii=False)
    return cell(text, _REASON_WIDTH)


def _deadline(reason: object) -> str:
    """Until when the approval may be answered, and what it becomes after: ``-`` for none."""
    if not isinstance(reason, dict):
        return "-"
    fields = cast(dict[str, object], reason)
    deadline, then = fields.get("deadline"), fields.get("on_timeout")
    if not isinstance(deadline, str):
        return "-"
    outcome = cast(dict[str, object], then).get("outcome") if isinstance(then, dict) else None
    return cell(f"{deadline} then {outcome if isinstance(outcome, str) else 'block'}")


def _shown(reason: object, key: str, width: int | None) -> str:
    """A field of a policy Suspend's reason as compact JSON: the step, who may answer."""
    if not isinstance(reason, dict):
        return ""
    value = cast(dict[str, object], reason).get(key)
    if key == "approvers" and value is None:
        return "any verified approver"
    return cell(json.dumps(value, ensure_ascii=False, sort_keys=True), width)
