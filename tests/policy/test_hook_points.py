"""All 13 hook points fire on a real agent run, with the run's real payloads."""

from __future__ import annotations

from typing import Any

import pytest

from stageware.policy import HookPoint, PolicyEnv, Suspend, middleware

from .approvers import credential
from .policy_helpers import refund_agent, refund_script

pytestmark = pytest.mark.anyio


async def test_every_hook_point_fires_with_real_payloads() -> None:
    fired: list[tuple[HookPoint, Any, PolicyEnv]] = []

    @middleware(hooks=list(HookPoint), fail_mode="open", name="recorder")
    async def recorder(event: Any, env: PolicyEnv) -> None:
        fired.append((env.hook, event, env))

    @middleware(hooks=["tool.before"], fail_mode="closed", name="gate")
    async def gate(event: Any, env: PolicyEnv) -> Suspend | None:
        return None if env.attempt > 1 or fired_answers else Suspend("approve the refund")

    fired_answers: list[str] = []
    agent, ledger, model = refund_agent(
        recorder, gate, script=[*refund_script(75), RuntimeError("model down")]
    )
    first = await agent.invoke_async("Refund 75 please")
    assert first.stop_reason == "interrupt"
    fired_answers.append(first.interrupts[0].id)
    resumed = await agent.invoke_async(
        [
            {
                "interruptResponse": {
                    "interruptId": first.interrupts[0].id,
                    "response": {"approved": True, "credential": credential("dana")},
                }
            }
        ]
    )
    assert resumed.stop_reason == "end_turn"
    with pytest.raises(RuntimeError, match="model down"):
        await agent.invoke_async("and another")

    assert {point for point, _, _ in fired} == set(HookPoint)
    by_point: dict[HookPoint, list[Any]] = {}
    for point, event, env in fired:
        assert event.hook == point.value
        assert env.middleware == "recorder"
        assert event.run_id == env.run_id
        by_point.setdefault(point, []).append(event)

    assert by_point[HookPoint.RUN_START][0].agent_name == "agent"
    assert by_point[HookPoint.INPUT_RECEIVED][0].messages == [
        {"role": "user", "content": [{"text": "Refund 75 please"}]}
    ]
    route = by_point[HookPoint.ROUTE_SELECT][0]
    assert (route.model_id, route.tool_names) == ("scripted", ["refund"])
    assert by_point[HookPoint.CONTEXT_ASSEMBLE][0].tool_specs[0]["name"] == "refund"
    assert by_point[HookPoint.MODEL_REQUEST][0].messages[-1]["content"] == [
        {"text": "Refund 75 please"}
    ]
    chunks = by_point[HookPoint.STREAM_CHUNK]
    assert any("messageStop" in event.chunk for event in chunks)
    response = by_point[HookPoint.MODEL_RESPONSE][0]
    assert response.stop_reason == "tool_use"
    assert response.message == model.requests[1].messages[1]
    call = by_point[HookPoint.TOOL_BEFORE][0]
    assert (call.tool_name, call.tool_use_id, call.input) == ("refund", "t1", {"amount": 75})
    after = by_point[HookPoint.TOOL_AFTER][0]
    assert (after.tool_name, after.result["status"], after.error) == ("refund", "success", None)
    assert after.result["content"] == [{"text": "refunded 75"}]
    approval = by_point[HookPoint.APPROVAL_RESOLVED][0]
    assert (approval.suspended_at, approval.middleware, approval.approved) == (
        "tool.before",
        "gate",
        True,
    )
    final = by_point[HookPoint.OUTPUT_FINAL][0]
    assert final.message == {"role": "assistant", "content": [{"text": "Refund done."}]}
    error = by_point[HookPoint.RUN_ERROR][0]
    assert error.error_type == "RuntimeError"
    ends = by_point[HookPoint.RUN_END]
    assert [end.stop_reason for end in ends] == ["interrupt", "end_turn", None]
    assert ledger.payouts == [75]
    # One run id per invocation, shared by every event of it.
    assert len({event.run_id for _, event, _ in fired}) == 3
