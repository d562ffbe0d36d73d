"""DurableAgent on real DBOS: a request runs as a workflow, each call a recorded step."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import cast

import anyio
import pytest
from dbos import DBOS, SetWorkflowID
from dbos import error as dbos_error

from stageware import SessionError
from stageware._dbos._wake import WAKE_TOPIC, WORKFLOW_PREFIX
from stageware.dbos import DurableAgent, DurableResult, launch, wake

from .kinds import Setup, failing, history, storeless, support
from .kinds import build_support as support_agent


def _steps(workflow_id: str) -> list[str]:
    return [step["function_name"] for step in DBOS.list_workflow_steps(workflow_id)]


def test_a_request_runs_as_a_workflow_with_each_call_a_step(durable: Setup) -> None:
    result = support.run("I was charged twice", session_id="c1")

    assert isinstance(result, DurableResult)
    assert (result.stop_reason, result.text, result.error) == ("end_turn", "Refunded 30 EUR.", None)
    assert result.session_id == "c1"
    assert result.workflow_id.startswith("stageware:test-support:c1:")
    assert durable.tool_runs() == ["refund:30"]
    assert len(durable.model_calls) == 2
    assert history(durable, "c1") == ["user", "tool_use", "tool_result", "assistant"]
    assert _steps(result.workflow_id + "/1") == [
        "stageware:session-version",
        "model:scripted",
        "tool:refund",
        "model:scripted",
    ]
    assert DurableResult.from_dict(result.to_dict()) == result


def test_start_gives_a_handle_and_run_async_awaits(durable: Setup) -> None:
    handle = support.start("hello", session_id="c2")
    assert handle.get_result().text == "Refunded 30 EUR."

    async def second() -> DurableResult:
        return await support.run_async("again", session_id="c2")

    result = anyio.run(second)
    assert result.text == "Refunded 30 EUR."
    assert history(durable, "c2") == ["user", "tool_use", "tool_result", "assistant"] * 2
    assert durable.tool_runs() == ["refund:30"] * 2


def test_requests_enqueued_for_one_session_run_one_after_another(durable: Setup) -> None:
    queue = DBOS.register_queue("test-agents", partition_concurrency=1, polling_interval_sec=0.1)
    handles = [support.enqueue(queue, f"request {n}", session_id="c3") for n in range(3)]

    results = [handle.get_result() for handle in handles]

    # Side by side, the second and third would have found the first's lease.
    assert [result.error for result in results] == [None, None, None]
    assert history(durable, "c3") == ["user", "tool_use", "tool_result", "assistant"] * 3
    assert durable.tool_runs() == ["refund:30"] * 3


def test_an_invocation_that_raises_ends_the_request_with_its_error(durable: Setup) -> None:
    result = failing.run("hello", session_id="c4")

    assert result.stop_reason == "error"
    assert result.error == "ModelError: the provider is down"
    assert result.text == ""


def test_an_invocation_cancelled_while_its_tool_runs_saves_nothing(durable: Setup) -> None:
    durable.crash = "cancel"  # the tool cancels its invocation's workflow
    handle = support.start("I was charged twice", session_id="c7")

    # DBOS's own error, not wrapped in the host's task groups' exception groups.
    with pytest.raises(dbos_error.DBOSAwaitedWorkflowCancelledError):
        handle.get_result()

    assert durable.tool_runs() == ["refund:30"]
    assert durable.store is not None
    stored = durable.store.load("c7")
    assert stored is not None
    # No final save: the claim only (its input held aside), with no record of an end
    # and not the tool call whose result was lost; the lease let go at once.
    assert "released_by" not in stored.snapshot["interrupt_state"]
    assert history(durable, "c7") == []
    assert stored.lease is not None
    assert stored.lease.expires_at <= datetime.now(UTC)
    statuses = {
        status.workflow_id.removeprefix(handle.workflow_id): status.status
        for status in DBOS.list_workflows(workflow_id_prefix=handle.workflow_id)
    }
    assert statuses == {"": "ERROR", "/1": "CANCELLED"}


def test_a_factory_whose_agent_has_no_session_is_refused(durable: Setup) -> None:
    with pytest.raises(Exception, match="build it with session_store=") as caught:
        storeless.run("hello", session_id="c5")
    assert "test-storeless" in str(caught.value)


def test_a_session_id_no_store_can_keep_is_refused_before_a_workflow_starts(
    durable: Setup,
) -> None:
    with pytest.raises(SessionError, match="must not be empty"):
        support.start("hello", session_id="")
    assert DBOS.list_workflows(workflow_id_prefix="stageware:test-support::") == []


def test_a_prompt_that_is_no_prompt_is_refused_before_a_workflow_starts(durable: Setup) -> None:
    with pytest.raises(TypeError, match="a prompt is a str"):
        support.start(42, session_id="c6")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def test_a_kind_is_registered_once() -> None:
    with pytest.raises(RuntimeError, match="registered already"):
        DurableAgent("test-support", lambda session_id: support_agent(session_id))


@pytest.mark.parametrize(
    "kind",
    ["", "has:colon", "has space", "x" * 101, "run_durably", "test-support.invocation"],
)
def test_a_kind_that_cannot_be_part_of_a_workflow_id_is_refused(kind: str) -> None:
    with pytest.raises(ValueError, match="agent kind"):
        DurableAgent(kind, support_agent)


def test_a_kind_dbos_refuses_to_register_is_not_left_taken() -> None:
    async def taken(session_id: str, prompt: str) -> None:
        pass

    # Another function of the application holds the kind's workflow name.
    DBOS.workflow(name="stageware.test-taken")(taken)

    for _ in range(2):  # the second try is refused by DBOS again, not as "registered already"
        with pytest.raises(RuntimeError, match="DBOS refused to register") as caught:
            DurableAgent("test-taken", support_agent)
        assert isinstance(caught.value.__cause__, dbos_error.DBOSException)


def test_a_request_before_launch_names_launch() -> None:
    with pytest.raises(RuntimeError, match=r"call stageware\.dbos\.launch\(") as caught:
        support.run("hello", session_id="c8")
    assert "DurableAgent('test-support').start" in str(caught.value)

    async def run() -> None:
        await support.run_async("hello", session_id="c8")

    with pytest.raises(RuntimeError, match=r"call stageware\.dbos\.launch\("):
        anyio.run(run)


def test_a_durable_agent_built_after_launch_is_refused(durable: Setup) -> None:
    with pytest.raises(RuntimeError, match=r"before stageware\.dbos\.launch"):
        DurableAgent("test-late", support_agent)


@pytest.mark.parametrize(
    ("url", "said"),
    [("mysql://app:secret@db/app", "a 'mysql' URL"), ("host=db password=secret", "no URL")],
)
def test_launch_refuses_a_database_it_cannot_use_without_showing_it(url: str, said: str) -> None:
    with pytest.raises(ValueError, match="use sqlite:///PATH or postgresql://") as caught:
        launch(name="tests", database_url=url)
    assert str(caught.value).endswith(f"got {said}")
    assert "secret" not in str(caught.value)


def test_launch_twice_is_refused(durable: Setup) -> None:
    with pytest.raises(RuntimeError, match=r"already launched.*shutdown\(\) first"):
        launch(name="tests", database_url=durable.dbos_url)


def test_a_queue_that_would_run_one_sessions_requests_side_by_side_is_refused(
    durable: Setup,
) -> None:
    queue = DBOS.register_queue("test-unpartitioned", polling_interval_sec=0.1)
    with pytest.raises(ValueError, match="partition_concurrency=None: two requests"):
        support.enqueue(queue, "hello", session_id="c7")
    assert DBOS.list_workflows(workflow_id_prefix="stageware:test-support:c7:") == []


@DBOS.workflow(name="tests.waits-for-a-wake-up")
async def _waits_for_a_wake_up(seconds: float) -> object:
    return await DBOS.recv_async(WAKE_TOPIC, timeout_seconds=seconds)


def test_wake_looks_only_for_the_requests_of_its_kinds(durable: Setup) -> None:
    # A waiting request of a kind this process does not register, on the same session.
    other = f"{WORKFLOW_PREFIX}test-other-kind:w1:{uuid.uuid4().hex}"
    with SetWorkflowID(other):
        handle = DBOS.start_workflow(_waits_for_a_wake_up, 60.0)

    # By default the kinds registered here: their prefixes only, not every stageware: id.
    assert wake("w1") == []
    assert wake("w1", kinds=["test-other-kind"]) == [other]
    # DBOS's sync handle holds the async workflow's result (its stubs say a coroutine).
    received = cast("object", handle.get_result())
    assert received == {"session_id": "w1"}
