"""Sessions end to end: a restarted process resumes an interrupted run from SQLite, and what
must not be persisted is not."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stageware import (
    AfterInvocationEvent,
    Agent,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamStage,
    BeforeInvocationEvent,
    InterruptException,
    MemorySessionStore,
    ScriptedModel,
    SessionError,
    SessionStore,
    SQLiteSessionStore,
    ToolContext,
    tool,
)
from tests.host.agent_helpers import (
    ModelStateCounter,
    agent_stream_interrupt_id,
    answer,
    calls,
    result_text,
    seed_session,
    stored_snapshot,
    tool_call_interrupt_id,
    tool_results,
)

SESSION = "session-1"


class Recorder:
    """Tools and an agent-stream gate that record what they did, for one 'process'."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.asked: list[Any] = []

        @tool
        def confirm(action: str, context: ToolContext) -> str:
            """Ask a human to confirm an action.

            Args:
                action: The action.
            """
            self.runs.append(action)
            return f"{action}: {context.interrupt('confirm', reason=action)}"

        self.confirm = confirm

    async def gate(
        self, ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        try:
            decision = ctx.interrupt("budget", reason="spend?")
        except InterruptException:
            self.asked.append("asked")
            raise
        self.asked.append(decision.response)
        async for event in next_fn(ctx):
            yield event


def _process(
    store: SessionStore, model: ScriptedModel, *, gate: bool = False
) -> tuple[Agent, Recorder]:
    """A fresh 'process': a new agent, new tools, the same session store."""
    recorder = Recorder()
    agent = Agent(model, tools=[recorder.confirm], session_store=store, session_id=SESSION)
    if gate:
        agent.add_middleware(AgentStreamStage, recorder.gate)
    return agent, recorder


@pytest.mark.anyio
async def test_a_restarted_process_resumes_a_tool_interrupt(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    first_agent, first_tools = _process(
        SQLiteSessionStore(path), ScriptedModel([calls(("confirm", {"action": "deploy"}, "t1"))])
    )
    stopped = await first_agent.invoke_async("deploy")
    assert stopped.stop_reason == "interrupt"
    assert first_tools.runs == ["deploy"]

    model = ScriptedModel(["Deployed."])
    agent, tools = _process(SQLiteSessionStore(path), model)

    assert agent.messages == first_agent.messages
    assert agent.pending_interrupts == first_agent.pending_interrupts
    assert [i.id for i in agent.pending_interrupts] == [tool_call_interrupt_id("t1", "confirm")]
    with pytest.raises(TypeError):
        await agent.invoke_async("an unrelated prompt")

    result = await agent.invoke_async(answer((stopped.interrupts[0].id, "approved")))

    assert result.text == "Deployed."
    assert tools.runs == ["deploy"]  # this process ran the tool once, with the answer
    assert result_text(tool_results(agent.messages[2])[0]) == "deploy: approved"
    # One model call: the halted round was replayed from the session, not re-asked.
    assert len(model.requests) == 1
    assert model.requests[0].messages == agent.messages[:3]


@pytest.mark.anyio
async def test_a_restarted_process_resumes_an_agent_stream_gate(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    first_agent, _ = _process(SQLiteSessionStore(path), ScriptedModel([]), gate=True)
    stopped = await first_agent.invoke_async("buy")
    assert [i.id for i in stopped.interrupts] == [agent_stream_interrupt_id("budget")]

    model = ScriptedModel(["Bought."])
    agent, recorder = _process(SQLiteSessionStore(path), model, gate=True)
    result = await agent.invoke_async(answer((stopped.interrupts[0].id, "yes")))

    assert result.text == "Bought."
    assert recorder.asked == ["yes"]
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]


@pytest.mark.anyio
async def test_a_restart_inside_an_interrupt_cycle_keeps_the_gate_answer(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    gate_id = agent_stream_interrupt_id("budget")
    first_agent, first = _process(
        SQLiteSessionStore(path),
        ScriptedModel([calls(("confirm", {"action": "pay"}, "t1"))]),
        gate=True,
    )
    await first_agent.invoke_async("pay")
    halted = await first_agent.invoke_async(answer((gate_id, "approved")))
    assert [i.id for i in halted.interrupts] == [tool_call_interrupt_id("t1", "confirm")]
    assert first.asked == ["asked", "approved"]

    agent, recorder = _process(SQLiteSessionStore(path), ScriptedModel(["Paid."]), gate=True)
    result = await agent.invoke_async(answer((halted.interrupts[0].id, "yes")))

    # Same cycle, other process: the gate reads its persisted answer rather than asking.
    assert result.stop_reason == "end_turn"
    assert recorder.asked == ["approved"]
    assert result_text(tool_results(agent.messages[2])[0]) == "pay: yes"


@pytest.mark.anyio
async def test_released_answers_are_not_persisted(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteSessionStore(path)
    agent, _ = _process(store, ScriptedModel(["Bought."]), gate=True)
    stopped = await agent.invoke_async("buy")
    mid_cycle = stored_snapshot(store, SESSION)
    assert mid_cycle["interrupt_state"] != {}

    await agent.invoke_async(answer((stopped.interrupts[0].id, "SECRET-APPROVAL-TOKEN")))

    snapshot = stored_snapshot(store, SESSION)
    assert "SECRET-APPROVAL-TOKEN" not in json.dumps(snapshot)
    assert b"SECRET-APPROVAL-TOKEN" not in _database_bytes(store)
    # A new process is not waiting for anything, and its gate asks again.
    restarted, recorder = _process(SQLiteSessionStore(path), ScriptedModel([]), gate=True)
    assert restarted.pending_interrupts == []
    again = await restarted.invoke_async("buy more")
    assert again.stop_reason == "interrupt"
    assert recorder.asked == ["asked"]


@pytest.mark.anyio
async def test_invocation_state_is_not_persisted(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteSessionStore(path)
    agent, _ = _process(store, ScriptedModel([calls(("confirm", {"action": "x"}, "t1")), "ok"]))
    state: dict[str, Any] = {"api_key": "INVOCATION-ONLY-VALUE", "client": object()}

    stopped = await agent.invoke_async("go", invocation_state=state)
    await agent.invoke_async(answer((stopped.interrupts[0].id, "fine")), invocation_state=state)

    snapshot = stored_snapshot(store, SESSION)
    assert "INVOCATION-ONLY-VALUE" not in json.dumps(snapshot)
    assert b"INVOCATION-ONLY-VALUE" not in _database_bytes(store)


@pytest.mark.anyio
async def test_agent_state_model_state_and_history_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    first = Agent(
        ModelStateCounter(ScriptedModel(["one"])),
        state={"user": "ada"},
        session_store=SQLiteSessionStore(path),
        session_id=SESSION,
    )
    first.state["visits"] = 1
    await first.invoke_async("hello")

    model = ModelStateCounter(ScriptedModel(["two"]))
    second = Agent(model, session_store=SQLiteSessionStore(path), session_id=SESSION)
    await second.invoke_async("again")

    assert second.state == {"user": "ada", "visits": 1}
    assert model.seen == [{"calls": 1}]
    assert [m["role"] for m in second.messages] == ["user", "assistant", "user", "assistant"]
    assert len(model.inner.requests[0].messages) == 3


@pytest.mark.anyio
async def test_a_cancelled_resume_stays_resumable_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    agent, _ = _process(
        SQLiteSessionStore(path), ScriptedModel([calls(("confirm", {"action": "go"}, "t1"))])
    )
    stopped = await agent.invoke_async("go")
    cancel = [True]

    def cancel_once(event: BeforeInvocationEvent) -> None:
        if cancel.pop() if cancel else False:
            agent.cancel()

    agent.add_hook(cancel_once, BeforeInvocationEvent)
    cancelled = await agent.invoke_async(answer((stopped.interrupts[0].id, "yes")))
    assert cancelled.stop_reason == "cancelled"

    model = ScriptedModel(["Gone."])
    restarted, tools = _process(SQLiteSessionStore(path), model)
    with pytest.raises(TypeError):
        await restarted.invoke_async("something else")
    result = await restarted.invoke_async(answer((stopped.interrupts[0].id, "yes")))

    assert result.text == "Gone."
    assert tools.runs == ["go"]
    assert len(model.requests) == 1


@pytest.mark.anyio
async def test_a_memory_store_serves_two_agents_on_one_session() -> None:
    store = MemorySessionStore()
    first, _ = _process(store, ScriptedModel([calls(("confirm", {"action": "a"}, "t1"))]))
    stopped = await first.invoke_async("go")

    second, tools = _process(store, ScriptedModel(["done"]))
    result = await second.invoke_async(answer((stopped.interrupts[0].id, "ok")))

    assert result.text == "done"
    assert tools.runs == ["a"]


def test_messages_for_a_session_with_history_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    Agent(ScriptedModel(["hi"]), session_store=SQLiteSessionStore(path), session_id=SESSION)(
        "hello"
    )

    with pytest.raises(ValueError, match=SESSION):
        Agent(
            ScriptedModel([]),
            messages=[{"role": "user", "content": [{"text": "other"}]}],
            session_store=SQLiteSessionStore(path),
            session_id=SESSION,
        )


def test_state_for_a_session_with_state_is_refused(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    Agent(ScriptedModel(["hi"]), state={"plan": "pro"}, session_store=store, session_id=SESSION)(
        "hello"
    )

    with pytest.raises(ValueError, match="already has state"):
        Agent(ScriptedModel([]), state={"plan": "free"}, session_store=store, session_id=SESSION)


def test_a_damaged_interrupt_state_names_the_session(tmp_path: Path) -> None:
    store = MemorySessionStore()
    seed_session(
        store,
        SESSION,
        {
            "version": 1,
            "messages": [],
            "state": {},
            "model_state": {},
            "interrupt_state": {"activated": "sometimes", "interrupts": []},
        },
    )

    with pytest.raises(SessionError, match=f"session '{SESSION}'.*interrupt_state.activated"):
        Agent(ScriptedModel([]), session_store=store, session_id=SESSION)


def test_a_snapshot_saved_before_held_back_inputs_existed_still_loads() -> None:
    store = MemorySessionStore()
    earlier: dict[str, Any] = {"activated": False, "interrupts": [], "pending_tool_execution": None}
    seed_session(
        store,
        SESSION,
        {"version": 1, "messages": [], "state": {}, "model_state": {}, "interrupt_state": earlier},
    )

    agent = Agent(ScriptedModel(["hello"]), session_store=store, session_id=SESSION)

    assert agent("hi").text == "hello"


def test_a_damaged_stored_interrupt_is_named_by_its_position(tmp_path: Path) -> None:
    store = MemorySessionStore()
    seed_session(
        store,
        SESSION,
        {
            "version": 1,
            "messages": [],
            "state": {},
            "model_state": {},
            "interrupt_state": {
                "activated": True,
                "interrupts": [{"id": "v1:x", "name": 7}],
                "pending_tool_execution": None,
            },
        },
    )

    # The same path rendering as every other validation message of the host.
    with pytest.raises(SessionError, match=r"interrupt_state\.interrupts\[0\]\.name: "):
        Agent(ScriptedModel([]), session_store=store, session_id=SESSION)


def _database_bytes(store: SQLiteSessionStore) -> bytes:
    """The database file and any WAL/journal beside it, once *store* has closed its
    connections (the last to close writes the log back into the file and deletes it;
    until then the log's older frames may still hold what later saves replaced)."""
    store.close()
    path = store.path
    data = b""
    for candidate in path.parent.iterdir():
        if candidate.name.startswith(path.name):
            data += candidate.read_bytes()
    return data


@pytest.mark.anyio
async def test_a_tool_answer_is_not_persisted_once_its_tool_cycle_ended(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteSessionStore(path)

    @tool
    def step(context: ToolContext) -> str:
        """A step a human must approve; its result does not repeat the answer."""
        context.interrupt("approve")
        return "step done"

    model = ScriptedModel([calls(("step", {}, "t1")), calls(("step", {}, "t2")), "all done"])
    agent = Agent(model, tools=[step], session_store=store, session_id=SESSION)

    first = await agent.invoke_async("run the steps")
    second = await agent.invoke_async(answer((first.interrupts[0].id, "TOOL-ANSWER-ONE")))

    # Still inside the interrupt cycle (t2 waits), but t1's tool cycle is over.
    assert [i.id for i in second.interrupts] == [tool_call_interrupt_id("t2", "approve")]
    snapshot = stored_snapshot(store, SESSION)
    assert "TOOL-ANSWER-ONE" not in json.dumps(snapshot)


@pytest.mark.anyio
async def test_the_session_is_saved_released_before_after_invocation_fires(
    tmp_path: Path,
) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    agent, _ = _process(store, ScriptedModel(["Bought."]), gate=True)
    seen: list[dict[str, Any]] = []

    def inspect_store(event: AfterInvocationEvent) -> None:
        snapshot = stored_snapshot(store, SESSION)
        seen.append(snapshot["interrupt_state"])

    agent.add_hook(inspect_store, AfterInvocationEvent)
    stopped = await agent.invoke_async("buy")
    await agent.invoke_async(answer((stopped.interrupts[0].id, "APPROVED-ONCE")))

    gate_id = agent_stream_interrupt_id("budget")
    assert len(seen) == 2
    # The hook of the interrupted call sees the interrupt saved; the hook of the call
    # that ended the cycle sees it already released and saved that way.
    assert gate_id in json.dumps(seen[0])
    assert gate_id not in json.dumps(seen[1])
    assert "APPROVED-ONCE" not in json.dumps(seen[1])


def test_a_stored_tool_round_keeps_result_keys_the_schema_does_not_declare(
    tmp_path: Path,
) -> None:
    @tool
    def fetch() -> dict[str, Any]:
        """Fetch a page, citing where it came from."""
        return {"status": "success", "content": [{"text": "page", "source": "https://x"}]}

    @tool
    def ask(context: ToolContext) -> str:
        """Ask a human."""
        return str(context.interrupt("ok?"))

    path = tmp_path / "sessions.db"
    model = ScriptedModel([calls(("fetch", {}, "f1"), ("ask", {}, "a1")), "done"])
    first = Agent(
        model, tools=[fetch, ask], session_store=SQLiteSessionStore(path), session_id=SESSION
    )
    interrupt = first("go").interrupts[0]

    restarted = Agent(
        model, tools=[fetch, ask], session_store=SQLiteSessionStore(path), session_id=SESSION
    )
    restarted(answer((interrupt.id, "yes")))

    results = {r["toolUseId"]: r for r in tool_results(restarted.messages[2])}
    assert results["f1"]["content"] == [{"text": "page", "source": "https://x"}]
