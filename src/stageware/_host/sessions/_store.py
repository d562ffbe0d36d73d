"""What a session is, the interface of the stores that keep one, and the rule of a write.

A session is what an agent needs to pick a run up again in another process, most often
while it waited for a human answer: the conversation, the agent's key-value state, the
provider state the host keeps between model calls and the host's serialised interrupt
state. ``SessionStore`` is the small interface the agent saves and loads that through.

Several workers may serve one session, so every write is conditional (optimistic
concurrency): a session carries a version, bumped by every save, and a save names the
version its writer loaded. A save against a session that changed since then is refused
with ``SessionConflictError``; nothing is overwritten. A worker that runs an invocation
also holds a *lease* on the session, written with its first save (the claim) and renewed
while it works: no other worker can save the session until the lease is released or has
expired, so two workers never run the same resumed step. A worker that died stops
renewing, and its lease expires.

What a snapshot deliberately does NOT hold:

* Per-invocation state, such as the ``invocation_state`` passed to one call and the cancel
  signal. It belongs to that one call, the caller passes it again when it resumes, and it
  may hold live objects (clients, locks, callbacks) that have no JSON form and would mean
  nothing in another process.
* Anything the host did not put into ``interrupt_state``. The store treats that value as
  opaque JSON: which pending interrupts and answers survive a restart, and in what form, is
  the host's decision, not the store's.

A save writes what changed, not the whole conversation: the stores keep the messages one
by one, apart from the small rest of the snapshot, and a save names how many messages of
the stored history it keeps (``kept_messages``) and brings only the ones after them. An
invocation usually appends, so a save costs the new turn whatever the history's length;
a history repaired at its end, shortened or replaced is a save that keeps fewer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Protocol, final, runtime_checkable

from typing_extensions import TypedDict

from stageware._generated.payloads import Message

if TYPE_CHECKING:
    # Only for annotations: _escalations imports SessionError from here.
    from ._approval_rows import ApprovalEntry, ApprovalListing, ApprovalPage
    from ._escalations import Escalation, EscalationPage, EscalationStatus

__all__ = [
    "SNAPSHOT_VERSION",
    "Lease",
    "SessionConflictError",
    "SessionError",
    "SessionLeasedError",
    "SessionSnapshot",
    "SessionStore",
    "SessionTimeoutError",
    "SessionUnfinishedError",
    "StoredSession",
    "check_kept",
    "check_renewal",
    "check_session_id",
    "check_write",
]

SNAPSHOT_VERSION: Final = 1
"""The snapshot format this stageware writes and reads."""


class SessionSnapshot(TypedDict):
    """Everything an agent needs to resume a session in a new process.

    Attributes:
        version: The snapshot format, ``SNAPSHOT_VERSION`` (not the session's version,
            which the store keeps beside the snapshot).
        messages: The conversation, as Converse messages, oldest first. In a save that
            keeps messages of the stored history (``kept_messages``), only the messages
            that follow the kept ones.
        state: The agent's JSON key-value state.
        model_state: Provider state the host keeps between model calls.
        interrupt_state: The host's own serialised interrupt state; opaque to the store.
    """

    version: int
    messages: list[Message]
    state: dict[str, Any]
    model_state: dict[str, Any]
    interrupt_state: dict[str, Any]


@final
@dataclass(frozen=True, slots=True)
class Lease:
    """A worker's hold on a session while it runs an invocation.

    Attributes:
        owner: Who holds it: the worker's host name, process id and a random part.
        expires_at: When it lapses unless renewed (timezone-aware, UTC); the store's clock
            decides (the database server's, for a shared database).
    """

    owner: str
    expires_at: datetime


@final
@dataclass(frozen=True, slots=True)
class StoredSession:
    """A session as a store holds it.

    Attributes:
        snapshot: The last snapshot saved.
        version: How many saves the session has had; the next save must name it.
        lease: The lease of the last worker that claimed the session and has not
            released it, even if it has expired since; ``None`` when released.
    """

    snapshot: SessionSnapshot
    version: int
    lease: Lease | None


class SessionError(Exception):
    """A session could not be saved, loaded or deleted.

    The message names the session, the store and, for a bad value or a damaged record, the
    path to the offending field.
    """


class SessionTimeoutError(SessionError):
    """A store call ran out of time: a lock held elsewhere, a stalled or unreachable server.

    The message names the store, the call and what held it. A statement the server ended
    (its lock or statement timeout) wrote nothing; a call cut because the server stopped
    answering may have had its write applied before the answer was lost, which the next
    save finds out (as a conflict, if so).

    Attributes:
        seconds: The time the call was allowed.
    """

    def __init__(self, message: str, *, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds


class SessionConflictError(SessionError):
    """A save was refused because the session changed since its writer loaded it.

    Nothing was written. Recover by loading the session again (a new ``Agent``, or
    ``agent.reload_session()``) and retrying the invocation, or by failing the request.

    Attributes:
        session_id: The session.
        expected_version: The version the writer loaded (0: it found no session).
        found_version: The version the store holds now (0: the session is gone).
    """

    def __init__(
        self, message: str, *, session_id: str, expected_version: int, found_version: int
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.expected_version = expected_version
        self.found_version = found_version


@final
class SessionLeasedError(SessionConflictError):
    """A save was refused because another worker holds the session's lease.

    Another worker is running an invocation of this session, or died while running one
    and its lease has not expired yet. Retry after ``lease.expires_at``, or fail.

    Attributes:
        lease: The lease that stood in the way.
    """

    def __init__(
        self,
        message: str,
        *,
        session_id: str,
        expected_version: int,
        found_version: int,
        lease: Lease,
    ) -> None:
        super().__init__(
            message,
            session_id=session_id,
            expected_version=expected_version,
            found_version=found_version,
        )
        self.lease = lease


@final
class SessionUnfinishedError(SessionError):
    """A prompt was refused because the session's last invocation never finished.

    Its worker died (or its final save failed) after the invocation's claim: the lease is
    still recorded. What that run recorded stays as it is: nothing was saved, the version
    is the same. Continue
    the run with ``agent()`` (no prompt), which runs only what it had not recorded and
    returns its result; a prompt is a new turn again once that run has finished. A client
    that re-sends its prompt after a crash thus never records its turn twice.

    Attributes:
        session_id: The session.
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id!r} has an unfinished invocation: the worker that ran it "
            "stopped before its final save (its lease is still recorded). Continue that "
            "run with agent() and no prompt; nothing was saved, and the prompt was not "
            "recorded."
        )
        self.session_id = session_id


