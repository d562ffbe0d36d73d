"""The event loop this thread runs (asyncio's or trio's), and work started on it from outside.

Neither asyncio nor trio is imported here: a loop can only be running if something else
already imported its library, and ``import stageware`` should not pay for asyncio (tens
of milliseconds) when the agent runs on trio, or has not run yet.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

__all__ = ["loop_caller", "running_loop", "spawn_detached"]


def running_loop() -> object | None:
    """An object that identifies the event loop running in this thread, or ``None``.

    It is asyncio's loop, or the token of the current ``trio.run``; two calls return the
    same object exactly when they run on the same loop.
    """
    loop = _asyncio_loop()
    if loop is not None:
        return loop
    trio: Any = sys.modules.get("trio")
    if trio is None:
        return None
    try:
        token: object = trio.lowlevel.current_trio_token()
    except RuntimeError:
        return None
    return token


def spawn_detached(async_fn: Callable[[], Awaitable[object]]) -> object:
    """Start *async_fn* as a task of its own on the running loop; return a handle to keep.

    anyio starts tasks only in task groups, and a task group must be left in the task and
    the frame that entered it; this task is bound to neither. It runs in a copy of the
    caller's context variables. On asyncio it is a plain task (keep the handle: the loop
    holds tasks weakly), on trio a system task, which must not raise: *async_fn* catches
    its errors itself.

    Raises:
        RuntimeError: If no asyncio or trio loop is running in this thread.
    """
    context = contextvars.copy_context()
    loop = _asyncio_loop()
    if loop is not None:
        return loop.create_task(_awaited(async_fn), context=context)
    trio: Any = sys.modules.get("trio")
    if trio is None:
        raise RuntimeError("spawn_detached() needs a running asyncio or trio event loop")
    task: object = trio.lowlevel.spawn_system_task(async_fn, context=context)
    return task


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """asyncio's loop running in this thread, or ``None`` (as when asyncio is not imported)."""
    if "asyncio" not in sys.modules:
        return None
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _awaited(async_fn: Callable[[], Awaitable[object]]) -> None:
    # asyncio.create_task wants a coroutine; async_fn returns any awaitable.
    await async_fn()


def loop_caller() -> Callable[[Callable[[float], None]], None]:
    """A function that, from any thread, has this thread's running loop call a callback soon.

    The callback runs in the loop's thread, outside any task (where anyio's functions do
    not work), with the loop's clock reading, the time anyio deadlines are set in. Once the
    loop has ended, it is dropped: there is nothing left for it to act on.

    Raises:
        RuntimeError: If no asyncio or trio loop is running in this thread.
    """
    loop = _asyncio_loop()
    if loop is not None:

        def call_on_asyncio(callback: Callable[[float], None]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                loop.call_soon_threadsafe(lambda: callback(loop.time()))

        return call_on_asyncio
    trio: Any = sys.modules.get("trio")
    if trio is None:
        raise RuntimeError("loop_caller() needs a running asyncio or trio event loop")
    token: Any = trio.lowlevel.current_trio_token()
    finished: type[BaseException] = trio.RunFinishedError
    clock: Callable[[], float] = trio.current_time

    def call_on_trio(callback: Callable[[float], None]) -> None:
        with contextlib.suppress(finished):
            token.run_sync_soon(lambda: callback(clock()))

    return call_on_trio
