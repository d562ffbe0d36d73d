"""A durable request that stops on an approval waits for it in its workflow, then goes on.

The approval comes from the real ``stageware policy approvals`` command in another
process, which stores the answer and wakes the request (``--dbos``); the request then
continues the run in a second invocation, and the refund runs once.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time
import uuid
from pathlib import Path

from dbos import DBOS, WorkflowHandle

from stageware._dbos._wake import kinds_of
from stageware.dbos import DurableResult
from tests.host.sessions.stores import StoreSpec

from .kinds import Setup, approved, history, resumed_meanwhile, support, unwaited
from .pending import pending_approval

STAGEWARE = str(Path(sys.executable).parent / "stageware")
ROOT = Path(__file__).resolve().parents[2]


def _approve(setup: Setup, approval: str) -> subprocess.CompletedProcess[str]:
    spec = StoreSpec.from_json(setup.store_spec)
    store = (
        ["--store", f"sqlite:///{spec.target}"]
        if spec.kind == "sqlite"
        else ["--store", spec.target, "--schema", spec.schema]
    )
    env = {k: v for k, v in os.environ.items() if k != "STAGEWARE_APPROVAL_AUTHENTICATOR"}
    command = [STAGEWARE, "policy", "approvals", *store, "--approve", approval]
    return subprocess.run(
        [*command, "--dbos", setup.dbos_url],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_a_request_waits_for_its_approval_and_goes_on_once_it_is_given(durable: Setup) -> None:
    handle: WorkflowHandle[DurableResult] = approved.start("refund me", session_id="a1")
    approval = pending_approval(StoreSpec.from_json(durable.store_spec), "a1")
    assert durable.store is not None
    # What the command line's wake-up reads the kind to look for from.
    assert kinds_of(durable.store.load("a1")) == ["test-approved"]
    time.sleep(0.3)
    assert DBOS.get_workflow_status(handle.workflow_id).status == "PENDING"  # type: ignore[union-attr]  # pyright: ignore[reportOptionalMemberAccess]
    assert durable.tool_runs() == []
    # The store's approvals ledger lists it, as a console reads it.
    [waiting] = durable.store.approvals(session_id="a1").entries
    assert (waiting.interrupt_id, waiting.status) == (approval, "pending")

    approving = _approve(durable, approval)

    assert approving.returncode == 0, approving.stderr
    result = handle.get_result()
    assert (result.stop_reason, result.text, result.error) == ("end_turn", "Refunded 30 EUR.", None)
    assert result.workflow_id == handle.workflow_id
    assert durable.tool_runs() == ["refund:30"]
    assert history(durable, "a1") == ["user", "tool_use", "tool_result", "assistant"]
    steps = [
        step["function_name"]
        for step in DBOS.list_workflow_steps(handle.workflow_id)
        if not step["function_name"].startswith("DBOS.")
    ]
    assert steps[0] == "stageware.test-approved.invocation"
    assert steps[-2:] == ["stageware:continue", "stageware.test-approved.invocation"]
    # The ledger keeps the answer, and who gave it, after the interrupt left the session.
    entry = durable.store.approval("a1", approval)
    assert entry is not None
    assert (entry.status, entry.answered_by) == ("approved", pwd.getpwuid(os.geteuid()).pw_name)


def test_without_waiting_a_request_ends_on_the_interrupt(durable: Setup) -> None:
    result = unwaited.run("refund me", session_id="a2")

    assert result.stop_reason == "interrupt"
    assert len(result.interrupts) == 1
    assert result.interrupts[0] == pending_approval(StoreSpec.from_json(durable.store_spec), "a2")
    assert durable.tool_runs() == []


def _status(handle: WorkflowHandle[DurableResult]) -> str | None:
    status = DBOS.get_workflow_status(handle.workflow_id)
    return None if status is None else status.status


def test_a_queued_request_waiting_for_approval_keeps_its_workers_slot(durable: Setup) -> None:
    # As the README's "Waiting for a human on DBOS" says: on a queue the wait counts
    # toward worker_concurrency, so with one slot another session's request waits too.
    queue = DBOS.register_queue(
        "test-wait-slot", partition_concurrency=1, worker_concurrency=1, polling_interval_sec=0.1
    )
    waiting = approved.enqueue(queue, "refund me", session_id="w1")
    approval = pending_approval(StoreSpec.from_json(durable.store_spec), "w1")
    other = support.enqueue(queue, "refund me", session_id="w2")
    time.sleep(1.5)  # fifteen polls
    assert (_status(waiting), _status(other)) == ("PENDING", "ENQUEUED")

    # Answered through the store (not the queue), the wait ends and frees the slot.
    approving = _approve(durable, approval)

    assert approving.returncode == 0, approving.stderr
    assert waiting.get_result().stop_reason == "end_turn"
    assert other.get_result().stop_reason == "end_turn"
    assert durable.tool_runs() == ["refund:30", "refund:30"]


def test_a_queued_request_waiting_for_approval_keeps_its_sessions_partition(
    durable: Setup,
) -> None:
    # Slots to spare: another session runs, but the waiting session's next request (a
    # prompt, or an answer sent through the queue) stays behind the wait.
    queue = DBOS.register_queue(
        "test-wait-partition",
        partition_concurrency=1,
        worker_concurrency=4,
        polling_interval_sec=0.1,
    )
    waiting = approved.enqueue(queue, "refund me", session_id="p1")
    approval = pending_approval(StoreSpec.from_json(durable.store_spec), "p1")
    behind = approved.enqueue(queue, "and another refund", session_id="p1")
    other = support.enqueue(queue, "refund me", session_id="p2")
    assert other.get_result().stop_reason == "end_turn"
    time.sleep(1.0)
    assert (_status(waiting), _status(behind)) == ("PENDING", "ENQUEUED")

    assert _approve(durable, approval).returncode == 0
    assert waiting.get_result().stop_reason == "end_turn"
    # Then the session's next request runs, and waits for an approval of its own.
    second = _pending_approval_besides(durable, "p1", approval)
    assert _status(behind) == "PENDING"
    assert _approve(durable, second).returncode == 0
    assert behind.get_result().stop_reason == "end_turn"
    assert durable.tool_runs() == ["refund:30"] * 3


def _pending_approval_besides(setup: Setup, session_id: str, answered: str) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = pending_approval(StoreSpec.from_json(setup.store_spec), session_id)
        if found != answered:
            return found
        time.sleep(0.05)
    raise AssertionError(f"session {session_id!r} never suspended again")


def test_a_run_the_application_resumed_meanwhile_is_not_continued_again(durable: Setup) -> None:
    # The application resumes the answered run itself (the README allows it) after the
    # request found the cycle open and before its continuation started.
    # A session of the test's own: the kind counts its builds by session id.
    session_id = f"a7-{uuid.uuid4().hex}"
    handle: WorkflowHandle[DurableResult] = resumed_meanwhile.start(
        "refund me", session_id=session_id
    )
    approving = _approve(
        durable, pending_approval(StoreSpec.from_json(durable.store_spec), session_id)
    )
    assert approving.returncode == 0, approving.stderr

    deadline = time.monotonic() + 60
    while DBOS.get_workflow_status(handle.workflow_id).status == "PENDING":  # type: ignore[union-attr]  # pyright: ignore[reportOptionalMemberAccess]
        assert time.monotonic() < deadline, "the request went on waiting"
        time.sleep(0.1)
    result = handle.get_result()

    # The application's resume ran the refund and answered; the continuation ran nothing
    # (no model call on the finished conversation, no new approval), and the request
    # ends as the run it waited on stopped.
    assert len(durable.model_calls) == 2
    assert durable.tool_runs() == ["refund:30"]
    assert history(durable, session_id) == ["user", "tool_use", "tool_result", "assistant"]
    assert result.stop_reason == "interrupt"
    assert result.error is None
