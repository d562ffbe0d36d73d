"""An agent's saves bring only what changed, and a new agent loads exactly what it held.

Real agents on every store: turns appended, a history repaired after a cut-short
invocation, an interrupt saved and resumed in a new agent, a history replaced, shortened
or edited in place, and two agents that loaded the same version.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from stageware import Agent, ScriptedModel, SessionConflictError, ToolContext, tool
from stageware._generated.payloads import Message
from stageware._host.sessions import Escalation, SessionSnapshot, SessionStore
from tests.host.agent_helpers import answer, calls, tool_results

from .stores import DelegatingStore

SESSION = "s1"


class RecordingStore(DelegatingStore):
    """Records, for each save, how many messages it kept and how many it brought."""

    def __init__(self, inner: SessionStore) -> None:
        super().__init__(inner)
        self.saves: list[tuple[int, int]] = []

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
        self.saves.append((kept_messages, len(snapshot["messages"])))
        return super().save(
            session_id,
            snapshot,
            expected_version=expected_version,
            owner=owner,
            lease_seconds=lease_seconds,
            escalation=escalation,
            kept_messages=kept_messages,
        )


@tool
def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    return f"found {query}: " + "x" * 2000


def agent_on(store: SessionStore, *answers: Any, tools: list[Any] | None = None) -> Agent:
    return Agent(
        ScriptedModel(list(answers)),
        tools=[lookup] if tools is None else tools,
        session_store=store,
        session_id=SESSION,
    )


def assert_stored(store: SessionStore, agent: Agent) -> None:
    """The store holds the agent's history, and a new agent loads it exactly."""
    stored = store.load(SESSION)
    assert stored is not None
    assert stored.version == agent.session_version
    assert stored.snapshot["messages"] == agent.messages
    assert agent_on(store).messages == agent.messages


def text(role: str, words: str) -> Message:
    return cast(Message, {"role": role, "content": [{"text": words}]})


@pytest.mark.no_journal
def test_each_invocation_saves_only_its_new_messages(store: SessionStore) -> None:
    recording = RecordingStore(store)
    agent = agent_on(recording, calls(("lookup", {"query": "a"}, "t1")), "one", "two")

    agent("first")
    assert_stored(store, agent)
    before = len(agent.messages)
    recording.saves.clear()
    agent("second")

    assert_stored(store, agent)
    # The claim holds the prompt back for the pass; the answer's save brings both
    # messages, the release nothing.
    assert recording.saves == [(before, 0), (before, 2), (before + 2, 0)]


@pytest.mark.no_journal
def test_a_history_repaired_after_a_cut_short_invocation_loads_as_repaired(
    store: SessionStore,
) -> None:
    agent: Agent

    @tool
    def stopper() -> str:
        """Cancel the run from inside a tool."""
        agent.cancel()
        return "stopped early"

    recording = RecordingStore(store)
    agent = agent_on(recording, calls(("stopper", {}, "t1")), "done", tools=[stopper])
    assert agent("go").stop_reason == "cancelled"
    assert_stored(store, agent)
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user"]

    recording.saves.clear()
    assert agent("go on").text == "done"

    # The trailing tool results absorbed the new prompt: the last stored message was
    # rewritten, not appended after.
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert tool_results(agent.messages[2])[0]["toolUseId"] == "t1"
    assert agent.messages[2]["content"][-1] == {"text": "go on"}
    assert recording.saves == [(3, 0), (2, 2), (4, 0)]
    assert_stored(store, agent)


def test_unanswered_tool_calls_get_error_results_that_are_saved(store: SessionStore) -> None:
    agent = agent_on(store, "first", "fine")
    agent("hello")
    call: Any = {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": "t9", "name": "lookup", "input": {"query": "q"}}}],
    }
    # A history cut short in a tool round, as a crashed run leaves it.
    agent.messages.append(call)

    agent("and now?")

    assert tool_results(agent.messages[-2])[0]["status"] == "error"
    assert_stored(store, agent)


