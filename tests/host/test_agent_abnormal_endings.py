"""Invocations that end before their stop event: state stays consistent and resumable.

An invocation can end with an error (a provider, a hook), with a cancellation from outside
(`anyio.move_on_after` around it) or with its consumer closing the stream. Whatever the
ending, no answer may outlive its interrupt cycle, no interrupt of a dead tool round may
linger, the history must stay one a provider accepts, and the session and the
``AfterInvocationEvent`` hooks must still hear of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
import pytest

from stageware import (
    AfterInvocationEvent,
    AfterToolCallEvent,
    Agent,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamStage,
    EventLoopStopEvent,
    InterruptException,
    MemorySessionStore,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    SessionError,
    ToolContext,
    tool,
)

from .agent_helpers import answer, calls, stored_snapshot

pytestmark = pytest.mark.anyio


@tool
async def work() -> str:
    """Do some work."""
    return "done"


@tool
async def confirm(context: ToolContext) -> str:
    """Ask a human to confirm."""
    return str(context.interrupt("confirm", reason="continue?"))


@tool
async def slow() -> str:
    """Take far longer than anyone waits."""
    await anyio.sleep(60)
    return "late"


def risky_gate(asked: list[str]) -> Any:
    async def gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        if context.invocation_state.get("risky"):
            try:
                context.interrupt("approve-risky", reason="allow?")
            except InterruptException:
                asked.append("asked")
                raise
        async for event in next_fn(context):
            yield event

    return gate


async def test_an_answer_from_a_failed_cycle_never_approves_a_later_gate() -> None:
    asked: list[str] = []
    model = ScriptedModel(
        [
            calls(("work", {}, "w1")),
            RuntimeError("provider 500"),
            calls(("confirm", {}, "c1")),
            "final",
        ]
    )
    agent = Agent(model, tools=[work, confirm])
    agent.add_middleware(AgentStreamStage.Wrap, risky_gate(asked))
    gate = await agent.invoke_async("risky", invocation_state={"risky": True})
    with pytest.raises(RuntimeError, match="provider 500"):
        await agent.invoke_async(
            answer((gate.interrupts[0].id, "yes")), invocation_state={"risky": True}
        )
    tool_stop = await agent.invoke_async("harmless")
    asked.clear()

    resumed = await agent.invoke_async(
        answer((tool_stop.interrupts[0].id, "ok")), invocation_state={"risky": True}
    )

    assert resumed.stop_reason == "interrupt"
    assert asked == ["asked"]  # the stale "yes" did not answer the new cycle's gate


async def test_interrupts_of_a_failed_round_do_not_linger() -> None:
    @tool
    async def flaky() -> str:
        """Its after-hook fails."""
        await anyio.sleep(0.05)
        return "x"

    def fail_flaky(event: AfterToolCallEvent) -> None:
        if event.tool_use["name"] == "flaky":
            raise ValueError("hook failed")

    store = MemorySessionStore()
    model = ScriptedModel(
        [calls(("confirm", {}, "A"), ("flaky", {}, "B")), calls(("confirm", {}, "C"))]
    )
    agent = Agent(model, tools=[confirm, flaky], session_store=store, session_id="s")
    agent.add_hook(fail_flaky, AfterToolCallEvent)
    with pytest.raises(ValueError, match="hook failed"):
        await agent.invoke_async("first")

    stored = stored_snapshot(store, "s")
    assert stored["interrupt_state"]["interrupts"] == []
    second = await agent.invoke_async("second")
    # v2:tool_call:<agent id>:<toolUseId>:<name hash>
    assert [i.id.split(":")[3] for i in second.interrupts] == ["C"]


async def test_a_tool_round_cut_short_from_outside_is_answered_in_the_next_user_turn() -> None:
    model = ScriptedModel([ScriptedTurn(tool_calls=[ScriptedToolCall("slow", id="t1")]), "hi"])
    agent = Agent(model, tools=[slow])
    with anyio.move_on_after(0.2):
        await agent.invoke_async("go")
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]

    await agent.invoke_async("are you there?")

    sent = model.requests[-1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    repaired = sent[2]["content"]
    assert repaired[0]["toolResult"]["toolUseId"] == "t1"
    assert repaired[0]["toolResult"]["status"] == "error"
    assert repaired[1] == {"text": "are you there?"}


async def test_stopping_at_the_stop_event_of_a_resumed_pass_ends_the_cycle() -> None:
    asked: list[str] = []
    agent = Agent(ScriptedModel(["done", "again"]))
    agent.add_middleware(AgentStreamStage.Wrap, risky_gate(asked))
    gate = await agent.invoke_async("risky", invocation_state={"risky": True})

    resume = agent.stream_async(
        answer((gate.interrupts[0].id, "yes")), invocation_state={"risky": True}
    )
    async with aclosing(resume) as events:
        async for event in events:
            if isinstance(event, EventLoopStopEvent):
                break

    assert agent.pending_interrupts == []
    asked.clear()
    again = await agent.invoke_async("risky again", invocation_state={"risky": True})
    assert again.stop_reason == "interrupt"
    assert asked == ["asked"]


async def test_a_failed_save_still_reaches_the_after_invocation_hooks() -> None:
    @tool
    async def ask_with_tuple(context: ToolContext) -> str:
        """Interrupt with a reason that is not JSON data."""
        return str(context.interrupt("approve", reason=("order", 1042)))

    heard: list[object] = []
    model = ScriptedModel([calls(("ask_with_tuple", {}, "t1"))])
    agent = Agent(model, tools=[ask_with_tuple], session_store=MemorySessionStore(), session_id="s")
    agent.add_hook(lambda event: heard.append(event.result), AfterInvocationEvent)

    with pytest.raises(SessionError, match=r"reason is a tuple"):
        await agent.invoke_async("go")

    assert len(heard) == 1
    assert [i.name for i in agent.pending_interrupts] == ["approve"]


async def test_everything_answered_but_unfinished_continues_with_no_prompt() -> None:
    @tool
    async def confirm_then_fail(context: ToolContext) -> str:
        """Ask, then fail the first time the answer is used."""
        context.interrupt("confirm", reason="ok?")
        return "confirmed"

    failures = iter([True, False])

    def fail_once(event: AfterToolCallEvent) -> None:
        if next(failures):
            raise ValueError("audit log unavailable")

    model = ScriptedModel([calls(("confirm_then_fail", {}, "t1")), "finished"])
    agent = Agent(model, tools=[confirm_then_fail])
    agent.add_hook(fail_once, AfterToolCallEvent)
    first = await agent.invoke_async("go")
    with pytest.raises(ValueError, match="audit log"):
        await agent.invoke_async(answer((first.interrupts[0].id, "yes")))
    with pytest.raises(TypeError, match="no prompt"):
        await agent.invoke_async("something else")

    done = await agent.invoke_async()

    assert done.text == "finished"
    assert len(model.requests) == 2  # the stored round was replayed, not asked again
