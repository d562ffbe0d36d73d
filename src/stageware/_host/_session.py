"""The agent's side of a stored session: load, claim, checkpoint, release.

An invocation of an agent with a session store runs under a lease, so that of several
workers serving one session only one runs it at a time:

1. **Claim.** Before anything runs, the agent saves the session (with a resume's answers
   already in it) at the version it loaded, taking a lease. A worker that loaded the same
   version loses: its save is refused with ``SessionConflictError`` before any tool or
   model call. A worker whose lease is still live blocks the others with
   ``SessionLeasedError``. A session whose run escalated to a human queue is refused
   with ``SessionEscalatedError`` until the escalation is resolved, before the save. That
   check is a read of the store, made only when this agent cannot know the answer: an
   escalation is only ever recorded by a save, so after this agent's own saves (none of
   which recorded one) the session has none, and the claim is one write.
2. **Renewal.** The store's lease renewer (``sessions._lease_renewer``: one thread per
   store, for all the leases held on it in this process) renews the lease every third of
   its length while the invocation runs, whatever the event loop is doing; if the renewal
   is refused (the lease lapsed and another worker took the session over), the run is
   cancelled.
3. **Checkpoints.** Every message is saved as soon as it enters the history: the input
   with the claim (held back until the pass joins it), each model turn once it is
   complete (with the input, the first time), and each tool
   result as soon as its call finishes (the round being run is stored with the model
   turn, as an interrupt stores a round for replay, and each result is added to it). Each
   is one conditional write under the lease, bringing only what is new. A worker that
   takes over after this one died continues from the last checkpoint: it never runs a
   call whose result was recorded again.
4. **Release.** The final save stores the invocation's outcome and releases the lease;
   if the run escalated, the same save records the escalation. It runs however the
   invocation ended (its stop, an error, a cancellation). If it fails, the lease is let
   go on its own, by a renewal of no length, tried again while the store fails
   (``LET_GO_PAUSES``), so that a passing outage does not block the session for a
   lease's length.

A worker killed mid-invocation keeps its lease until it expires. A session loaded with a
lease still recorded (expired or not) is *unfinished*: its last invocation never reached
its final save. Then ``agent()`` with no prompt continues that run (so does a resume's
answers, for a run waiting on an interrupt); a prompt is refused with
``SessionUnfinishedError`` (unless a live lease makes it a ``SessionLeasedError``), so
that a client that re-sends its prompt after a crash does not record the turn twice.

An invocation claimed while a journal is current (a durable run, see ``_journal``) makes
no checkpoint: the journal holds each model and tool call's result, once, and a replay
starts again from the claim. Its lease's owner and its final save carry the journal's key,
so that a replay knows its own claim and its own final save (``_journal_session``).

A save brings only the messages that changed since the version this agent holds: the
agent keeps its own copy of the history as stored, finds how much of it the live history
still starts with (a comparison, done in C, not a copy) and copies and sends the rest. An
invocation that appended a turn sends the turn; one whose history was repaired at its end,
or replaced, sends from the first message that differs.

That comparison goes through every message, so only the final save makes it; the claim
and the checkpoints, several per invocation, do not when they need not: a save whose
history still starts with the very message objects (by identity, a check of pointers)
that the last save stored copies of keeps those and sends the rest. A message replaced or
removed in the history is found that way; a change made in place inside a stored message
(a hook editing an earlier message's content during the run, or the application between
two runs) is saved by the next final save, so a worker that dies before it loses that
edit, never a message.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import operator
import os
import secrets
import socket
import threading
import time
from typing import Any, Final, final

import anyio.to_thread

from stageware._generated.events import EventLoopStopEvent
from stageware._generated.payloads import Message, Messages
from stageware._runtime import copy_payload

from ._cancel import CancelToken
from ._core import AgentCore
from ._history_copies import common_prefix
from ._journal import current_journal
from ._journal_session import lease_owner, release_record
from .sessions import (
    SNAPSHOT_VERSION,
    Escalation,
    SessionConflictError,
    SessionError,
    SessionEscalatedError,
    SessionSnapshot,
    SessionStore,
    SessionTimeoutError,
    SessionUnfinishedError,
    StoredSession,
    _lease_renewer,
)

__all__ = ["DEFAULT_LEASE_SECONDS", "LET_GO_PAUSES", "AgentSession"]

DEFAULT_LEASE_SECONDS: Final = 30.0
"""How long a worker's hold on a session lasts without renewal."""

