"""A policy sees a structured request at ``model.request``, and may refuse it, not change it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from stageware import (
    Agent,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    SQLiteSessionStore,
    StructuredOutputError,
    tool,
)
from stageware.policy import (
    Block,
    Continue,
    ModelRequestEvent,
    PolicyEngine,
    PolicyEnv,
    Suspend,
    ToolCallEvent,
    middleware,
)
from tests.policy.approvers import authenticator, credential
from tests.policy.policy_helpers import deciding


class Invoice(BaseModel):
    """An invoice to pay."""

    payee: str
    amount: int


INVOICE = ScriptedTurn(tool_calls=[ScriptedToolCall("Invoice", {"payee": "ACME", "amount": 5})])


def test_model_request_carries_the_output_name_and_schema() -> None:
    seen: list[Any] = []
    policy = PolicyEngine([deciding("model.request", lambda event, env: None, seen=seen)])
    agent = Agent(ScriptedModel([INVOICE]), policy=policy)

    result = agent("Pay ACME", output_type=Invoice)

    assert result.output == Invoice(payee="ACME", amount=5)
    event = seen[0][0]
    assert isinstance(event, ModelRequestEvent)
    assert event.structured_output_name == "Invoice"
    assert event.structured_output_schema == Invoice.model_json_schema()


def test_a_plain_request_carries_none() -> None:
    seen: list[Any] = []
    policy = PolicyEngine([deciding("model.request", lambda event, env: None, seen=seen)])

    Agent(ScriptedModel(["ok"]), policy=policy)("Hi")

    assert seen[0][0].structured_output_name is None
    assert seen[0][0].structured_output_schema is None


def refuse_invoices(event: ModelRequestEvent, env: PolicyEnv) -> Block | None:
    if event.structured_output_name == "Invoice":
        return Block("this agent may not produce invoices")
    return None


def test_a_block_ends_the_run_blocked_and_the_output_says_why() -> None:
    model = ScriptedModel([INVOICE])
    agent = Agent(model, policy=PolicyEngine([deciding("model.request", refuse_invoices)]))

    result = agent("Pay ACME", output_type=Invoice)

    assert result.stop_reason == "blocked"
    assert model.requests == []  # the model was never asked
    assert result.structured_output is None
    with pytest.raises(StructuredOutputError, match="stop_reason 'blocked'"):
        _ = result.output
    # The same agent still answers plain requests.
    model_after = ScriptedModel(["Hello"])
    agent.model = model_after
    assert agent("Hi").text == "Hello"


def test_a_policy_cannot_change_the_requested_output() -> None:
    def swap(event: ModelRequestEvent, env: PolicyEnv) -> Continue:
        return Continue(modified={"structured_output_name": "Other"})

    agent = Agent(
        ScriptedModel([INVOICE]),
        policy=PolicyEngine([deciding("model.request", swap, fail_mode="open")]),
    )

    result = agent("Pay ACME", output_type=Invoice)

    # Refused as a middleware error; fail-open, so the request went on unchanged.
    decision = next(d for d in result.decisions if d.hook == "model.request")
    assert decision.error is not None
    assert "structured_output_name" in decision.error
    assert result.output.payee == "ACME"


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def pay_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
    """Every payment waits for a person."""
    return Suspend(f"pay {event.input['amount']}") if event.tool_name == "pay" else None


@tool
def pay(amount: int) -> str:
    """Pay an amount.

    Args:
        amount: The amount.
    """
    return f"paid {amount}"


def test_a_policy_suspended_run_resumes_typed_in_a_fresh_agent(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"

    def agent_with(script: list[ScriptedTurn]) -> Agent:
        return Agent(
            ScriptedModel(script),
            tools=[pay],
            policy=PolicyEngine([pay_guard], authenticator=authenticator()),
            session_store=SQLiteSessionStore(path),
            session_id="payments",
        )

    call = ScriptedTurn(tool_calls=[ScriptedToolCall("pay", {"amount": 5}, id="t1")])
    suspended = agent_with([call])("Pay ACME 5", output_type=Invoice)
    assert suspended.stop_reason == "interrupt"
    [interrupt] = suspended.interrupts
    approval = {"approved": True, "credential": credential("ops@example.com")}

    resumed = agent_with([INVOICE])(
        [{"interruptResponse": {"interruptId": interrupt.id, "response": approval}}],
        output_type=Invoice,
    )

    assert resumed.output == Invoice(payee="ACME", amount=5)
    assert resumed.stop_reason == "end_turn"
