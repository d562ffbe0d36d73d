"""A live ``Agent`` whose invocations run as DBOS workflows, in this process: ``run_durably``.

For an application that wants each invocation's model and tool calls checkpointed as DBOS
steps (recorded once, visible in DBOS's tools, the same journal a ``DurableAgent`` keeps)
but keeps its agent as an object in memory: ``run_durably(agent)`` changes nothing else.
``agent()``, ``invoke_async``, ``stream_async``, cancellation and interrupts behave as
without it: the agent hands the whole invocation (from the claim of its session to the
final save) to a workflow task, which it advances in lockstep with its reader, as
``stream_async`` advances its own task.

What it does not do is recover: the workflow's body is this process's live agent, which a
restart loses. A workflow it left PENDING is recovered by DBOS at the next launch with the
same executor id and then fails with an error that says so; an application whose runs
must survive the process builds its agents with ``DurableAgent`` instead, whose workflow
rebuilds the agent from its session.

Each invocation is a workflow of its own, ``stageware:run_durably:<session id or agent
id>:<unique part>``. Inside a DBOS step (an agent used as a tool, running in its parent's
step) an invocation runs plainly in that step; inside workflow code it is a child
workflow of that workflow.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from dbos import DBOS, SetWorkflowID

from stageware._host._agent import Agent, host_invocations
from stageware._host._journal import journal_scope
from stageware._host._task_stream import TaskHost

from ._journal import DBOSJournal
from ._launch import needs_launch

__all__ = ["InvocationFailedError", "run_durably"]

AgentT = TypeVar("AgentT", bound=Agent)

_WORKFLOW_NAME: Final = "stageware.run_durably"

# The bodies of the invocations this process started and DBOS has not run yet, by the
# workflow's input: a workflow takes its body from here, once.
_bodies: dict[str, Callable[[], Awaitable[Exception | None]]] = {}


class InvocationFailedError(Exception):
    """What a run_durably workflow ends with when its invocation raised (DBOS: ERROR)."""


def run_durably(agent: AgentT) -> AgentT:
    """Run each of *agent*'s invocations from now on as a DBOS workflow; return *agent*.

    DBOS must be launched (``stageware.dbos.launch``) before the agent runs, and the agent
    runs on asyncio (DBOS's event loop library). Each model and tool call is a step
    of that workflow. Nothing recovers a workflow whose process died: see the module
    docstring, and ``DurableAgent`` for runs that survive their process.

    Raises:
        ValueError: If the agent runs on trio (``Agent(backend="trio")``).
    """
    if agent._backend != "asyncio":  # pyright: ignore[reportPrivateUsage]
        raise ValueError(
            f"run_durably({agent!r}): DBOS runs workflows on asyncio only, and this agent "
            "runs on trio; build it with backend='asyncio'"
        )
    host_invocations(agent, _workflow_host(agent))
    return agent


def _workflow_host(agent: Agent) -> TaskHost:
    session = agent._core.session  # pyright: ignore[reportPrivateUsage]
    owner = agent.agent_id if session is None else session.id

    async def host(body: Callable[[], Awaitable[Exception | None]]) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                f"{agent!r} runs durably (run_durably), and DBOS runs workflows on asyncio "
                "only: run it from asyncio code, not trio"
            ) from None
        if DBOS.step_id is not None:
            # An agent used as a tool, inside its parent's step: the parent's journal
            # holds the tool's result; a workflow cannot start inside a step.
            await body()
            return
        invocation = uuid.uuid4().hex
        _bodies[invocation] = body
        try:
            if DBOS.workflow_id is not None:
                # In workflow code: a child workflow, whose id DBOS derives from the
                # parent's, the same on the parent's replay.
                handle = await DBOS.start_workflow_async(_invocation, invocation)
            else:
                with (
                    needs_launch(f"run_durably({agent!r})"),
                    SetWorkflowID(f"stageware:run_durably:{owner}:{invocation}"),
                ):
                    handle = await DBOS.start_workflow_async(_invocation, invocation)
            await handle.get_result()
        except InvocationFailedError:
            pass  # the workflow's record of it; the reader has the exception itself
        finally:
            _bodies.pop(invocation, None)

    return host


@DBOS.workflow(name=_WORKFLOW_NAME)
async def _invocation(invocation: str) -> None:
    """The workflow of one invocation: the live agent's run, with a DBOS journal current."""
    body = _bodies.pop(invocation, None)
    workflow_id = DBOS.workflow_id
    if body is None:
        raise RuntimeError(
            f"DBOS workflow {workflow_id} ran an agent invocation through run_durably(), "
            "whose agent lived only in the process that started it, which is gone: this "
            "invocation cannot be continued. Build agents with stageware.dbos.DurableAgent "
            "for runs that a restarted or another worker process recovers"
        )
    with journal_scope(DBOSJournal(f"{workflow_id}/1")):
        failure = await body()
    if failure is not None:
        # So that DBOS records the run as failed (ERROR), naming what it raised; the
        # caller got the exception itself.
        raise InvocationFailedError(f"the invocation raised {type(failure).__name__}: {failure}")
