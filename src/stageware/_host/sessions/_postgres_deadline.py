"""A Postgres store call's time bound, kept on the client's side as well as the server's.

The server's ``statement_timeout`` and ``lock_timeout`` end a statement that runs or waits
too long, and say so; they cannot end a call to a server that no longer answers (stopped,
or cut off by a partition), and libpq has no read timeout: the call would wait for TCP to
give up, which takes minutes, and on a Unix socket for ever. ``CallDeadline.guard`` arms
a watch for the rest of the call's time. If the connection is still in use when the time
is up, its socket is shut down, so the blocked read returns at once with an error and the
call fails instead of waiting. The connection is broken then, and the pool drops it.

One watchdog thread serves every guard of the process (a thread per call would cost more
than the round trip it guards); it sleeps until the earliest deadline and wakes for a
nearer one.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Generator
from typing import Any, final

import psycopg

__all__ = ["CallDeadline"]


@final
class CallDeadline:
    """When one store call must be over, and whether it was cut for running past it.

    Attributes:
        seconds: The call's whole allowance.
        cut: A connection of this call was shut down because the time ran out.
    """

    __slots__ = ("_ends", "cut", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._ends = time.monotonic() + seconds
        self.cut = False

    def left(self) -> float:
        """Seconds until the deadline, 0 once it has passed."""
        return max(0.0, self._ends - time.monotonic())

    @contextlib.contextmanager
    def guard(self, connection: psycopg.Connection[Any]) -> Generator[None, None, None]:
        """Shut *connection*'s socket down if the block is still running at the deadline."""
        watch = _Watch(self, connection)
        _WATCHDOG.arm(self._ends, watch)
        try:
            yield
        finally:
            watch.finish()


@final
class _Watch:
    """One guarded block: cut at the deadline unless it finished first."""

    __slots__ = ("_connection", "_deadline", "_finished", "_lock")

    def __init__(self, deadline: CallDeadline, connection: psycopg.Connection[Any]) -> None:
        self._deadline = deadline
        self._connection = connection
        self._lock = threading.Lock()
        self._finished = False

    @property
    def finished(self) -> bool:
        return self._finished

    def finish(self) -> None:
        # Under the lock, so that a block that just ended (whose connection may go back to
        # the pool, and to another caller) is never cut.
        with self._lock:
            self._finished = True

    def cut(self) -> None:
        with self._lock:
            if not self._finished:
                self._finished = True
                self._deadline.cut = True
                _shut_down(self._connection)


@final
class _Watchdog:
    """The thread that cuts the guarded blocks still running at their deadlines."""

    __slots__ = ("_condition", "_order", "_thread", "_watches")

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._watches: list[tuple[float, int, _Watch]] = []
        self._order = itertools.count()  # ties of equal deadlines never compare watches
        self._thread: threading.Thread | None = None

    def forget_threads(self) -> None:
        """In a forked child: the parent's thread and lock are not this process's."""
        self._condition = threading.Condition()
        self._watches = []
        self._thread = None

    def arm(self, ends: float, watch: _Watch) -> None:
        with self._condition:
            heapq.heappush(self._watches, (ends, next(self._order), watch))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="stageware-postgres-watchdog", daemon=True
                )
                self._thread.start()
            self._condition.notify()

    def _run(self) -> None:
        with self._condition:
            while True:
                while self._watches and self._watches[0][2].finished:
                    heapq.heappop(self._watches)
                if not self._watches:
                    self._condition.wait()
                    continue
                left = self._watches[0][0] - time.monotonic()
                if left > 0:
                    self._condition.wait(left)
                    continue
                heapq.heappop(self._watches)[2].cut()


_WATCHDOG = _Watchdog()
os.register_at_fork(after_in_child=_WATCHDOG.forget_threads)


def _shut_down(connection: psycopg.Connection[Any]) -> None:
    """End *connection*'s socket for both directions; a read blocked on it returns."""
    try:
        descriptor = connection.pgconn.socket
    except psycopg.OperationalError:  # closed already
        return
    # A duplicate, closed here; shutting it down ends the socket the original uses.
    with contextlib.suppress(OSError), socket.socket(fileno=os.dup(descriptor)) as duplicate:
        duplicate.shutdown(socket.SHUT_RDWR)
