"""Escalate: the run ends ``escalated``, its record is written with the session, and the
session takes no new prompt until a person resolves the escalation in the store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stageware import ScriptedModel, SessionEscalatedError, SessionStore
from stageware.policy import Escalate, PolicyEnv
from tests.host.converse_history import assert_valid_converse
from tests.host.sessions.stores import StoreSpec, close_store, open_store

from .policy_helpers import deciding, refund_agent

SESSION = "escalating"


@pytest.fixture
def store(shared_spec: StoreSpec) -> Iterator[SessionStore]:
    opened = open_store(shared_spec)
    yield opened
    close_store(opened)


def _legal(event: Any, env: PolicyEnv) -> Escalate | None:
    text = " ".join(block.get("text", "") for m in event.messages for block in m["content"])
    return Escalate("the customer mentions a lawyer", queue="legal") if "lawyer" in text else None


def test_an_escalated_session_waits_for_a_person(store: SessionStore) -> None:
    agent, ledger, model = refund_agent(
        deciding("input.received", _legal, name="legal_watch"), store=store, session_id=SESSION
    )
    result = agent("Refund me or my lawyer will call")
    assert result.stop_reason == "escalated"
    assert result.halt is not None
    assert ledger.payouts == []
    assert model.requests == []
    assert_valid_converse(agent.messages, for_request=False)

    [record] = store.escalations("legal")
    assert record.id == result.halt.escalation_id
    assert (record.session_id, record.hook, record.middleware, record.status) == (
        SESSION,
        "input.received",
        "legal_watch",
        "open",
    )
    assert record.reason == "the customer mentions a lawyer"
    assert record.event["messages"][0]["content"] == [{"text": "Refund me or my lawyer will call"}]
    assert store.escalations("billing") == []

    # A new prompt, from this agent or another worker's, is refused until it is resolved.
    with pytest.raises(SessionEscalatedError, match=record.id):
        agent("hello?")
    other, _, _ = refund_agent(store=store, session_id=SESSION)
    with pytest.raises(SessionEscalatedError):
        other("hello?")

    store.claim_escalation(record.id, by="lee")
    with pytest.raises(SessionEscalatedError):
        agent("still there?")
    resolved = store.resolve_escalation(record.id, by="lee", resolution="called the customer")
    assert resolved.status == "resolved"
    assert store.open_escalation(SESSION) is None

    agent.model = ScriptedModel(["How can I help?"])
    assert agent("hello again").stop_reason == "end_turn"


def test_without_a_session_store_the_run_still_ends_escalated(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent, _, _ = refund_agent(deciding("input.received", _legal))
    result = agent("my lawyer says hi")
    assert result.stop_reason == "escalated"
    assert result.halt is not None
    assert result.halt.escalation_id is None
    assert "no session store" in caplog.text
