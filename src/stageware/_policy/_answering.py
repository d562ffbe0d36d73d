"""Answering a suspended policy approval that a session store keeps: one rule for every path.

The command line (``stageware policy approvals --approve``) and the web console
(``stageware console``) both answer through :func:`record_answer`, so they refuse the
same things with the same words: the answer goes through ``InterruptState.resume`` and
the ``ApprovalCheck`` (the approver must be one the ``Suspend`` allowed, the answer is
bound to the step's fingerprint, a first answer is final, a deadline that has passed
refuses it), and is then stored in one save conditional on the version that was read.
A session a worker is running (a live lease) or that changed in between is refused, and
nothing is written. Waking a durable run afterwards is the caller's: only it knows
whether there is one to wake.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, final

from ._identity import ApprovalRefused

if TYPE_CHECKING:
    from stageware._host._interrupt_state import InterruptState
    from stageware._host.sessions import SessionStore, StoredSession

    from ._identity import Approver

__all__ = ["AnswerError", "AnswerProblem", "Recorded", "interrupt_state_of", "record_answer"]

AnswerProblem = Literal["gone", "unreadable", "forbidden", "refused", "final", "busy"]
"""Why an answer was not recorded.

``gone``: no such session or approval; ``unreadable``: the session's interrupt state
cannot be read; ``forbidden``: the approver may not answer this step; ``refused``: the
answer is stale, late or malformed; ``final``: the step was answered before; ``busy``: a
worker runs the session, or it changed while the answer was being recorded.
"""


class AnswerError(Exception):
    """An answer was not recorded, and nothing was written; the message says why.

    Attributes:
        problem: Which kind of refusal, for a caller that maps it to a status code.
    """

    def __init__(self, message: str, problem: AnswerProblem) -> None:
        super().__init__(message)
        self.problem: AnswerProblem = problem


@final
@dataclass(frozen=True, slots=True)
class Recorded:
    """What an answer did.

    Attributes:
        recorded: Whether it was stored (the same answer given again is not, and is no
            error: the first stands).
        waiting: How many approvals of the session still wait for an answer.
    """

    recorded: bool
    waiting: int


def record_answer(
    store: SessionStore,
    session_id: str,
    interrupt_id: str,
    *,
    approved: bool,
    comment: str | None,
    approver: Approver,
    owner: str,
) -> Recorded:
    """Check *approver*'s answer to *interrupt_id* and store it in one conditional save.

    Args:
        owner: Who writes, for the store's record of the save (``"stageware console:host:pid"``).

    Raises:
        AnswerError: The session or the approval is not there, the answer is refused (not
            this approver's, stale, late, final) or the save is (leased, changed); nothing
            was written.
    """
    from stageware._host._interrupt_state import InterruptAnsweredError
    from stageware._host.sessions import SessionConflictError, SessionLeasedError

    from ._approval import ApprovalCheck, NotAllowed

    stored = store.load(session_id)
    if stored is None:
        raise AnswerError(f"session {session_id!r} was deleted; nothing was written", "gone")
    state = interrupt_state_of(stored, session_id)
    check = ApprovalCheck(lambda _interrupt, _answer: approver)
    answer: dict[str, Any] = {"approved": approved, "comment": comment}
    try:
        recorded = state.resume([(interrupt_id, answer)], [check])
    except ApprovalRefused as error:
        problem: AnswerProblem = "forbidden" if isinstance(error, NotAllowed) else "refused"
        raise AnswerError(_cannot(interrupt_id, session_id, error), problem) from None
    except InterruptAnsweredError as error:
        raise AnswerError(_cannot(interrupt_id, session_id, error), "final") from None
    except KeyError as error:
        raise AnswerError(_cannot(interrupt_id, session_id, error), "gone") from None
    except (RuntimeError, ValueError) as error:
        # RuntimeError: the session waits on nothing (the cycle ended); ValueError: stale.
        raise AnswerError(_cannot(interrupt_id, session_id, error), "refused") from None
    if not recorded:
        return Recorded(recorded=False, waiting=len(state.pending()))
    snapshot = stored.snapshot
    snapshot["interrupt_state"] = state.to_dict()
    # The answer changes no message: keep them all and send none.
    kept = len(snapshot["messages"])
    snapshot["messages"] = []
    try:
        # No lease: the answer is one write, and a run picks the session up afterwards.
        store.save(
            session_id,
            snapshot,
            expected_version=stored.version,
            owner=owner,
            lease_seconds=None,
            kept_messages=kept,
        )
    except SessionLeasedError as error:
        raise AnswerError(
            f"session {session_id!r} is in use by worker {error.lease.owner!r} until "
            f"{error.lease.expires_at.isoformat(timespec='seconds')}; nothing was written. "
            "Answer once its run has stopped",
            "busy",
        ) from None
    except SessionConflictError:
        raise AnswerError(
            f"session {session_id!r} changed while the answer was being recorded; nothing "
            "was written. Answer again",
            "busy",
        ) from None
    return Recorded(recorded=True, waiting=len(state.pending()))


def interrupt_state_of(stored: StoredSession, session_id: str) -> InterruptState:
    """The session's interrupt state, read.

    Raises:
        AnswerError: This stageware cannot read it.
    """
    from stageware._host._interrupt_state import InterruptState, InterruptStateError

    try:
        return InterruptState.from_dict(stored.snapshot["interrupt_state"])
    except InterruptStateError as error:
        raise AnswerError(
            f"session {session_id!r} has interrupt state this stageware cannot read: {error}",
            "unreadable",
        ) from None


def _cannot(interrupt_id: str, session_id: str, error: BaseException) -> str:
    return f"cannot answer {interrupt_id!r} in session {session_id!r}: {error}"