LET_GO_PAUSES: Final = (0.25, 0.5)
"""The pauses between the tries to let a lease go after the final save failed: three
tries, each bounded by the store's own call bound, about a second apart in all."""


@final
class AgentSession:
    """One agent's link to its session in a store: the version it holds and its lease.

    Every write goes through one lock, so a renewal never renews with a version that a
    checkpoint is replacing, nor a lease that the final save released.
    """

    __slots__ = (
        "_appends",
        "_journal_key",
        "_lease_seconds",
        "_leased",
        "_lock",
        "_no_escalation_at",
        "_owner",
        "_renewal",
        "_sources",
        "_stored",
        "_taken",
        "_worker",
        "_written",
        "id",
        "store",
        "unfinished",
        "version",
    )

    def __init__(self, store: SessionStore, session_id: str, *, lease_seconds: float) -> None:
        self.store: SessionStore = store
        self.id: str = session_id
        self.version: int = 0
        # The history the store holds at self.version: this session's own copies, never
        # handed out, and replaced (not changed) by each save.
        self._stored: list[Message] = []
        # The live messages _stored holds copies of, as the save that stored them found
        # them in the history (empty: not known, as after a load).
        self._sources: list[Message] = []
        self._lease_seconds = lease_seconds
        # Readable in a lease error: which machine and process holds the session.
        self._worker = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._owner = self._worker
        # The key of the journal current at the running invocation's claim, if any.
        self._journal_key: str | None = None
        self._lock = threading.Lock()
        # Whether the running invocation holds the lease: set by the claim, cleared (under
        # no lock: a plain store) before the final save, and read under the lock by each
        # renewal, so none renews after the release.
        self._leased = False
        self._renewal: _Renewal | None = None
        self._appends = _takes_kept_messages(store)
        # Snapshots are numbered as they are taken; one written after a later one would
        # store an older state (concurrent tools' checkpoints race to the lock).
        self._taken = 0
        self._written = 0
        # The loaded session's last invocation never released its lease (see the module).
        self.unfinished: bool = False
        # A version at which the session is known to have no unresolved escalation (a
        # session that does not exist has none), or -1: the claim then asks the store.
        self._no_escalation_at = 0

    def load(self) -> StoredSession | None:
        """Read the session and remember its version (0 if there is none)."""
        stored = self.store.load(self.id)
        with self._lock:
            self.version = 0 if stored is None else stored.version
            self._no_escalation_at = 0 if stored is None else -1
            self.unfinished = stored is not None and stored.lease is not None
            # The agent adopts the loaded messages themselves and may change them in place.
            self._stored = [] if stored is None else copy.deepcopy(stored.snapshot["messages"])
            self._sources = []
        return stored

    async def claim(self, core: AgentCore, *, new_input: Messages | None) -> None:
        """Save the session at the loaded version and take the lease, then keep it.

        *new_input* is the input of an invocation that brings a prompt (``None`` for a
        resume or a continuation). It is saved with the claim as the input held back
        for the pass (the claim and the input, one write): a worker that takes over after
        this one died before the pass joined it to the history passes it on. The next
        save, with the history that holds it, no longer holds it back. An unfinished
        session refuses it: it would record a turn before the one a dead worker left is
        finished.

        Raises:
            SessionUnfinishedError: The session is unfinished and the invocation brings a
                prompt. Found with a lease renewal of no length, which saves nothing: a
                worker still running the invocation (its lease live) makes it a
                ``SessionLeasedError`` instead, and a version that moved on a
                ``SessionConflictError``.
            SessionEscalatedError: The session waits on an unresolved escalation; nothing
                was saved. An escalation is only ever recorded by a save, which moves the
                version on: one recorded after this agent loaded the session makes the
                claim a conflict instead, so the check needs no lock around it.
        """
        journal = current_journal()
        self._journal_key = None if journal is None else journal.key
        self._owner = lease_owner(self._worker, self._journal_key)
        # Asked only when not known: one recorded since this agent's last save (or since
        # it found no session) came with a save, and makes the claim's save a conflict.
        if self.version != self._no_escalation_at:
            escalation = await anyio.to_thread.run_sync(self.store.open_escalation, self.id)
            if escalation is not None:
                raise SessionEscalatedError(escalation)
            # A human resolving one does not change the version; recording one does.
            self._no_escalation_at = self.version
        if self.unfinished and new_input is not None:
            await anyio.to_thread.run_sync(self._renew, 0.0)
            raise SessionUnfinishedError(self.id)
        # A durable invocation's ending belongs to it alone: this claim starts another.
        released, core.interrupts.released_by = core.interrupts.released_by, None
        try:
            await self._save(core, lease=True, held_input=new_input, by_identity=True)
        except BaseException:
            core.interrupts.released_by = released
            raise
        self._leased = True
        self._renewal = _Renewal(self, core.cancel)
        _lease_renewer.hold(self.store, self._renewal)

    async def checkpoint(self, core: AgentCore) -> None:
        """Save progress made under the lease, keeping the lease.

        Shielded: a cancel must not come between a message entering the history and its
        record, or a finished tool call could run again after a crash.

        Nothing is saved while a journal was current at the claim: it holds what the
        checkpoint would (see the module).
        """
        if self._journal_key is not None:
            return
        with anyio.CancelScope(shield=True):
            await self._save(core, lease=True, by_identity=True)

    async def release(
        self,
        core: AgentCore,
        *,
        stop: EventLoopStopEvent | None = None,
        failure: BaseException | None = None,
    ) -> None:
        """Save the invocation's outcome and release the lease.

        *stop* is the stop event the invocation reports, *failure* what it ended with, if
        anything: a durable invocation's final save records them with its journal's key
        (``_journal_session``).

        If the run escalated (``core.pending_escalation``), the same save records the
        escalation. It is taken off the core whether or not the save succeeds: it belongs
        to this invocation's outcome, and if that is lost, a later invocation's save must
        not record it for a run that did not escalate.

        If the outcome cannot be saved (a value that is not JSON data got into the state
        in place, a store failure), the lease is still let go, so that the session is not
        blocked for the rest of its length; the error is raised.
        """
        self._leased = False
        renewal, self._renewal = self._renewal, None
        if renewal is not None:
            _lease_renewer.drop(self.store, renewal)
        escalation, core.pending_escalation = core.pending_escalation, None
        # Whatever the final save does, this agent's memory holds the run's outcome now:
        # nothing is left for it to continue.
        self.unfinished = False
        key, self._journal_key = self._journal_key, None
        journal = current_journal()
        if key is not None and journal is not None and journal.failure is not None:
            # The journal broke under the run (see StepJournal.failure): what the run holds
            # now may be an error result made of the journal's own error. Not saved; the
            # lease lapses at once, so the replay takes over its own claim.
            await anyio.to_thread.run_sync(self._let_go)
            raise journal.failure
        if key is not None:
            core.interrupts.released_by = release_record(
                key,
                stop,
                core.messages,
                failure,
                escalation_id=None if escalation is None else escalation.id,
            )
        try:
            await self._save(core, lease=False, escalation=escalation)
        except SessionConflictError:
            raise  # another worker holds the session now: the lease is not ours to drop
        except SessionError:
            await anyio.to_thread.run_sync(self._let_go)
            raise

    async def _save(
        self,
        core: AgentCore,
        *,
        lease: bool,
        escalation: Escalation | None = None,
        held_input: Messages | None = None,
        by_identity: bool = False,
    ) -> None:
        # Compared and copied here, in the loop's thread, so the worker thread never reads
        # live objects.
        base = self._stored
        live = list(core.messages)
        sources = self._sources
        if by_identity and _starts_with(live, sources) and len(sources) == len(base):
            kept = len(base)
        else:
            kept = common_prefix(base, live)
        snapshot: SessionSnapshot = {
            "version": SNAPSHOT_VERSION,
            "messages": copy_payload(live[kept:]),
            "state": core.state.to_dict(),
            "model_state": copy.deepcopy(core.model_state),
            "interrupt_state": _interrupt_state(core, held_input),
        }
        lease_seconds = self._lease_seconds if lease else None
        self._taken += 1
        number = self._taken
        written = threading.Event()
        committed: list[bool] = []

        def write() -> None:
            try:
                self._write(snapshot, number, base, kept, lease_seconds, escalation, live)
                committed.append(True)
            finally:
                written.set()

        try:
            await anyio.to_thread.run_sync(write)
        except BaseException as error:
            # Cancelled while the thread writes (a native asyncio cancel goes through the
            # shield anyio puts around the thread): the write may still commit, taking a
            # lease nobody would release. Wait for it, then release that lease. (Only a
            # claim gets here: checkpoints are shielded.) A store that refused or failed the
            # write wrote nothing, unless it cannot tell (a call its bound cut short): then
            # the lease is let go, in one try.
            may_have_written = not isinstance(error, SessionError) or isinstance(
                error, SessionTimeoutError
            )
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(written.wait)
                if lease and committed:
                    # Without the held-back input: the claim's pass never ran.
                    unchanged: SessionSnapshot = {
                        **snapshot,
                        "messages": [],
                        "interrupt_state": core.interrupts.to_dict(),
                    }
                    await anyio.to_thread.run_sync(self._release_unchanged, unchanged, number)
                elif lease and may_have_written:
                    await anyio.to_thread.run_sync(self._let_go, 1)
            raise

    def _write(
        self,
        snapshot: SessionSnapshot,
        number: int,
        base: list[Message],
        kept: int,
        lease_seconds: float | None,
        escalation: Escalation | None,
        live: list[Message],
    ) -> None:
        """Save *snapshot*, the *number*th taken, whose messages follow the first *kept* of *base*.

        *live* is the history (its message objects) that the snapshot was taken of.

        A checkpoint whose thread reaches the lock after a later snapshot was written is
        skipped: the later one holds everything it held (a finished call's result stays
        in the round), and writing it would bring an earlier state back.
        """
        with self._lock:
            if number < self._written and lease_seconds is not None and escalation is None:
                return
            self._written = number
            history = base[:kept] + snapshot["messages"]
            if self._stored is not base:
                # Another save (a concurrent tool's checkpoint) landed since *snapshot* was
                # taken: compare with what that one stored. All of these are copies.
                kept = common_prefix(self._stored, history)
                snapshot = {**snapshot, "messages": history[kept:]}
            before = self.version
            if self._appends:
                self.version = self.store.save(
                    self.id,
                    snapshot,
                    expected_version=self.version,
                    owner=self._owner,
                    lease_seconds=lease_seconds,
                    escalation=escalation,
                    kept_messages=kept,
                )
            else:
                # A store written before saves appended gets the whole history, as then.
                self.version = self.store.save(
                    self.id,
                    {**snapshot, "messages": history},
                    expected_version=self.version,
                    owner=self._owner,
                    lease_seconds=lease_seconds,
                    escalation=escalation,
                )
            self._stored = history
            self._sources = live
            # A save that records no escalation leaves the session without one if it had
            # none; a save that records one is why the next claim must ask.
            clear = escalation is None and self._no_escalation_at == before
            self._no_escalation_at = self.version if clear else -1

    def _release_unchanged(self, snapshot: SessionSnapshot, number: int) -> None:
        """Release the lease of a claim that was cut short, saving nothing new; best effort.

        A save without the lease rather than a renewal of no length: nothing of the
        invocation ran, so the session must not read as unfinished (a lease recorded).
        """
        with contextlib.suppress(SessionError):
            stored = self._stored
            self._write(snapshot, number, stored, len(stored), None, None, self._sources)

    def _let_go(self, tries: int = 1 + len(LET_GO_PAUSES)) -> None:
        """Let the lease lapse now, if this agent still holds it; tried while the store fails.

        Refused (another worker holds the session, or a save this agent could not confirm
        was applied after all), there is nothing of this agent's to let go. If every one
        of the *tries* fails (the store stays down), the lease lapses on its own.
        """
        for pause in (*LET_GO_PAUSES[: tries - 1], None):
            with self._lock:
                if self.version == 0:
                    return
                try:
                    self.store.renew(
                        self.id, version=self.version, owner=self._owner, lease_seconds=0
                    )
                except SessionConflictError:
                    return
                except SessionError:
                    if pause is None:
                        return
                else:
                    return
            time.sleep(pause)

    def renew(self) -> bool:
        """Extend the lease the running invocation holds (the renewer's call).

        Once the final save has begun, this does nothing. While another write holds the
        lock, it returns ``False`` at once, and the renewer tries again soon: the store's
        renewer, which serves every session of the store, never waits on one, and a
        checkpoint under way renews the lease only if it commits.
        """
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._leased:
                self._renew_locked(self._lease_seconds)
        finally:
            self._lock.release()
        return True

    def _renew(self, lease_seconds: float) -> None:
        with self._lock:
            self._renew_locked(lease_seconds)

    def _renew_locked(self, lease_seconds: float) -> None:
        self.store.renew(
            self.id, version=self.version, owner=self._owner, lease_seconds=lease_seconds
        )

    @property
    def lease_seconds(self) -> float:
        return self._lease_seconds

    def __repr__(self) -> str:
        return f"AgentSession({self.id!r}, version={self.version}, store={self.store!r})"


