"""The ``anthropic`` clients of one ``AnthropicModel``: one per event loop, closed with it.

A client's pooled connections belong to the event loop that opened them, and each
synchronous ``agent(...)`` call runs a loop of its own. So a model builds its client on
first use in a loop and keeps it for that loop's requests; when the loop ends, the client
is closed there. The close rides on an async generator parked in the loop: asyncio
(``asyncio.run``, ``anyio.run``) and trio both close the async generators still suspended
when their run ends, while the loop can still run the close, so no socket outlives its
loop and nothing warns "unclosed" at exit.

Clients are per model, not shared between models as ``OpenAIModel`` shares them: an
Anthropic deployment usually has a few models, and a client costs little once the SSL
context, nearly all of its cost, is shared (one for the process, built with the first).
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import AsyncGenerator, Callable
from typing import final

import anthropic
import httpx2

from stageware._host._running_loop import running_loop

__all__ = ["LoopClients", "shared_ssl_context"]

_ssl_lock = threading.Lock()
_ssl_context: ssl.SSLContext | None = None


def shared_ssl_context() -> ssl.SSLContext:
    """The SSL context of every client (as ``httpx`` builds it for ``verify=True``)."""
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            _ssl_context = httpx2.create_ssl_context()
        return _ssl_context


@final
class LoopClients:
    """One model's clients, one per running event loop. Safe to use from any thread."""

    __slots__ = ("_build", "_by_loop", "_closers", "_lock")

    def __init__(self, build: Callable[[], anthropic.AsyncAnthropic]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._by_loop: dict[object, anthropic.AsyncAnthropic] = {}
        # The generators that close each loop's client; held so that they stay parked.
        self._closers: dict[object, AsyncGenerator[None, None]] = {}

    def for_running_loop(self) -> anthropic.AsyncAnthropic:
        """The client for requests on the running loop, built on first use there.

        Raises:
            RuntimeError: No asyncio or trio loop is running in this thread.
            Exception: What building the client raised (``anthropic`` checks its options).
        """
        loop = running_loop()
        if loop is None:
            raise RuntimeError("AnthropicModel sends requests only from a running event loop")
        with self._lock:
            client = self._by_loop.get(loop)
            if client is None:
                client = self._by_loop[loop] = self._build()
                closer = self._closers[loop] = self._close_at_loop_end(loop, client)
                _run_to_first_yield(closer)
            return client

    async def _close_at_loop_end(
        self, loop: object, client: anthropic.AsyncAnthropic
    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with self._lock:
                if self._by_loop.get(loop) is client:
                    del self._by_loop[loop]
                self._closers.pop(loop, None)
            await client.close()


def _run_to_first_yield(closer: AsyncGenerator[None, None]) -> None:
    """Start *closer* without awaiting it: its first step registers it with the loop.

    Its body reaches ``yield`` without awaiting anything, so one ``send`` runs the step.
    """
    step = closer.asend(None)
    try:
        step.send(None)
    except StopIteration:
        return
    raise AssertionError("the closer awaited before its first yield")
