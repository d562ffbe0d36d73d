"""Where a stored session stands for an invocation that may be a replay.

An invocation's key (its workflow id) is written into the session twice: as the owner of
the lease its claim takes, and into the interrupt state by its final save
(``released_by``). A replay of the invocation reads them back (see ``_agent``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, TypeAlias

import anyio
import anyio.to_thread

from stageware._host._journal_session import leased_by, released_by, stored_outcome

from ._result import DurableResult

if TYPE_CHECKING:
    from stageware._host.sessions import SessionStore, StoredSession

__all__ = [
    "Standing",
    "finished",
    "finished_result",
    "leased_by",
    "moved_on_error",
    "standing",
    "wait_for_lapse",
]

Standing: TypeAlias = Literal["finished", "own_claim", "fresh", "moved_on"]

_CLOCK_MARGIN = 2.0
"""Seconds past a lease's expiry, by this machine's clock, before it counts as lapsed."""


def finished(stored: StoredSession, key: str) -> bool:
    """Whether the invocation *key* made the session's last final save."""
    return released_by(stored) == key


def standing(stored: StoredSession | None, *, key: str, version_at_start: int) -> Standing:
    """Where the session stands for invocation *key*, which began at *version_at_start*."""
    if stored is None:
        return "fresh" if version_at_start == 0 else "moved_on"
    if finished(stored, key):
        return "finished"
    if leased_by(stored, key):
        return "own_claim"
    if stored.version == version_at_start:
        return "fresh"
    return "moved_on"


def finished_result(stored: StoredSession, *, session_id: str, key: str) -> DurableResult:
    """The result of invocation *key*, read from the final save it made."""
    outcome = stored_outcome(stored)
    assert outcome is not None  # finished() found its record
    return DurableResult(
        session_id=session_id,
        workflow_id=key,
        stop_reason=outcome.stop_reason or "error",
        text=outcome.text,
        error=outcome.error,
        interrupts=tuple(interrupt.id for interrupt in outcome.interrupts),
        escalation_id=outcome.escalation_id,
    )


def moved_on_error(session_id: str, key: str) -> RuntimeError:
    """The error of a replay that finds the session moved on without it."""
    return RuntimeError(
        f"session {session_id!r} changed since invocation {key} began, and holds neither "
        "its claim nor its final save; the invocation is not run again, so that its input "
        "is not recorded twice"
    )


async def wait_for_lapse(
    store: SessionStore, session_id: str, *, key: str, seconds: float
) -> StoredSession | None:
    """Wait until the lease of invocation *key*'s own claim lapses; the session then.

    The worker that took the claim died (that is why the invocation is replayed), so its
    lease lapses within its length, unless that worker is alive after all and keeps
    renewing it: then it finishes the invocation, and its final save ends the wait too.

    The lease's expiry is the store's clock (the database server's), which this machine's
    may not match: the lease counts as lapsed once this machine's clock is
    ``_CLOCK_MARGIN`` past it and a read after that finds the expiry unchanged (nobody
    renewed it). Until then the replay does not claim: a claim by the same key is not
    refused by a live lease.

    Raises:
        TimeoutError: The lease is still live after *seconds*.
    """
    deadline = time.monotonic() + seconds
    stored = await anyio.to_thread.run_sync(store.load, session_id)
    while True:
        if stored is None or stored.lease is None or not leased_by(stored, key):
            return stored
        expires_at = stored.lease.expires_at
        wait = (expires_at - datetime.now(UTC)).total_seconds() + _CLOCK_MARGIN
        if time.monotonic() + max(wait, 0.0) > deadline:
            raise TimeoutError(
                f"session {session_id!r} is still leased to invocation {key} after "
                f"{seconds:g} s: the worker that holds it keeps renewing the lease"
            )
        await anyio.sleep(max(wait, 0.0))
        stored = await anyio.to_thread.run_sync(store.load, session_id)
        if (
            stored is not None
            and stored.lease is not None
            and leased_by(stored, key)
            and stored.lease.expires_at == expires_at
        ):
            return stored
