"""A journaled invocation replays from its claim: no model called, no tool run twice.

Each run records its steps in a ``MemoryJournal`` and keeps its session in SQLite. Under a
journal the session store is written twice in an invocation, at the claim and at the
final save, so the database copied at the claim is what a worker that died at any point
before its final save leaves. A replay on a fresh agent, with the journal's records cut
back to those written before the "crash", must give the same history, the same hooks and
events in the same order, call the model only for the steps not recorded and run each
tool exactly once over both runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from stageware import (
    AfterInvocationEvent,
    AfterModelCallEvent,
    AfterToolCallEvent,
    Agent,
    AgentResult,
    AgentStreamEvent,
    BeforeInvocationEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    MessageAddedEvent,
    ModelRequest,
    ModelStreamChunkEvent,
    ScriptedModel,
    ScriptedTurn,
    SessionConflictError,
    SQLiteSessionStore,
    StoredSession,
    ToolContext,
    ToolResultEvent,
    ToolStreamEvent,
    tool,
)
from stageware._host._interrupt_state import InterruptState
from stageware._host._journal import journal_scope
from stageware._host._journal_session import leased_by, released_by, stored_outcome

from .agent_helpers import calls, collect
from .journal_helpers import MemoryJournal, copy_sqlite, fresh_copy

SESSION = "c1"
KEY = "stageware:support:c1:w1"
LEASE = 0.3


def respond(request: ModelRequest) -> ScriptedTurn | str:
    """Decided by the history, so a replay that skips calls still gets the right turn."""
    answered = sum(1 for m in request.messages for b in m["content"] if "toolResult" in b)
    if answered == 0:
        return calls(("refund", {"order": "A1"}, "t1"))
    if answered == 1:
        return calls(("lookup", {"order": "A1"}, "t2"))
    return "Refunded A1; it shows as refunded."


class Scenario:
    """One agent kind: its tools write a ledger, its hooks a log of what fired."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.ledger: list[str] = []
        self.hooks: list[str] = []
        self.model = ScriptedModel([respond] * 10, chunk_size=4)

    def agent(self, database: Path) -> Agent:
        ledger = self.ledger

        @tool
        def refund(order: str) -> str:
            """Refund an order.

            Args:
                order: The order id.
            """
            ledger.append(f"refund {order}")
            return f"refunded {order}"

        @tool
        async def lookup(order: str) -> AsyncIterator[str]:
            """Look an order up.

            Args:
                order: The order id.
            """
            ledger.append(f"lookup {order}")
            yield f"looking {order} up"
            yield f"{order}: refunded"

        self.model = ScriptedModel([respond] * 10, chunk_size=4)
        agent = Agent(
            self.model,
            tools=[refund, lookup],
            session_store=SQLiteSessionStore(database),
            session_id=SESSION,
            session_lease=LEASE,
        )
        log = self.hooks
        agent.add_hook(lambda e: log.append("invocation"), BeforeInvocationEvent)
        agent.add_hook(lambda e: log.append(f"model {e.attempt}"), BeforeModelCallEvent)
        agent.add_hook(
            lambda e: log.append(
                f"model done {None if e.stop_response is None else e.stop_response.stop_reason}"
            ),
            AfterModelCallEvent,
        )
        agent.add_hook(lambda e: log.append(f"tool {e.tool_use['toolUseId']}"), BeforeToolCallEvent)
        agent.add_hook(
            lambda e: log.append(f"tool done {e.tool_use['toolUseId']} {e.result['status']}"),
            AfterToolCallEvent,
        )
        agent.add_hook(lambda e: log.append(f"message {e.message['role']}"), MessageAddedEvent)
        agent.add_hook(lambda e: log.append("invocation done"), AfterInvocationEvent)
        return agent


def describe(events: list[AgentStreamEvent]) -> list[str]:
    """The events as text, without what differs between runs (latencies)."""
    described: list[str] = []
    for event in events:
        if isinstance(event, ModelStreamChunkEvent):
            described.append(f"chunk {event.chunk}")
        elif isinstance(event, ToolStreamEvent):
            described.append(f"stream {event.data}")
        elif isinstance(event, ToolResultEvent):
            described.append(f"result {event.tool_result}")
        else:
            described.append(type(event).__name__)
    return described


