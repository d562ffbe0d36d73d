"""An agent whose run escalated: the record goes with the final save, and the session waits.

Each test runs on the memory, SQLite and Postgres stores. The policy layer is stood in for
by a tiny AgentStream middleware that sets ``pending_escalation`` on the agent's core when
a user asks for a refund, as an ``Escalate`` outcome will; everything after that (the
final save, the refusal of the next prompt, the resolution) is the real thing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from stageware import (
    Agent,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamStage,
    Escalation,
    ScriptedModel,
    SessionConflictError,
    SessionError,
    SessionEscalatedError,
    SessionStore,
    ToolContext,
    tool,
)
from tests.host.agent_helpers import calls, stored_snapshot

from .stores import TakeoverStore

SESSION = "customer-42"


def escalate_refunds(agent: Agent) -> list[Escalation]:
    """Make every pass whose input asks for a refund escalate; return what it escalated."""
    made: list[Escalation] = []

    async def refund_desk(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(ctx):
            yield event
        asked = [
            block["text"]
            for message in ctx.messages
            for block in message["content"]
            if "text" in block
        ]
        if any("refund" in text for text in asked):
            escalation = Escalation.new(
                SESSION,
                queue="refunds",
                hook="output.final",
                middleware="refund_desk",
                reason="refunds go to a human",
                event={"asked": asked},
            )
            made.append(escalation)
            agent._core.pending_escalation = escalation

    agent.add_middleware(AgentStreamStage.Wrap, refund_desk)
    return made


@pytest.mark.no_journal
def test_the_final_save_records_the_escalation(store: SessionStore) -> None:
    agent = Agent(
        ScriptedModel(["A human will look at it."]), session_store=store, session_id=SESSION
    )
    made = escalate_refunds(agent)

    result = agent("a refund, please")

    assert result.text == "A human will look at it."
    assert store.open_escalation(SESSION) == made[0]
    assert made[0].event == {"asked": ["a refund, please"]}
    stored = store.load(SESSION)
    assert stored is not None
    # The claim (with the prompt), the answer, then the final save with the escalation.
    assert stored.version == 3 == agent.session_version
    assert stored.lease is None
    assert agent._core.pending_escalation is None


def test_the_session_takes_no_prompt_until_a_human_resolves_it(store: SessionStore) -> None:
    model = ScriptedModel(["A human will look at it.", "Hello again."])
    agent = Agent(model, session_store=store, session_id=SESSION)
    made = escalate_refunds(agent)
    agent("a refund, please")
    [escalation] = made
    before = store.load(SESSION)

    with pytest.raises(SessionEscalatedError) as caught:
        agent("hello?")

    assert caught.value.escalation == escalation
    assert escalation.id in str(caught.value)
    assert "queue 'refunds'" in str(caught.value)
    assert "refunds go to a human" in str(caught.value)
    assert len(model.requests) == 1  # the model was not called
    assert store.load(SESSION) == before  # nothing was saved, no lease taken
    assert len(agent.messages) == 2

    # Another worker that loads the session is refused as well, and so is a claim.
    other = Agent(ScriptedModel(["never"]), session_store=store, session_id=SESSION)
    with pytest.raises(SessionEscalatedError):
        other("hello from elsewhere")
    store.claim_escalation(escalation.id, by="ana")
    with pytest.raises(SessionEscalatedError, match="is claimed"):
        agent("hello?")

    store.resolve_escalation(escalation.id, by="ana", resolution="refunded by hand")

    # The agent goes on without a reload: resolving did not move the session's version.
    assert agent("hello?").text == "Hello again."
    assert store.open_escalation(SESSION) is None
    assert len(made) == 1
    assert [e.status for e in store.escalations()] == ["resolved"]
    assert stored_snapshot(store, SESSION)["messages"][-1]["content"] == [{"text": "Hello again."}]


def test_a_refused_prompt_is_an_error_of_the_session(store: SessionStore) -> None:
    agent = Agent(ScriptedModel(["noted"]), session_store=store, session_id=SESSION)
    escalate_refunds(agent)
    agent("refund")

    async def main() -> None:
        with pytest.raises(SessionError):
            await agent.invoke_async("again")

    anyio.run(main)


def test_a_final_save_that_fails_records_no_escalation(store: SessionStore) -> None:
    model = ScriptedModel([calls(("note", {}, "t1")), "noted"])
    agent: Agent

    @tool
    def note() -> str:
        """Writes a value that is not JSON data into the agent's state, in place."""
        agent.state["notes"].append({1, 2})
        return "noted"

    agent = Agent(model, tools=[note], session_store=store, session_id=SESSION, state={"notes": []})
    escalate_refunds(agent)
    with pytest.raises(SessionError, match=r"state\.notes\[0\]"):
        agent("note my refund")

    assert store.escalations() == []
    # Dropped with the outcome it belonged to: no later save records it.
    assert agent._core.pending_escalation is None


def test_a_final_save_refused_by_a_takeover_records_no_escalation(store: SessionStore) -> None:
    @tool
    async def wait_a_while(context: ToolContext) -> str:
        """Waits, checking for a cancel."""
        for _ in range(300):
            if context.cancel_signal.is_set():
                return "stopped"
            await anyio.sleep(0.01)
        return "finished"

    agent = Agent(
        ScriptedModel([calls(("wait_a_while", {}, "t1")), "never"]),
        tools=[wait_a_while],
        session_store=TakeoverStore(store),
        session_id=SESSION,
        session_lease=0.15,
    )
    escalate_refunds(agent)

    with pytest.raises(SessionConflictError):
        agent("refund, after a while")

    assert store.escalations() == []
    assert store.open_escalation(SESSION) is None
