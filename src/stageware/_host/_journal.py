"""The journal of a durable invocation: each model and tool call's result, recorded once.

An agent invocation that a durable-execution engine runs (``stageware.dbos``) is replayed
from its start after the worker running it died. So that a replay calls no model and runs
no tool whose result was recorded, the host sends every model call and every tool call
through the journal that is current (``current_journal()``): the journal either hands
back the recorded result of that step, or runs it, records the result and hands it back.

Steps are told apart by their order, as the engine counts them, so the host draws each
step's place (``reserve``) in an order that a replay repeats: a model call when it starts;
the tool calls of one model turn in the order of the turn's toolUse blocks, all before any
of them runs, so that concurrent calls finishing in another order on the replay still get
their own results. A call's attempt after the first (a retry) draws its place when it
reaches the tool, under a name that carries the call's id (``_tool_executor``).

While a journal is current, the session store holds the conversation between invocations
only: the claim and the final save are made as without it, the per-message checkpoints in
between are not (the journal holds those results, once). See ``stageware.dbos``.

No journal is current outside a durable run: the host then calls models and tools
directly, and nothing here costs anything.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

__all__ = ["StepJournal", "current_journal", "journal_broken", "journal_scope"]


class StepJournal(Protocol):
    """Where a durable invocation's steps are recorded (implemented by ``stageware.dbos``)."""

    @property
    def key(self) -> str:
        """This invocation's identity, unique and the same on a replay.

        The session's lease owner and its final save carry it, so that a replay knows its
        own claim (a lease it may take over once it lapses) and its own final save (then
        the invocation finished and nothing runs again).
        """
        ...

    @property
    def failure(self) -> BaseException | None:
        """The journal's own error, once ``run`` raised one (not a step's: its engine's,
        such as a replay that took another path, or a cancelled workflow), else ``None``.

        The host may have turned that error into a tool's error result on its way out
        (middleware and the executor make results of what a tool raises); so once it is
        set, the invocation's final save is not made, the lease is let go for a replay
        to take over, and the error is raised from the invocation
        (``AgentSession.release``). Nothing the run did after it reaches the session.
        """
        ...

    def reserve(self, name: str) -> object:
        """Draw the next step's place now, synchronously, and return it for ``run``.

        *name* says what the step is (``model:<model>`` or ``tool:<tool name>``); a replay
        that finds another name at this place raises: the run took another path.
        """
        ...

    async def run(self, place: object, step: Callable[[], Awaitable[Any]]) -> Any:
        """Return the result recorded at *place*; if there is none, await *step*, record
        its result (JSON data) and return it.

        The host's steps return JSON data only and do not raise: a model's or a tool's
        failure is part of the result, described as data, and the host raises it itself
        (``_journal_data``). An exception *step* raises all the same (a failure of the
        host) is recorded like a result, and raised again on a replay. A step that is
        cancelled (the run was cancelled, or its consumer stopped reading) records
        nothing: a replay runs it again.

        *step* may be awaited in another task than the caller's; what it produces while
        it runs reaches the caller through a stream of its own (``_journal_step``).
        """
        ...


_current: ContextVar[StepJournal | None] = ContextVar("stageware_journal", default=None)


def current_journal() -> StepJournal | None:
    """The journal of the durable invocation running in this context, or ``None``."""
    return _current.get()


def journal_broken() -> bool:
    """Whether the current journal failed (``StepJournal.failure``): then an exception on
    its way out of a step is the journal's, not the model's or the tool's, and is not made
    into a result."""
    journal = _current.get()
    return journal is not None and journal.failure is not None


@contextmanager
def journal_scope(journal: StepJournal | None) -> Generator[StepJournal | None]:
    """Make *journal* current for the code in the ``with`` block (an invocation)."""
    token = _current.set(journal)
    try:
        yield journal
    finally:
        _current.reset(token)
