"""``DurableAgent``: an agent kind whose requests run as DBOS workflows.

A **request** (a prompt, or the answers to a pending interrupt, for one session) is one
workflow, ``stageware.<kind>``. It runs the agent's **invocations** as child workflows,
``stageware.<kind>.invocation``, one per invocation: the first, and with
``wait_for_approvals`` each continuation after a durable wait for approvals
(``_waits``). An invocation is a workflow of its own because DBOS numbers a workflow's
steps in one sequence: a replay must draw every step again in the same order, and an
invocation that finished long ago (its session has moved on since) can only be skipped
as a whole, which a child workflow is (one step of its parent).

An invocation's workflow builds a fresh agent with the factory (it loads the session),
reads where the session stands (``_replay``) and then:

- the invocation's own final save is in the session (``released_by`` is its key): it
  finished before its worker died; its result is read from the session, nothing runs;
- the session's lease is the invocation's own (its key is the owner): it claimed the
  session and died; once the lease has lapsed (a worker that is alive after all keeps it
  renewed, and then finishes), it continues with ``agent()`` and no prompt, every model
  and tool call handed back from the journal until the calls that never finished;
- the session is where the invocation found it at its start (a step records the version):
  it never claimed; it runs from the start;
- anything else (the session moved on, by another request, since this invocation began,
  and holds neither its claim nor its final save): it stops with an error rather than
  record its prompt a second time.

Between invocations the request waits (``_waits.wait_for_session``) while the last one
stopped on interrupts or escalated. After an escalation's resolution the request ends;
after approvals, a recorded step reads whether the session's interrupt cycle is still
open (nobody else resumed it meanwhile), and if so the next invocation continues the run
with no prompt. That invocation is handed what the step found (the session's version and
the cycle's interrupt ids) and checks it again when it starts: if the session moved on
out of that cycle in between (an application resumed the run itself), it runs nothing,
and the request ends as the run stopped. Everything the request decides comes from its
children's recorded results and its own recorded steps, so that a replay decides the same.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypedDict, cast, final

import anyio.to_thread
from dbos import DBOS, Queue, SetEnqueueOptions, SetWorkflowID, WorkflowHandle, WorkflowHandleAsync
from dbos import error as dbos_error

from stageware._host._agent import Agent
from stageware._host._agent_result import AgentResult
from stageware._host._interrupt_state import InterruptState, parse_interrupt_responses
from stageware._host._journal import journal_scope
from stageware._host._prompt import Prompt, prompt_messages
from stageware._host.sessions._store import check_session_id

from . import _ids, _replay
from ._journal import DBOSJournal
from ._launch import check_not_launched, needs_launch
from ._result import DurableResult
from ._waits import WAITED_FOR, session_of, wait_for_session

if TYPE_CHECKING:
    from stageware._host.sessions import SessionStore, StoredSession

__all__ = ["AgentFactory", "DurableAgent", "check_serial", "known_serial", "registered_kinds"]

AgentFactory: TypeAlias = Callable[[str], Agent]
"""Builds a fresh ``Agent`` for one invocation of the session it is given."""

DEFAULT_TAKEOVER_SECONDS: Final = 600.0
"""How long a replayed invocation waits for its own claim's lease to lapse."""

_kinds: dict[str, DurableAgent] = {}
_kinds_lock = threading.Lock()