async def wait_out_lease(database: Path) -> None:
    """Wait until the lease the dead worker left has lapsed."""
    stored = SQLiteSessionStore(database).load(SESSION)
    assert stored is not None
    assert stored.lease is not None
    left = (stored.lease.expires_at - datetime.now(UTC)).total_seconds()
    await anyio.sleep(max(left, 0) + 0.05)


@pytest.mark.anyio
async def test_a_replay_from_any_step_repeats_no_call(tmp_path: Path) -> None:
    scenario = Scenario(tmp_path)
    database = tmp_path / "sessions.db"
    claimed = tmp_path / "claimed.db"
    versions: list[int] = []

    def at_claim(event: BeforeInvocationEvent) -> None:
        copy_sqlite(database, claimed)

    agent = scenario.agent(database)
    agent.add_hook(at_claim, BeforeInvocationEvent)
    agent.add_hook(
        lambda e: versions.append(SQLiteSessionStore(database).load(SESSION).version),  # type: ignore[union-attr]  # pyright: ignore[reportOptionalMemberAccess]
        AfterToolCallEvent,
    )
    journal = MemoryJournal(KEY)
    with journal_scope(journal):
        events, result = await collect(agent, "Refund order A1")
    assert result.text == "Refunded A1; it shows as refunded."
    assert journal.ran == [
        "model:scripted",
        "tool:refund",
        "model:scripted",
        "tool:lookup",
        "model:scripted",
    ]
    assert scenario.ledger == ["refund A1", "lookup A1"]
    history = agent.messages
    hooks = list(scenario.hooks)
    # No checkpoint between the claim (version 1) and the final save.
    assert versions == [1, 1]
    stored = SQLiteSessionStore(database).load(SESSION)
    assert stored is not None
    assert stored.version == 2
    assert stored.lease is None
    assert released_by(stored) == KEY

    await wait_out_lease(claimed)
    for crash_after in range(len(journal.book.entries) + 1):
        scenario.ledger.clear()
        scenario.hooks.clear()
        database_left = fresh_copy(claimed, tmp_path / f"left-{crash_after}.db")
        left = SQLiteSessionStore(database_left).load(SESSION)
        assert left is not None
        assert leased_by(left, KEY)
        assert released_by(left) is None
        replay = MemoryJournal(KEY, journal.book.until(crash_after))
        replayed_agent = scenario.agent(database_left)
        with journal_scope(replay):
            replayed_events, replayed_result = await collect(replayed_agent)
        recorded = [entry.name for entry in journal.book.entries[:crash_after]]
        assert replay.replayed == recorded
        assert replay.ran == [entry.name for entry in journal.book.entries[crash_after:]]
        assert len(scenario.model.requests) == replay.ran.count("model:scripted")
        # Each tool ran once over both runs: the dead run's recorded calls, and the rest now.
        ran_before = {name.removeprefix("tool:") for name in recorded if name.startswith("tool:")}
        assert sorted(entry.split()[0] for entry in scenario.ledger) == sorted(
            {"refund", "lookup"} - ran_before
        )
        assert replayed_agent.messages == history
        assert scenario.hooks == hooks
        assert describe(replayed_events) == describe(events)
        assert replayed_result.text == result.text
        finished = SQLiteSessionStore(database_left).load(SESSION)
        assert finished is not None
        assert finished.lease is None
        outcome = stored_outcome(finished)
        assert outcome is not None
        assert outcome.key == KEY
        assert outcome.stop_reason == "end_turn"
        assert outcome.text == result.text


@pytest.mark.anyio
async def test_a_finished_invocation_is_read_back_from_its_final_save(tmp_path: Path) -> None:
    scenario = Scenario(tmp_path)
    database = tmp_path / "sessions.db"
    with journal_scope(MemoryJournal(KEY)):
        result = await scenario.agent(database).invoke_async("Refund order A1")
    stored = SQLiteSessionStore(database).load(SESSION)
    assert stored is not None
    outcome = stored_outcome(stored)
    assert outcome is not None
    assert (outcome.key, outcome.stop_reason, outcome.text, outcome.error) == (
        KEY,
        "end_turn",
        result.text,
        None,
    )
    assert outcome.message == result.message
    assert outcome.interrupts == []
    # The next invocation's claim starts another: the ending is no longer there.
    with journal_scope(None):  # a plain invocation, whatever the test mode
        await scenario.agent(database).invoke_async("Thanks")
    again = SQLiteSessionStore(database).load(SESSION)
    assert again is not None
    assert released_by(again) is None
    assert stored_outcome(again) is None


