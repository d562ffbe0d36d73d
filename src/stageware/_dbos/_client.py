"""Putting a durable request on a queue from a process that runs none, with a ``DBOSClient``.

A producer (a web front end, a batch job, an approver's tool) that only hands requests to
the workers needs neither the agent's factory nor DBOS launched in its process: a
``dbos.DBOSClient`` on the system database is enough. The request it enqueues is the one
``DurableAgent.enqueue`` makes: the workflow ``stageware.<kind>``, a new id
``stageware:<kind>:<session id>:<unique>``, in the queue partition of the session (so a
queue with ``partition_concurrency=1`` runs one request of a session at a time). Workers
that ``launch()`` with a ``DurableAgent`` of that kind take it; its handle's result is
their ``DurableResult``.

The queue must exist and run one request of a session at a time
(``partition_concurrency=1``), as ``DurableAgent.enqueue`` requires; it is read once per
queue name and process. Whether any worker serves the kind is not checked: a request
nobody takes waits on the queue (``ENQUEUED``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stageware._host._interrupt_state import parse_interrupt_responses
from stageware._host._prompt import Prompt, prompt_messages
from stageware._host.sessions._store import check_session_id

from . import _ids
from ._agent import check_serial, known_serial

if TYPE_CHECKING:
    from dbos import DBOSClient, EnqueueOptions, WorkflowHandle, WorkflowHandleAsync

    from ._result import DurableResult

__all__ = ["enqueue_with_client", "enqueue_with_client_async"]


def enqueue_with_client(
    client: DBOSClient, queue: str, kind: str, prompt: Prompt, *, session_id: str
) -> WorkflowHandle[DurableResult]:
    """Put one request to the agent *kind* on *session_id* on the queue named *queue*.

    Args:
        client: A client on the workers' system database (with their application's
            ``application_name`` when several applications share it).
        queue: The queue's name, registered by the workers or with
            ``client.register_queue``.
        kind: The ``DurableAgent`` kind the workers registered.
        prompt: What ``DurableAgent.enqueue`` takes: text, content blocks, interrupt
            responses, or ``None`` to continue the session's run.
        session_id: The session; also the request's queue partition.

    Raises:
        TypeError, ValueError: For a bad *kind* or *prompt*, a queue that does not exist or
            may run two requests of a session at once, before anything is written.
    """
    options, prompt = _request(queue, kind, prompt, session_id)
    if not known_serial(queue):
        found = client.retrieve_queue(queue)
        if found is None:
            raise _missing(queue)
        check_serial(found, found.partition_concurrency)
    handle: WorkflowHandle[DurableResult] = client.enqueue(options, session_id, prompt)
    return handle


async def enqueue_with_client_async(
    client: DBOSClient, queue: str, kind: str, prompt: Prompt, *, session_id: str
) -> WorkflowHandleAsync[DurableResult]:
    """``enqueue_with_client`` for asyncio code."""
    options, prompt = _request(queue, kind, prompt, session_id)
    if not known_serial(queue):
        found = await client.retrieve_queue_async(queue)
        if found is None:
            raise _missing(queue)
        check_serial(found, await found.get_partition_concurrency_async())
    handle: WorkflowHandleAsync[DurableResult] = await client.enqueue_async(
        options, session_id, prompt
    )
    return handle


def _missing(queue: str) -> ValueError:
    return ValueError(
        f"queue {queue!r} is not registered in this DBOS system database (for this "
        "client's application): register it first, with client.register_queue(name, "
        "partition_concurrency=1, ...) or DBOS.register_queue in a worker"
    )


def _request(
    queue: str, kind: str, prompt: Prompt, session_id: str
) -> tuple[EnqueueOptions, Prompt]:
    _ids.check_kind(kind)
    # Refused here, in the producer, rather than by a workflow that then fails.
    check_session_id(session_id, f"enqueue_with_client({kind!r})")
    if parse_interrupt_responses(prompt) is None:
        prompt_messages(prompt)
    options: EnqueueOptions = {
        "queue_name": queue,
        "workflow_name": _ids.request_workflow_name(kind),
        "workflow_id": _ids.request_id(kind, session_id),
        "queue_partition_key": session_id,
    }
    return options, prompt
