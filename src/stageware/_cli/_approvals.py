"""``stageware policy approvals``: suspended policy approvals in a store, and answering one.

A policy middleware that returns ``Suspend`` stops the run on an interrupt whose id starts
with ``v1:policy:``; the session keeps it, unanswered, in its interrupt state. Listing
reads every session's interrupt state; answering records ``{"approved": ..., "approver":
..., "comment": ...}`` as the interrupt's response, through ``InterruptState`` (the host's
own reading and writing of that state) and one conditional save: a session a worker is
running (a live lease) or that changed in between is refused, and nothing is written.
The application then continues the run with ``agent()`` and no prompt, as after any
resume whose answers are all in.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from typing import Any, Final, TextIO, final

from stageware._host._interrupt_state import InterruptState, InterruptStateError
from stageware._host.sessions import (
    SessionConflictError,
    SessionError,
    SessionLeasedError,
    SessionStore,
    StoredSession,
)
from stageware._host.sessions._escalations import text_problem
from stageware._runtime import Interrupt

from ._errors import CommandError
from ._table import cell, render

__all__ = ["POLICY_PREFIX", "answer", "list_approvals"]

POLICY_PREFIX: Final = "v1:policy:"
"""How the id of every interrupt a policy ``Suspend`` raises starts."""

_REASON_WIDTH: Final = 70

_HEADERS: Final = ("SESSION", "INTERRUPT", "REASON")


@final
@dataclass(frozen=True, slots=True)
class _Suspended:
    session_id: str
    interrupt: Interrupt


def list_approvals(store: SessionStore, out: TextIO, err: TextIO) -> None:
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


def answer(
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
    problem = text_problem(by, "--by")
    if problem is not None:
        raise CommandError(problem)
    if not interrupt_id.startswith(POLICY_PREFIX):
        raise CommandError(
            f"interrupt {cell(interrupt_id)!r} is not a policy approval (its id does not start "
            f"with {POLICY_PREFIX}); answer it through the application that asked"
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
    response = {"approved": approved, "approver": by, "comment": comment}
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
    # No lease: the answer is one write, and a run picks the session up afterwards.
    owner = f"stageware policy approvals:{socket.gethostname()}:{os.getpid()}"
    try:
        store.save(
            session_id, snapshot, expected_version=stored.version, owner=owner, lease_seconds=None
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
    try:
        stored = store.load(session_id)
        if stored is None:
            return []
        state = _state(stored, session_id)
    except (SessionError, CommandError) as error:
        err.write(f"stageware: skipped: {error}\n")
        return []
    return [
        _Suspended(session_id, interrupt)
        for interrupt in state.pending()
        if interrupt.id.startswith(POLICY_PREFIX)
    ]


def _state(stored: StoredSession, session_id: str) -> InterruptState:
    try:
        return InterruptState.from_dict(stored.snapshot["interrupt_state"])
    except InterruptStateError as error:
        raise CommandError(
            f"session {cell(session_id)!r} has interrupt state this stageware cannot read: {error}"
        ) from None


def _reason(reason: object) -> str:
    text = reason if isinstance(reason, str) else json.dumps(reason, ensure_ascii=False)
    return cell(text, _REASON_WIDTH)
