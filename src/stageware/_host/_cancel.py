"""The cancel signal the agent hands to its tools and middleware."""

from __future__ import annotations

import threading
import time
from typing import Final, final

import anyio

__all__ = ["CancelToken"]


@final
class CancelToken:
    """A one-way flag: once set it stays set.

    Backed by a ``threading.Event`` so ``agent.cancel()`` may be called from another thread
    (a UI, a signal handler) while the run goes on in an event loop.
    """

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        """Ask the run to stop."""
        self._event.set()

    def is_set(self) -> bool:
        """Whether cancellation was requested."""
        return self._event.is_set()

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until the token is set or *timeout* seconds pass; return whether it is set.

        Polls, because ``set()`` may come from any thread and a ``threading.Event`` cannot
        wake an anyio task; a poll every few milliseconds costs nothing next to the waits
        this ends early (a backoff delay, a stalled stream).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._event.is_set():
            if deadline is None:
                await anyio.sleep(_POLL_SECONDS)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            await anyio.sleep(min(left, _POLL_SECONDS))
        return True

    def __repr__(self) -> str:
        return f"CancelToken(set={self.is_set()})"


_POLL_SECONDS: Final = 0.02
