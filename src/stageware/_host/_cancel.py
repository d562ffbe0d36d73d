"""The cancel signal the agent hands to its tools and middleware."""

from __future__ import annotations

import threading
from typing import final

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

    def __repr__(self) -> str:
        return f"CancelToken(set={self.is_set()})"
