"""Two agents on one session, in one process: conditional saves, claims and leases.

Each test runs on the memory, SQLite and Postgres stores (the ``store`` fixture). The same
guarantees across real processes are in ``test_agent_processes``; here each "worker" is
an ``Agent`` of its own, which is all a store can tell apart.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from stageware import (
    Agent,
    MemorySessionStore,
    ScriptedModel,
    SessionConflictError,
    SessionError,
    SessionLeasedError,
    SessionSnapshot,
    SessionStore,
    SessionUnfinishedError,
    SQLiteSessionStore,
    ToolContext,
    tool,
)
from tests.host.agent_helpers import answer, calls, stored_snapshot

from .stores import DelegatingStore, TakeoverStore

SESSION = "shared"


def user_texts(snapshot: SessionSnapshot) -> list[str]:
    return [
        block["text"]
        for message in snapshot["messages"]
        if message["role"] == "user"
        for block in message["content"]
        if "text" in block
    ]


class Ledger:
    """An approval-gated refund tool that records every payout."""

    def __init__(self) -> None:
        self.payouts: list[str] = []

        @tool
        def refund(amount: int, context: ToolContext) -> str:
            """Refund an amount, once a human approved it.

            Args:
                amount: How much.
            """
            approval = context.interrupt("approve", reason=amount)
            self.payouts.append(f"refunded {amount} ({approval})")
            return "refunded"

        self.refund = refund


# --- Conditional saves ------------------------------------------------------------------


@pytest.mark.no_journal
def test_a_stale_agent_is_refused_before_it_calls_the_model(store: SessionStore) -> None:
    first = Agent(ScriptedModel(["A done"]), session_store=store, session_id=SESSION)
    stale_model = ScriptedModel(["B done", "B again"])
    stale = Agent(stale_model, session_store=store, session_id=SESSION)

    first("turn A")
    with pytest.raises(SessionConflictError) as raised:
        stale("turn B")

    error = raised.value
    # The claim (with the prompt), the answer, the release.
    assert (error.session_id, error.expected_version, error.found_version) == (SESSION, 0, 3)
    assert "'shared'" in str(error)
    assert "another worker created it first" in str(error)
    assert stale_model.requests == []  # refused before anything ran
    assert user_texts(stored_snapshot(store, SESSION)) == ["turn A"]

    # The documented recovery: reload, then retry the invocation.
    stale.reload_session()
    stale("turn B")
    assert user_texts(stored_snapshot(store, SESSION)) == ["turn A", "turn B"]
    assert stale.session_version == 6


@pytest.mark.no_journal
def test_each_save_names_the_loaded_and_the_stored_version(store: SessionStore) -> None:
    Agent(ScriptedModel(["one"]), session_store=store, session_id=SESSION)("first")
    a = Agent(ScriptedModel(["a"]), session_store=store, session_id=SESSION)
    b = Agent(ScriptedModel(["b"]), session_store=store, session_id=SESSION)
    assert a.session_version == b.session_version == 3

    a("from a")
    with pytest.raises(SessionConflictError, match="loaded version 3, the store holds version 6"):
        b("from b")


def test_a_conflict_leaves_the_agent_as_it_was(store: SessionStore) -> None:
    Agent(ScriptedModel(["one"]), session_store=store, session_id=SESSION)("first")
    stale = Agent(ScriptedModel(["never"]), session_store=store, session_id=SESSION)
    Agent(ScriptedModel(["two"]), session_store=store, session_id=SESSION)("second")
    before = [dict(m) for m in stale.messages]

    with pytest.raises(SessionConflictError):
        stale("third")

    assert stale.messages == before


def test_a_deleted_session_is_a_conflict_for_an_agent_that_held_it(store: SessionStore) -> None:
    agent = Agent(ScriptedModel(["one", "two"]), session_store=store, session_id=SESSION)
    agent("first")
    store.delete(SESSION)

    with pytest.raises(SessionConflictError, match="no longer exists"):
        agent("second")


# --- Exactly-once resume ----------------------------------------------------------------


def test_two_workers_resume_one_interrupt_and_the_tool_runs_once(store: SessionStore) -> None:
    ledger = Ledger()
    model = ScriptedModel([calls(("refund", {"amount": 5}, "t1")), "Refunded."])
    asking = Agent(model, tools=[ledger.refund], session_store=store, session_id=SESSION)
    stopped = asking("refund me")
    approval = answer((stopped.interrupts[0].id, "yes"))

    # Two workers load the session while it waits, and both get the human's answer.
    workers = [
        Agent(
            ScriptedModel(["Refunded."]),
            tools=[ledger.refund],
            session_store=store,
            session_id=SESSION,
        )
        for _ in range(2)
    ]
    assert workers[0](approval).text == "Refunded."
    with pytest.raises(SessionConflictError):
        workers[1](approval)

    assert ledger.payouts == ["refunded 5 (yes)"]
    # The loser's answer went back to waiting: it did not silently count as given.
    assert [i.id for i in workers[1].pending_interrupts] == [stopped.interrupts[0].id]


@pytest.mark.anyio
async def test_a_running_invocation_holds_the_session(store: SessionStore) -> None:
    started, release = threading.Event(), threading.Event()

    @tool
    def slow() -> str:
        """Work that takes a while."""
        started.set()
        release.wait(10)
        return "done"

    holder = Agent(
        ScriptedModel([calls(("slow", {}, "t1")), "finished"]),
        tools=[slow],
        session_store=store,
        session_id=SESSION,
        session_lease=0.3,
    )
    other_model = ScriptedModel(["other"])
    refused: list[SessionLeasedError] = []

    async with anyio.create_task_group() as group:
        group.start_soon(holder.invoke_async, "go")
        await anyio.to_thread.run_sync(started.wait, 10)
        # Longer than the lease: the heartbeat must have renewed it.
        await anyio.sleep(0.8)
        other = Agent(other_model, session_store=store, session_id=SESSION)
        try:
            await other.invoke_async("me too")
        except SessionLeasedError as error:
            refused.append(error)
        finally:
            release.set()

    [leased] = refused
    assert f":{os.getpid()}:" in leased.lease.owner
    assert other_model.requests == []
    assert "is in use by worker" in str(leased)
    stored = store.load(SESSION)
    assert stored is not None
    assert stored.lease is None  # released by the final save


# --- A lost lease stops the run ---------------------------------------------------------


@pytest.mark.no_journal
def test_a_lost_lease_cancels_the_run_and_its_save_is_refused() -> None:
    inner = MemorySessionStore()
    finished: list[str] = []

    @tool
    async def wait_a_while(context: ToolContext) -> str:
        """Waits, checking for a cancel."""
        for _ in range(300):
            if context.cancel_signal.is_set():
                return "stopped"
            await anyio.sleep(0.01)
        finished.append("finished")
        return "finished"

    agent = Agent(
        ScriptedModel([calls(("wait_a_while", {}, "t1")), "never"]),
        tools=[wait_a_while],
        session_store=TakeoverStore(inner),
        session_id=SESSION,
        session_lease=0.15,
    )
    with pytest.raises(SessionConflictError):
        agent("go")

    assert finished == []  # the tool saw the cancel long before its 3 s were up
    # Nothing of the cut-short run overwrote what the other worker saved: the messages
    # checkpointed before the takeover, and not the tool's result.
    stored = stored_snapshot(inner, SESSION)
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
    assert stored["interrupt_state"]["pending_tool_execution"]["completed"] == {}


# --- Problems surface before side effects -----------------------------------------------


def test_a_non_json_state_value_is_refused_when_it_is_set() -> None:
    agent = Agent(ScriptedModel(["hi"]))
    with pytest.raises(ValueError, match=r"^agent.state\['tags'\]\[1\] is a set"):
        agent.state["tags"] = ["ok", {"a", "b"}]
    with pytest.raises(ValueError, match=r"^agent.state\['when'\] is an Event"):
        agent.state.set("when", threading.Event())
    assert "tags" not in agent.state

    agent.state.set("plan", {"tier": "pro"})
    assert agent.state.get() == {"plan": {"tier": "pro"}}
    assert agent.state.get("plan") == {"tier": "pro"}
    agent.state.delete("plan")
    agent.state.delete("plan")  # as in Strands: no error for a missing key
    assert agent.state == {}


def test_a_non_json_constructor_state_is_refused() -> None:
    with pytest.raises(ValueError, match=r"agent.state\['at'\]"):
        Agent(ScriptedModel([]), state={"at": object()})


def test_state_changed_in_place_is_caught_before_the_model_is_called(store: SessionStore) -> None:
    model = ScriptedModel(["hi"])
    agent = Agent(model, session_store=store, session_id=SESSION, state={"cart": []})
    cart: list[Any] = agent.state["cart"]
    cart.append({1, 2})

    with pytest.raises(SessionError, match=r"state\.cart\[0\]"):
        agent("buy")
    assert model.requests == []


def test_an_answer_that_cannot_be_stored_is_refused_when_given(store: SessionStore) -> None:
    ledger = Ledger()
    model = ScriptedModel([calls(("refund", {"amount": 5}, "t1")), "Refunded."])
    agent = Agent(model, tools=[ledger.refund], session_store=store, session_id=SESSION)
    interrupt_id = agent("refund").interrupts[0].id

    with pytest.raises(
        ValueError,
        match=rf"cannot answer interrupt '{interrupt_id}': the response.approved_at is a lock",
    ):
        agent(answer((interrupt_id, {"approved_at": threading.Lock()})))
    assert ledger.payouts == []
    assert [i.id for i in agent.pending_interrupts] == [interrupt_id]

    assert agent(answer((interrupt_id, "yes"))).text == "Refunded."
    assert ledger.payouts == ["refunded 5 (yes)"]


def test_answering_one_interrupt_twice_in_a_resume_is_an_error() -> None:
    ledger = Ledger()
    model = ScriptedModel([calls(("refund", {"amount": 5}, "t1")), "Refunded."])
    agent = Agent(model, tools=[ledger.refund])
    interrupt_id = agent("refund").interrupts[0].id

    with pytest.raises(ValueError, match="answered twice in one resume"):
        agent(answer((interrupt_id, "no"), (interrupt_id, "yes")))
    assert ledger.payouts == []
    assert agent.pending_interrupts


@pytest.mark.parametrize("bad", ["\ud800", "a\x00b", ""])
def test_a_session_id_no_store_can_keep_is_a_session_error(bad: str, tmp_path: Path) -> None:
    for store in (MemorySessionStore(), SQLiteSessionStore(tmp_path / "s.db")):
        with pytest.raises(SessionError, match="session id"):
            Agent(ScriptedModel([]), session_store=store, session_id=bad)


def test_reload_without_a_store_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="no session store"):
        Agent(ScriptedModel([])).reload_session()


# --- Found by review: a reload, Strands' get(), a failed release, a cancelled claim ------


def test_a_reload_takes_what_another_worker_cleared(store: SessionStore) -> None:
    first = Agent(ScriptedModel(["one", "two"]), session_store=store, session_id=SESSION)
    first.state["secret"] = "x"
    first("remember")
    other = Agent(ScriptedModel(["ok"]), session_store=store, session_id=SESSION)
    del other.state["secret"]
    other("forget it")

    with pytest.raises(SessionConflictError):
        first("again")
    first.reload_session()

    assert first.state == {}
    first("again")
    assert stored_snapshot(store, SESSION)["state"] == {}


def test_get_returns_a_copy_as_in_strands() -> None:
    agent = Agent(ScriptedModel([]), state={"log": ["a"]})
    log = agent.state.get("log")
    log.append(datetime.date(2024, 1, 1))

    assert agent.state["log"] == ["a"]  # nothing changed until it is set back
    with pytest.raises(ValueError, match=r"agent.state\['log'\]\[1\] is a date"):
        agent.state.set("log", log)
    assert agent.state["log"] == ["a"]


def test_a_save_that_fails_at_the_end_lets_the_lease_go(store: SessionStore) -> None:
    model = ScriptedModel([calls(("note", {}, "t1")), "noted"])
    agent: Agent

    @tool
    def note() -> str:
        """Writes a note into the agent's state, in place."""
        agent.state["notes"].append({"at": datetime.date(2024, 1, 1)})
        return "noted"

    agent = Agent(model, tools=[note], session_store=store, session_id=SESSION, state={"notes": []})
    with pytest.raises(SessionError, match=r"state\.notes\[0\]\.at"):
        agent("note it")

    # The session is not blocked for the rest of the lease: another worker goes on. The
    # run's end was not recorded, so it is unfinished: it is continued before a prompt.
    other = Agent(ScriptedModel(["noted", "hello"]), session_store=store, session_id=SESSION)
    with pytest.raises(SessionUnfinishedError):
        other("hi")
    assert other().text == "noted"
    assert other("hi").text == "hello"


class SlowClaimStore(DelegatingStore):
    """Commits a claim, then takes its time to return, as a slow network would."""

    def saved(
        self, snapshot: SessionSnapshot, *, lease_seconds: float | None, kept_messages: int
    ) -> None:
        if lease_seconds is not None:
            time.sleep(0.4)


def test_a_claim_cancelled_by_asyncio_lets_its_lease_go(store: SessionStore) -> None:
    agent = Agent(ScriptedModel(["never"]), session_store=SlowClaimStore(store), session_id=SESSION)

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            # A native cancel, as an asyncio web server sends when a client goes away.
            await asyncio.wait_for(agent.invoke_async("hi"), 0.1)

    asyncio.run(main())

    stored = store.load(SESSION)
    assert stored is not None
    assert stored.lease is None or stored.lease.expires_at <= datetime.datetime.now(datetime.UTC)
    assert agent.session_version == stored.version
    other = Agent(ScriptedModel(["hello"]), session_store=store, session_id=SESSION)
    assert other("hi").text == "hello"
