"""A durable request that stops on an approval waits for it in its workflow, then goes on.

The approval comes from the real ``stageware policy approvals`` command in another
process, which stores the answer and wakes the request (``--dbos``); the request then
continues the run in a second invocation, and the refund runs once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from dbos import DBOS, WorkflowHandle

from stageware.dbos import DurableResult
from tests.host.sessions.stores import StoreSpec

from .kinds import Setup, approved, history, unwaited
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
    time.sleep(0.3)
    assert DBOS.get_workflow_status(handle.workflow_id).status == "PENDING"  # type: ignore[union-attr]  # pyright: ignore[reportOptionalMemberAccess]
    assert durable.tool_runs() == []

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


def test_without_waiting_a_request_ends_on_the_interrupt(durable: Setup) -> None:
    result = unwaited.run("refund me", session_id="a2")

    assert result.stop_reason == "interrupt"
    assert len(result.interrupts) == 1
    assert result.interrupts[0] == pending_approval(StoreSpec.from_json(durable.store_spec), "a2")
    assert durable.tool_runs() == []
