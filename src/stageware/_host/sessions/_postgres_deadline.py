"""A Postgres store call's time bound, kept on the client's side as well as the server's.

The server's ``statement_timeout`` and ``lock_timeout`` end a statement that runs or waits
too long, and say so; they cannot end a call to a server that no longer answers (stopped,
or cut off by a partition), and libpq has no read timeout: the call would wait for TCP to
give up, which takes minutes, and on a Unix socket for ever. ``CallDeadline.guard`` arms a
timer for the rest of the call's time. If the connection is still in use when it fires,
its socket is shut down, so the blocked read returns at once with an error and the call
fails instead of waiting. The connection is broken then, and the pool drops it.
"""

from __future__ import annotations

import contextlib
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
        lock = threading.Lock()
        finished = False

        def cut() -> None:
            # Under the lock, so a block that just ended (and may hand the connection back
            # to the pool, to another caller) is never cut.
            with lock:
                if not finished:
                    self.cut = True
                    _shut_down(connection)

        timer = threading.Timer(self.left(), cut)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            with lock:
                finished = True
            timer.cancel()


def _shut_down(connection: psycopg.Connection[Any]) -> None:
    """End *connection*'s socket for both directions; a read blocked on it returns."""
    try:
        descriptor = connection.pgconn.socket
    except psycopg.OperationalError:  # closed already
        return
    # A duplicate, closed here; shutting it down ends the socket the original uses.
    with contextlib.suppress(OSError), socket.socket(fileno=os.dup(descriptor)) as duplicate:
        duplicate.shutdown(socket.SHUT_RDWR)
