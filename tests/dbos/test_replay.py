"""A request whose worker died is recovered by DBOS from its last recorded step.

The first worker is a real process that exits at once (``os._exit``, as ``kill -9`` ends
it) at a chosen point of the run; the test process then launches DBOS with the same
executor id, and DBOS's own recovery runs the workflow again: the calls recorded are
handed back, not made again.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dbos import DBOS, WorkflowHandle

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn
from stageware._dbos import _replay
from stageware._dbos._journal import DBOSJournal
from stageware._host._journal import journal_scope
from stageware._host._journal_session import lease_owner
from stageware._host.sessions import (
    SNAPSHOT_VERSION,
    Lease,
    SessionSnapshot,
    SQLiteSessionStore,
    StoredSession,
)
from stageware.dbos import DurableResult
from stageware.policy import Escalate, PolicyEngine, PolicyEnv, ToolCallEvent
from stageware.policy import middleware as policy_middleware

from .kinds import EXIT_CRASHED, Setup, history, launch_for_tests, refund, shutdown_for_tests

ROOT = Path(__file__).resolve().parents[2]


def _crashed_worker(setup: Setup, crash: str, prompt: str, session_id: str) -> str:
    """Run a request in a worker process that dies at *crash*; the request's workflow id."""
    setup_json = dataclasses.replace(setup, crash=crash, store=None).to_json()
    worker = subprocess.run(
        [sys.executable, "-m", "tests.dbos.kinds", setup_json, prompt, session_id],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert worker.returncode == EXIT_CRASHED, worker.stderr
    return worker.stdout.split()[0]


def _recovered(workflow_id: str) -> DurableResult:
    handle: WorkflowHandle[DurableResult] = DBOS.retrieve_workflow(workflow_id)
    return handle.get_result()


def test_a_worker_killed_mid_run_is_recovered_without_calling_anything_twice(
    setup: Setup,
) -> None:
    workflow_id = _crashed_worker(setup, "model:2", "I was charged twice", "c1")
    # The dead worker called the model once and ran the tool: both recorded.
    assert setup.tool_runs() == ["refund:30"]

    launch_for_tests()
    try:
        result = _recovered(workflow_id)
        steps = [step["function_name"] for step in DBOS.list_workflow_steps(workflow_id + "/1")]
        kinds = history(setup, "c1")
    finally:
        shutdown_for_tests()

    assert (result.stop_reason, result.text, result.error) == ("end_turn", "Refunded 30 EUR.", None)
    # Only the call in flight when the worker died is made again; the tool does not run.
    assert setup.tool_runs() == ["refund:30"]
    assert len(setup.model_calls) == 1
    assert kinds == ["user", "tool_use", "tool_result", "assistant"]
    assert steps == ["stageware:session-version", "model:scripted", "tool:refund", "model:scripted"]


def test_a_worker_killed_after_its_final_save_is_finished_from_the_session(setup: Setup) -> None:
    workflow_id = _crashed_worker(setup, "after-save", "I was charged twice", "c2")

    launch_for_tests()
    try:
        result = _recovered(workflow_id)
        kinds = history(setup, "c2")
    finally:
        shutdown_for_tests()

    assert (result.stop_reason, result.text, result.error) == ("end_turn", "Refunded 30 EUR.", None)
    assert result.workflow_id == workflow_id
    assert setup.model_calls == []  # the result came from the session: nothing ran again
    assert setup.tool_runs() == ["refund:30"]
    assert kinds == ["user", "tool_use", "tool_result", "assistant"]


def test_a_worker_killed_before_its_claim_runs_the_request_from_the_start(setup: Setup) -> None:
    workflow_id = _crashed_worker(setup, "factory", "I was charged twice", "c3")

    launch_for_tests()
    try:
        result = _recovered(workflow_id)
        kinds = history(setup, "c3")
    finally:
        shutdown_for_tests()

    assert (result.stop_reason, result.text, result.error) == ("end_turn", "Refunded 30 EUR.", None)
    assert len(setup.model_calls) == 2
    assert setup.tool_runs() == ["refund:30"]
    assert kinds == ["user", "tool_use", "tool_result", "assistant"]


@policy_middleware(hooks=["tool.before"], fail_mode="closed", name="escalate_refunds")
async def _escalate_refunds(event: ToolCallEvent, env: PolicyEnv) -> Escalate:
    return Escalate("refunds go to a person", queue="refunds")


def test_a_finished_invocation_that_escalated_is_read_back_with_its_escalation(
    tmp_path: Path,
) -> None:
    # What a replay that finds its own final save returns (the worker died after it):
    # the escalation the save recorded, which the request then waits for.
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    agent = Agent(
        ScriptedModel([ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 30})])]),
        tools=[refund],
        policy=PolicyEngine([_escalate_refunds]),
        session_store=store,
        session_id="e1",
    )
    # Outside a workflow the journal runs each call plainly; the final save records its key.
    with journal_scope(DBOSJournal("wf/1")):
        result = agent("refund me")
    assert result.stop_reason == "escalated"
    escalation = store.open_escalation("e1")
    assert escalation is not None

    stored = store.load("e1")
    assert stored is not None
    finished = _replay.finished_result(stored, session_id="e1", key="wf/1")
    assert (finished.stop_reason, finished.escalation_id) == ("escalated", escalation.id)
    store.close()


def _stored(
    version: int, *, owner: str | None = None, released: str | None = None
) -> StoredSession:
    interrupt_state: dict[str, object] = {}
    if released is not None:
        interrupt_state["released_by"] = {"key": released, "stop_reason": "end_turn"}
    lease = (
        None
        if owner is None
        else Lease(owner=owner, expires_at=datetime.now(UTC) + timedelta(seconds=30))
    )
    snapshot: SessionSnapshot = {
        "version": SNAPSHOT_VERSION,
        "messages": [],
        "state": {},
        "model_state": {},
        "interrupt_state": interrupt_state,
    }
    return StoredSession(snapshot=snapshot, version=version, lease=lease)


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (None, "fresh"),
        (_stored(3), "fresh"),
        (_stored(4, released="wf/1"), "finished"),
        (_stored(4, owner=lease_owner("host:1:ab", "wf/1")), "own_claim"),
        # Another invocation's claim or final save, or a version that moved on: not ours.
        (_stored(4, owner=lease_owner("host:1:ab", "wf/2")), "moved_on"),
        (_stored(4, released="wf/2"), "moved_on"),
        (_stored(5), "moved_on"),
    ],
)
def test_where_a_session_stands_for_a_replayed_invocation(
    stored: StoredSession | None, expected: str
) -> None:
    assert _replay.standing(stored, key="wf/1", version_at_start=3 if stored else 0) == expected