@final
class _Renewal:
    """A claimed session's lease as the store's renewer holds it, for one invocation."""

    __slots__ = ("_cancel", "_session")

    def __init__(self, session: AgentSession, cancel: CancelToken) -> None:
        self._session = session
        self._cancel = cancel

    @property
    def renew_every(self) -> float:
        return self._session.lease_seconds / 3

    def renew(self) -> bool:
        return self._session.renew()

    def lost(self) -> None:
        # Another worker owns the session now: whatever this run does next would be
        # refused at its save (which reports the conflict), so stop it rather than let
        # it act.
        self._cancel.set()


def _starts_with(history: list[Message], sources: list[Message]) -> bool:
    """Whether *history* starts with the very objects of *sources* (a check of pointers)."""
    return len(sources) <= len(history) and all(map(operator.is_, sources, history))


def _interrupt_state(core: AgentCore, held_input: Messages | None) -> dict[str, Any]:
    """The core's interrupt state as JSON data, holding back *held_input* if given.

    Set for the copy only, not kept: the pass itself takes its input as it always does.
    """
    interrupts = core.interrupts
    if held_input is None:
        return interrupts.to_dict()
    kept, interrupts.pending_input = interrupts.pending_input, held_input
    try:
        return interrupts.to_dict()
    finally:
        interrupts.pending_input = kept


def _takes_kept_messages(store: SessionStore) -> bool:
    """Whether *store*'s ``save`` names ``kept_messages``, and so keeps a stored prefix.

    A store written before saves appended has no such parameter: sending it only the new
    messages would replace its history with them. One that swallows any keyword
    (``**kwargs``) does not name it either, and is treated the same way.
    """
    try:
        parameters = inspect.signature(store.save).parameters
    except (TypeError, ValueError):  # no signature to read: assume the older contract
        return False
    return "kept_messages" in parameters