@pytest.mark.anyio
@pytest.mark.no_journal
async def test_without_a_journal_the_session_is_checkpointed(tmp_path: Path) -> None:
    scenario = Scenario(tmp_path)
    database = tmp_path / "sessions.db"
    versions: list[int] = []
    agent = scenario.agent(database)
    agent.add_hook(
        lambda e: versions.append(SQLiteSessionStore(database).load(SESSION).version),  # type: ignore[union-attr]  # pyright: ignore[reportOptionalMemberAccess]
        AfterToolCallEvent,
    )
    await agent.invoke_async("Refund order A1")
    # The claim, then each model turn as it came (a tool's result is saved after its
    # hooks).
    assert versions == [2, 4]
    stored = SQLiteSessionStore(database).load(SESSION)
    assert stored is not None
    assert stored.lease is None
    assert "released_by" not in stored.snapshot["interrupt_state"]
    assert released_by(stored) is None


def answer_of(agent: Agent, response: object) -> list[dict[str, Any]]:
    (interrupt,) = agent.pending_interrupts
    return [{"interruptResponse": {"interruptId": interrupt.id, "response": response}}]


@pytest.mark.anyio
async def test_a_resume_replays_from_its_claim_with_the_answer_it_stored(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool
    def refund(order: str, tool_context: ToolContext) -> str:
        """Refund an order once a human approves.

        Args:
            order: The order id.
        """
        approved = tool_context.interrupt("approve", reason={"order": order})
        ran.append(f"refund {order} {approved}")
        return f"refunded {order}" if approved else "not refunded"

    hooks: list[str] = []

    def build(database: Path) -> Agent:
        def reply(request: ModelRequest) -> ScriptedTurn | str:
            done = any("toolResult" in b for m in request.messages for b in m["content"])
            return "Refunded." if done else calls(("refund", {"order": "A1"}, "t1"))

        agent = Agent(
            ScriptedModel([reply] * 3),
            tools=[refund],
            session_store=SQLiteSessionStore(database),
            session_id=SESSION,
            session_lease=LEASE,
        )
        agent.add_hook(
            lambda e: hooks.append(f"tool {e.tool_use['toolUseId']}"), BeforeToolCallEvent
        )
        agent.add_hook(lambda e: hooks.append(f"model {e.attempt}"), BeforeModelCallEvent)
        return agent

    database = tmp_path / "sessions.db"
    with journal_scope(MemoryJournal(f"{KEY}:1")):
        stopped = await build(database).invoke_async("Refund order A1")
    assert stopped.stop_reason == "interrupt"
    stored = SQLiteSessionStore(database).load(SESSION)
    assert stored is not None
    outcome = stored_outcome(stored)
    assert outcome is not None
    assert (outcome.stop_reason, outcome.interrupts) == ("interrupt", stopped.interrupts)

    claimed = tmp_path / "claimed.db"
    resumed = build(database)
    resumed.add_hook(lambda e: copy_sqlite(database, claimed), BeforeInvocationEvent)
    journal = MemoryJournal(f"{KEY}:2")
    hooks.clear()
    with journal_scope(journal):
        result = await resumed.invoke_async(answer_of(resumed, True))
    assert result.text == "Refunded."
    assert journal.ran == ["tool:refund", "model:scripted"]
    assert ran == ["refund A1 True"]
    first_hooks = list(hooks)

    await wait_out_lease(claimed)
    hooks.clear()
    replay = MemoryJournal(f"{KEY}:2", journal.book.until(1))
    replayed = build(claimed)
    with journal_scope(replay):
        again = await replayed.invoke_async()
    assert (replay.replayed, replay.ran) == (["tool:refund"], ["model:scripted"])
    assert ran == ["refund A1 True"]  # the approval was used once
    assert hooks == first_hooks
    assert again.text == result.text
    assert replayed.messages == resumed.messages


@pytest.mark.anyio
async def test_an_approvers_save_keeps_the_ending_until_the_next_claim(tmp_path: Path) -> None:
    scenario = Scenario(tmp_path)
    database = tmp_path / "sessions.db"
    with journal_scope(MemoryJournal(KEY)):
        await scenario.agent(database).invoke_async("Refund order A1")
    stored = SQLiteSessionStore(database).load(SESSION)
    assert stored is not None
    state = stored.snapshot["interrupt_state"]
    # What `stageware policy approvals` does to the state: read it, answer, write it back.
    assert InterruptState.from_dict(state).to_dict() == state
    assert state["released_by"]["key"] == KEY


@pytest.mark.anyio
async def test_the_lease_owner_names_the_journal_key(tmp_path: Path) -> None:
    scenario = Scenario(tmp_path)
    database = tmp_path / "sessions.db"
    claims: list[StoredSession] = []

    def at_claim(event: BeforeInvocationEvent) -> None:
        stored = SQLiteSessionStore(database).load(SESSION)
        assert stored is not None
        claims.append(stored)

    agent = scenario.agent(database)
    agent.add_hook(at_claim, BeforeInvocationEvent)
    with journal_scope(MemoryJournal(KEY)):
        await agent.invoke_async("Refund order A1")
    with journal_scope(None):  # a plain invocation, whatever the test mode
        await agent.invoke_async("Thanks")
    journaled, plain = claims
    assert journaled.lease is not None
    assert plain.lease is not None
    assert journaled.lease.owner == f"{plain.lease.owner}|{KEY}"
    assert leased_by(journaled, KEY)
    assert not leased_by(journaled, f"{KEY}:2")
    assert not leased_by(plain, KEY)


async def race(
    journal: MemoryJournal, agent: Agent, outcomes: list[AgentResult | SessionConflictError]
) -> None:
    """Replay under *journal*; note the result, or the conflict that refused the claim."""
    with journal_scope(journal):
        try:
            outcomes.append(await agent.invoke_async())
        except SessionConflictError as error:
            outcomes.append(error)


@pytest.mark.anyio
async def test_of_two_replays_racing_for_one_claim_one_runs(tmp_path: Path) -> None:
    scenario = Scenario(tmp_path)
    database = tmp_path / "sessions.db"
    claimed = tmp_path / "claimed.db"
    agent = scenario.agent(database)
    agent.add_hook(lambda e: copy_sqlite(database, claimed), BeforeInvocationEvent)
    journal = MemoryJournal(KEY)
    with journal_scope(journal):
        result = await agent.invoke_async("Refund order A1")
    await wait_out_lease(claimed)

    for crash_after in (0, 2):
        scenario.ledger.clear()
        left = fresh_copy(claimed, tmp_path / f"left-{crash_after}.db")
        # One book, as two workers recovering one workflow share its step records.
        book = journal.book.until(crash_after)
        replays = [MemoryJournal(KEY, book), MemoryJournal(KEY, book)]
        agents = [scenario.agent(left), scenario.agent(left)]
        outcomes: list[AgentResult | SessionConflictError] = []

        async with anyio.create_task_group() as group:
            for replayed, replaying in zip(replays, agents, strict=True):
                group.start_soon(race, replayed, replaying, outcomes)
        texts = [o.text for o in outcomes if isinstance(o, AgentResult)]
        assert texts == [result.text]
        assert sum(isinstance(o, SessionConflictError) for o in outcomes) == 1
        # The loser was refused at its claim, before any step.
        assert sorted(len(r.ran) + len(r.replayed) for r in replays)[0] == 0
        ran_before = {e.name.removeprefix("tool:") for e in book.entries[:crash_after]}
        assert sorted(line.split()[0] for line in scenario.ledger) == sorted(
            {"refund", "lookup"} - ran_before
        )


@pytest.mark.anyio
async def test_a_journal_that_breaks_at_a_tool_step_saves_nothing_of_the_run(
    tmp_path: Path,
) -> None:
    # The executor makes an error result of whatever a tool's stream raises; the journal's
    # own failure must not be saved as the tool's answer, nor end the run as if it had one.
    scenario = Scenario(tmp_path)
    database = tmp_path / "sessions.db"
    agent = scenario.agent(database)
    journal = MemoryJournal(KEY, breaks_at="tool:refund")
    with journal_scope(journal), pytest.raises(Exception, match="the journal broke"):
        await agent.invoke_async("Refund A1 please.")
    assert scenario.ledger == []
    stored = SQLiteSessionStore(database).load(SESSION)
    assert stored is not None
    # The claim is all the store holds: the prompt, held back, and the lease in the key's
    # name, already lapsed, for the replay to take over.
    assert stored.snapshot["messages"] == []
    assert released_by(stored) is None
    assert leased_by(stored, KEY)
    assert stored.lease is not None
    assert stored.lease.expires_at <= datetime.now(UTC)
