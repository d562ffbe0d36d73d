"""SDK clients kept per event loop and closed with it, on one SSL context: for every HTTP adapter.

A client's pooled connections belong to the event loop that opened them, and each
synchronous ``agent(...)`` call runs a loop of its own. So an adapter builds its client
on first use in a loop and keeps it for that loop's requests; when the loop ends, the
client is closed there. The close rides on an async generator parked in the loop
(:func:`park_in_running_loop`): asyncio (``asyncio.run``, ``anyio.run``) and trio both
close the async generators still suspended when their run ends, while the loop can still
run the close, so no socket outlives its loop and nothing warns "unclosed" at exit. (A
loop closed by hand without ``shutdown_asyncgens()`` keeps its clients until the process
ends.)

:class:`LoopClients` is that for one client per loop (``AnthropicModel``'s);
``_openai_clients`` keeps several per loop, shared between models, on the same two
pieces. Loading the CA certificates is nearly all of a client's cost (about 40 ms); the
context holds no connection, so every client of every adapter on every loop uses the
one :func:`shared_ssl_context`.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import AsyncGenerator, Callable
from typing import Generic, Protocol, TypeVar, final

import httpx2

from stageware._host._running_loop import running_loop

__all__ = ["Closable", "LoopClients", "park_in_running_loop", "shared_ssl_context"]

_ssl_lock = threading.Lock()
_ssl_context: ssl.SSLContext | None = None


def shared_ssl_context() -> ssl.SSLContext:
    """The SSL context of every client, built with the first (as ``httpx`` builds it for
    ``verify=True``, reading ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``)."""
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            _ssl_context = httpx2.create_ssl_context()
        return _ssl_context


def park_in_running_loop(closer: AsyncGenerator[None, None]) -> None:
    """Start *closer* without awaiting it: its first step registers it with the running loop.

    Asking for its first step is what registers it (asyncio's and trio's async-generator
    hooks), so the loop closes it when its run ends, running what follows its ``yield``.
    Its body must reach ``yield`` without awaiting anything, so that one ``send`` runs the
    step to its end.
    """
    step = closer.asend(None)
    try:
        step.send(None)
    except StopIteration:
        return
    raise AssertionError("the closer awaited before its first yield")


class Closable(Protocol):
    """An SDK client: what :class:`LoopClients` needs of it."""

    async def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


@final
class LoopClients(Generic[C]):
    """One model's clients, one per running event loop. Safe to use from any thread."""

    __slots__ = ("_build", "_by_loop", "_closers", "_lock", "_name")

    def __init__(self, build: Callable[[], C], name: str) -> None:
        """Clients made by *build*, for the model class *name* (for the error outside a loop)."""
        self._build = build
        self._name = name
        self._lock = threading.Lock()
        self._by_loop: dict[object, C] = {}
        # The generators that close each loop's client; held so that they stay parked.
        self._closers: dict[object, AsyncGenerator[None, None]] = {}

    def for_running_loop(self) -> C:
        """The client for requests on the running loop, built on first use there.

        Raises:
            RuntimeError: No asyncio or trio loop is running in this thread.
            Exception: What building the client raised (the SDK checks its options).
        """
        loop = running_loop()
        if loop is None:
            raise RuntimeError(f"{self._name} sends requests only from a running event loop")
        with self._lock:
            client = self._by_loop.get(loop)
            if client is None:
                client = self._by_loop[loop] = self._build()
                closer = self._closers[loop] = self._close_at_loop_end(loop, client)
                park_in_running_loop(closer)
            return client

    async def _close_at_loop_end(self, loop: object, client: C) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with self._lock:
                if self._by_loop.get(loop) is client:
                    del self._by_loop[loop]
                self._closers.pop(loop, None)
            await client.close()