@runtime_checkable
class SessionStore(Protocol):
    """Where agents keep their sessions between runs, shared safely by many workers.

    The agent calls these methods from worker threads, possibly several agents on one
    store at once, so an implementation must be thread-safe. Each call is atomic: a
    refused or failed ``save`` leaves the stored session exactly as it was.

    A store also keeps the sessions' escalations (``Escalation``): written by the
    final save of a run that escalated, in the same transaction, then claimed and resolved
    by humans. Claims and resolutions change only the escalation, never the session or
    its version.
    """

    def load(self, session_id: str) -> StoredSession | None:
        """Return the session saved as *session_id*, or ``None`` if there is none.

        Raises ``SessionError`` if the stored record cannot be read as a snapshot.
        """
        ...

    def save(
        self,
        session_id: str,
        snapshot: SessionSnapshot,
        *,
        expected_version: int,
        owner: str,
        lease_seconds: float | None,
        escalation: Escalation | None = None,
        kept_messages: int = 0,
    ) -> int:
        """Store *snapshot* if the session is still at *expected_version*; return the new one.

        The write follows ``check_write``: the stored version must be *expected_version*
        (0 for a session that does not exist yet) and no other owner may hold a live
        lease. On success the version is ``expected_version + 1`` and *owner* holds the
        lease for *lease_seconds* from now, or nobody does if it is ``None``.

        The new history is the first *kept_messages* messages of the history stored at
        *expected_version*, followed by *snapshot*'s messages; the stored messages after
        the kept ones are dropped. A save that appends a turn keeps every stored message
        and brings the turn; 0 (the default) replaces the whole history. Only the
        messages *snapshot* brings are written, so the cost of a save does not grow with
        the history.

        With *escalation* (a new, open escalation of this session), the escalation is
        recorded in the same transaction: both are written, or neither is.

        Raises:
            SessionConflictError: The session changed since *expected_version*.
            SessionLeasedError: Another owner holds a live lease.
            SessionError: The snapshot is not JSON data of the snapshot's shape,
                *kept_messages* is more than the stored history holds, the escalation is
                not a new one of this session or the session already has an unresolved
                one, or the store failed; nothing was written.
        """
        ...

    def renew(self, session_id: str, *, version: int, owner: str, lease_seconds: float) -> None:
        """Extend *owner*'s lease to *lease_seconds* from now, leaving the snapshot alone.

        Allowed on the same terms as ``save`` (so an expired lease nobody took over can
        still be renewed); the version does not change.

        Raises:
            SessionConflictError: The session changed since *version*.
            SessionLeasedError: Another owner took the lease.
        """
        ...

    def delete(self, session_id: str) -> None:
        """Forget *session_id*, its escalations and its approvals' ledger entries.

        A session that does not exist is fine.
        """
        ...

    def session_ids(self) -> list[str]:
        """The ids of every stored session, sorted (by code point)."""
        ...

    def open_escalation(self, session_id: str) -> Escalation | None:
        """The session's unresolved (open or claimed) escalation, or ``None``.

        A session has at most one: while it has one, the agent takes no new prompt.
        """
        ...

    def escalation(self, escalation_id: str) -> Escalation | None:
        """The escalation *escalation_id*, in whatever status, or ``None`` if there is none.

        A lookup by the id's index; it claims nothing and reads no session.

        Raises:
            SessionError: An id that is not a non-empty str, or the store failed.
        """
        ...

    def escalations(
        self, queue: str | None = None, *, status: EscalationStatus | None = None
    ) -> list[Escalation]:
        """The escalations in *queue* with *status*, oldest first; ``None`` matches any.

        Raises:
            SessionError: A status that is not ``open``, ``claimed`` or ``resolved``.
        """
        ...

    def escalation_page(
        self,
        queue: str | None = None,
        *,
        status: EscalationStatus | None = None,
        created_before: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
        newest_first: bool = False,
    ) -> EscalationPage:
        """One page of the escalations in *queue* with *status*, oldest first.

        Args:
            queue: Only this queue; ``None``: any.
            status: Only this status; ``None``: any.
            created_before: Only escalations created before this time (an age filter).
            limit: At most this many entries, 1 to 500.
            after: The ``next_cursor`` of the previous page; ``None`` for the first.
            newest_first: List the newest first instead (by creation, then id): an audit
                reads the latest first. Cursors of one order are refused by the other.

        Raises:
            SessionError: A malformed filter, a limit out of range, or a cursor that is
                not one this listing (in the same order) handed out.
        """
        ...

    def approvals(
        self,
        *,
        status: ApprovalListing = "pending",
        hook: str | None = None,
        middleware: str | None = None,
        session_id: str | None = None,
        asked_before: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> ApprovalPage:
        """One page of the approvals ledger (``ApprovalEntry`` rows).

        Pending entries come oldest first (by ``asked_at``, then session, then interrupt
        id); approved, denied, lapsed and ``"answered"`` ones newest answer first (by
        ``answered_at``); a listing of any status newest asked first. Pages are cut by
        position, not offset: entries added between two pages never make the next one
        repeat or skip an entry that was there before.

        Args:
            status: A status, ``"answered"`` (approved, denied or lapsed), or ``None``
                (any).
            hook: Only this hook point (``"tool.before"``).
            middleware: Only this middleware.
            session_id: Only this session.
            asked_before: Only approvals asked before this time (an age filter).
            limit: At most this many entries, 1 to 500.
            after: The ``next_cursor`` of the previous page; ``None`` for the first.

        Raises:
            SessionError: A malformed filter, a limit out of range, or a cursor that is
                not one this listing (with the same status) handed out.
        """
        ...

    def approval(self, session_id: str, interrupt_id: str) -> ApprovalEntry | None:
        """The ledger's entry for one approval, or ``None`` if the store has none."""
        ...

    def claim_escalation(self, escalation_id: str, *, by: str) -> Escalation:
        """Mark an open escalation as taken by *by*, and return it.

        Atomic: of two humans who claim one escalation, one wins and the other gets
        ``EscalationError``. Claiming one's own claim again returns it unchanged.

        Raises:
            EscalationError: The id is unknown, another human claimed it, or it was
                resolved; nothing was written.
        """
        ...

    def resolve_escalation(
        self,
        escalation_id: str,
        *,
        by: str,
        resolution: str,
        comment: str | None = None,
        take_over: bool = False,
    ) -> Escalation:
        """Resolve an open or claimed escalation, and return it; its session is free again.

        Anyone may resolve an open escalation. A claimed one is its claimer's: another
        human resolving it is refused unless *take_over* is true, and the record then
        keeps both names.

        Raises:
            EscalationError: The id is unknown, it was resolved already, or another human
                claimed it and *take_over* is false; nothing was written.
        """
        ...


def check_session_id(session_id: object, where: str) -> str:
    """Return *session_id* if every store can key a session by it.

    Raises:
        SessionError: For a non-string, an empty string, a lone surrogate (which no
            database can store as UTF-8 text) or a NUL character (which PostgreSQL
            refuses in text).
    """
    if not isinstance(session_id, str):
        raise SessionError(
            f"a session id must be a str, got {type(session_id).__qualname__} "
            f"{session_id!r} ({where})"
        )
    if not session_id:
        raise SessionError(f"a session id must not be empty ({where})")
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError as error:
        raise SessionError(
            f"session id {session_id!r} cannot be stored ({where}): the character at "
            f"position {error.start} is a lone surrogate, which is not valid UTF-8 text"
        ) from None
    if "\x00" in session_id:
        raise SessionError(
            f"session id {session_id!r} cannot be stored ({where}): it contains a NUL character"
        )
    return session_id


def check_write(
    session_id: str,
    where: str,
    *,
    expected_version: int,
    owner: str,
    found_version: int,
    found_lease: Lease | None,
    now: datetime,
) -> None:
    """Apply the rule every store's ``save`` and ``renew`` follow, before writing.

    *found_version* and *found_lease* are what the store holds, read in the same
    transaction as the write (0 and ``None`` for no session); *now* is the store's clock.

    Raises:
        SessionConflictError: The version moved on (or the session was deleted).
        SessionLeasedError: Another owner's lease is still live.
    """
    if found_version != expected_version:
        if found_version == 0:
            state = "the session no longer exists (it was deleted)"
        elif expected_version == 0:
            state = f"another worker created it first (the store holds version {found_version})"
        else:
            state = (
                f"this worker loaded version {expected_version}, the store holds version "
                f"{found_version}"
            )
        raise SessionConflictError(
            f"session {session_id!r} in {where} was changed by another worker: {state}; "
            "nothing was written. Load the session again and retry the invocation, or fail.",
            session_id=session_id,
            expected_version=expected_version,
            found_version=found_version,
        )
    if found_lease is not None and found_lease.owner != owner and found_lease.expires_at > now:
        left = (found_lease.expires_at - now).total_seconds()
        raise SessionLeasedError(
            f"session {session_id!r} in {where} is in use by worker {found_lease.owner!r}, "
            f"whose lease runs for {left:.1f} s more (until "
            f"{found_lease.expires_at.isoformat(timespec='milliseconds')}); nothing was "
            "written. Retry once it is released or has expired, or fail.",
            session_id=session_id,
            expected_version=expected_version,
            found_version=found_version,
            lease=found_lease,
        )


def check_kept(
    session_id: str, where: str, *, kept_messages: int, found_messages: int | None
) -> None:
    """Refuse a save that keeps more messages than the store holds, before writing.

    *found_messages* is the length of the stored history, read in the same transaction as
    the write (0 for no session), or ``None`` to check only that *kept_messages* is a
    count at all, before the store reads anything.

    Raises:
        SessionError: *kept_messages* is not an int from 0 to *found_messages*.
    """
    if type(kept_messages) is not int or kept_messages < 0:
        problem = (
            f"kept_messages must be a count of messages (an int, 0 or more), not {kept_messages!r}"
        )
    elif found_messages is not None and kept_messages > found_messages:
        problem = (
            f"the save keeps {kept_messages} messages of the stored history, which holds "
            f"{found_messages}"
        )
    else:
        return
    raise SessionError(
        f"cannot save session {session_id!r} in {where}: {problem}; nothing was written"
    )


def check_renewal(version: int) -> None:
    """Refuse to renew a lease on a session that was never saved."""
    if version < 1:
        raise ValueError(
            f"renew() needs the version of a saved session (1 or more), got {version}; "
            "a lease is first taken by a save"
        )
