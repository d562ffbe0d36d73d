"""One thread per store that keeps alive every lease held on it in this process.

A worker holds a lease on a session while it runs an invocation (see ``_store``), and
must renew it before it lapses. The leases held on one store are renewed from one place:
a thread of that store's, started when the first lease is held, renewing each every
third of its length (``HeldLease.renew_every``), and ending as soon as nothing is held,
or when the store closes (``stop``). A thread rather than a task: a renewal must happen
even while a synchronous tool or hook holds an event loop, and the agents sharing a store
may run in several event loops.

What it costs: starting the thread once for a store that goes from nothing held to a
lease, and one store call per lease per third of its length. Holding and dropping a lease
take a lock and never wait for a renewal: a lease that is dropped while its renewal runs
must refuse that renewal itself (the agent's session does, under the lock of its
writes), so a drop is cheap enough for the event loop's thread.

The renewals of one store run one after the other on its thread, so a lease's renewal
must not wait on its holder (the agent's session skips a renewal while one of its own
saves, which renews the lease too, is under way). A skipped renewal is tried again soon
(``_retry_after``), not a third of the lease later: a save that fails, or two slow saves
in a row, must not let the lease lapse untried. A lease whose renewal
is refused (``SessionConflictError``: another worker took the session over) is told so
(``HeldLease.lost``) and no longer renewed; one whose renewal fails (a passing store
failure) is tried again at its next turn, when two thirds of its length are still left.

The renewals of a store run one after the other, so one that is slow (an SQLite file
locked by another writer, up to the store's timeout; a slow PostgreSQL server) delays
the others on the store; one renewal later than a third of its lease past its due time
logs a warning (logger ``stageware._host.sessions._lease_renewer``), before the lease
can lapse.

A process forked from one holding leases has none of the renewer threads: it forgets the
parent's renewers and lock (``os.register_at_fork``), and a lease it holds starts its own.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Final, Literal, Protocol, final

from ._store import SessionConflictError, SessionError

__all__ = ["THREAD_NAME", "HeldLease", "drop", "hold", "stop"]

_log: Final = logging.getLogger(__name__)

THREAD_NAME: Final = "stageware-lease-renewer"
"""The start of every renewer thread's name; the rest names its store."""


def _retry_after(lease: HeldLease) -> float:
    """Seconds until a skipped renewal of *lease* is tried again: soon, yet not a busy loop."""
    return min(1.0, lease.renew_every / 10)


class HeldLease(Protocol):
    """A lease this process holds, as its renewer sees it."""

    @property
    def renew_every(self) -> float:
        """Seconds between two renewals."""
        ...

    def renew(self) -> bool:
        """Renew the lease; a lease that was let go meanwhile renews nothing.

        Returns:
            ``False`` if the renewal could not run now (its holder is busy writing), to
            be tried again soon (``_retry_after``); ``True`` otherwise.

        Raises:
            SessionConflictError: Another worker holds the session now.
            SessionError: The store failed; the next turn tries again.
        """
        ...

    def lost(self) -> None:
        """Called once, on this renewer's thread, after a renewal was refused."""
        ...


# One lock for every renewer and the table of them: holding a lease, a thread ending
# because nothing is held and a store closing are then never half done for one another.
# Replaced in a forked child (``_forget_after_fork``).
_lock = threading.Lock()


@final
class _Renewer:
    """The thread of one store and the leases it renews, by when each is due."""

    __slots__ = ("_due", "_name", "_store", "_thread", "_wake")

    def __init__(self, store: object) -> None:
        # Kept so that the store's id, this renewer's key, is not reused while it runs.
        self._store = store
        self._name = f"{THREAD_NAME} {store!r}"
        self._due: dict[HeldLease, float] = {}
        self._wake = threading.Condition(_lock)
        self._thread: threading.Thread | None = None

    # Called with _lock held.

    def add(self, lease: HeldLease) -> None:
        self._due[lease] = time.monotonic() + lease.renew_every
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        else:
            self._wake.notify()

    def remove(self, lease: HeldLease) -> None:
        if self._due.pop(lease, None) is not None and not self._due:
            self._wake.notify()  # nothing held: the thread ends now

    def close(self) -> threading.Thread | None:
        self._due.clear()
        self._wake.notify()
        return self._thread

    # The thread.

    def _run(self) -> None:
        with _lock:
            while self._due:
                now = time.monotonic()
                ready = [(lease, due) for lease, due in self._due.items() if due <= now]
                if not ready:
                    self._wake.wait(min(self._due.values()) - now)
                    continue
                for lease, _ in ready:
                    self._due[lease] = now + lease.renew_every
                _lock.release()
                try:
                    outcomes = [(lease, _renew(lease, due)) for lease, due in ready]
                finally:
                    _lock.acquire()
                for lease, outcome in outcomes:
                    if outcome == "lost":
                        self._due.pop(lease, None)
                    elif outcome == "skipped" and lease in self._due:
                        self._due[lease] = time.monotonic() + _retry_after(lease)
            self._thread = None
            if _renewers.get(id(self._store)) is self:
                del _renewers[id(self._store)]


_renewers: dict[int, _Renewer] = {}
"""The renewer of each store (by its id) that holds a lease, or is closing."""


def _renew(lease: HeldLease, due: float) -> Literal["renewed", "skipped", "lost"]:
    """Renew *lease*, *due* then; ``"lost"`` if it is lost (and has been told so)."""
    late = time.monotonic() - due
    if late > lease.renew_every:
        _log.warning(
            "renewing a session lease %.1f s after it was due, with less than a third of "
            "it left: a renewal before it on the same store was slow (a busy database?)",
            late,
        )
    try:
        if not lease.renew():
            return "skipped"
    except SessionConflictError:
        lease.lost()
        return "lost"
    except SessionError:
        pass  # a passing store failure: the lease has two thirds of its length left
    except Exception:
        # A store's own bug must not end the renewals of the other leases.
        _log.exception("renewing a session lease failed; the next turn tries again")
    return "renewed"


def _forget_after_fork() -> None:
    """In a forked child: no renewer thread was copied, and the lock may have been held.

    The parent's leases are the parent's to renew; a lease the child holds starts a
    renewer of its own.
    """
    global _lock
    _lock = threading.Lock()
    _renewers.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def hold(store: object, lease: HeldLease) -> None:
    """Renew *lease* on *store* from now on, starting the store's renewer if it has none."""
    with _lock:
        renewer = _renewers.get(id(store))
        if renewer is None:
            renewer = _renewers[id(store)] = _Renewer(store)
        renewer.add(lease)


def drop(store: object, lease: HeldLease) -> None:
    """Stop renewing *lease*; the renewer ends when it holds nothing else. Never waits."""
    with _lock:
        renewer = _renewers.get(id(store))
        if renewer is not None:
            renewer.remove(lease)


def stop(store: object) -> None:
    """Stop renewing every lease on *store* and wait for its renewer to end (a closing store).

    A renewal under way finishes first. Leases held later start a new renewer.
    """
    with _lock:
        renewer = _renewers.pop(id(store), None)
        thread = None if renewer is None else renewer.close()
    if thread is not None and thread is not threading.current_thread():
        thread.join()
