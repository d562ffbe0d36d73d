"""Every outcome at every hook point where the table allows it, on a real agent run.

Each case installs one middleware that decides once, at one hook point, and runs the
refund agent (a tool call, then an answer) on asyncio and trio. What each outcome must do
is asserted the same way everywhere: Continue lets the run finish, Block and Escalate end
it with their stop reason and a valid history, Suspend pauses it on a deterministic
interrupt that an approval resumes, Retry redoes the step, and Guide tells the model why
its step was refused and lets the run go on.
"""

from __future__ import annotations

from typing import Any

import pytest

from stageware import ScriptedModel
from stageware.policy import (
    ALLOWED,
    Block,
    Continue,
    Escalate,
    Guide,
    HookPoint,
    Outcome,
    PolicyEnv,
    Retry,
    Suspend,
)
from tests.host.converse_history import assert_valid_converse

from .approvers import credential
from .policy_helpers import deciding, refund_agent, refund_script

pytestmark = pytest.mark.anyio

# Hook points a plain refund run reaches; run.error needs a failing run and
# approval.resolved a resume, so they have tests of their own below.
_PLAIN_RUN = [p for p in HookPoint if p not in (HookPoint.RUN_ERROR, HookPoint.APPROVAL_RESOLVED)]

_OUTCOMES: dict[type[Any], Outcome] = {
    Continue: Continue(),
    Block: Block("not allowed"),
    Suspend: Suspend("a person must approve"),
    Escalate: Escalate("needs a human", queue="refunds"),
    Retry: Retry("try again"),
    Guide: Guide("ask the customer for the order number first"),
}


def _once(outcome: Outcome) -> Any:
    asked: list[int] = []

    def decide(event: Any, env: PolicyEnv) -> Outcome | None:
        asked.append(1)
        return outcome if len(asked) == 1 else None

    return decide


def _step_key(point: HookPoint) -> str:
    if point in (HookPoint.TOOL_BEFORE, HookPoint.TOOL_AFTER):
        return "t1"
    if point in (HookPoint.RUN_START, HookPoint.INPUT_RECEIVED):
        return "run-0"
    return "turn-1"


def _cases() -> list[tuple[HookPoint, type[Any]]]:
    return [(p, kind) for p in _PLAIN_RUN for kind in _OUTCOMES if kind in ALLOWED[p]]