@final
class DurableAgent:
    """An agent kind whose requests run as DBOS workflows, recovered after a crash.

    Build it at import time, before ``stageware.dbos.launch()``, in every process that
    runs or recovers its workflows: construction registers the workflows with DBOS.

    Example:
        ```python
        support = DurableAgent("support", build_support)
        launch(name="shop", database_url="sqlite:///shop.db")
        result = support.run("I was charged twice", session_id="c1")
        ```

    Args:
        kind: The agent kind, part of every workflow id: 1 to 100 ASCII letters, digits,
            ``_``, ``.`` and ``-``; one ``DurableAgent`` per kind in a process.
        factory: Builds a fresh ``Agent`` for the session id it is given, with a session
            store and that session id, the same way on every worker (the model, tools,
            middleware and policy of the kind).
        wait_for_approvals: A run that stops on interrupts waits, durably, until they are
            answered in the session (or time out), then continues in the same request;
            ``False`` ends the request with ``stop_reason="interrupt"`` instead.
        takeover_seconds: How long a replayed invocation waits for the lease of its own
            claim to lapse (its worker died holding it) before it gives up with an error.

    Raises:
        TypeError, ValueError: For a bad *kind*.
        RuntimeError: If *kind* is registered already in this process, or DBOS was
            launched already.
    """

    __slots__ = (
        "_factory",
        "_invocation",
        "_request",
        "_takeover_seconds",
        "_wait_for_approvals",
        "kind",
    )

    def __init__(
        self,
        kind: str,
        factory: AgentFactory,
        *,
        wait_for_approvals: bool = True,
        takeover_seconds: float = DEFAULT_TAKEOVER_SECONDS,
    ) -> None:
        _ids.check_kind(kind)
        if not callable(factory):
            raise TypeError(f"DurableAgent({kind!r}): the factory must be callable")
        check_not_launched(f"DurableAgent({kind!r})")
        self.kind: Final = kind
        self._factory = factory
        self._wait_for_approvals = wait_for_approvals
        self._takeover_seconds = takeover_seconds

        async def request(session_id: str, prompt: Prompt) -> DurableResult:
            return await self._run_request(session_id, prompt)

        async def invocation(
            session_id: str, prompt: Prompt, cycle: _Cycle | None = None
        ) -> DurableResult | None:
            return await self._run_invocation(session_id, prompt, cycle)

        with _kinds_lock:
            if kind in _kinds:
                raise RuntimeError(
                    f"DurableAgent({kind!r}): the kind is registered already in this process; "
                    "build one DurableAgent per kind, at import time"
                )
            # Registered with DBOS first: a kind DBOS refuses (its workflow name is taken
            # by another function) is not left taken, and can be tried again.
            try:
                self._request = DBOS.workflow(name=_ids.request_workflow_name(kind))(request)
                self._invocation = DBOS.workflow(name=_ids.invocation_workflow_name(kind))(
                    invocation
                )
            except dbos_error.DBOSException as error:
                raise RuntimeError(
                    f"DurableAgent({kind!r}): DBOS refused to register the kind's workflows: "
                    f"{error}"
                ) from error
            _kinds[kind] = self

    def __repr__(self) -> str:
        return f"DurableAgent({self.kind!r})"

    # -- starting requests -------------------------------------------------------------

    def run(self, prompt: Prompt, *, session_id: str) -> DurableResult:
        """Run one request on *session_id* as a workflow and wait for its end (blocking).

        Not from a running event loop: use ``await run_async(...)`` there.
        """
        return self.start(prompt, session_id=session_id).get_result()

    async def run_async(self, prompt: Prompt, *, session_id: str) -> DurableResult:
        """Run one request on *session_id* as a workflow and wait for its end (asyncio)."""
        handle = await self.start_async(prompt, session_id=session_id)
        return await handle.get_result()

    def start(self, prompt: Prompt, *, session_id: str) -> WorkflowHandle[DurableResult]:
        """Start one request on *session_id* as a workflow; its handle's result is a
        ``DurableResult``. Not queued: see ``enqueue`` to keep one session's requests
        from overlapping."""
        prompt = _checked(prompt, session_id, self.kind)
        with needs_launch(f"{self!r}.start"), SetWorkflowID(_ids.request_id(self.kind, session_id)):
            return DBOS.start_workflow(self._coroutine_request, session_id, prompt)

    async def start_async(
        self, prompt: Prompt, *, session_id: str
    ) -> WorkflowHandleAsync[DurableResult]:
        """``start`` for asyncio code."""
        prompt = _checked(prompt, session_id, self.kind)
        with needs_launch(f"{self!r}.start"), SetWorkflowID(_ids.request_id(self.kind, session_id)):
            return await DBOS.start_workflow_async(self._request, session_id, prompt)

    def enqueue(
        self, queue: Queue, prompt: Prompt, *, session_id: str
    ) -> WorkflowHandle[DurableResult]:
        """Put one request on *queue*, in the partition of *session_id*; a worker that
        listens to the queue runs it.

        The queue must be partitioned with ``partition_concurrency=1``
        (``DBOS.register_queue(name, partition_concurrency=1, ...)``): one request of a
        session runs at a time, in the order they were put on it, while requests of
        other sessions run side by side within the queue's own limits.

        Raises:
            ValueError: The queue lets two requests of one session run at once.
        """
        prompt = _checked(prompt, session_id, self.kind)
        with needs_launch(f"{self!r}.enqueue"):
            if not known_serial(queue.name):
                check_serial(queue, queue.partition_concurrency)
        with (
            needs_launch(f"{self!r}.enqueue"),
            SetWorkflowID(_ids.request_id(self.kind, session_id)),
            SetEnqueueOptions(queue_partition_key=session_id),
        ):
            return queue.enqueue(self._coroutine_request, session_id, prompt)

    async def enqueue_async(
        self, queue: Queue, prompt: Prompt, *, session_id: str
    ) -> WorkflowHandleAsync[DurableResult]:
        """``enqueue`` for asyncio code."""
        prompt = _checked(prompt, session_id, self.kind)
        with needs_launch(f"{self!r}.enqueue_async"):
            if not known_serial(queue.name):
                check_serial(queue, await queue.get_partition_concurrency_async())
        with (
            needs_launch(f"{self!r}.enqueue_async"),
            SetWorkflowID(_ids.request_id(self.kind, session_id)),
            SetEnqueueOptions(queue_partition_key=session_id),
        ):
            return await queue.enqueue_async(self._request, session_id, prompt)

    @property
    def _coroutine_request(self) -> Callable[[str, Prompt], DurableResult]:
        # DBOS's sync start and enqueue take an async workflow too (its result is the
        # coroutine's); their signatures do not say so.
        return cast("Callable[[str, Prompt], DurableResult]", self._request)

    # -- the workflows -----------------------------------------------------------------

    async def _run_request(self, session_id: str, prompt: Prompt) -> DurableResult:
        request_id = _required_workflow_id()
        number = 1
        result = await self._invoke(request_id, number, session_id, prompt)
        assert result is not None  # only a continuation ends without running
        while self._wait_for_approvals and result.stop_reason in WAITED_FOR:
            # A fresh agent, for its store: the factory owns the application's stores.
            agent = await anyio.to_thread.run_sync(self._agent, session_id)
            store, _ = session_of(agent, f"DurableAgent({self.kind!r})", session_id)
            await wait_for_session(
                store,
                session_id,
                result.stop_reason,
                result.escalation_id,
                workflow_id=request_id,
            )
            if result.stop_reason == "escalated":
                break  # resolved: the run is over, and the session takes prompts again
            # Recorded, so that a replay decides as the first run did: the run is ours to
            # continue only while the interrupt cycle it stopped in is still open (another
            # request may have resumed it with its answers meanwhile). What it found goes
            # to the continuation, which checks again when it starts: the session may move
            # on between the two steps (for as long as an outage, if the worker dies there).
            cycle: _Cycle | bool | None = await DBOS.run_step_async(
                {"name": "stageware:continue"},
                _cycle_open,
                store,
                session_id,
            )
            if not cycle:
                break
            number += 1
            # A record of an earlier release holds True: continued without the check.
            continued = await self._invoke(
                request_id, number, session_id, None, None if cycle is True else cycle
            )
            if continued is None:
                break  # the run was continued by someone else meanwhile: not ours to end
            result = continued
        return DurableResult(
            session_id=session_id,
            workflow_id=request_id,
            stop_reason=result.stop_reason,
            text=result.text,
            error=result.error,
            interrupts=result.interrupts,
            escalation_id=result.escalation_id,
        )

    async def _invoke(
        self,
        request_id: str,
        number: int,
        session_id: str,
        prompt: Prompt,
        cycle: _Cycle | None = None,
    ) -> DurableResult | None:
        """Run the request's *number*-th invocation as its child workflow; ``None`` if it
        is a continuation of *cycle* and found the session moved on (nothing ran)."""
        with SetWorkflowID(_ids.invocation_id(request_id, number)):
            return await self._invocation(session_id, prompt, cycle)

    async def _run_invocation(
        self, session_id: str, prompt: Prompt, cycle: _Cycle | None = None
    ) -> DurableResult | None:
        key = _required_workflow_id()
        agent = await anyio.to_thread.run_sync(self._agent, session_id)
        store, _ = session_of(agent, f"DurableAgent({self.kind!r})", session_id)
        stored = await anyio.to_thread.run_sync(store.load, session_id)
        found = 0 if stored is None else stored.version
        # The version this invocation found the session at, recorded: a replay compares.
        started_at: int = await DBOS.run_step_async(
            {"name": "stageware:session-version"}, lambda: found
        )
        if agent.session_version != found:
            await anyio.to_thread.run_sync(agent.reload_session)
        standing = _replay.standing(stored, key=key, version_at_start=started_at)
        if standing == "finished":
            assert stored is not None
            return _replay.finished_result(stored, session_id=session_id, key=key)
        if standing == "fresh" and cycle is not None and not _still_in(cycle, stored, started_at):
            return None  # resumed by someone else since the request saw the cycle open
        if standing == "moved_on":
            return _error_result(session_id, key, _replay.moved_on_error(session_id, key))
        if standing == "own_claim":
            stored = await _replay.wait_for_lapse(
                store, session_id, key=key, seconds=self._takeover_seconds
            )
            if stored is not None and _replay.finished(stored, key):
                return _replay.finished_result(stored, session_id=session_id, key=key)
            if stored is None or not _replay.leased_by(stored, key):
                # Released meanwhile, by another's final save: not ours to continue.
                return _error_result(session_id, key, _replay.moved_on_error(session_id, key))
            await anyio.to_thread.run_sync(agent.reload_session)
            prompt = None
        journal = DBOSJournal(key)
        try:
            with journal_scope(journal):
                result = await agent.invoke_async(prompt)
        except dbos_error.DBOSException:
            raise  # DBOS's own (a replay that took another path)
        except Exception as error:
            if journal.failure is not None:
                raise journal.failure from error
            return _error_result(session_id, key, error)
        except BaseException as error:
            # DBOS's cancel and ownership errors are BaseException: raised as themselves,
            # not in the task groups' exception groups they left the run in.
            if journal.failure is not None and error is not journal.failure:
                raise journal.failure from error
            raise
        if journal.failure is not None:
            raise journal.failure  # a tool's step failed in DBOS: its error result is not ours
        return _result(session_id, key, result)

    def _agent(self, session_id: str) -> Agent:
        # Checked at runtime: an untyped factory may return anything.
        agent = cast("object", self._factory(session_id))
        if not isinstance(agent, Agent):
            raise TypeError(
                f"DurableAgent({self.kind!r}): the factory returned "
                f"{type(agent).__qualname__}, not an Agent"
            )
        return agent