def test_an_interrupted_run_resumed_by_a_new_agent_loads_as_it_was_saved(
    store: SessionStore,
) -> None:
    @tool
    def confirm(action: str, context: ToolContext) -> str:
        """Ask a human to confirm.

        Args:
            action: The action.
        """
        return f"{action}: {context.interrupt('confirm', reason=action)}"

    first = agent_on(
        store, "warmed up", calls(("confirm", {"action": "deploy"}, "t1")), tools=[confirm]
    )
    first("warm up")  # a turn already stored before the interrupt
    stopped = first("deploy")
    assert stopped.stop_reason == "interrupt"
    assert_stored(store, first)

    second = agent_on(store, "Deployed.", tools=[confirm])
    assert second.pending_interrupts == first.pending_interrupts
    result = second(answer((stopped.interrupts[0].id, "approved")))

    assert result.text == "Deployed."
    assert_stored(store, second)
    assert agent_on(store, tools=[confirm]).pending_interrupts == []


def test_a_history_replaced_wholesale_is_saved(store: SessionStore) -> None:
    agent = agent_on(store, "one", "two", "three")
    agent("first")
    agent("second")

    agent.messages = [text("user", "start over"), text("assistant", "sure")]
    agent("third")

    assert agent.messages[0] == text("user", "start over")
    assert_stored(store, agent)


def test_a_shortened_history_is_saved(store: SessionStore) -> None:
    agent = agent_on(store, "one", "two", "three")
    agent("first")
    agent("second")

    del agent.messages[2:]
    agent("third")

    assert len(agent.messages) == 4
    assert_stored(store, agent)


def test_an_old_message_edited_in_place_is_saved(store: SessionStore) -> None:
    agent = agent_on(store, "one", "two")
    agent("first")

    agent.messages[0]["content"][0] = {"text": "first, edited"}
    agent("second")

    assert_stored(store, agent)
    assert agent_on(store).messages[0]["content"] == [{"text": "first, edited"}]


@pytest.mark.parametrize("how", ["in place", "replaced"])
def test_an_edit_between_runs_is_stored_mid_run_only_if_the_message_was_replaced(
    store: SessionStore, how: str
) -> None:
    """The sessions guide: an edit in place waits for the final save (lost if the worker dies)."""
    mid_run: list[object] = []

    @tool
    def peek() -> str:
        """Read what the store holds while the run is under way."""
        stored = store.load(SESSION)
        assert stored is not None
        mid_run.append(stored.snapshot["messages"][0]["content"])
        return "peeked"

    agent = agent_on(store, "one", calls(("peek", {}, "t1")), "two", tools=[peek])
    agent("first")
    if how == "in place":
        agent.messages[0]["content"][0] = {"text": "first, edited"}
    else:
        agent.messages[0] = text("user", "first, edited")
    agent("second")

    edited = [{"text": "first, edited"}]
    # Checkpoints before the final save find the stored prefix by identity: a message
    # changed in place is still "the same", and a worker dying here would lose the edit.
    assert mid_run == ([[{"text": "first"}]] if how == "in place" else [edited])
    assert_stored(store, agent)
    assert agent_on(store).messages[0]["content"] == edited


def test_of_two_agents_that_loaded_one_version_the_second_is_refused(
    store: SessionStore,
) -> None:
    agent_on(store, "zero")("start")
    first = agent_on(store, "one")
    second = agent_on(store, "two")

    first("from the first")
    with pytest.raises(SessionConflictError):
        second("from the second")

    assert_stored(store, first)
    second.reload_session()
    second.model = ScriptedModel(["two again"])
    second("from the second, again")
    assert_stored(store, second)
    assert second.messages[:4] == first.messages


class StoreOfTheEarlierContract:
    """A store written before saves appended: its ``save`` takes whole snapshots only.

    It swallows keywords it does not know, as a careless wrapper might, so an agent that
    sent it only the new messages would replace its history with them.
    """

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.saved: list[int] = []  # how many messages each save brought

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def save(self, session_id: str, snapshot: SessionSnapshot, **options: Any) -> int:
        self.saved.append(len(snapshot["messages"]))
        options.pop("kept_messages", None)
        return self.inner.save(session_id, snapshot, **options)


def test_a_store_of_the_earlier_contract_gets_whole_histories(store: SessionStore) -> None:
    earlier = StoreOfTheEarlierContract(store)
    agent = agent_on(cast(SessionStore, earlier), "one", "two")

    agent("first")
    agent("second")

    assert_stored(store, agent)
    assert earlier.saved[-1] == len(agent.messages) == 4
