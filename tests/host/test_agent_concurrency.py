"""Tools the model asks for in one turn run concurrently (no wall-clock assertions)."""

from __future__ import annotations

import threading

import anyio
import pytest

from stageware import AfterToolCallEvent, Agent, ScriptedModel, ToolResultEvent, tool

from .agent_helpers import calls, collect, result_text, tool_results

# A guard against a deadlock, not a timing assertion: a sequential host never finishes.
DEADLOCK_GUARD = 5


@pytest.mark.anyio
async def test_async_tools_run_concurrently() -> None:
    ping_ran = anyio.Event()
    pong_ran = anyio.Event()

    @tool
    async def ping() -> str:
        """Wait for pong."""
        ping_ran.set()
        await pong_ran.wait()
        return "ping done"

    @tool
    async def pong() -> str:
        """Wait for ping."""
        pong_ran.set()
        await ping_ran.wait()
        return "pong done"

    model = ScriptedModel([calls(("ping", {}, "t1"), ("pong", {}, "t2")), "both done"])
    agent = Agent(model, tools=[ping, pong])

    with anyio.fail_after(DEADLOCK_GUARD):
        result = await agent.invoke_async("go")

    assert result.text == "both done"
    assert [result_text(r) for r in tool_results(agent.messages[2])] == ["ping done", "pong done"]


@pytest.mark.anyio
async def test_sync_tools_run_concurrently_in_threads() -> None:
    barrier = threading.Barrier(2, timeout=DEADLOCK_GUARD)

    @tool
    def left() -> str:
        """Meet right at the barrier."""
        barrier.wait()
        return "left passed"

    @tool
    def right() -> str:
        """Meet left at the barrier."""
        barrier.wait()
        return "right passed"

    model = ScriptedModel([calls(("left", {}, "t1"), ("right", {}, "t2")), "done"])
    agent = Agent(model, tools=[left, right])

    result = await agent.invoke_async("go")

    assert result.text == "done"
    results = tool_results(agent.messages[2])
    assert [r["status"] for r in results] == ["success", "success"]
    assert [result_text(r) for r in results] == ["left passed", "right passed"]


@pytest.mark.anyio
async def test_results_follow_the_call_order_not_the_finish_order() -> None:
    slow_may_finish = anyio.Event()

    @tool
    async def slow() -> str:
        """Finish after fast."""
        await slow_may_finish.wait()
        return "slow"

    @tool
    async def fast() -> str:
        """Finish first."""
        return "fast"

    def after_fast(event: AfterToolCallEvent) -> None:
        # Once fast's call is over, not from inside fast: with DBOS a call's result goes
        # on once its step is recorded (a database write), and slow, released from inside
        # fast, could be recorded first.
        if event.tool_use["name"] == "fast":
            slow_may_finish.set()

    model = ScriptedModel([calls(("slow", {}, "t1"), ("fast", {}, "t2")), "done"])
    agent = Agent(model, tools=[slow, fast])
    agent.add_hook(after_fast, AfterToolCallEvent)

    with anyio.fail_after(DEADLOCK_GUARD):
        events, _ = await collect(agent, "go")

    finished = [e.tool_result["toolUseId"] for e in events if isinstance(e, ToolResultEvent)]
    assert finished == ["t2", "t1"]
    assert [r["toolUseId"] for r in tool_results(agent.messages[2])] == ["t1", "t2"]


def test_sync_agent_call_runs_tools_concurrently() -> None:
    barrier = threading.Barrier(3, timeout=DEADLOCK_GUARD)

    @tool
    def meet(n: int) -> int:
        """Meet the others at the barrier.

        Args:
            n: Which one.
        """
        barrier.wait()
        return n

    model = ScriptedModel(
        [calls(("meet", {"n": 1}, "t1"), ("meet", {"n": 2}, "t2"), ("meet", {"n": 3}, "t3")), "ok"]
    )
    agent = Agent(model, tools=[meet])

    agent("go")

    assert [r["content"] for r in tool_results(agent.messages[2])] == [
        [{"json": 1}],
        [{"json": 2}],
        [{"json": 3}],
    ]