def registered_kinds() -> list[str]:
    """The agent kinds registered in this process (a ``DurableAgent`` built for each)."""
    with _kinds_lock:
        return list(_kinds)


def _required_workflow_id() -> str:
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None  # called as a workflow
    return workflow_id


def _checked(prompt: Prompt, session_id: str, kind: str) -> Prompt:
    # Refused here, in the caller's process, rather than by a workflow that then fails.
    check_session_id(session_id, f"DurableAgent({kind!r})")
    # Interrupt responses are checked as a resume checks them (parse_interrupt_responses).
    if parse_interrupt_responses(prompt) is None:
        prompt_messages(prompt)
    return prompt


# The queues found partitioned one request per session at a time (read once: reading a
# queue's settings is a round trip to the system database).
_serial_queues: set[str] = set()


def known_serial(name: str) -> bool:
    """Whether the queue *name* was found partitioned one request per session already."""
    return name in _serial_queues


def check_serial(queue: Queue, partition_concurrency: int | None) -> None:
    """Refuse *queue* unless it runs one request of a session at a time (also for
    ``enqueue_with_client``); remember it once it does."""
    if partition_concurrency != 1:
        raise ValueError(
            f"queue {queue.name!r} has partition_concurrency={partition_concurrency}: two "
            "requests of one session could run at once, and the second be refused by the "
            "session's lease; register it with DBOS.register_queue(name, "
            "partition_concurrency=1, ...)"
        )
    _serial_queues.add(queue.name)


