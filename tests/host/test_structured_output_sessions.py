"""A structured run suspended by an interrupt resumes, in a fresh agent, to its typed output."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from stageware import (
    Agent,
    AgentResult,
    Escalation,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    SessionError,
    SessionSnapshot,
    SessionStore,
    SQLiteSessionStore,
    ToolContext,
    tool,
)
from tests.host.sessions.stores import DelegatingStore


class Transfer(BaseModel):
    """A confirmed transfer."""

    reference: str
    amount: int


class Other(BaseModel):
    reference: str


@tool
def confirm(amount: int, context: ToolContext) -> str:
    """Ask a person to confirm a transfer.

    Args:
        amount: The amount.
    """
    answer = context.interrupt("confirm", reason=f"transfer {amount}?")
    return f"confirmed: {answer}"


def script() -> list[ScriptedTurn]:
    return [
        ScriptedTurn(tool_calls=[ScriptedToolCall("confirm", {"amount": 40}, id="t1")]),
        ScriptedTurn(tool_calls=[ScriptedToolCall("Transfer", {"reference": "T-1", "amount": 40})]),
    ]


def agent_on(path: Path, model: ScriptedModel) -> Agent:
    return Agent(
        model, tools=[confirm], session_store=SQLiteSessionStore(path), session_id="transfers"
    )


def answer(result: AgentResult[Any]) -> list[dict[str, object]]:
    [interrupt] = result.interrupts
    return [{"interruptResponse": {"interruptId": interrupt.id, "response": "yes"}}]


def test_a_suspended_run_resumes_typed_in_a_fresh_agent(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    first = agent_on(path, ScriptedModel(script()[:1]))
    suspended = first("Send 40 to T-1", output_type=Transfer)
    assert suspended.stop_reason == "interrupt"

    model = ScriptedModel(script()[1:])
    resumed = agent_on(path, model)(answer(suspended), output_type=Transfer)

    assert resumed.output == Transfer(reference="T-1", amount=40)
    [block] = model.requests[0].messages[-1]["content"]
    assert "toolResult" in block
    assert block["toolResult"]["content"] == [{"text": "confirmed: yes"}]


@pytest.mark.parametrize(
    ("resume_type", "message"),
    [
        (None, "asked for output_type Transfer .* this resume asks for none"),
        (Other, "asked for output_type Transfer .* this resume asks for Other"),
    ],
)
def test_a_resume_must_ask_for_the_same_output(
    tmp_path: Path, resume_type: type[BaseModel] | None, message: str
) -> None:
    path = tmp_path / "sessions.db"
    suspended = agent_on(path, ScriptedModel(script()[:1]))("Send 40", output_type=Transfer)
    model = ScriptedModel(script()[1:])
    fresh = agent_on(path, model)

    resume_with: dict[str, Any] = {} if resume_type is None else {"output_type": resume_type}
    with pytest.raises(TypeError, match=message):
        fresh(answer(suspended), **resume_with)

    # Nothing was stored or run: the right resume still works.
    assert model.requests == []
    assert fresh(answer(suspended), output_type=Transfer).output.reference == "T-1"


def test_a_plain_run_cannot_be_resumed_as_a_structured_one(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    suspended = agent_on(path, ScriptedModel(script()[:1]))("Send 40")

    with pytest.raises(TypeError, match="asked for no output_type"):
        agent_on(path, ScriptedModel([]))(answer(suspended), output_type=Transfer)


def test_an_output_call_beside_an_interrupting_tool_ends_the_resumed_run(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    both = ScriptedTurn(
        tool_calls=[
            ScriptedToolCall("confirm", {"amount": 40}, id="t1"),
            ScriptedToolCall("Transfer", {"reference": "T-1", "amount": 40}, id="o1"),
        ]
    )
    suspended = agent_on(path, ScriptedModel([both]))("Send 40", output_type=Transfer)
    assert suspended.stop_reason == "interrupt"

    model = ScriptedModel([])
    fresh = agent_on(path, model)
    resumed = fresh(answer(suspended), output_type=Transfer)

    # The replayed round runs the tool, and the output given beside it ends the run.
    assert resumed.output == Transfer(reference="T-1", amount=40)
    assert model.requests == []
    [tool_result, output_result] = fresh.messages[-1]["content"]
    assert "toolResult" in tool_result
    assert "toolResult" in output_result
    assert tool_result["toolResult"]["content"] == [{"text": "confirmed: yes"}]
    assert output_result["toolResult"]["status"] == "success"


class FinalSaveFails(DelegatingStore):
    """Refuses the first save that releases the lease: the worker "dies" at its run's end."""

    def __init__(self, inner: SessionStore) -> None:
        super().__init__(inner)
        self.failed = False

    def save(
        self,
        session_id: str,
        snapshot: SessionSnapshot,
        *,
        expected_version: int,
        owner: str,
        lease_seconds: float | None,
        escalation: Escalation | None = None,
        kept_messages: int = 0,
    ) -> int:
        if lease_seconds is None and not self.failed:
            self.failed = True
            raise SessionError("the final save was lost")
        return super().save(
            session_id,
            snapshot,
            expected_version=expected_version,
            owner=owner,
            lease_seconds=lease_seconds,
            escalation=escalation,
            kept_messages=kept_messages,
        )


@pytest.mark.no_journal
def test_a_takeover_reads_the_recorded_answer_as_the_output(tmp_path: Path) -> None:
    store = FinalSaveFails(SQLiteSessionStore(tmp_path / "sessions.db"))
    first = ScriptedModel(['{"reference": "T-9", "amount": 9}'], structured_output=True)
    worker = Agent(first, session_store=store, session_id="transfers", session_lease=0.05)
    # The answer is recorded, the run's end is not: the session is left unfinished.
    with pytest.raises(SessionError, match="final save was lost"):
        worker("Send 9", output_type=Transfer)
    time.sleep(0.1)  # the lost worker's lease runs out

    model = ScriptedModel([], structured_output=True)
    other = Agent(model, session_store=store, session_id="transfers")
    result = other(output_type=Transfer)

    assert result.output == Transfer(reference="T-9", amount=9)
    assert model.requests == []
