"""``agent.as_tool()``: a sub-agent run as a tool of a parent agent, end to end.

Each test runs real agents on scripted models: the sub-agent's events reaching the
parent's stream, its interrupts answered through the parent's resume, the parent's cancel
reaching it, its session kept in the parent's store (and resumed by new agent objects),
the one-call-at-a-time rule, and a policy approval that stays identity-checked.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from stageware import (
    Agent,
    AgentAsTool,
    AgentResultEvent,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolStage,
    ModelStreamChunkEvent,
    ScriptedModel,
    ScriptedTurn,
    SQLiteSessionStore,
    ToolContext,
    ToolResultEvent,
    ToolStreamEvent,
    tool,
)
from stageware.policy import ApprovalRefused, PolicyEngine, PolicyEnv, Suspend, ToolCallEvent
from stageware.policy import middleware as policy_middleware
from tests.host.agent_helpers import (
    all_tool_results,
    answer,
    calls,
    result_text,
    tool_call_interrupt_id,
)
from tests.policy.approvers import authenticator, credential

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


class Ledger:
    """A ``confirm`` tool that asks a human, counting what ran."""

    def __init__(self) -> None:
        self.ran: list[Any] = []

        @tool
        def pay(amount: int, context: ToolContext) -> str:
            """Pay an amount once a human confirms."""
            answer = context.interrupt("confirm", reason={"amount": amount})
            self.ran.append(answer)
            return f"paid {amount}" if answer == "yes" else "not paid"

        self.pay = pay


def _payer(ledger: Ledger, *, store: Any = None, agent_id: str = "payer") -> Agent:
    return Agent(
        ScriptedModel([calls(("pay", {"amount": 40}, "call_0")), "The payment is done."]),
        tools=[ledger.pay],
        name="Payments",
        agent_id=agent_id,
    )


def test_the_tool_takes_one_input_string_and_is_named_by_the_agent_id() -> None:
    sub = Agent(ScriptedModel(["hi"]), name="Research desk")
    made = sub.as_tool(description="Finds facts.")

    assert isinstance(made, AgentAsTool)
    assert made.agent is sub
    assert made.tool_name == "Research_desk"
    assert made.tool_spec["description"] == "Finds facts."
    schema = made.tool_spec["inputSchema"]["json"]
    assert schema["required"] == ["input"]
    assert schema["properties"]["input"]["type"] == "string"
    assert sub.as_tool(name="research").tool_name == "research"
    with pytest.raises(ValueError, match="must not be empty"):
        sub.as_tool(name="")


def test_an_agent_with_a_store_of_its_own_keeps_its_history_as_a_tool(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "own.db")
    sub = Agent(ScriptedModel(["hi"]), session_store=store, session_id="mine")
    with pytest.raises(ValueError, match="preserve_context=True"):
        sub.as_tool()
    assert sub.as_tool(preserve_context=True).tool_name == "agent"


async def test_the_sub_agent_answers_and_its_events_stream_through_the_parent() -> None:
    sub = Agent(ScriptedModel(["Paris is the capital."], chunk_size=5), agent_id="geo")
    parent_model = ScriptedModel([calls(("geo", {"input": "capital of France?"}, "p1")), "Paris."])
    parent = Agent(parent_model, tools=[sub.as_tool()])
    seen_by_middleware: list[Any] = []

    async def watch(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(ctx):
            if isinstance(event, ToolStreamEvent):
                seen_by_middleware.append(event.data)
            yield event

    parent.add_middleware(ExecuteToolStage, watch)

    order: list[str] = []
    streamed: list[ToolStreamEvent] = []
    async for event in parent.stream_async("ask geo"):
        if isinstance(event, ToolStreamEvent):
            streamed.append(event)
            order.append("stream")
        elif isinstance(event, ToolResultEvent):
            order.append("result")
        elif isinstance(event, AgentResultEvent):
            assert event.result.text == "Paris."

    chunks = [e.data for e in streamed if isinstance(e.data, ModelStreamChunkEvent)]
    assert len(chunks) > 3  # live, chunk by chunk
    assert all(e.tool_use["toolUseId"] == "p1" for e in streamed)
    assert not any(isinstance(e.data, AgentResultEvent) for e in streamed)
    assert order.index("result") > order.index("stream")
    assert seen_by_middleware == [e.data for e in streamed]
    # The parent's model read the sub-agent's answer, and the sub-agent got the input.
    assert (
        result_text(all_tool_results(parent_model.requests[1].messages)[0])
        == "Paris is the capital."
    )
    assert sub.messages[0]["content"] == [{"text": "capital of France?"}]


async def test_a_sub_agent_interrupt_is_answered_through_the_parent() -> None:
    ledger = Ledger()
    sub = _payer(ledger)
    parent_model = ScriptedModel([calls(("payer", {"input": "pay 40"}, "p1")), "Paid it."])
    parent = Agent(parent_model, tools=[sub.as_tool()], agent_id="lead")

    first = await parent.invoke_async("pay the invoice")

    expected = tool_call_interrupt_id("call_0", "confirm", "payer")
    assert first.stop_reason == "interrupt"
    assert [i.id for i in first.interrupts] == [expected]
    assert first.interrupts[0].reason == {"amount": 40}
    assert [i.id for i in sub.pending_interrupts] == [expected]
    assert ledger.ran == []

    second = await parent.invoke_async(answer((expected, "yes")))

    assert second.stop_reason == "end_turn"
    assert second.text == "Paid it."
    assert ledger.ran == ["yes"]
    assert sub.pending_interrupts == parent.pending_interrupts == []
    assert (
        result_text(all_tool_results(parent_model.requests[1].messages)[0])
        == "The payment is done."
    )
    # The sub-agent resumed where it stopped: its model was not asked for the tool call again.
    assert isinstance(sub.model, ScriptedModel)
    assert len(sub.model.requests) == 2


async def test_two_interrupted_sub_agents_are_answered_in_one_resume() -> None:
    one, two = Ledger(), Ledger()
    first_sub, second_sub = _payer(one, agent_id="east"), _payer(two, agent_id="west")
    parent = Agent(
        ScriptedModel(
            [calls(("east", {"input": "pay"}, "p1"), ("west", {"input": "pay"}, "p2")), "Both."]
        ),
        tools=[first_sub.as_tool(), second_sub.as_tool()],
    )

    first = await parent.invoke_async("pay both")
    ids = {i.id for i in first.interrupts}
    east = tool_call_interrupt_id("call_0", "confirm", "east")
    west = tool_call_interrupt_id("call_0", "confirm", "west")
    assert ids == {east, west}

    second = await parent.invoke_async(answer((east, "yes"), (west, "no")))

    assert second.stop_reason == "end_turn"
    assert (one.ran, two.ran) == (["yes"], ["no"])


async def test_the_same_sub_agent_called_twice_in_one_turn_answers_one_call() -> None:
    sub = Agent(ScriptedModel(["first answer", "second answer"], chunk_delay=0.01), agent_id="solo")
    parent_model = ScriptedModel(
        [calls(("solo", {"input": "a"}, "p1"), ("solo", {"input": "b"}, "p2")), "ok"]
    )
    parent = Agent(parent_model, tools=[sub.as_tool()])

    result = await parent.invoke_async("twice")

    assert result.text == "ok"
    results = {r["toolUseId"]: r for r in all_tool_results(parent_model.requests[1].messages)}
    statuses = sorted(r["status"] for r in results.values())
    assert statuses == ["error", "success"]
    refused = next(r for r in results.values() if r["status"] == "error")
    assert "already answering another call" in result_text(refused)
    assert isinstance(sub.model, ScriptedModel)
    assert len(sub.model.requests) == 1


async def test_each_call_starts_from_the_sub_agents_first_history_unless_preserved() -> None:
    fresh = Agent(ScriptedModel(["one", "two"]), agent_id="fresh")
    kept = Agent(ScriptedModel(["one", "two"]), agent_id="kept")
    script: list[ScriptedTurn | str] = [
        calls(("fresh", {"input": "a"}, "p1"), ("kept", {"input": "a"}, "p2")),
        calls(("fresh", {"input": "b"}, "p3"), ("kept", {"input": "b"}, "p4")),
        "done",
    ]
    parent = Agent(
        ScriptedModel(script), tools=[fresh.as_tool(), kept.as_tool(preserve_context=True)]
    )

    await parent.invoke_async("go")

    assert len(fresh.messages) == 2
    assert len(kept.messages) == 4


class Answer(BaseModel):
    city: str


async def test_a_structured_output_comes_back_as_json() -> None:
    sub = Agent(ScriptedModel(['{"city": "Lyon"}'], structured_output=True), agent_id="geo")
    parent_model = ScriptedModel([calls(("geo", {"input": "a city"}, "p1")), "Lyon."])
    parent = Agent(parent_model, tools=[sub.as_tool(output_type=Answer)])

    await parent.invoke_async("go")

    content = all_tool_results(parent_model.requests[1].messages)[0]["content"]
    assert content == [{"json": {"city": "Lyon"}}]


async def test_the_parents_cancel_stops_the_sub_agent() -> None:
    sub_model = ScriptedModel(["a very long answer " * 40, "back"], chunk_size=2, chunk_delay=0.02)
    sub = Agent(sub_model, agent_id="slow")
    parent = Agent(
        ScriptedModel([calls(("slow", {"input": "go"}, "p1")), "never"]), tools=[sub.as_tool()]
    )
    started = time.monotonic()
    chunks = 0
    result = None

    async for event in parent.stream_async("go"):
        if isinstance(event, ToolStreamEvent) and isinstance(event.data, ModelStreamChunkEvent):
            chunks += 1
            if chunks == 3:
                parent.cancel()
        elif isinstance(event, AgentResultEvent):
            result = event.result

    assert result is not None
    assert result.stop_reason == "cancelled"
    # The sub-agent's stream was stopped, not read to its end (400 chunks, 8 s).
    assert chunks < 50
    assert time.monotonic() - started < 3
    # Its partial turn never entered its history, and it can run again.
    assert [m["role"] for m in sub.messages] == ["user"]
    with anyio.fail_after(5):
        assert (await sub.invoke_async("again")).stop_reason == "end_turn"


async def test_the_sub_agents_session_is_kept_under_the_parents_and_resumed_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"

    def team(ledger: Ledger, store: SQLiteSessionStore) -> Agent:
        sub = _payer(ledger)
        return Agent(
            ScriptedModel([calls(("payer", {"input": "pay 40"}, "p1")), "Paid it."]),
            tools=[sub.as_tool()],
            session_store=store,
            session_id="order-7",
        )

    first_ledger = Ledger()
    first_store = SQLiteSessionStore(path)
    first = await team(first_ledger, first_store).invoke_async("pay the invoice")
    expected = tool_call_interrupt_id("call_0", "confirm", "payer")
    assert [i.id for i in first.interrupts] == [expected]
    stored = first_store.load("order-7/payer")
    assert stored is not None
    assert stored.snapshot["interrupt_state"]["activated"] is True

    # A new process: new agents, a new store object on the same file. The sub-agent's
    # model script starts after its tool call: a resumed sub-agent does not ask again.
    ledger = Ledger()
    store = SQLiteSessionStore(path)
    sub = Agent(
        ScriptedModel(["The payment is done."]),
        tools=[ledger.pay],
        name="Payments",
        agent_id="payer",
    )
    parent = Agent(
        ScriptedModel(["Paid it."]),
        tools=[sub.as_tool()],
        session_store=store,
        session_id="order-7",
    )
    resumed = await parent.invoke_async(answer((expected, "yes")))

    assert resumed.stop_reason == "end_turn"
    assert ledger.ran == ["yes"]
    assert first_ledger.ran == []
    again = store.load("order-7/payer")
    assert again is not None
    assert again.snapshot["interrupt_state"]["activated"] is False
    # Answered once: a second resume finds nothing waiting.
    with pytest.raises(RuntimeError, match="not waiting"):
        await parent.invoke_async(answer((expected, "yes")))
    assert ledger.ran == ["yes"]


@policy_middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def pay_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
    """Payments wait for someone in finance."""
    return Suspend("a payment", approvers=["role:finance"])


async def test_a_policy_approval_in_a_sub_agent_stays_identity_checked() -> None:
    paid: list[int] = []

    @tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return "paid"

    engine = PolicyEngine([pay_guard], authenticator=authenticator())
    sub = Agent(
        ScriptedModel([calls(("pay", {"amount": 9}, "call_0")), "Paid."]),
        tools=[pay],
        agent_id="payer",
        policy=engine,
    )
    # The parent has no policy of its own: the sub-agent's checks the answer.
    parent = Agent(
        ScriptedModel([calls(("payer", {"input": "pay"}, "p1")), "Done."]), tools=[sub.as_tool()]
    )
    first = await parent.invoke_async("pay")
    [waiting] = first.interrupts
    assert waiting.id.startswith("v2:policy:tool.before:pay_guard:call_0#")

    outsider = {"approved": True, "credential": credential("mallory")}
    with pytest.raises(ApprovalRefused, match="may not answer"):
        await parent.invoke_async(answer((waiting.id, outsider)))
    forged = {"approved": True, "credential": "not-a-credential"}
    with pytest.raises(ApprovalRefused):
        await parent.invoke_async(answer((waiting.id, forged)))
    assert paid == []

    approver = {"approved": True, "credential": credential("ana", roles=["finance"])}
    done = await parent.invoke_async(answer((waiting.id, approver)))

    assert done.stop_reason == "end_turn"
    assert paid == [9]
    record = parent.messages  # the verified record, not the credential, is what was kept
    assert "credential" not in repr(record)


def test_a_suspended_sub_agent_resumes_in_another_process_exactly_once(tmp_path: Path) -> None:
    from tests.host import sub_agent_worker

    db = str(tmp_path / "sessions.db")
    completed = subprocess.run(
        [sys.executable, "-m", "tests.host.sub_agent_worker", db],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    asked = json.loads(completed.stdout.strip().splitlines()[-1])
    assert asked["stop_reason"] == "interrupt"
    assert asked["paid"] == []
    [waiting] = asked["ids"]
    assert waiting.startswith("v2:policy:tool.before:pay_guard:call_0#")

    # This process: new agents on the same file; the sub-agent's script goes on from
    # after its tool call, so it is not asked again.
    paid: list[int] = []
    parent = sub_agent_worker.team(db, paid, ["Paid 70."], ["The supplier is paid."])
    approval = {"approved": True, "credential": credential("ana", roles=["finance"])}
    done = parent(answer((waiting, approval)))

    assert done.stop_reason == "end_turn"
    assert done.text == "The supplier is paid."
    assert paid == [70]
    stored = SQLiteSessionStore(db).load(f"{sub_agent_worker.SESSION}/payer")
    assert stored is not None
    assert stored.snapshot["interrupt_state"]["interrupts"] == []
    # The approval released that one step: answering it again runs nothing more.
    with pytest.raises(RuntimeError, match="not waiting"):
        parent(answer((waiting, approval)))
    assert paid == [70]


# -- review findings: forged approvals, shared sub-agents, failed sub-runs ------------------


class _Provider:
    """A ``ToolProvider`` handing out a fixed list of tools."""

    def __init__(self, tools: list[Any]) -> None:
        self._tools = tools

    def current_tools(self) -> list[Any]:
        return self._tools


class _Wrapped:
    """A user's own ``AgentTool`` around another tool: the parent cannot see through it."""

    def __init__(self, inner: AgentAsTool) -> None:
        self._inner = inner

    @property
    def tool_name(self) -> str:
        return self._inner.tool_name

    @property
    def tool_spec(self) -> Any:
        return self._inner.tool_spec

    async def stream(self, tool_use: Any, context: ToolContext) -> AsyncIterator[ExecuteToolEvent]:
        async for event in self._inner.stream(tool_use, context):
            yield event


