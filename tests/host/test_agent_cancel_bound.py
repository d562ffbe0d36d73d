"""``agent.cancel()`` ends the run within a bounded time, however the run is stuck.

The host documents about 1 s: 0.5 s for everything to stop on its own, then stuck model
calls and tool calls are cut, and the pass itself at 0.75 s. These machines are noisy, so
the tests allow ``BOUND`` seconds from ``cancel()`` to the result. Each case gets stuck
once, in a different place (a model stream, a tool, middleware of each stage and phase,
a hook), is cancelled, and must end ``cancelled`` with its session saved and
``AfterInvocationEvent`` fired; the call after it must work, on a history a Converse
provider accepts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, NoReturn

import anyio
import pytest

from stageware import (
    AfterInvocationEvent,
    AfterToolCallEvent,
    Agent,
    AgentResult,
    AgentResultEvent,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamResult,
    AgentStreamStage,
    AgentTool,
    BeforeInvocationEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolResult,
    ExecuteToolStage,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelResult,
    InvokeModelStage,
    MemorySessionStore,
    Messages,
    Model,
    ModelMessageEvent,
    ModelStreamChunkEvent,
    ScriptedModel,
    ScriptedTurn,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolContext,
    ToolResultEvent,
    ToolSpec,
    tool,
)

from .agent_helpers import calls, result_text, texts, tool_results
from .converse_history import assert_valid_converse

pytestmark = pytest.mark.anyio

BOUND = 3.0
"""Seconds from ``cancel()`` to the result that a test accepts (the host aims at ~1 s)."""

GUARD = 20.0
"""A test that is still running after this long has failed; it must not hang."""

CUT_RESULT = "The tool call was cancelled: it was still running when the run was cancelled."


class Stuck:
    """Where a run gets stuck, once: the first arrival notes it and waits for ever."""

    def __init__(self) -> None:
        self.reached = threading.Event()

    def first(self) -> bool:
        """Whether this is the first arrival (later ones go through)."""
        return not self.reached.is_set()

    async def forever(self) -> NoReturn:
        self.reached.set()
        await anyio.sleep_forever()
        raise AssertionError("sleep_forever returned")


class NeverYields:
    """An async iterator (not a generator) that never produces its first item."""

    def __init__(self, stuck: Stuck) -> None:
        self._stuck = stuck

    def __aiter__(self) -> NeverYields:
        return self

    async def __anext__(self) -> StreamEvent:
        await self._stuck.forever()


class StallingModel:
    """A model whose first stream stalls; later calls play *then*, which records them."""

    def __init__(self, stuck: Stuck, then: ScriptedModel, *, after_first_event: bool) -> None:
        self._stuck = stuck
        self.then = then
        self._after_first_event = after_first_event

    def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        if not self._stuck.first():
            return self.then.stream(
                messages,
                tool_specs,
                system_prompt,
                tool_choice=tool_choice,
                system_prompt_content=system_prompt_content,
            )
        if self._after_first_event:
            return self._stall_after_start()
        return NeverYields(self._stuck)

    async def _stall_after_start(self) -> AsyncIterator[StreamEvent]:
        yield {"messageStart": {"role": "assistant"}}
        await self._stuck.forever()


@dataclass
class Run:
    """An agent set up to get stuck once, and what it records."""

    agent: Agent
    model: ScriptedModel
    store: MemorySessionStore
    after_invocation: list[AgentResult | None]


def build(
    stuck: Stuck,
    script: list[ScriptedTurn | str] | None = None,
    *,
    stall: str | None = None,
    tools: tuple[AgentTool, ...] = (),
) -> Run:
    """An agent that plays *script*.

    By default: call ``work``, then say "done", and "done" again for a run that got
    stuck after its last model call.
    """
    default: list[ScriptedTurn | str] = [calls(("work", {}, "t1")), "done", "done"]
    scripted = ScriptedModel(default if script is None else script)
    model: Model = (
        scripted
        if stall is None
        else StallingModel(stuck, scripted, after_first_event=stall == "after start")
    )
    store = MemorySessionStore()
    agent = Agent(model, tools=[work, *tools], session_store=store, session_id="s")
    heard: list[AgentResult | None] = []
    agent.add_hook(lambda event: heard.append(event.result), AfterInvocationEvent)
    return Run(agent, scripted, store, heard)


@tool
async def work() -> str:
    """Finish at once."""
    return "worked"


async def cancelled_from_a_thread(run: Run, stuck: Stuck) -> tuple[AgentResult, float]:
    """Invoke, cancel from another thread once stuck; the result and seconds since cancel."""
    cancelled_at: list[float] = []

    def cancel_when_stuck() -> None:
        if stuck.reached.wait(GUARD):
            cancelled_at.append(time.monotonic())
            run.agent.cancel()

    thread = threading.Thread(target=cancel_when_stuck, daemon=True)
    thread.start()
    with anyio.fail_after(GUARD):
        result = await run.agent.invoke_async("start")
    ended = time.monotonic()
    thread.join(GUARD)
    assert cancelled_at, "the run never reached the place where it gets stuck"
    return result, ended - cancelled_at[0]


async def assert_ended_and_recovers(run: Run, result: AgentResult, elapsed: float) -> None:
    """The common promise: cancelled in time, saved, heard, and the next call works."""
    assert result.stop_reason == "cancelled"
    assert elapsed < BOUND, f"the run went on {elapsed:.2f} s after cancel()"
    assert [r.stop_reason if r else None for r in run.after_invocation] == ["cancelled"]
    stored = run.store.load("s")
    assert stored is not None
    assert stored.snapshot["messages"] == run.agent.messages
    assert stored.lease is None  # released, for the next invocation or another worker
    assert_valid_converse(run.agent.messages, for_request=False)

    asked_before = len(run.model.requests)

    with anyio.fail_after(GUARD):
        again = await run.agent.invoke_async("again")

    assert again.stop_reason == "end_turn"
    assert again.text == "done"
    sent = run.model.requests[asked_before:]
    for request in sent:
        assert_valid_converse(request.messages)
    assert texts(sent[0].messages[-1])[-1] == "again"


def cut_tool_results(messages: Messages) -> list[str]:
    return [
        result_text(r)
        for m in messages
        for r in tool_results(m)
        if result_text(r) == CUT_RESULT and r["status"] == "error"
    ]


# -- stuck model streams and tools -------------------------------------------------------


@pytest.mark.parametrize("stall", ["before any event", "after start"])
async def test_a_stalled_model_stream(stall: str) -> None:
    stuck = Stuck()
    run = build(stuck, ["done"], stall=stall)

    result, elapsed = await cancelled_from_a_thread(run, stuck)

    # The partial turn never entered the history.
    assert [m["role"] for m in run.agent.messages] == ["user"]
    await assert_ended_and_recovers(run, result, elapsed)


async def test_an_async_tool_that_awaits_forever_gets_a_cancelled_result() -> None:
    stuck = Stuck()

    @tool
    async def hang() -> str:
        """Wait for something that never comes."""
        await stuck.forever()

    run = build(stuck, [calls(("hang", {}, "h1"), ("work", {}, "w1")), "done"], tools=(hang,))

    result, elapsed = await cancelled_from_a_thread(run, stuck)

    # The call that finished keeps its result; the stuck one is answered as cancelled.
    answered = {r["toolUseId"]: result_text(r) for r in tool_results(run.agent.messages[-1])}
    assert answered == {"h1": CUT_RESULT, "w1": "worked"}
    await assert_ended_and_recovers(run, result, elapsed)


# -- stuck middleware, every stage and phase -------------------------------------------------


def invoke_model_middleware(agent: Agent, stuck: Stuck, phase: str) -> None:
    async def on_input(ctx: InvokeModelContext) -> InvokeModelContext:
        if stuck.first():
            await stuck.forever()
        return ctx

    async def wrap_before(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        if stuck.first():
            await stuck.forever()
        async for event in next_fn(ctx):
            yield event

    async def wrap_between(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        async for event in next_fn(ctx):
            yield event
            if stuck.first():
                await stuck.forever()

    async def on_output(result: InvokeModelResult) -> InvokeModelResult:
        if stuck.first():
            await stuck.forever()
        return result

    if phase == "Input":
        agent.add_middleware(InvokeModelStage.Input, on_input)
    elif phase == "Wrap before next_fn":
        agent.add_middleware(InvokeModelStage.Wrap, wrap_before)
    elif phase == "Wrap between events":
        agent.add_middleware(InvokeModelStage.Wrap, wrap_between)
    else:
        agent.add_middleware(InvokeModelStage.Output, on_output)


@pytest.mark.parametrize("phase", ["Input", "Wrap before next_fn", "Wrap between events", "Output"])
async def test_stuck_invoke_model_middleware(phase: str) -> None:
    stuck = Stuck()
    # Stuck at or after the model call, the first turn is used up without being kept.
    model_called = phase in ("Wrap between events", "Output")
    run = build(stuck, ["never kept", "done"] if model_called else ["done"])
    invoke_model_middleware(run.agent, stuck, phase)

    result, elapsed = await cancelled_from_a_thread(run, stuck)

    assert [m["role"] for m in run.agent.messages] == ["user"]
    await assert_ended_and_recovers(run, result, elapsed)


def execute_tool_middleware(agent: Agent, stuck: Stuck, phase: str) -> None:
    async def on_input(ctx: ExecuteToolContext) -> ExecuteToolContext:
        if stuck.first():
            await stuck.forever()
        return ctx

    async def wrap(
        ctx: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        async for event in next_fn(ctx):
            if stuck.first():
                await stuck.forever()
            yield event

    async def on_output(result: ExecuteToolResult) -> ExecuteToolResult:
        if stuck.first():
            await stuck.forever()
        return result

    if phase == "Input":
        agent.add_middleware(ExecuteToolStage.Input, on_input)
    elif phase == "Wrap":
        agent.add_middleware(ExecuteToolStage.Wrap, wrap)
    else:
        agent.add_middleware(ExecuteToolStage.Output, on_output)


@pytest.mark.parametrize("phase", ["Input", "Wrap", "Output"])
async def test_stuck_execute_tool_middleware_gives_the_call_a_cancelled_result(phase: str) -> None:
    stuck = Stuck()
    run = build(stuck)
    execute_tool_middleware(run.agent, stuck, phase)

    result, elapsed = await cancelled_from_a_thread(run, stuck)

    assert [m["role"] for m in run.agent.messages] == ["user", "assistant", "user"]
    assert cut_tool_results(run.agent.messages) == [CUT_RESULT]
    await assert_ended_and_recovers(run, result, elapsed)


def agent_stream_middleware(agent: Agent, stuck: Stuck, phase: str) -> None:
    async def on_input(ctx: AgentStreamContext) -> AgentStreamContext:
        if stuck.first():
            await stuck.forever()
        return ctx

    async def wrap_before(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        if stuck.first():
            await stuck.forever()
        async for event in next_fn(ctx):
            yield event

    async def wrap_after_model_turn(
        ctx: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(ctx):
            yield event
            if isinstance(event, ModelMessageEvent) and stuck.first():
                await stuck.forever()

    async def on_output(result: AgentStreamResult) -> AgentStreamResult:
        if stuck.first():
            await stuck.forever()
        return result

    if phase == "Input":
        agent.add_middleware(AgentStreamStage.Input, on_input)
    elif phase == "Wrap before next_fn":
        agent.add_middleware(AgentStreamStage.Wrap, wrap_before)
    elif phase == "Wrap after the model turn":
        agent.add_middleware(AgentStreamStage.Wrap, wrap_after_model_turn)
    else:
        agent.add_middleware(AgentStreamStage.Output, on_output)


@pytest.mark.parametrize(
    "phase", ["Input", "Wrap before next_fn", "Wrap after the model turn", "Output"]
)
async def test_stuck_agent_stream_middleware(phase: str) -> None:
    stuck = Stuck()
    run = build(stuck)
    agent_stream_middleware(run.agent, stuck, phase)

    result, elapsed = await cancelled_from_a_thread(run, stuck)

    await assert_ended_and_recovers(run, result, elapsed)


@pytest.mark.parametrize("hook", [BeforeModelCallEvent, BeforeToolCallEvent, AfterToolCallEvent])
async def test_a_stuck_async_hook(hook: type[Any]) -> None:
    stuck = Stuck()
    run = build(stuck)

    async def hang(event: Any) -> None:
        if stuck.first():
            await stuck.forever()

    run.agent.add_hook(hang, hook)

    result, elapsed = await cancelled_from_a_thread(run, stuck)

    await assert_ended_and_recovers(run, result, elapsed)


async def test_a_stuck_before_invocation_hook() -> None:
    stuck = Stuck()
    run = build(stuck)

    async def hang(event: BeforeInvocationEvent) -> None:
        if stuck.first():
            await stuck.forever()

    run.agent.add_hook(hang, BeforeInvocationEvent)

    result, elapsed = await cancelled_from_a_thread(run, stuck)

    await assert_ended_and_recovers(run, result, elapsed)
    # The cancelled run recorded its input and never called the model.
    assert texts(run.model.requests[0].messages[-1]) == ["start", "again"]


async def test_a_stuck_after_invocation_hook_does_not_hold_the_caller() -> None:
    stuck = Stuck()
    run = build(stuck, ["done", "done"])

    async def hang(event: AfterInvocationEvent) -> None:
        if stuck.first():
            await stuck.forever()

    run.agent.add_hook(hang, AfterInvocationEvent)

    result, elapsed = await cancelled_from_a_thread(run, stuck)

    # The run had ended before the hook got stuck; the cut only lets the caller go.
    assert result.stop_reason == "end_turn"
    assert elapsed < BOUND, f"the run went on {elapsed:.2f} s after cancel()"
    stored = run.store.load("s")
    assert stored is not None
    assert stored.lease is None
    with anyio.fail_after(GUARD):
        again = await run.agent.invoke_async("again")
    assert again.stop_reason == "end_turn"


# -- where cancel() comes from ------------------------------------------------------------


async def test_middleware_that_cancels_and_then_hangs() -> None:
    stuck = Stuck()
    run = build(stuck, ["done"])
    cancelled_at: list[float] = []

    async def cancel_and_hang(
        ctx: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        if stuck.first():
            cancelled_at.append(time.monotonic())
            run.agent.cancel()
            await stuck.forever()
        async for event in next_fn(ctx):
            yield event

    run.agent.add_middleware(InvokeModelStage.Wrap, cancel_and_hang)

    with anyio.fail_after(GUARD):
        result = await run.agent.invoke_async("start")

    await assert_ended_and_recovers(run, result, time.monotonic() - cancelled_at[0])


async def test_a_tool_that_cancels_and_then_hangs() -> None:
    stuck = Stuck()
    cancelled_at: list[float] = []
    agent: Agent

    @tool
    async def quit_and_hang(context: ToolContext) -> str:
        """Cancel the run, then never return."""
        cancelled_at.append(time.monotonic())
        agent.cancel()
        assert context.cancel_signal.is_set()
        await stuck.forever()

    run = build(stuck, [calls(("quit_and_hang", {}, "q1")), "done"], tools=(quit_and_hang,))
    agent = run.agent

    with anyio.fail_after(GUARD):
        result = await agent.invoke_async("start")

    assert cut_tool_results(agent.messages) == [CUT_RESULT]
    await assert_ended_and_recovers(run, result, time.monotonic() - cancelled_at[0])


async def test_a_hook_that_cancels_while_another_call_hangs() -> None:
    stuck = Stuck()
    cancelled_at: list[float] = []

    @tool
    async def hang() -> str:
        """Never return."""
        await stuck.forever()

    run = build(stuck, [calls(("hang", {}, "h1"), ("work", {}, "w1")), "done"], tools=(hang,))

    async def cancel_after_work(event: AfterToolCallEvent) -> None:
        if event.tool_use["name"] == "work":
            with anyio.fail_after(GUARD):
                while not stuck.reached.is_set():
                    await anyio.sleep(0.01)
            cancelled_at.append(time.monotonic())
            run.agent.cancel()

    run.agent.add_hook(cancel_after_work, AfterToolCallEvent)

    with anyio.fail_after(GUARD):
        result = await run.agent.invoke_async("start")

    assert cut_tool_results(run.agent.messages) == [CUT_RESULT]
    await assert_ended_and_recovers(run, result, time.monotonic() - cancelled_at[0])


# -- sync tools in threads -------------------------------------------------------------------


async def test_a_sync_tool_thread_is_abandoned_and_its_late_result_discarded() -> None:
    stuck = Stuck()
    release = threading.Event()
    returned = threading.Event()

    @tool
    def blocking() -> str:
        """Block the worker thread until the test releases it."""
        stuck.reached.set()
        release.wait(GUARD)
        returned.set()
        return "late result"

    run = build(stuck, [calls(("blocking", {}, "b1")), "done"], tools=(blocking,))
    seen_by_hooks: list[str] = []
    streamed: list[str] = []
    run.agent.add_hook(
        lambda event: seen_by_hooks.append(result_text(event.result)), AfterToolCallEvent
    )

    cancelled_at: list[float] = []
    result: AgentResult | None = None

    def cancel_when_stuck() -> None:
        if stuck.reached.wait(GUARD):
            cancelled_at.append(time.monotonic())
            run.agent.cancel()

    thread = threading.Thread(target=cancel_when_stuck, daemon=True)
    thread.start()
    try:
        with anyio.fail_after(GUARD):
            async for event in run.agent.stream_async("start"):
                if isinstance(event, ToolResultEvent):
                    streamed.append(result_text(event.tool_result))
                elif isinstance(event, AgentResultEvent):
                    result = event.result
        elapsed = time.monotonic() - cancelled_at[0]
        # The thread is still blocked: the run ended without it.
        assert not returned.is_set()
    finally:
        release.set()
        thread.join(GUARD)

    assert streamed == [CUT_RESULT]
    # The thread finishes now; what it returns goes nowhere.
    assert returned.wait(GUARD)
    await anyio.sleep(0.1)
    assert "late result" not in repr(run.agent.messages)
    assert seen_by_hooks == []
    assert result is not None
    await assert_ended_and_recovers(run, result, elapsed)
    assert "late result" not in repr(run.agent.messages)
    assert "late result" not in repr(run.model.requests)


# -- what the bound does not count ---------------------------------------------------------


async def test_a_consumer_holding_an_event_is_never_cancelled_itself() -> None:
    stuck = Stuck()
    run = build(stuck, ["done"], stall="after start")
    slept: list[float] = []
    results: list[AgentResult] = []

    with anyio.fail_after(GUARD):
        async for event in run.agent.stream_async("start"):
            if isinstance(event, ModelStreamChunkEvent) and not slept:
                run.agent.cancel()
                # Longer than the whole cutoff, while holding the event: the host must not
                # cancel this await, which belongs to the consumer, not to the run.
                started = time.monotonic()
                await anyio.sleep(1.2)
                slept.append(time.monotonic() - started)
            elif isinstance(event, AgentResultEvent):
                results.append(event.result)

    assert slept
    assert slept[0] >= 1.1
    assert [r.stop_reason for r in results] == ["cancelled"]


async def test_a_run_that_stops_on_its_own_is_not_cut() -> None:
    progress: list[str] = []
    started = anyio.Event()

    @tool
    async def patient(context: ToolContext) -> str:
        """Work in small steps, stopping when asked."""
        started.set()
        for _ in range(int(GUARD / 0.01)):
            if context.cancel_signal.is_set():
                progress.append("stopped")
                return "stopped on request"
            await anyio.sleep(0.01)
        return "finished"

    model = ScriptedModel([calls(("patient", {}, "p1")), "never"])
    agent = Agent(model, tools=[patient])

    async def cancel_soon() -> None:
        # Once the tool runs, not after a fixed time: with DBOS the run starts later (its
        # workflow is recorded first), and a cancel before the tool would skip it.
        await started.wait()
        await anyio.sleep(0.05)
        agent.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(cancel_soon)
        result = await agent.invoke_async("go")

    assert result.stop_reason == "cancelled"
    assert progress == ["stopped"]
    assert result_text(tool_results(agent.messages[-1])[0]) == "stopped on request"
