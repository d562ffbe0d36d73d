"""Policy events carry copies: a middleware changing its event in place leaves the history alone.

The InvokeModel context copies its lists on read, and pydantic, which builds the events,
takes a list's elements without reading them through the list and keeps ``Any`` values
(a tool's input, a tool result's JSON) by reference. So the events are built from lists
read in full; these tests change such values in place and check that the agent's history
and its tools still have what the model and the tool produced.
"""

from __future__ import annotations

from typing import Any

import pytest

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn, tool
from stageware.policy import Continue, PolicyEngine, PolicyEnv

from .policy_helpers import deciding, refund_agent

pytestmark = pytest.mark.anyio


def change_in_place(event: Any, env: PolicyEnv) -> Continue:
    for message in event.messages:
        for block in message["content"]:
            if "toolUse" in block:
                block["toolUse"]["input"]["amount"] = 999
            if "toolResult" in block:
                block["toolResult"]["content"].append({"json": {"changed": True}})
    for spec in getattr(event, "tool_specs", []):
        spec["inputSchema"]["json"]["changed"] = True
    return Continue()


@pytest.mark.parametrize("point", ["model.request", "context.assemble"])
async def test_changing_a_model_call_event_in_place_leaves_the_history_alone(point: str) -> None:
    agent, ledger, _ = refund_agent(deciding(point, change_in_place))
    await agent.invoke_async("refund")

    assert ledger.payouts == [50]
    [call] = [block["toolUse"] for block in agent.messages[1]["content"] if "toolUse" in block]
    assert call["input"] == {"amount": 50}
    [result] = [b["toolResult"] for b in agent.messages[2]["content"] if "toolResult" in b]
    assert result["content"] == [{"text": "refunded 50"}]
    assert "changed" not in ledger.tool.tool_spec["inputSchema"]["json"]


async def test_changing_a_tool_call_event_in_place_leaves_the_call_and_history_alone() -> None:
    seen: list[dict[str, Any]] = []

    @tool
    async def ship(order: dict[str, Any]) -> str:
        """Ship an order.

        Args:
            order: The order.
        """
        seen.append(order)
        return "shipped"

    def change_input(event: Any, env: PolicyEnv) -> Continue:
        # Nested: a shallow copy of the input would let this through to the tool.
        event.input["order"]["items"].append("extra")
        event.input["order"]["id"] = 999
        return Continue()

    call = ScriptedToolCall("ship", {"order": {"id": 1, "items": ["book"]}})
    agent = Agent(
        ScriptedModel([ScriptedTurn(tool_calls=[call]), "done"]),
        tools=[ship],
        policy=PolicyEngine([deciding("tool.before", change_input)]),
    )
    await agent.invoke_async("ship it")

    assert seen == [{"id": 1, "items": ["book"]}]
    [used] = [block["toolUse"] for block in agent.messages[1]["content"] if "toolUse" in block]
    assert used["input"] == {"order": {"id": 1, "items": ["book"]}}