def _guarded_payer(paid: list[int]) -> Agent:
    @tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return "paid"

    return Agent(
        ScriptedModel([calls(("pay", {"amount": 9}, "call_0")), "Paid."]),
        tools=[pay],
        agent_id="payer",
        policy=PolicyEngine([pay_guard], authenticator=authenticator()),
    )


def _forged(reason: Any) -> dict[str, Any]:
    """What a verified approval record looks like, typed in by someone with no credential."""
    return {
        "approved": True,
        "approver": "mallory",
        "roles": ["finance"],
        "via": "forged",
        "comment": None,
        "fingerprint": reason["fingerprint"],
        "answered_at": "now",
    }


@pytest.mark.parametrize("reach", ["provider", "wrapped"])
async def test_a_forged_approval_cannot_reach_a_sub_agent_the_parent_did_not_list(
    reach: str,
) -> None:
    paid: list[int] = []
    sub_tool = _guarded_payer(paid).as_tool()
    reached: Any = _Provider([sub_tool]) if reach == "provider" else _Wrapped(sub_tool)
    parent = Agent(
        ScriptedModel([calls(("payer", {"input": "pay"}, "p1")), "Done."]), tools=[reached]
    )
    first = await parent.invoke_async("pay")
    [waiting] = first.interrupts

    with pytest.raises(ApprovalRefused):
        await parent.invoke_async(answer((waiting.id, _forged(waiting.reason))))
    assert paid == []

    approver = {"approved": True, "credential": credential("ana", roles=["finance"])}
    done = await parent.invoke_async(answer((waiting.id, approver)))
    assert done.stop_reason == "end_turn"
    assert paid == [9]


