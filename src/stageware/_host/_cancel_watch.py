"""Bounding how long a run goes on after ``cancel()``: the parts that do not stop are cut.

``agent.cancel()`` is cooperative first: the loop checks the signal between steps and
tools see ``cancel_signal.is_set()``, so most runs end on their own within milliseconds.
An await that never returns (a stalled model stream, a tool or a middleware waiting for
something that will not come) would hold the run for ever, so each part of a run that
may get stuck runs in a :class:`CutRegion`, an anyio cancel scope that the invocation's
:class:`CancelWatch` cancels once the part has run for its allowance after the signal
was set:

- a tool call (its hooks, its ExecuteTool chain, the tool) and a model call (its hooks,
  its InvokeModel chain, the model's stream) get ``GRACE_SECONDS``; the executor and the
  loop turn such a cut into the outcome of a cooperative stop (a cancelled tool result, a
  cancelled pass), so the AgentStream chain still delivers the stop event;
- the pass as a whole (the AgentStream chain with its middleware) gets
  ``PASS_CUTOFF_SECONDS``, the grace plus time to deliver that stop event; cut, the
  invocation reports the ``cancelled`` stop itself.

Only the time a region spends running counts. A region around an async generator is
disarmed while one of its events is with the consumer: its scope stays open across that
``yield`` (the generators inside it keep their own scopes and task groups open across
theirs, so it cannot close earlier), and cancelling it then would cancel the consumer's
code instead of the stuck part. Every scope is entered and exited in the task that runs
the region and cancelled in that event loop only: the watch is a task of the invocation,
and polls the signal (which any thread may set) and the regions every ``_TICK_SECONDS``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from types import TracebackType
from typing import Final, TypeVar, final

import anyio

from ._cancel import CancelToken

__all__ = ["GRACE_SECONDS", "PASS_CUTOFF_SECONDS", "CancelWatch", "CutRegion"]

GRACE_SECONDS: Final = 0.5
"""How long a model call or a tool call may go on after ``cancel()`` before it is cut."""

PASS_CUTOFF_SECONDS: Final = 0.75
"""How long the pass may go on after ``cancel()``: the grace, then time to report the stop."""

_TICK_SECONDS: Final = 0.02

T = TypeVar("T")


@final
class CancelWatch:
    """Watches one invocation's cancel signal and cuts the regions that overrun it."""

    __slots__ = ("_regions", "_token")

    def __init__(self, token: CancelToken) -> None:
        self._token = token
        self._regions: set[CutRegion] = set()

    def add(self, region: CutRegion) -> None:
        """Start watching *region* (it has been entered)."""
        self._regions.add(region)

    def discard(self, region: CutRegion) -> None:
        """Stop watching *region* (it is being left)."""
        self._regions.discard(region)

    async def watching(self, events: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
        """Yield *events*, with the watch running as a task for as long as they last.

        The task group stays open across the yields (the watch must run while the
        consumer holds an event too); nothing cancels it there, since the watch task does
        not fail. An error of *events* is raised as itself, after the task group: on trio a
        task group would wrap it in an exception group.
        """
        error: Exception | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(self._watch)
            try:
                try:
                    async for event in events:
                        try:
                            yield event
                        except GeneratorExit:
                            # Closed by the consumer: leave the task group normally, here,
                            # rather than with a GeneratorExit escaping through it.
                            break
                finally:
                    await events.aclose()
            except Exception as raised:
                error = raised
            group.cancel_scope.cancel()
        if error is not None:
            raise error

    async def _watch(self) -> None:
        await self._token.wait()
        last = anyio.current_time()
        while True:
            await anyio.sleep(_TICK_SECONDS)
            now = anyio.current_time()
            for region in list(self._regions):
                region.charge(now - last)
            last = now


@final
class CutRegion:
    """A part of a run that its watch cuts once it has run *allowance* seconds after ``cancel()``.

    Enter it (``with region:``) around code that runs in one task, such as a tool call,
    or let :meth:`guard` wrap an async generator. Afterwards, :attr:`cut` tells whether
    the watch cut it; a cut ends the region without an error, as a cancel scope does.
    """

    __slots__ = ("_allowance", "_armed", "_ran", "_watch", "cut", "scope")

    def __init__(self, watch: CancelWatch, allowance: float) -> None:
        self._watch = watch
        self._allowance = allowance
        self._armed = False
        self._ran = 0.0
        self.cut = False
        self.scope = anyio.CancelScope()

    def __enter__(self) -> CutRegion:
        self.scope.__enter__()
        self._armed = True
        self._watch.add(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self._armed = False
        self._watch.discard(self)
        return bool(self.scope.__exit__(exc_type, exc, traceback))

    def charge(self, seconds: float) -> None:
        """Count *seconds* of the run since ``cancel()``; cut the region once it is overdue."""
        if not self._armed or self.cut:
            return
        self._ran += seconds
        if self._ran >= self._allowance:
            self.cut = True
            self.scope.cancel()

    async def guard(self, events: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
        """Yield *events* inside the region, armed only while they run; a cut ends them early.

        *events* are closed inside the region too, so cleanup that hangs is cut as well.
        """
        with self:
            try:
                while True:
                    self._armed = True
                    try:
                        event = await anext(events)
                    except StopAsyncIteration:
                        return
                    finally:
                        self._armed = False
                    if self.scope.cancel_called:
                        # Cut just as the event came out: yielded from inside a cancelled
                        # scope, it would take the cancellation to the consumer.
                        return
                    yield event
            finally:
                self._armed = True
                await events.aclose()
