"""A ``DurableAgent`` request whose approval nobody gives: the wait ends at the deadline.

With ``Suspend(timeout="1s", on_timeout=...)`` the request waits in its workflow until
the deadline, continues the run, and the step is blocked or the run escalated, as the
policy declared; an escalated request then waits for the escalation's resolution, which
``stageware.dbos.wake`` (in the worker's process) tells it of.
"""

from __future__ import annotations

import time

from dbos import DBOS

from stageware.dbos import wake

from .kinds import Setup, expiring_into_block, expiring_into_escalate


def test_a_request_whose_approval_times_out_ends_blocked(durable: Setup) -> None:
    result = expiring_into_block.run("refund me", session_id="late-1")

    assert (result.stop_reason, result.error) == ("blocked", None)
    assert durable.tool_runs() == []


def test_a_request_whose_approval_times_out_escalates_and_waits_for_the_resolution(
    durable: Setup,
) -> None:
    store = durable.store
    assert store is not None
    handle = expiring_into_escalate.start("refund me", session_id="late-2")
    deadline = time.monotonic() + 30
    while (escalation := store.open_escalation("late-2")) is None:
        assert time.monotonic() < deadline, "the run never escalated"
        time.sleep(0.05)
    assert escalation.reason == "refund approval expired"
    time.sleep(0.3)
    status = DBOS.get_workflow_status(handle.workflow_id)
    assert status is not None
    assert status.status == "PENDING"  # waiting for a human to resolve it

    store.resolve_escalation(escalation.id, by="ops", resolution="refunded by hand")
    assert wake("late-2") == [handle.workflow_id]

    result = handle.get_result()
    assert (result.stop_reason, result.escalation_id) == ("escalated", escalation.id)
    assert durable.tool_runs() == []