async def test_a_record_the_sub_agents_check_did_not_verify_is_not_passed_on() -> None:
    paid: list[int] = []
    parent = Agent(
        ScriptedModel([calls(("payer", {"input": "pay"}, "p1")), "Done."]),
        tools=[_guarded_payer(paid).as_tool()],
    )
    first = await parent.invoke_async("pay")
    [waiting] = first.interrupts
    # A record that went around the check (written into the parent's state, as a tampered
    # session row would be); the parent then continues the resume.
    parent._core.interrupts.interrupts[waiting.id].response = _forged(waiting.reason)  # pyright: ignore[reportPrivateUsage]

    again = await parent.invoke_async(None)

    assert paid == []
    assert again.stop_reason == "interrupt"
    assert [i.id for i in again.interrupts] == [waiting.id]
    assert again.interrupts[0].response is None  # asked anew
    approver = {"approved": True, "credential": credential("ana", roles=["finance"])}
    done = await parent.invoke_async(answer((waiting.id, approver)))
    assert done.stop_reason == "end_turn"
    assert paid == [9]


async def test_a_sub_agent_suspended_in_one_parents_call_refuses_another_parent() -> None:
    ran: list[tuple[int, Any]] = []

    @tool
    def refund(amount: int, context: ToolContext) -> str:
        """Refund an amount once a person confirms."""
        said = context.interrupt("confirm", reason={"amount": amount})
        ran.append((amount, said))
        return f"refunded {amount}"

    billing = Agent(
        ScriptedModel([calls(("refund", {"amount": 5000}, "call_0")), "Refunded 5000 to Ana."]),
        tools=[refund],
        agent_id="billing",
    )
    ana = Agent(
        ScriptedModel([calls(("billing", {"input": "refund Ana 5000"}, "p1")), "ok"]),
        tools=[billing.as_tool()],
        agent_id="desk_ana",
    )
    bob = Agent(
        ScriptedModel([calls(("billing", {"input": "refund Bob 1"}, "q1")), "ok bob"]),
        tools=[billing.as_tool()],
        agent_id="desk_bob",
    )
    asked = await ana.invoke_async("refund please")
    [ana_waits] = asked.interrupts

    bobs = await bob.invoke_async("refund my 1")

    assert bobs.stop_reason == "end_turn"
    assert bobs.interrupts == []
    [result] = all_tool_results(bob.messages)
    assert result["status"] == "error"
    assert "waiting for an answer in another call" in result_text(result)
    assert "5000" not in repr(bob.messages)
    assert ran == []
    # Ana's call still owns the run and finishes it.
    done = await ana.invoke_async(answer((ana_waits.id, "yes")))
    assert done.stop_reason == "end_turn"
    assert ran == [(5000, "yes")]


