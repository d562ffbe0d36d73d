"""One journal step whose body streams items while it runs: a model's chunks, a tool's events.

The step's body runs inside the journal (``StepJournal.run``), which may run it in a task
of its own; what the body produces still reaches the caller as it is produced, through a
memory object stream, so a user watching the first run sees each chunk when it arrives,
not when the step is recorded. The journal records what the body returns (a record of
everything it produced, JSON data); on a replay the body does not run, nothing streams,
and the caller reads the record back instead (``ran`` tells which happened).

The body runs with no journal current (``journal_scope(None)``): an agent called inside
it (an agent used as a tool) makes its model and tool calls plainly, as part of this
step, and is not journaled a second time.

The body's task lives in a task group the stream holds open across its ``yield``, as the
tool executor's does: the stream must be closed by whoever opened it (the chain closes
its layers, inner first). Closing it awaits the cancelled task, so one left to asyncio's
garbage finalizer (a middleware that drops its ``next_fn`` stream unclosed) can be
closed by two finalizer tasks at once, and asyncio reports the second.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Generic, TypeVar, final

import anyio

from ._journal import StepJournal, journal_scope

__all__ = ["LiveStep"]

T = TypeVar("T")


@final
class LiveStep(Generic[T]):
    """Runs one step at a place drawn earlier, streaming what its body emits.

    Attributes:
        ran: Whether the body ran now (a first run) rather than the journal handing back a
            record (a replay). Known once :meth:`stream` is exhausted.
        record: What the journal recorded for the step, once :meth:`stream` is exhausted.
    """

    __slots__ = ("_body", "_journal", "_place", "ran", "record")

    def __init__(
        self,
        journal: StepJournal,
        place: object,
        body: Callable[[Callable[[T], None]], Awaitable[dict[str, Any]]],
    ) -> None:
        """*body* is given the function that emits an item, and returns the step's record."""
        self._journal = journal
        self._place = place
        self._body = body
        self.ran = False
        self.record: dict[str, Any] = {}

    async def stream(self) -> AsyncGenerator[T, None]:
        """Run the step, yielding the items its body emits while it runs.

        Raises:
            BaseException: What the journal raised (a body records its own failures and
                returns), unwrapped. Closing this generator early cancels the step, which then
                records nothing.
        """
        send, receive = anyio.create_memory_object_stream[T](math.inf)
        failures: list[BaseException] = []

        async def step() -> dict[str, Any]:
            self.ran = True
            with journal_scope(None):
                return await self._body(send.send_nowait)

        async def run() -> None:
            async with send:
                try:
                    self.record = await self._journal.run(self._place, step)
                except anyio.get_cancelled_exc_class():
                    raise
                except BaseException as error:
                    # Raised below as itself, not wrapped in the task group's exception
                    # group: an engine's error that is not an Exception too (DBOS raises
                    # its cancel and ownership errors as BaseException), so that the
                    # invocation can tell it from the run's own failures.
                    failures.append(error)

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            async with receive:
                async for item in receive:
                    try:
                        yield item
                    except GeneratorExit:
                        # The consumer closed the stream: cancel the step and leave the task
                        # group normally, in this task.
                        group.cancel_scope.cancel()
                        return
        if failures:
            raise failures[0]
