"""The event loop an MCP session lives in: a daemon thread, and calls into it from any loop.

An MCP session is bound to the event loop that opened it, but an agent runs on many: the
synchronous ``agent(prompt)`` starts a new event loop for every call, ``invoke_async``
runs on the caller's (asyncio or trio), and two agents in two threads may share one
server. So the session gets a loop of its own, in a thread of its own, and every request
is carried there and its outcome carried back:

- ``LoopThread.start(serve, timeout, on_end)`` runs ``serve`` on a new asyncio loop in a
  daemon thread and waits until it has opened its portal
  (``anyio.from_thread.BlockingPortal``), or failed. Daemon, so an unclosed client never
  keeps the interpreter alive; the client closes itself at exit instead. A session that
  ends afterwards without ``stop()`` (its server exited) is reported to ``on_end``.
- ``LoopThread.call(func, ...)`` runs ``func`` in that loop and awaits its outcome from
  the caller's loop without blocking it and without a worker thread: the portal's future
  wakes the caller through its own loop's token. Cancelling the caller cancels the task
  in the session's loop, so the MCP SDK tells the server (``notifications/cancelled``).
- ``LoopThread.stop()`` cancels what still runs, lets ``serve`` close its session and
  joins the thread (bounded: the SDK bounds its own shutdown of a stdio server).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar, final

import anyio
import anyio.lowlevel
from anyio.from_thread import BlockingPortal

__all__ = ["LoopThread", "LoopThreadClosedError"]

T = TypeVar("T")

_log = logging.getLogger("stageware.mcp")

# What runs in the thread: it opens its session, then awaits the portal server it is
# given (which reports ready and returns once stop() is called), then closes the session.
Serve = Callable[[Callable[[], Awaitable[None]]], Awaitable[None]]

# How long stop() waits for the thread: the stdio transport's own shutdown takes at most
# about 6 s (2 s for the server to exit, 2 s after SIGTERM, 2 s after SIGKILL).
_STOP_TIMEOUT = 15.0


class LoopThreadClosedError(RuntimeError):
    """The session's loop is not running (not started yet, or stopped)."""


@final
class LoopThread:
    """One daemon thread running one event loop, for one MCP session."""

    __slots__ = ("_name", "_portal", "_stopping", "_thread")

    def __init__(self, name: str) -> None:
        self._name = name
        self._thread: threading.Thread | None = None
        self._portal: BlockingPortal | None = None
        self._stopping = False

    def start(
        self, serve: Serve, timeout: float, on_end: Callable[[BaseException | None], None]
    ) -> None:
        """Run *serve* in a new thread and wait until it opened its portal.

        *on_end* is called in the thread, with what ended the session (``None``: it
        returned), if the session ends after it was ready and before ``stop()``.

        Raises:
            TimeoutError: If *serve* took longer than *timeout* seconds to get ready.
            BaseException: Whatever *serve* raised before it was ready.
        """
        ready: concurrent.futures.Future[BlockingPortal] = concurrent.futures.Future()

        async def serve_portal() -> None:
            async with BlockingPortal() as portal:
                ready.set_result(portal)
                await portal.sleep_until_stopped()

        async def main() -> None:
            await serve(serve_portal)

        def run() -> None:
            ended: BaseException | None = None
            try:
                anyio.run(main, backend="asyncio")
            except BaseException as error:
                # Handed to the starting thread. After start, the calls waiting on the
                # session got its errors already.
                if not ready.done():
                    ready.set_exception(error)
                ended = error
            if not ready.done():
                ready.set_exception(LoopThreadClosedError("the session ended before it was ready"))
            elif not self._stopping:
                self._portal = None
                on_end(ended)

        thread = threading.Thread(target=run, name=self._name, daemon=True)
        self._thread = thread
        self._stopping = False
        thread.start()
        try:
            self._portal = ready.result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"not ready within {timeout:g} s") from None

    def stop(self) -> None:
        """Cancel the calls still running, let the session close, and join the thread."""
        portal, thread = self._portal, self._thread
        self._stopping = True
        self._portal = None
        if portal is not None:
            # A RuntimeError: the loop has already ended (its session failed).
            with contextlib.suppress(RuntimeError):
                portal.call(portal.stop, True)
        if thread is not None and thread is not threading.current_thread():
            thread.join(_STOP_TIMEOUT)

    async def call(self, func: Callable[[], Awaitable[T]]) -> T:
        """Run *func* in the session's loop; await its outcome in the caller's loop.

        Raises:
            LoopThreadClosedError: If the loop is not running.
            BaseException: Whatever *func* raised.
        """
        portal = self._portal
        if portal is None:
            raise LoopThreadClosedError("the session is closed")
        try:
            future = portal.start_task_soon(func)
        except RuntimeError as error:  # stopped between the check and the call
            raise LoopThreadClosedError("the session is closed") from error
        return await wait_for(future)


async def wait_for(future: concurrent.futures.Future[T]) -> T:
    """Await *future*, completed in another thread, from the current loop (any backend).

    Cancelling the wait cancels the future.
    """
    token = anyio.lowlevel.current_token()
    done = anyio.Event()

    def wake(_: concurrent.futures.Future[T]) -> None:
        # A loop token is how anyio itself (``anyio.from_thread.run_sync``) enters a loop
        # from another thread; its ``backend_class.run_sync_soon`` is public on the
        # token but documented only as part of the backend interface, so the version
        # range in the mcp extra (anyio>=4.11,<5) is the one it is tested with.
        # RunFinishedError: the waiting loop has ended; nobody is left to wake.
        with contextlib.suppress(anyio.RunFinishedError):
            token.backend_class.run_sync_soon(done.set, (), token.native_token)

    future.add_done_callback(wake)
    try:
        await done.wait()
    except BaseException:
        future.cancel()
        raise
    if future.cancelled():
        # Not by this caller, whose cancellation raised above: the loop was stopped.
        raise LoopThreadClosedError("the session was closed during the call")
    return future.result()