async def test_a_sub_agent_run_that_stopped_without_an_answer_is_an_error_result() -> None:
    overflowing = Agent(
        ScriptedModel(["never"], context_window=50),
        agent_id="researcher",
        system_prompt="You research things. " * 40,
    )

    @tool
    def search(query: str) -> str:
        """Search."""
        return "found"

    limited = Agent(
        ScriptedModel([calls(("search", {"query": "x"}, "s1")), "never"]),
        tools=[search],
        agent_id="limited",
        max_model_calls=1,
    )
    parent = Agent(
        ScriptedModel(
            [calls(("researcher", {"input": "a"}, "p1"), ("limited", {"input": "b"}, "p2")), "ok"]
        ),
        tools=[overflowing.as_tool(), limited.as_tool()],
    )
    done = await parent.invoke_async("go")

    assert done.stop_reason == "end_turn"
    results = {r["toolUseId"]: r for r in all_tool_results(parent.messages)}
    assert results["p1"]["status"] == "error"
    assert "'context_window_overflow'" in result_text(results["p1"])
    assert results["p2"]["status"] == "error"
    assert "'limit_model_calls'" in result_text(results["p2"])


def test_as_tool_default_name_uses_only_characters_providers_accept() -> None:
    sub = Agent(ScriptedModel(["hi"]), agent_id="team.billing-v2")
    assert sub.as_tool().tool_name == "team_billing-v2"
    long = Agent(ScriptedModel(["hi"]), agent_id="x" * 100)
    assert long.as_tool().tool_name == "x" * 64
