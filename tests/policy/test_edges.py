"""Edges a user meets: what a halt leaves behind, reporting hook points that fail, bad
modifications, in-place changes, hook retries, and the order of an approval's report."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from stageware import AfterToolCallEvent, ScriptedModel, ScriptedToolCall, ScriptedTurn
from stageware.policy import Block, Continue, HookPoint, PolicyEnv, Suspend, middleware
from tests.host.converse_history import assert_valid_converse

from .approvers import credential
from .policy_helpers import deciding, refund_agent, refund_script

pytestmark = pytest.mark.anyio

APPROVE = {"approved": True, "credential": credential("intern")}


def _resume(interrupt_id: str, answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"interruptResponse": {"interruptId": interrupt_id, "response": answer}}]


async def test_a_block_at_approval_resolved_means_the_step_never_runs() -> None:
    agent, ledger, _ = refund_agent(
        deciding("tool.before", lambda e, env: Suspend("approve?"), name="gate"),
        deciding(
            "approval.resolved", lambda e, env: Block("needs two approvers"), name="four_eyes"
        ),
        script=[*refund_script(900), "What else can I do?"],
    )
    [interrupt] = (await agent.invoke_async("refund 900")).interrupts
    blocked = await agent.invoke_async(_resume(interrupt.id, APPROVE))
    assert blocked.stop_reason == "blocked"
    # The cycle is over: continuing without a prompt does not run the blocked step; the
    # dangling call gets an error result and the model answers.
    result = await agent.invoke_async(None)
    assert result.stop_reason == "end_turn"
    assert ledger.payouts == []
    assert_valid_converse(agent.messages, for_request=False)


async def test_approval_resolved_fires_before_the_suspended_step_is_decided() -> None:
    order: list[str] = []

    def note(name: str, outcome: Any) -> Any:
        def decide(event: Any, env: PolicyEnv) -> Any:
            order.append(f"{env.hook.value}:{name}")
            return outcome(env) if callable(outcome) else outcome

        return decide

    agent, _, _ = refund_agent(
        deciding("input.received", note("gate", lambda env: Suspend("ok?")), name="gate"),
        deciding("approval.resolved", note("audit", None), name="audit"),
    )
    [interrupt] = (await agent.invoke_async("refund")).interrupts
    order.clear()
    denied = await agent.invoke_async(
        _resume(interrupt.id, {"approved": False, "credential": credential("x")})
    )
    assert denied.stop_reason == "blocked"
    # Reported first, even though the denial then blocks the step.
    assert order == ["approval.resolved:audit"]
    assert [d.hook for d in denied.decisions] == ["approval.resolved", "input.received"]


async def test_output_final_does_not_fire_on_a_limit_stop_so_the_history_stays_valid() -> None:
    agent, _, _ = refund_agent(deciding("output.final", lambda e, env: Block("no")))
    agent.max_model_calls = 1
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "limit_model_calls"
    assert result.decisions == []
    assert_valid_converse(agent.messages, for_request=False)


async def _crash(event: Any, env: PolicyEnv) -> None:
    raise RuntimeError("audit sink down")


async def test_a_failing_run_end_middleware_never_changes_the_result() -> None:
    audit = middleware(hooks=["run.end"], fail_mode="closed", name="audit")(_crash)
    agent, ledger, _ = refund_agent(audit)
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "end_turn"
    assert ledger.payouts == [50]
    [decision] = result.decisions
    assert (decision.hook, decision.outcome) == ("run.end", "continue")
    assert decision.error == "raised RuntimeError: audit sink down"


async def test_a_failing_run_error_middleware_lets_the_run_s_own_error_through() -> None:
    audit = middleware(hooks=["run.error"], fail_mode="closed", name="audit")(_crash)
    agent, _, _ = refund_agent(audit, script=[ValueError("the model is down")])
    with pytest.raises(ValueError, match="the model is down"):
        await agent.invoke_async("refund")


@pytest.mark.parametrize(
    ("point", "modified", "problem"),
    [
        ("output.final", {"message": {"role": "user", "content": [{"text": "hi"}]}}, "role"),
        ("model.response", {"message": {"role": "assistant", "content": []}}, "no content"),
        (
            "model.response",
            {"message": {"role": "assistant", "content": [{"text": "no tools"}]}},
            "stop_reason is 'tool_use'",
        ),
        ("model.request", {"messages": []}, "end with a user turn"),
    ],
)
async def test_a_modification_that_breaks_the_conversation_is_a_middleware_error(
    point: str, modified: dict[str, Any], problem: str
) -> None:
    fired: list[int] = []

    def decide(event: Any, env: PolicyEnv) -> Continue | None:
        fired.append(1)
        return Continue(modified=modified) if len(fired) == 1 else None

    agent, _, _ = refund_agent(deciding(point, decide, fail_mode="open"))
    result = await agent.invoke_async("refund")
    decision = next(d for d in result.decisions if d.hook == point)
    assert decision.error is not None
    assert problem in decision.error
    assert_valid_converse(agent.messages, for_request=False)


async def test_model_response_may_drop_the_tool_calls_with_the_stop_reason() -> None:
    def no_tools(event: Any, env: PolicyEnv) -> Continue | None:
        if event.stop_reason != "tool_use":
            return None
        answer = {"role": "assistant", "content": [{"text": "I cannot refund that here."}]}
        return Continue(modified={"message": answer, "stop_reason": "end_turn"})

    agent, ledger, _ = refund_agent(deciding("model.response", no_tools))
    result = await agent.invoke_async("refund")
    assert (result.stop_reason, result.text) == ("end_turn", "I cannot refund that here.")
    assert ledger.payouts == []
    assert_valid_converse(agent.messages, for_request=False)


async def test_suspend_details_that_are_not_json_are_a_middleware_error() -> None:
    agent, ledger, _ = refund_agent(
        deciding("tool.before", lambda e, env: Suspend("ok?", details={"amount": Decimal("1.5")}))
    )
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "blocked"  # fail closed
    assert "Suspend.details" in (result.decisions[0].error or "")
    assert ledger.payouts == []


async def test_changing_the_event_in_place_changes_neither_the_call_nor_the_history() -> None:
    def meddle(event: Any, env: PolicyEnv) -> None:
        event.input["amount"] = 99

    agent, ledger, _ = refund_agent(deciding("tool.before", meddle))
    await agent.invoke_async("refund")
    assert ledger.payouts == [50]
    assert agent.messages[1]["content"][0]["toolUse"]["input"] == {"amount": 50}


async def test_a_hook_retry_of_a_blocked_call_that_then_runs_leaves_the_run_going() -> None:
    attempts: list[int] = []

    def flaky_guard(event: Any, env: PolicyEnv) -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("limits service hiccup")

    async def guard(event: Any, env: PolicyEnv) -> None:
        flaky_guard(event, env)

    agent, ledger, _ = refund_agent(
        middleware(hooks=["tool.before"], fail_mode="closed", name="guard")(guard)
    )
    retried: list[int] = []

    def retry_once(event: AfterToolCallEvent) -> None:
        if not retried and event.result["status"] == "error":
            retried.append(1)
            event.retry = True

    agent.add_hook(retry_once, AfterToolCallEvent)
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "end_turn"
    assert result.halt is None
    assert ledger.payouts == [50]


async def test_a_timeout_error_the_middleware_raises_is_its_error_not_its_timeout() -> None:
    async def raises_timeout(event: Any, env: PolicyEnv) -> None:
        raise TimeoutError("upstream took too long")

    agent, _, _ = refund_agent(
        middleware(hooks=["tool.before"], fail_mode="open", name="up")(raises_timeout)
    )
    result = await agent.invoke_async("refund")
    [decision] = result.decisions
    assert decision.timed_out is False
    assert decision.error == "raised TimeoutError: upstream took too long"


async def test_two_calls_in_a_round_one_blocked_one_suspended_end_blocked() -> None:
    def decide(event: Any, env: PolicyEnv) -> Any:
        return Block("too much") if event.input["amount"] > 1000 else Suspend("ok?")

    turn = ScriptedTurn(
        tool_calls=[
            ScriptedToolCall("refund", {"amount": 5000}, id="a"),
            ScriptedToolCall("refund", {"amount": 500}, id="b"),
        ]
    )
    agent, ledger, _ = refund_agent(deciding("tool.before", decide), script=[turn])
    result = await agent.invoke_async("two refunds")
    assert result.stop_reason == "blocked"
    assert result.interrupts == []
    assert ledger.payouts == []
    assert_valid_converse(agent.messages, for_request=False)
    agent.model = ScriptedModel(["Anything else?"])
    assert (await agent.invoke_async("no")).stop_reason == "end_turn"
    assert HookPoint.TOOL_BEFORE.value in {d.hook for d in result.decisions}