@pytest.mark.parametrize(
    ("point", "kind"), _cases(), ids=lambda v: getattr(v, "value", None) or v.__name__
)
async def test_each_allowed_outcome_does_what_it_says(point: HookPoint, kind: type[Any]) -> None:
    outcome = _OUTCOMES[kind]
    seen: list[Any] = []
    script = refund_script()
    if kind in (Retry, Guide) and point not in (HookPoint.TOOL_AFTER, HookPoint.TOOL_BEFORE):
        script = [script[0], *script]  # the redone model call gets the same answer again
    agent, ledger, model = refund_agent(deciding(point, _once(outcome), seen=seen), script=script)
    result = await agent.invoke_async("Please refund my order")
    assert seen, f"{point.value} never fired"
    assert all(env.hook is point for _, env in seen)
    assert_valid_converse(agent.messages, for_request=False)
    first = result.decisions[0]
    assert (first.hook, first.middleware, first.outcome) == (
        point.value,
        "decider",
        kind.__name__.lower(),
    )
    if kind is Continue:
        assert result.stop_reason == "end_turn"
        assert ledger.payouts == [50]
    elif kind in (Block, Escalate):
        assert result.stop_reason == ("blocked" if kind is Block else "escalated")
        assert result.halt is not None
        assert (result.halt.hook, result.halt.middleware) == (point.value, "decider")
        assert result.halt.reason == outcome.reason  # type: ignore[union-attr]
        assert result.message == result.halt.message
        if point in (
            HookPoint.RUN_START,
            HookPoint.INPUT_RECEIVED,
            HookPoint.ROUTE_SELECT,
            HookPoint.CONTEXT_ASSEMBLE,
            HookPoint.MODEL_REQUEST,
            HookPoint.TOOL_BEFORE,
        ):
            assert ledger.payouts == []  # the step never ran
        if point in (HookPoint.RUN_START, HookPoint.INPUT_RECEIVED):
            # Stopped before the input entered the history: nothing was recorded.
            assert agent.messages == []
            assert model.requests == []
        else:
            assert agent.messages[-1] == result.halt.message
    elif kind is Suspend:
        assert result.stop_reason == "interrupt"
        [interrupt] = result.interrupts
        assert interrupt.id.startswith(f"v2:policy:{point.value}:decider:{_step_key(point)}#")
        # The id is bound to the step's fingerprint, which the reason holds whole.
        assert interrupt.id.endswith("#" + interrupt.reason["fingerprint"][:16])
        assert interrupt.reason["reason"] == "a person must approve"
        assert ledger.payouts == []
        resumed = await agent.invoke_async(
            [
                {
                    "interruptResponse": {
                        "interruptId": interrupt.id,
                        "response": {"approved": True, "credential": credential("dana")},
                    }
                }
            ]
        )
        assert resumed.stop_reason == "end_turn"
        assert ledger.payouts == [50]
        assert_valid_converse(agent.messages, for_request=False)
    elif kind is Guide:
        assert result.stop_reason == "end_turn"
        assert first.reason == "ask the customer for the order number first"
        told = "ask the customer for the order number first"
        if point is HookPoint.TOOL_BEFORE:
            # The call never ran: its result is an error the model reads, and the run went on.
            assert ledger.payouts == []
            [result_block] = model.requests[1].messages[-1]["content"]
            tool_result = result_block["toolResult"]
            assert tool_result["status"] == "error"
            assert tool_result["content"] == [
                {"text": f"The tool call was refused by policy decider and did not run: {told}"}
            ]
            assert agent.messages[2] == model.requests[1].messages[-1]
        else:
            # The first model call was made again, with the feedback in its request only.
            assert len(model.requests) == 3
            assert model.requests[1].messages[-1]["content"][-1] == {
                "text": f"Your previous response was refused by policy decider and "
                f"discarded: {told}"
            }
            assert model.requests[0].messages == agent.messages[:1]
            assert ledger.payouts == [50]
            assert all(told not in str(message) for message in agent.messages)
            assert [d.attempt for d in result.decisions if d.hook == point.value][:2] == [1, 2]
    else:
        assert kind is Retry
        assert result.stop_reason == "end_turn"
        assert [d.attempt for d in result.decisions if d.hook == point.value][:2] == [1, 2]
        if point is HookPoint.TOOL_AFTER:
            assert ledger.payouts == [50, 50]  # the tool ran again
        else:
            assert len(model.requests) == 3  # the first model call was made twice
            assert ledger.payouts == [50]


def _not_allowed() -> list[tuple[HookPoint, type[Any]]]:
    return [(p, kind) for p in _PLAIN_RUN for kind in _OUTCOMES if kind not in ALLOWED[p]]


@pytest.mark.parametrize(
    ("point", "kind"), _not_allowed(), ids=lambda v: getattr(v, "value", None) or v.__name__
)
async def test_an_outcome_the_hook_does_not_allow_is_a_middleware_error(
    point: HookPoint, kind: type[Any]
) -> None:
    agent, _, _ = refund_agent(deciding(point, _once(_OUTCOMES[kind]), fail_mode="open"))
    result = await agent.invoke_async("Please refund my order")
    [decision] = [d for d in result.decisions if d.hook == point.value][:1]
    assert decision.outcome == "continue"  # fail open
    assert decision.error is not None
    assert "does not allow" in decision.error
    assert kind.__name__ in decision.error
    assert result.stop_reason == "end_turn"


async def test_a_denied_approval_blocks_the_step() -> None:
    agent, ledger, _ = refund_agent(deciding("tool.before", _once(Suspend("approve?"))))
    first = await agent.invoke_async("refund")
    [interrupt] = first.interrupts
    result = await agent.invoke_async(
        [
            {
                "interruptResponse": {
                    "interruptId": interrupt.id,
                    "response": {
                        "approved": False,
                        "credential": credential("sam"),
                        "comment": "not eligible",
                    },
                }
            }
        ]
    )
    assert result.stop_reason == "blocked"
    assert result.halt is not None
    assert result.halt.reason == "denied by sam (authenticator): not eligible"
    [answered] = [d for d in result.decisions if d.hook == "tool.before"]
    assert answered.approver == "sam"
    assert ledger.payouts == []
    assert_valid_converse(agent.messages, for_request=False)
    # The cycle is over: the agent takes a new prompt.
    agent.model = ScriptedModel(["Anything else?"])
    assert (await agent.invoke_async("thanks")).stop_reason == "end_turn"


