"""The cancel signal the agent hands to its tools and middleware."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final, final

import anyio

__all__ = ["CancelToken"]


@final
class CancelToken:
    """A one-way flag: once set it stays set.

    Backed by a ``threading.Event`` so ``agent.cancel()`` may be called from another thread
    (a UI, a signal handler) while the run goes on in an event loop. The host listens for
    it being set (``add_listener``) to bound how long the run goes on afterwards.
    """

    __slots__ = ("_event", "_listeners", "_lock")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def set(self) -> None:
        """Ask the run to stop."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call *listener* once the token is set: at once if it is, else from ``set()``.

        It runs in the thread that sets the token, so it must be quick and thread-safe.
        """
        with self._lock:
            if not self._event.is_set():
                self._listeners.append(listener)
                return
        listener()

    def remove_listener(self, listener: Callable[[], None]) -> None:
        """Stop calling *listener*; nothing happens if it is not registered."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

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
