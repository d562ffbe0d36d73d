"""Bounding how long a run goes on after ``cancel()``: the parts that do not stop are cut.

``agent.cancel()`` is cooperative first: the loop checks the signal between steps and
tools see ``cancel_signal.is_set()``, so most runs end on their own within milliseconds.
An await that never returns (a stalled model stream, a tool or a middleware waiting for
something that will not come) would hold the run for ever, so each part of a run that
may get stuck runs in a :class:`CutRegion`, an anyio cancel scope whose deadline the
invocation's :class:`CancelWatch` sets once the signal is set, to the part's allowance:

- a tool call (its hooks, its ExecuteTool chain, the tool) and a model call (its hooks,
  its InvokeModel chain, the model's stream) get ``GRACE_SECONDS``; the executor and the
  loop turn such a cut into the outcome of a cooperative stop (a cancelled tool result, a
  cancelled pass), so the AgentStream chain still delivers the stop event;
- the pass as a whole (the AgentStream chain with its middleware) gets
  ``PASS_CUTOFF_SECONDS``, the grace plus time to deliver that stop event; cut, the
  invocation reports the ``cancelled`` stop itself.

Only the time a region spends running counts. A region around an async generator is
disarmed (its deadline lifted) while one of its events is with the consumer: its scope
stays open across that ``yield`` (the generators inside keep scopes and task groups of
their own open across theirs, so it cannot close earlier), and a deadline that passed
then would cancel the consumer's code instead of the stuck part.

The signal may be set from any thread. The watch hears of it through a listener on the
token, which has the event loop call it back in the loop's thread, where it sets the
deadlines; no task polls, and nothing runs while nobody cancels.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Generator
from contextlib import contextmanager
from types import TracebackType
from typing import Final, TypeVar, final

import anyio

from ._cancel import CancelToken
from ._running_loop import loop_caller

__all__ = ["GRACE_SECONDS", "PASS_CUTOFF_SECONDS", "CancelWatch", "CutRegion"]

GRACE_SECONDS: Final = 0.5
"""How long a model call or a tool call may go on after ``cancel()`` before it is cut."""

PASS_CUTOFF_SECONDS: Final = 0.75
"""How long the pass may go on after ``cancel()``: the grace, then time to report the stop."""

T = TypeVar("T")


@final
class CancelWatch:
    """Hears one invocation's cancel signal and starts the clocks of its regions."""

    __slots__ = ("_regions", "_token", "counting")

    def __init__(self, token: CancelToken) -> None:
        self._token = token
        self._regions: set[CutRegion] = set()
        #: Whether the signal is set and the regions' clocks run (in the loop's thread).
        self.counting: bool = False

    @contextmanager
    def watching(self) -> Generator[None, None, None]:
        """Listen to the signal while the block runs (in the event loop's thread)."""
        call_soon = loop_caller()

        def heard() -> None:
            call_soon(self._start)

        self._token.add_listener(heard)
        try:
            yield
        finally:
            self._token.remove_listener(heard)

    def add(self, region: CutRegion) -> None:
        """Start watching *region* (it has been entered)."""
        self._regions.add(region)

    def discard(self, region: CutRegion) -> None:
        """Stop watching *region* (it is being left)."""
        self._regions.discard(region)

    def _start(self, now: float) -> None:
        if self.counting:
            return
        self.counting = True
        for region in list(self._regions):
            region.start_clock(now)


@final
class CutRegion:
    """A part of a run that its watch cuts once it has run *allowance* seconds after ``cancel()``.

    Enter it (``with region:``) around code that runs in one task, such as a tool call,
    or let :meth:`guard` wrap an async generator. Afterwards, :attr:`cut` tells whether
    the deadline cut it; a cut ends the region without an error, as a cancel scope does.
    """

    __slots__ = ("_allowance", "_armed", "_armed_at", "_ran", "_watch", "cut", "scope")

    def __init__(self, watch: CancelWatch, allowance: float) -> None:
        self._watch = watch
        self._allowance = allowance
        self._armed = False
        self._armed_at = 0.0
        self._ran = 0.0
        self.cut: bool = False
        self.scope: anyio.CancelScope = anyio.CancelScope()

    def __enter__(self) -> CutRegion:
        self.scope.__enter__()
        self._watch.add(self)
        self._arm()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self._disarm()
        self._watch.discard(self)
        return bool(self.scope.__exit__(exc_type, exc, traceback))

    def start_clock(self, now: float) -> None:
        """The signal was set at *now*: count the time from here (if armed)."""
        if self._armed:
            self._armed_at = now
            self.scope.deadline = now + self._allowance - self._ran

    def _arm(self) -> None:
        if self._armed:
            return
        self._armed = True
        if self._watch.counting:
            self.start_clock(anyio.current_time())

    def _disarm(self) -> None:
        if self._armed and self._watch.counting:
            now = anyio.current_time()
            # Cancelled by its deadline, not by someone else (a failing tool round).
            self.cut = self.cut or (self.scope.cancel_called and now >= self.scope.deadline)
            self._ran += now - self._armed_at
            self.scope.deadline = math.inf
        self._armed = False

    async def guard(self, events: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
        """Yield *events* inside the region, armed only while they run; a cut ends them early.

        *events* are closed inside the region too, so cleanup that hangs is cut as well.
        """
        with self:
            try:
                while True:
                    self._arm()
                    try:
                        event = await anext(events)
                    except StopAsyncIteration:
                        return
                    finally:
                        self._disarm()
                    if self.scope.cancel_called:
                        # Cut just as the event came out: yielded from inside a cancelled
                        # scope, it would take the cancellation to the consumer.
                        return
                    yield event
            finally:
                self._arm()
                await events.aclose()