@pytest.mark.parametrize(
    "answer",
    [
        "yes",
        {"approved": "yes", "credential": credential("sam")},
        {"approved": True},
        {"approved": True, "credential": credential("sam"), "extra": 1},
    ],
)
async def test_an_answer_that_is_not_an_approval_names_the_interrupt(answer: Any) -> None:
    agent, ledger, _ = refund_agent(deciding("tool.before", _once(Suspend("approve?"))))
    [interrupt] = (await agent.invoke_async("refund")).interrupts
    with pytest.raises(ValueError, match=f"answer to policy approval '{interrupt.id}'"):
        await agent.invoke_async(
            [{"interruptResponse": {"interruptId": interrupt.id, "response": answer}}]
        )
    assert ledger.payouts == []
    # Refused before anything ran: the interrupt still waits for a proper answer.
    resumed = await agent.invoke_async(
        [
            {
                "interruptResponse": {
                    "interruptId": interrupt.id,
                    "response": {"approved": True, "credential": credential("sam")},
                }
            }
        ]
    )
    assert resumed.stop_reason == "end_turn"
    assert ledger.payouts == [50]


@pytest.mark.parametrize("kind", [Continue, Block, Escalate])
async def test_approval_resolved_fires_on_the_resume_with_the_decision(kind: type[Any]) -> None:
    seen: list[Any] = []
    agent, ledger, _ = refund_agent(
        deciding("tool.before", _once(Suspend("approve?")), name="gate"),
        deciding("approval.resolved", _once(_OUTCOMES[kind]), name="audit", seen=seen),
    )
    [interrupt] = (await agent.invoke_async("refund")).interrupts
    assert seen == []
    result = await agent.invoke_async(
        [
            {
                "interruptResponse": {
                    "interruptId": interrupt.id,
                    "response": {
                        "approved": True,
                        "credential": credential("dana"),
                        "comment": "ok",
                    },
                }
            }
        ]
    )
    [(event, env)] = seen
    assert env.hook is HookPoint.APPROVAL_RESOLVED
    assert (event.interrupt_id, event.suspended_at, event.middleware) == (
        interrupt.id,
        "tool.before",
        "gate",
    )
    assert (event.approved, event.approver, event.comment) == (True, "dana", "ok")
    if kind is Continue:
        assert result.stop_reason == "end_turn"
        assert ledger.payouts == [50]
    else:
        assert result.stop_reason == ("blocked" if kind is Block else "escalated")
        assert ledger.payouts == []
    assert_valid_converse(agent.messages, for_request=False)


async def test_run_error_fires_when_the_run_fails_and_run_end_however_it_ends() -> None:
    seen: list[Any] = []
    agent, _, _ = refund_agent(
        deciding("run.error", lambda e, env: None, name="errors", seen=seen),
        deciding("run.end", lambda e, env: None, name="ends", seen=seen),
        script=[RuntimeError("the model is down")],
    )
    with pytest.raises(RuntimeError, match="the model is down"):
        await agent.invoke_async("refund")
    hooks = [env.hook for _, env in seen]
    assert hooks == [HookPoint.RUN_ERROR, HookPoint.RUN_END]
    error_event, end_event = seen[0][0], seen[1][0]
    assert (error_event.error_type, error_event.error) == ("RuntimeError", "the model is down")
    assert end_event.stop_reason is None
    assert error_event.run_id == end_event.run_id


async def test_retry_past_its_budget_blocks_and_names_the_budget() -> None:
    agent, ledger, model = refund_agent(
        deciding("model.response", lambda e, env: Retry("malformed")),
        script=[*refund_script()] * 3,
        retry_budgets={"model.response": 1},
    )
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "blocked"
    assert result.halt is not None
    assert "retry budget of 1 at model.response spent" in result.halt.reason
    assert len(model.requests) == 2
    assert [d.attempt for d in result.decisions] == [1, 2]
    assert ledger.payouts == []
    assert_valid_converse(agent.messages, for_request=False)
