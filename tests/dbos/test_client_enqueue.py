"""A request put on a queue by a process that runs no agent (``enqueue_with_client``).

The client is a real ``DBOSClient`` on the test's DBOS system database (SQLite and
PostgreSQL); the worker is this process's launched DBOS, which serves the queue.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from dbos import DBOS, DBOSClient

from stageware.dbos import DurableResult, enqueue_with_client, enqueue_with_client_async

from .kinds import Setup, history

KIND = "test-support"  # tests.dbos.kinds.support


@pytest.fixture
def client(durable: Setup) -> Iterator[DBOSClient]:
    made = DBOSClient(system_database_url=durable.dbos_url, application_name="stageware-tests")
    try:
        yield made
    finally:
        made.destroy()


def test_a_request_enqueued_by_a_client_runs_on_a_worker(
    durable: Setup, client: DBOSClient
) -> None:
    DBOS.register_queue("test-client", partition_concurrency=1, polling_interval_sec=0.1)

    first = enqueue_with_client(client, "test-client", KIND, "refund me", session_id="k1")

    async def second() -> DurableResult:
        handle = await enqueue_with_client_async(
            client, "test-client", KIND, "and again", session_id="k1"
        )
        return await handle.get_result()

    assert first.get_workflow_id().startswith(f"stageware:{KIND}:k1:")
    results = [first.get_result(), anyio.run(second)]
    assert [(r.stop_reason, r.text, r.error) for r in results] == [
        ("end_turn", "Refunded 30 EUR.", None)
    ] * 2
    assert history(durable, "k1") == ["user", "tool_use", "tool_result", "assistant"] * 2
    assert durable.tool_runs() == ["refund:30"] * 2


def test_an_answer_enqueued_by_a_client_reaches_the_session(
    durable: Setup, client: DBOSClient
) -> None:
    DBOS.register_queue("test-client-answers", partition_concurrency=1, polling_interval_sec=0.1)
    answer = [{"interruptResponse": {"interruptId": "v2:tool_call:nothing", "response": "ok"}}]

    result = enqueue_with_client(
        client, "test-client-answers", KIND, answer, session_id="k2"
    ).get_result()

    # Checked as a resume (not refused as content blocks), and run: nothing waits there.
    assert result.stop_reason == "error"
    assert result.error is not None
    assert durable.tool_runs() == []


def test_a_queue_that_may_overlap_a_sessions_requests_is_refused(
    durable: Setup, client: DBOSClient
) -> None:
    DBOS.register_queue("test-client-unpartitioned", polling_interval_sec=0.1)

    with pytest.raises(ValueError, match="partition_concurrency=None"):
        enqueue_with_client(client, "test-client-unpartitioned", KIND, "hi", session_id="k3")
    with pytest.raises(ValueError, match="'test-client-missing' is not registered"):
        enqueue_with_client(client, "test-client-missing", KIND, "hi", session_id="k3")

    assert client.list_workflows(workflow_id_prefix=f"stageware:{KIND}:k3:") == []


def test_a_prompt_that_is_no_prompt_is_refused_in_the_producer(
    durable: Setup, client: DBOSClient
) -> None:
    with pytest.raises(TypeError):
        enqueue_with_client(client, "test-client", KIND, [{"nonsense": 1}], session_id="k4")
    with pytest.raises(ValueError, match="agent kind"):
        enqueue_with_client(client, "test-client", "no:colons", "hi", session_id="k4")


def test_durable_agent_takes_an_answer_as_a_resume_too(durable: Setup) -> None:
    from .kinds import support

    answer = [{"interruptResponse": {"interruptId": "v2:tool_call:nothing", "response": "ok"}}]

    result = support.run(answer, session_id="k5")

    assert (result.stop_reason, durable.tool_runs()) == ("error", [])
