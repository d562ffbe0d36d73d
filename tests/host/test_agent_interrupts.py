"""Interrupts end to end: middleware, tool, hook and agent-stream interrupts; ids; resume;
the response lifetime; the refusal of an interrupt after the stop event."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import pytest

from stageware import (
    AfterInvocationEvent,
    Agent,
    AgentResult,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamResult,
    AgentStreamStage,
    BeforeInvocationEvent,
    BeforeToolCallEvent,
    EventLoopStopEvent,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolResult,
    ExecuteToolStage,
    Interrupt,
    InterruptException,
    MemorySessionStore,
    MessageAddedEvent,
    Messages,
    MiddlewareInterruptResult,
    ScriptedModel,
    ToolContext,
    ToolInterruptEvent,
    ToolResultEvent,
    ToolResultMessageEvent,
    ToolUse,
    tool,
)
from stageware.runtime import SwallowedInterruptWarning

from .agent_helpers import (
    PlainTool,
    agent_stream_interrupt_id,
    answer,
    before_tool_call_interrupt_id,
    calls,
    collect,
    execute_tool_interrupt_id,
    result_text,
    texts,
    tool_call_interrupt_id,
    tool_results,
)


class Tools:
    """Tools that record their runs, fresh for every test."""

    def __init__(self) -> None:
        self.runs: list[str] = []

        @tool
        def echo(text: str) -> str:
            """Echo the text back.

            Args:
                text: What to echo.
            """
            self.runs.append(f"echo:{text}")
            return f"echo: {text}"

        @tool
        def confirm(action: str, context: ToolContext) -> str:
            """Ask a human to confirm an action.

            Args:
                action: The action.
            """
            self.runs.append(f"confirm:{action}")
            decision = context.interrupt("confirm", reason=f"ok to {action}?")
            return f"{action}: {decision}"

        self.echo = echo
        self.confirm = confirm


def _approval_gate(answers: list[Any]) -> Any:
    async def gate(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        decision = ctx.interrupt("approve", reason={"tool": ctx.tool_use["name"]})
        answers.append(decision)
        if decision.response is not True:
            yield ToolResultEvent(
                tool_result={
                    "toolUseId": ctx.tool_use["toolUseId"],
                    "status": "error",
                    "content": [{"text": "denied by a human"}],
                }
            )
            return
        async for event in next_fn(ctx):
            yield event

    return gate


def _agent_stream_gate(asked: list[Any], name: str = "budget") -> Any:
    async def gate(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        try:
            decision = ctx.interrupt(name, reason="spend money?")
        except InterruptException:
            asked.append("asked")
            raise
        asked.append(decision.response)
        async for event in next_fn(ctx):
            yield event

    return gate


# -- ExecuteTool middleware interrupts --------------------------------------------------


@pytest.mark.anyio
async def test_a_tool_middleware_interrupt_halts_the_call_and_resumes_it() -> None:
    tools = Tools()
    model = ScriptedModel([calls(("echo", {"text": "hi"}, "t1")), "done"])
    agent = Agent(model, tools=[tools.echo])
    answers: list[MiddlewareInterruptResult] = []
    agent.add_middleware(ExecuteToolStage, _approval_gate(answers))

    events, first = await collect(agent, "go")

    expected = Interrupt(
        id=execute_tool_interrupt_id("t1", "approve"), name="approve", reason={"tool": "echo"}
    )
    assert first.stop_reason == "interrupt"
    assert first.interrupts == [expected]
    assert agent.pending_interrupts == [expected]
    assert first.message == agent.messages[1]
    assert tools.runs == []
    halts = [e for e in events if isinstance(e, ToolInterruptEvent)]
    assert len(halts) == 1
    assert halts[0].interrupts == [expected]
    assert not any(isinstance(e, ToolResultMessageEvent) for e in events)

    second = await agent.invoke_async(answer((expected.id, True)))

    assert second.stop_reason == "end_turn"
    assert answers == [MiddlewareInterruptResult(response=True)]
    assert tools.runs == ["echo:hi"]
    # The resume replayed the tool round without asking the model for it again.
    assert len(model.requests) == 2
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert agent.pending_interrupts == []


@pytest.mark.anyio
async def test_a_falsy_answer_is_an_answer() -> None:
    tools = Tools()
    model = ScriptedModel([calls(("echo", {"text": "hi"}, "t1")), "ok, not done"])
    agent = Agent(model, tools=[tools.echo])
    answers: list[MiddlewareInterruptResult] = []
    agent.add_middleware(ExecuteToolStage, _approval_gate(answers))

    first = await agent.invoke_async("go")
    second = await agent.invoke_async(answer((first.interrupts[0].id, False)))

    assert second.stop_reason == "end_turn"
    assert answers == [MiddlewareInterruptResult(response=False)]
    assert tools.runs == []
    assert result_text(tool_results(agent.messages[2])[0]) == "denied by a human"


@pytest.mark.anyio
async def test_a_preemptive_response_skips_the_interrupt() -> None:
    tools = Tools()
    model = ScriptedModel([calls(("echo", {"text": "hi"}, "t1")), "done"])
    agent = Agent(model, tools=[tools.echo])

    def auto_approve(ctx: ExecuteToolContext) -> ExecuteToolContext:
        assert ctx.interrupt("approve", response="auto").response == "auto"
        return ctx

    agent.add_middleware(ExecuteToolStage.Input, auto_approve)
    result = await agent.invoke_async("go")

    assert result.stop_reason == "end_turn"
    assert tools.runs == ["echo:hi"]
    assert agent.pending_interrupts == []


@pytest.mark.anyio
async def test_a_swallowed_interrupt_still_stops_the_run_for_a_human() -> None:
    # interrupt() registers nothing itself, but the chain remembers that it raised: the
    # tool does not run, and the original interrupt reaches the executor, which registers it.
    tools = Tools()
    model = ScriptedModel([calls(("echo", {"text": "hi"}, "t1")), "done"])
    agent = Agent(model, tools=[tools.echo])
    swallowed: list[InterruptException] = []

    def swallow(ctx: ExecuteToolContext) -> ExecuteToolContext:
        try:
            ctx.interrupt("approve")
        except InterruptException as raised:
            swallowed.append(raised)
        return ctx

    agent.add_middleware(ExecuteToolStage.Input, swallow)
    with pytest.warns(SwallowedInterruptWarning, match="'approve'"):
        result = await agent.invoke_async("go")

    [raised] = swallowed
    assert result.stop_reason == "interrupt"
    assert result.interrupts == [raised.interrupt]
    assert agent.pending_interrupts == [raised.interrupt]
    assert tools.runs == []
    # Answered, the same gate resolves and the tool runs.
    result = await agent.invoke_async(answer((raised.interrupt.id, "yes")))
    assert result.stop_reason == "end_turn"
    assert tools.runs == ["echo:hi"]
    assert len(swallowed) == 1


# -- Tool interrupts ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_tool_interrupt_flows_through_the_chain_without_running_output_handlers() -> None:
    tools = Tools()
    model = ScriptedModel([calls(("confirm", {"action": "deploy"}, "t1")), "deployed"])
    agent = Agent(model, tools=[tools.confirm])
    wrapped: list[str] = []
    outputs: list[ToolResultEvent] = []

    async def observe(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(ctx):
            wrapped.append(type(event).__name__)
            yield event

    def record(result: ExecuteToolResult) -> ExecuteToolResult:
        outputs.append(result.result)
        return result

    agent.add_middleware(ExecuteToolStage, observe)
    agent.add_middleware(ExecuteToolStage.Output, record)
    events, first = await collect(agent, "deploy")

    expected_id = tool_call_interrupt_id("t1", "confirm")
    assert first.stop_reason == "interrupt"
    assert first.interrupts == [Interrupt(id=expected_id, name="confirm", reason="ok to deploy?")]
    assert wrapped == ["ToolInterruptEvent"]
    assert outputs == []
    assert len([e for e in events if isinstance(e, ToolInterruptEvent)]) == 1

    second = await agent.invoke_async(answer((expected_id, "approved")))

    assert second.text == "deployed"
    assert len(outputs) == 1
    assert outputs[0].tool_result["content"] == [{"text": "deploy: approved"}]
    assert tools.runs == ["confirm:deploy", "confirm:deploy"]
    assert len(model.requests) == 2


@pytest.mark.anyio
async def test_two_interrupting_calls_have_their_own_ids_and_resume_one_at_a_time() -> None:
    tools = Tools()
    model = ScriptedModel(
        [calls(("confirm", {"action": "a"}, "t1"), ("confirm", {"action": "b"}, "t2")), "both"]
    )
    agent = Agent(model, tools=[tools.confirm])

    first = await agent.invoke_async("go")

    id1, id2 = tool_call_interrupt_id("t1", "confirm"), tool_call_interrupt_id("t2", "confirm")
    assert first.stop_reason == "interrupt"
    assert sorted(i.id for i in first.interrupts) == sorted([id1, id2])

    second = await agent.invoke_async(answer((id1, "yes")))

    assert second.stop_reason == "interrupt"
    assert [i.id for i in second.interrupts] == [id2]
    assert [i.id for i in agent.pending_interrupts] == [id2]

    third = await agent.invoke_async(answer((id2, "also yes")))

    assert third.text == "both"
    # t1 finished in the second call and was not run again in the third.
    assert tools.runs.count("confirm:a") == 2
    assert tools.runs.count("confirm:b") == 3
    assert [result_text(r) for r in tool_results(agent.messages[2])] == [
        "a: yes",
        "b: also yes",
    ]
    assert len(model.requests) == 2


@pytest.mark.anyio
async def test_a_call_that_finished_before_the_interrupt_is_not_run_again() -> None:
    tools = Tools()
    model = ScriptedModel(
        [calls(("echo", {"text": "first"}, "t1"), ("confirm", {"action": "x"}, "t2")), "done"]
    )
    agent = Agent(model, tools=[tools.echo, tools.confirm])

    first = await agent.invoke_async("go")
    await agent.invoke_async(answer((first.interrupts[0].id, "ok")))

    assert tools.runs.count("echo:first") == 1
    assert [result_text(r) for r in tool_results(agent.messages[2])] == ["echo: first", "x: ok"]


@pytest.mark.anyio
async def test_a_tool_that_swallows_its_own_interrupt_still_stops_the_run() -> None:
    done: list[str] = []

    @tool
    def refund(amount: int, context: ToolContext) -> str:
        """Refund an amount, with a human's approval.

        Args:
            amount: How much.
        """
        try:
            approval = context.interrupt("refund", reason=f"refund {amount}?")
        except Exception:  # the mistake: InterruptException is an Exception
            approval = "assumed"
        done.append(f"refunded {amount} ({approval})")
        return "refunded"

    model = ScriptedModel([calls(("refund", {"amount": 5}, "t1")), "done"])
    agent = Agent(model, tools=[refund])

    with pytest.warns(SwallowedInterruptWarning, match="the tool 'refund'"):
        first = await agent.invoke_async("go")

    expected_id = tool_call_interrupt_id("t1", "refund")
    assert first.stop_reason == "interrupt"
    assert [i.id for i in first.interrupts] == [expected_id]
    # The tool's body went on, but its result never reached the history or the model.
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    assert len(model.requests) == 1
    second = await agent.invoke_async(answer((expected_id, "approved")))
    assert second.text == "done"
    assert done == ["refunded 5 (assumed)", "refunded 5 (approved)"]
    assert [result_text(r) for r in tool_results(agent.messages[2])] == ["refunded"]


@pytest.mark.anyio
async def test_middleware_that_swallows_a_tool_interrupt_still_stops_the_run() -> None:
    side_effects: list[str] = []

    async def body(tool_use: ToolUse, context: ToolContext) -> AsyncIterator[ExecuteToolEvent]:
        context.interrupt("approve", reason="ok?")  # a custom tool: the exception propagates
        side_effects.append("ran")
        yield ToolResultEvent(
            tool_result={
                "toolUseId": tool_use["toolUseId"],
                "status": "success",
                "content": [{"text": "done"}],
            }
        )

    async def fallback(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        try:
            async for event in next_fn(ctx):
                yield event
        except Exception as error:  # the mistake: it catches the tool's interrupt too
            yield ToolResultEvent(
                tool_result={
                    "toolUseId": ctx.tool_use["toolUseId"],
                    "status": "error",
                    "content": [{"text": f"fallback: {error}"}],
                }
            )

    model = ScriptedModel([calls(("t", {}, "t1")), "finished"])
    agent = Agent(model, tools=[PlainTool("t", body)])
    agent.add_middleware(ExecuteToolStage, fallback)
    with pytest.warns(SwallowedInterruptWarning, match="ExecuteToolStage middleware"):
        first = await agent.invoke_async("go")

    expected_id = tool_call_interrupt_id("t1", "approve")
    assert first.stop_reason == "interrupt"
    assert [i.id for i in first.interrupts] == [expected_id]
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    assert side_effects == []


# -- Hook interrupts ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_before_tool_call_hook_interrupt_gates_the_call() -> None:
    tools = Tools()
    model = ScriptedModel([calls(("echo", {"text": "rm -rf"}, "t1")), "done"])
    agent = Agent(model, tools=[tools.echo])
    answers: list[Any] = []
    chain_runs: list[str] = []

    def ask(event: BeforeToolCallEvent) -> None:
        answers.append(event.interrupt("danger", reason="risky input"))

    def observe(ctx: ExecuteToolContext) -> ExecuteToolContext:
        chain_runs.append("run")
        return ctx

    agent.add_hook(ask, BeforeToolCallEvent)
    agent.add_middleware(ExecuteToolStage.Input, observe)
    events, first = await collect(agent, "go")

    expected_id = before_tool_call_interrupt_id("t1", "danger")
    assert first.interrupts == [Interrupt(id=expected_id, name="danger", reason="risky input")]
    assert chain_runs == []
    assert len([e for e in events if isinstance(e, ToolInterruptEvent)]) == 1

    second = await agent.invoke_async(answer((expected_id, "go ahead")))

    assert second.text == "done"
    assert answers == ["go ahead"]
    assert chain_runs == ["run"]
    assert tools.runs == ["echo:rm -rf"]


@pytest.mark.anyio
async def test_a_before_tool_call_hook_that_swallows_its_interrupt_still_gates_the_call() -> None:
    tools = Tools()
    model = ScriptedModel([calls(("echo", {"text": "rm -rf"}, "t1")), "done"])
    agent = Agent(model, tools=[tools.echo])

    def ask(event: BeforeToolCallEvent) -> None:
        with contextlib.suppress(InterruptException):  # the mistake
            event.interrupt("danger", reason="risky input")

    agent.add_hook(ask, BeforeToolCallEvent)
    with pytest.warns(SwallowedInterruptWarning, match="BeforeToolCallEvent hook"):
        first = await agent.invoke_async("go")

    expected_id = before_tool_call_interrupt_id("t1", "danger")
    assert first.stop_reason == "interrupt"
    assert [i.id for i in first.interrupts] == [expected_id]
    assert tools.runs == []

    second = await agent.invoke_async(answer((expected_id, "go ahead")))
    assert second.text == "done"
    assert tools.runs == ["echo:rm -rf"]


# -- Agent-stream interrupts -------------------------------------------------------------


@pytest.mark.anyio
async def test_an_agent_stream_interrupt_stops_the_pass_before_the_model_and_resumes() -> None:
    model = ScriptedModel(["spent"])
    agent = Agent(model)
    asked: list[Any] = []
    resume_inputs: list[Messages] = []
    agent.add_middleware(AgentStreamStage, _agent_stream_gate(asked))
    agent.add_hook(lambda e: resume_inputs.append(list(e.messages)), BeforeInvocationEvent)

    added: list[str] = []
    agent.add_hook(lambda e: added.append(e.message["role"]), MessageAddedEvent)

    first = await agent.invoke_async("buy it")

    expected = Interrupt(
        id=agent_stream_interrupt_id("budget"), name="budget", reason="spend money?"
    )
    assert first.stop_reason == "interrupt"
    assert first.interrupts == [expected]
    assert agent.pending_interrupts == [expected]
    assert model.requests == []
    # The gate stopped the pass in front of the terminal: the input waits for the resume.
    assert agent.messages == []
    assert added == []
    assert first.message == {"role": "assistant", "content": [{"text": "Interrupted"}]}

    second = await agent.invoke_async(answer((expected.id, "approved")))

    assert second.stop_reason == "end_turn"
    assert second.text == "spent"
    assert asked == ["asked", "approved"]
    assert len(model.requests) == 1
    assert texts(model.requests[0].messages[0]) == ["buy it"]
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    assert added == ["user", "assistant"]
    # The resume carries the input the gate held back, and nothing else.
    assert resume_inputs == [
        [{"role": "user", "content": [{"text": "buy it"}]}],
        [{"role": "user", "content": [{"text": "buy it"}]}],
    ]
    assert agent.pending_interrupts == []


@pytest.mark.anyio
async def test_a_gate_stops_with_the_last_message_of_the_history() -> None:
    model = ScriptedModel(["first answer", "second answer"])
    agent = Agent(model)
    asked: list[Any] = []
    armed: list[bool] = []

    async def gate(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        if armed:
            async for event in _agent_stream_gate(asked)(ctx, next_fn):
                yield event
        else:
            async for event in next_fn(ctx):
                yield event

    agent.add_middleware(AgentStreamStage, gate)
    await agent.invoke_async("one")
    armed.append(True)

    stopped = await agent.invoke_async("two")

    assert stopped.stop_reason == "interrupt"
    assert stopped.message is agent.messages[-1]
    assert texts(stopped.message) == ["first answer"]
    assert [texts(m) for m in agent.messages] == [["one"], ["first answer"]]

    done = await agent.invoke_async(answer((stopped.interrupts[0].id, "ok")))

    assert done.text == "second answer"
    assert [texts(m) for m in agent.messages] == [
        ["one"],
        ["first answer"],
        ["two"],
        ["second answer"],
    ]


@pytest.mark.anyio
async def test_two_gates_in_a_row_keep_the_input_until_the_pass_runs() -> None:
    model = ScriptedModel(["bought"])
    agent = Agent(model)
    asked: list[Any] = []
    agent.add_middleware(AgentStreamStage, _agent_stream_gate(asked, name="budget"))
    agent.add_middleware(AgentStreamStage, _agent_stream_gate(asked, name="legal"))

    first = await agent.invoke_async("buy the company")
    second = await agent.invoke_async(answer((first.interrupts[0].id, "fine")))

    assert [i.id for i in second.interrupts] == [agent_stream_interrupt_id("legal")]
    assert agent.messages == []

    third = await agent.invoke_async(answer((second.interrupts[0].id, "also fine")))

    assert third.text == "bought"
    assert asked == ["asked", "fine", "asked", "fine", "also fine"]
    assert [texts(m) for m in agent.messages] == [["buy the company"], ["bought"]]


@pytest.mark.anyio
async def test_the_input_a_gate_held_back_survives_a_restart() -> None:
    store = MemorySessionStore()
    gate = _agent_stream_gate([])
    before = Agent(ScriptedModel([]), session_store=store, session_id="s")
    before.add_middleware(AgentStreamStage, gate)
    stopped = await before.invoke_async("transfer 100")
    assert stopped.stop_reason == "interrupt"

    model = ScriptedModel(["transferred"])
    after = Agent(model, session_store=store, session_id="s")
    after.add_middleware(AgentStreamStage, gate)
    done = await after.invoke_async(answer((stopped.interrupts[0].id, "yes")))

    assert done.text == "transferred"
    assert texts(model.requests[0].messages[0]) == ["transfer 100"]
    assert [texts(m) for m in after.messages] == [["transfer 100"], ["transferred"]]


@pytest.mark.anyio
async def test_an_abandoned_gate_drops_the_input_it_held_back() -> None:
    model = ScriptedModel(["later"])
    agent = Agent(model)
    failing = [True]

    async def gate_then_fail(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        ctx.interrupt("check")
        if failing:
            failing.clear()
            raise LookupError("the policy service is down")
        async for event in next_fn(ctx):
            yield event

    agent.add_middleware(AgentStreamStage, gate_then_fail)
    stopped = await agent.invoke_async("first request")
    with pytest.raises(LookupError):
        await agent.invoke_async(answer((stopped.interrupts[0].id, "ok")))

    # The cycle ended with the error: nothing waits, and the old input is not replayed.
    assert agent.pending_interrupts == []
    again = await agent.invoke_async("second request")
    assert again.stop_reason == "interrupt"
    assert agent.messages == []
    resumed = await agent.invoke_async(answer((again.interrupts[0].id, "ok")))
    assert resumed.text == "later"
    assert [texts(m) for m in agent.messages] == [["second request"], ["later"]]


@pytest.mark.anyio
async def test_an_interrupt_after_the_stop_event_is_refused() -> None:
    model = ScriptedModel(["first answer", "second answer"])
    agent = Agent(model)
    results: list[AgentResult | None] = []
    agent.add_hook(lambda e: results.append(e.result), AfterInvocationEvent)
    armed = [True]

    async def late_gate(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(ctx):
            yield event
        if armed.pop() if armed else False:
            ctx.interrupt("late-review")

    agent.add_middleware(AgentStreamStage, late_gate)

    with pytest.raises(RuntimeError, match="late-review"):
        await agent.invoke_async("hi")

    assert agent.pending_interrupts == []
    assert results == [None]
    # Nothing is owed a resume: a fresh prompt is accepted and the model is asked once.
    result = await agent.invoke_async("again")
    assert result.text == "second answer"
    assert len(model.requests) == 2


@pytest.mark.anyio
async def test_an_output_phase_gate_is_refused() -> None:
    model = ScriptedModel(["answer"])
    agent = Agent(model)
    contexts: list[AgentStreamContext] = []

    def capture(ctx: AgentStreamContext) -> AgentStreamContext:
        contexts.append(ctx)
        return ctx

    def post_hoc(result: AgentStreamResult) -> AgentStreamResult:
        contexts[-1].interrupt("post-hoc")
        return result

    agent.add_middleware(AgentStreamStage.Input, capture)
    agent.add_middleware(AgentStreamStage.Output, post_hoc)

    with pytest.raises(RuntimeError, match="post-hoc"):
        await agent.invoke_async("hi")
    assert agent.pending_interrupts == []


@pytest.mark.anyio
async def test_gating_on_top_of_a_tool_interrupt_is_allowed() -> None:
    tools = Tools()
    model = ScriptedModel([calls(("confirm", {"action": "ship"}, "t1")), "shipped"])
    agent = Agent(model, tools=[tools.confirm])
    reviews: list[Any] = []

    async def review(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        stop: EventLoopStopEvent | None = None
        async for event in next_fn(ctx):
            if isinstance(event, EventLoopStopEvent):
                stop = event
            yield event
        if stop is not None and stop.stop_reason == "interrupt":
            reviews.append(ctx.interrupt("review", reason="a tool is waiting").response)

    agent.add_middleware(AgentStreamStage, review)
    first = await agent.invoke_async("ship it")

    tool_id = tool_call_interrupt_id("t1", "confirm")
    review_id = agent_stream_interrupt_id("review")
    assert first.stop_reason == "interrupt"
    assert sorted(i.id for i in first.interrupts) == sorted([tool_id, review_id])

    second = await agent.invoke_async(answer((tool_id, "yes"), (review_id, "seen")))

    assert second.text == "shipped"
    assert result_text(tool_results(agent.messages[2])[0]) == "ship: yes"
    assert len(model.requests) == 2


# -- The response lifetime ---------------------------------------------------------------


@pytest.mark.anyio
async def test_an_agent_stream_answer_is_not_a_standing_approval() -> None:
    model = ScriptedModel(["one", "two"])
    agent = Agent(model)
    asked: list[Any] = []
    agent.add_middleware(AgentStreamStage, _agent_stream_gate(asked))
    gate_id = agent_stream_interrupt_id("budget")

    await agent.invoke_async("first purchase")
    done = await agent.invoke_async(answer((gate_id, "yes")))
    assert done.text == "one"

    again = await agent.invoke_async("second purchase")

    assert again.stop_reason == "interrupt"
    assert [i.id for i in again.interrupts] == [gate_id]
    assert asked == ["asked", "yes", "asked"]
    assert len(model.requests) == 1


@pytest.mark.anyio
async def test_an_agent_stream_answer_lives_through_a_tool_cycle_of_its_interrupt_cycle() -> None:
    tools = Tools()
    model = ScriptedModel(
        [
            calls(("echo", {"text": "step"}, "t1")),
            calls(("confirm", {"action": "pay"}, "t2")),
            "paid",
            "next",
        ]
    )
    agent = Agent(model, tools=[tools.echo, tools.confirm])
    asked: list[Any] = []
    agent.add_middleware(AgentStreamStage, _agent_stream_gate(asked))
    gate_id = agent_stream_interrupt_id("budget")

    await agent.invoke_async("pay the bill")
    # The gate is answered; a whole tool cycle (echo) completes, then the tool interrupts.
    second = await agent.invoke_async(answer((gate_id, "ok")))
    assert second.stop_reason == "interrupt"
    assert [i.id for i in second.interrupts] == [tool_call_interrupt_id("t2", "confirm")]

    third = await agent.invoke_async(answer((second.interrupts[0].id, "yes")))

    # The same cycle: the gate re-reads its answer instead of asking again.
    assert third.stop_reason == "end_turn"
    assert third.text == "paid"
    assert asked == ["asked", "ok", "ok"]

    # The cycle is over, so the next pass asks again.
    fourth = await agent.invoke_async("pay another")
    assert fourth.stop_reason == "interrupt"
    assert asked[-1] == "asked"


@pytest.mark.anyio
async def test_a_tool_answer_is_released_when_its_tool_cycle_ends() -> None:
    """The model reuses a toolUseId in its next turn: the tool must ask again."""
    tools = Tools()
    model = ScriptedModel(
        [
            calls(("confirm", {"action": "one"}, "same")),
            calls(("confirm", {"action": "two"}, "same")),
            "done",
        ]
    )
    agent = Agent(model, tools=[tools.confirm])
    interrupt_id = tool_call_interrupt_id("same", "confirm")

    await agent.invoke_async("go")
    second = await agent.invoke_async(answer((interrupt_id, "yes")))

    assert second.stop_reason == "interrupt"
    assert [i.id for i in second.interrupts] == [interrupt_id]
    assert [result_text(r) for r in tool_results(agent.messages[2])] == ["one: yes"]

    third = await agent.invoke_async(answer((interrupt_id, "no")))

    assert third.text == "done"
    assert [result_text(r) for r in tool_results(agent.messages[4])] == ["two: no"]


@pytest.mark.anyio
async def test_a_middleware_answer_is_released_when_its_tool_cycle_ends() -> None:
    tools = Tools()
    model = ScriptedModel(
        [calls(("echo", {"text": "a"}, "same")), calls(("echo", {"text": "b"}, "same")), "done"]
    )
    agent = Agent(model, tools=[tools.echo])
    answers: list[MiddlewareInterruptResult] = []
    agent.add_middleware(ExecuteToolStage, _approval_gate(answers))
    gate_id = execute_tool_interrupt_id("same", "approve")

    await agent.invoke_async("go")
    second = await agent.invoke_async(answer((gate_id, True)))

    assert second.stop_reason == "interrupt"
    assert tools.runs == ["echo:a"]

    third = await agent.invoke_async(answer((gate_id, True)))
    assert third.text == "done"
    assert tools.runs == ["echo:a", "echo:b"]


@pytest.mark.anyio
async def test_an_abandoned_cycle_leaves_no_answer_behind() -> None:
    """The caller stops consuming a resumed stream after its tool cycle finished.

    Spec: "Outside one — a cycle abandoned mid-flight because the caller stopped consuming
    the stream — there is nothing to read and a leftover response cannot resolve a gate
    that should be asking." So the next fresh invocation must run, and the gate must ask.
    """
    tools = Tools()
    model = ScriptedModel([calls(("echo", {"text": "x"}, "t1")), "never read", "unused"])
    agent = Agent(model, tools=[tools.echo])
    asked: list[Any] = []
    agent.add_middleware(AgentStreamStage, _agent_stream_gate(asked))
    gate_id = agent_stream_interrupt_id("budget")

    await agent.invoke_async("first")
    async with aclosing(agent.stream_async(answer((gate_id, "yes")))) as stream:
        async for event in stream:
            if isinstance(event, ToolResultMessageEvent):
                break

    fresh = await agent.invoke_async("a new request")

    assert fresh.stop_reason == "interrupt"
    assert [i.id for i in fresh.interrupts] == [gate_id]
    assert asked == ["asked", "yes", "asked"]


# -- Resume rules ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_resume_mistakes_are_errors_that_keep_the_agent_waiting() -> None:
    tools = Tools()
    model = ScriptedModel([calls(("confirm", {"action": "x"}, "t1")), "done"])
    agent = Agent(model, tools=[tools.confirm])

    with pytest.raises(RuntimeError):
        await agent.invoke_async(answer(("v2:tool_call:agent:nothing:pending", "yes")))

    first = await agent.invoke_async("go")
    pending = agent.pending_interrupts

    with pytest.raises(TypeError):
        await agent.invoke_async("a new prompt while waiting")
    with pytest.raises(KeyError):
        await agent.invoke_async(answer(("v2:tool_call:agent:t1:not-a-real-id", "yes")))
    with pytest.raises(ValueError, match="None"):
        await agent.invoke_async(answer((first.interrupts[0].id, None)))

    assert agent.pending_interrupts == pending
    assert len(model.requests) == 1
    done = await agent.invoke_async(answer((first.interrupts[0].id, "yes")))
    assert done.text == "done"


@pytest.mark.anyio
async def test_an_agent_stream_input_handler_can_gate_the_pass() -> None:
    model = ScriptedModel(["answer"])
    agent = Agent(model)
    answers: list[Any] = []

    def gate(ctx: AgentStreamContext) -> AgentStreamContext:
        answers.append(ctx.interrupt("terms", reason="accept the terms?").response)
        return ctx

    agent.add_middleware(AgentStreamStage.Input, gate)
    first = await agent.invoke_async("hi")

    assert first.stop_reason == "interrupt"
    assert [i.id for i in first.interrupts] == [agent_stream_interrupt_id("terms")]
    assert model.requests == []

    second = await agent.invoke_async(answer((first.interrupts[0].id, {"accepted": True})))

    assert second.text == "answer"
    assert answers == [{"accepted": True}]


@pytest.mark.anyio
async def test_a_gate_during_a_tool_resume_keeps_the_stored_tool_answer() -> None:
    tools = Tools()
    model = ScriptedModel([calls(("confirm", {"action": "x"}, "t1")), "done"])
    agent = Agent(model, tools=[tools.confirm])
    armed: list[bool] = []
    asked: list[Any] = []
    inner = _agent_stream_gate(asked, name="second-look")

    async def gate_on_resume(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        if armed:
            async for event in inner(ctx, next_fn):
                yield event
        else:
            async for event in next_fn(ctx):
                yield event

    agent.add_middleware(AgentStreamStage, gate_on_resume)
    first = await agent.invoke_async("go")
    tool_id = first.interrupts[0].id
    armed.append(True)

    second = await agent.invoke_async(answer((tool_id, "yes")))

    assert second.stop_reason == "interrupt"
    assert [i.id for i in second.interrupts] == [agent_stream_interrupt_id("second-look")]
    assert tools.runs == ["confirm:x"]

    third = await agent.invoke_async(answer((second.interrupts[0].id, "fine")))

    assert third.text == "done"
    assert asked == ["asked", "fine"]
    assert result_text(tool_results(agent.messages[2])[0]) == "x: yes"
    assert len(model.requests) == 2


@pytest.mark.anyio
async def test_a_tool_that_asks_twice_keeps_its_first_answer_within_the_call() -> None:
    runs: list[str] = []

    @tool
    def transfer(context: ToolContext) -> str:
        """Ask two questions before acting."""
        runs.append("run")
        amount = context.interrupt("amount")
        account = context.interrupt("account")
        return f"sent {amount} to {account}"

    model = ScriptedModel([calls(("transfer", {}, "t1")), "sent"])
    agent = Agent(model, tools=[transfer])

    first = await agent.invoke_async("send money")
    second = await agent.invoke_async(answer((first.interrupts[0].id, 100)))

    assert [i.id for i in second.interrupts] == [tool_call_interrupt_id("t1", "account")]

    third = await agent.invoke_async(answer((second.interrupts[0].id, "ACME")))

    assert third.text == "sent"
    assert result_text(tool_results(agent.messages[2])[0]) == "sent 100 to ACME"
    assert len(runs) == 3


@pytest.mark.anyio
async def test_a_replaced_tool_context_still_resolves_its_answers() -> None:
    tools = Tools()
    model = ScriptedModel([calls(("echo", {"text": "raw"}, "t1")), "done"])
    agent = Agent(model, tools=[tools.echo])
    answers: list[MiddlewareInterruptResult] = []

    def normalise(ctx: ExecuteToolContext) -> ExecuteToolContext:
        return ctx.replace(tool_use={**ctx.tool_use, "input": {"text": "normalised"}})

    agent.add_middleware(ExecuteToolStage.Input, normalise)
    agent.add_middleware(ExecuteToolStage, _approval_gate(answers))

    first = await agent.invoke_async("go")
    second = await agent.invoke_async(answer((first.interrupts[0].id, True)))

    assert second.stop_reason == "end_turn"
    assert answers == [MiddlewareInterruptResult(response=True)]
    assert tools.runs == ["echo:normalised"]


@pytest.mark.anyio
async def test_an_agent_stream_interrupt_surfaces_as_an_interrupt_stop_event() -> None:
    agent = Agent(ScriptedModel([]))
    agent.add_middleware(AgentStreamStage, _agent_stream_gate([]))

    events, result = await collect(agent, "hi")

    stops = [e for e in events if isinstance(e, EventLoopStopEvent)]
    assert [s.stop_reason for s in stops] == ["interrupt"]
    assert stops[0].interrupts == result.interrupts
    assert [i.id for i in result.interrupts] == [agent_stream_interrupt_id("budget")]
