"""An async generator run in a task of its own, advanced one item at a time on request.

``stream_async`` hands its caller the events of a run whose generators hold anyio cancel
scopes and task groups open across their yields: the tool executor's task group, the
cancel watch's task group and regions. anyio requires such generators to be advanced
and closed in one task. A caller that stops iterating without closing the stream leaves
it to the garbage collector, which closes it in another task, and the scopes break (the
caller's task is cancelled on asyncio; trio hangs). Run in a task of its own, the
generator is always advanced and closed in that task; the caller's task only exchanges
events with it and holds no scope of the run.

The exchange is in lockstep, so nothing changes for the generator: it advances only
while the caller waits for its next item, exactly as if the caller iterated it. When the
caller leaves (it closes the stream, fails or is cancelled), the task closes the
generator, or cancels the step in progress so that the cancellation reaches the run as
it would have in the caller's task, and the caller waits for that, shielded: when it goes
on, the run has settled.

A *host* may run that task's body for it: a durable-execution engine runs it as a
workflow (``stageware.dbos.run_durably``), so that the run's model and tool calls are
that workflow's steps. The task is then the host's, and the lockstep is the same.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Generic, TypeAlias, TypeVar, final

import anyio

from ._running_loop import spawn_detached

__all__ = ["TaskHost", "in_own_task"]

T = TypeVar("T")

TaskHost: TypeAlias = Callable[[Callable[[], Awaitable[Exception | None]]], Awaitable[None]]
"""Runs a body (``await body()``) in a task of its own and returns when the body ended.

The body never raises: what the run raises reaches the reader another way, and the body
returns it too (``None`` when the run ended without raising), so that the host can record
how the run ended. The host may raise before it runs the body (it could not start it),
and the reader then gets that error.
"""

_log = logging.getLogger("stageware")


async def in_own_task(
    events: AsyncGenerator[T, None], *, host: TaskHost | None = None
) -> AsyncGenerator[T, None]:
    """Yield the items of *events*, which a task of their own advances and closes.

    With a *host*, the host runs that task (see ``TaskHost``).

    Raises:
        Exception: What *events* raised, advancing or closing, or what *host* raised
            when it could not run the task.
    """
    runner = _Runner(events, host)
    runner.start()
    try:
        while True:
            try:
                item = await runner.step()
            except StopAsyncIteration:
                return
            yield item
    finally:
        with anyio.CancelScope(shield=True):
            await runner.close()


@final
class _Runner(Generic[T]):
    """The task that owns the generator, and the lockstep handshake with the caller."""

    __slots__ = (
        "_answered",
        "_asked",
        "_closing",
        "_ended",
        "_error",
        "_events",
        "_exhausted",
        "_failure",
        "_finished",
        "_host",
        "_items",
        "_scope",
        "_stepping",
        "_task",
    )

    def __init__(self, events: AsyncGenerator[T, None], host: TaskHost | None) -> None:
        self._events = events
        self._host = host
        self._asked = anyio.Event()
        self._answered = anyio.Event()
        self._finished = anyio.Event()
        # The task's end: the generator's, and then the host's (which records the end).
        self._ended = anyio.Event()
        # One scope for the generator's whole life, as the caller's task would have been:
        # the generator leaves scopes of its own open between items, so a scope per step
        # could not be left before them.
        self._scope = anyio.CancelScope()
        self._closing = False
        self._stepping = False
        self._exhausted = False
        self._items: list[T] = []
        self._error: Exception | None = None
        # What the run raised, kept after the reader took it: the body's return value.
        self._failure: Exception | None = None
        self._task: object = None

    def start(self) -> None:
        """Start the task (kept here: asyncio holds its tasks weakly)."""
        self._task = spawn_detached(self._run if self._host is None else self._hosted)

    async def step(self) -> T:
        """Have the task advance the generator once, and return its item.

        Raises:
            StopAsyncIteration: At the generator's end.
            Exception: What the generator raised.
        """
        self._answered = anyio.Event()
        if self._finished.is_set():  # a host that could not run the task
            self._raise_error()
            raise StopAsyncIteration
        self._asked.set()
        await self._answered.wait()
        self._raise_error()
        if self._exhausted:
            raise StopAsyncIteration
        return self._items.pop()

    async def close(self) -> None:
        """Have the task close the generator, cancelling a step in progress; wait for it.

        Raises:
            Exception: What the generator raised while closing.
        """
        self._closing = True
        if self._stepping:
            # The caller left while waiting (it was cancelled, say): the run is cancelled
            # where it waits, as it was when the caller's task ran it.
            self._scope.cancel()
        self._asked.set()
        await self._ended.wait()
        self._raise_error()

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    async def _hosted(self) -> None:
        assert self._host is not None
        try:
            await self._host(self._run)
        except Exception as error:
            if self._finished.is_set():
                # The run ended and its reader has all of it; only the host's own
                # bookkeeping after it failed, which the host reports its own way.
                _log.warning("the host of a finished run failed: %r", error)
                return
            # The body never started: the reader's step, or its close, gets the error.
            self._error = error
            self._exhausted = True
            self._answered.set()
            self._finished.set()
        finally:
            self._ended.set()

    async def _run(self) -> Exception | None:
        try:
            with self._scope:
                try:
                    await self._serve()
                finally:
                    # Inside the scope the generator's own scopes were entered in; at once
                    # if a cancelled step already finished it.
                    try:
                        await self._events.aclose()
                    except Exception as error:
                        self._error = self._failure = error
        finally:
            self._finished.set()
            if self._host is None:
                self._ended.set()
        return self._failure

    async def _serve(self) -> None:
        while True:
            await self._asked.wait()
            # Renewed before any other await, so the caller's next ask cannot be lost.
            self._asked = anyio.Event()
            if self._closing:
                return
            self._stepping = True
            try:
                self._items.append(await anext(self._events))
            except StopAsyncIteration:
                self._exhausted = True
            except Exception as error:
                self._error = self._failure = error
            finally:
                self._stepping = False
            self._answered.set()