class _Cycle(TypedDict):
    """An open interrupt cycle, as the request found it: the session's version then, and
    the ids of the cycle's interrupts."""

    version: int
    interrupts: list[str]


def _cycle_open(store: SessionStore, session_id: str) -> _Cycle | None:
    """The session's open interrupt cycle, to be continued, or ``None`` if there is none."""
    stored = store.load(session_id)
    if stored is None:
        return None
    state = InterruptState.from_dict(stored.snapshot["interrupt_state"])
    if not state.activated:
        return None
    return {"version": stored.version, "interrupts": sorted(state.interrupts)}


def _still_in(cycle: _Cycle, stored: StoredSession | None, version: int) -> bool:
    """Whether the session, found at *version*, still stands in *cycle*: unchanged since,
    or still in the same interrupt cycle (a later answer or save moved the version)."""
    if version == cycle["version"]:
        return True
    if stored is None:
        return False
    state = InterruptState.from_dict(stored.snapshot["interrupt_state"])
    return state.activated and sorted(state.interrupts) == cycle["interrupts"]


def _result(session_id: str, key: str, result: AgentResult[Any]) -> DurableResult:
    return DurableResult(
        session_id=session_id,
        workflow_id=key,
        stop_reason=result.stop_reason,
        text=result.text,
        interrupts=tuple(interrupt.id for interrupt in result.interrupts),
        escalation_id=None if result.halt is None else result.halt.escalation_id,
    )


def _error_result(session_id: str, key: str, error: Exception) -> DurableResult:
    return DurableResult(
        session_id=session_id,
        workflow_id=key,
        stop_reason="error",
        text="",
        error=f"{type(error).__name__}: {error}",
    )
