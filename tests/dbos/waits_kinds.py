"""Durable agent kinds whose approvals expire, for ``test_waits_durable``.

They use the tests' ``SETUP`` (``kinds``): its store and its tool log. The refund guard
suspends every refund for a second, then blocks or escalates it.
"""

from __future__ import annotations

from typing import Any

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn
from stageware._host.models._scripted import ModelRequest
from stageware.dbos import DurableAgent
from stageware.policy import Block, Escalate, PolicyEngine, PolicyEnv, Suspend, ToolCallEvent
from stageware.policy import middleware as policy_middleware

from .kinds import SETUP, refund

__all__ = ["expiring_into_block", "expiring_into_escalate"]


def _respond(request: ModelRequest) -> ScriptedTurn | str:
    last = request.messages[-1]
    if any("toolResult" in block for block in last["content"]):
        return "Refunded 30 EUR."
    return ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 30})])


def _builder(on_timeout: Block | Escalate) -> Any:
    @policy_middleware(hooks=["tool.before"], fail_mode="closed", name="refund_guard")
    async def refund_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend:
        return Suspend("a refund needs a manager", timeout="1s", on_timeout=on_timeout)

    def build(session_id: str) -> Agent:
        assert SETUP.store is not None
        return Agent(
            ScriptedModel([_respond] * 20),
            tools=[refund],
            policy=PolicyEngine([refund_guard]),
            session_store=SETUP.store,
            session_id=session_id,
            session_lease=SETUP.lease_seconds,
        )

    return build


expiring_into_block = DurableAgent(
    "test-expiring-block", _builder(Block("nobody approved the refund in time"))
)
expiring_into_escalate = DurableAgent(
    "test-expiring-escalate", _builder(Escalate("refund approval expired", queue="refunds"))
)
