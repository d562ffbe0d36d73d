"""Port of Strands 1.62 ``tests/strands/middleware/test_agent_stream_middleware.py``.

Strands Agents is Apache-2.0; this is a rewrite of its test scenarios in stageware's idiom,
not a copy. Strands registers its internal ``AgentStreamStage`` on
``Agent(model=MockedModelProvider([...]))`` and runs it synchronously; the port registers
stageware's public ``AgentStreamStage`` on ``stageware.Agent`` over a ``ScriptedModel``
and runs ``await agent.invoke_async(...)`` / ``agent.stream_async(...)``, on asyncio and
trio. Mappings: a model whose ``stream`` Strands replaces with ``_fail_if_called`` is an
empty ``ScriptedModel`` whose ``requests`` stay empty; ``EventLoopStopEvent(...,
EventLoopMetrics(), {})`` is ``pass_stop``; Strands' ``InitEventLoopEvent`` and
``TextStreamEvent`` (no stageware counterparts) are ``ModelStreamChunkEvent`` chunks; the
private ``agent._interrupt_state`` is read as the public ``agent.pending_interrupts`` plus
"a fresh prompt is accepted"; ``FileSessionManager`` is a ``SQLiteSessionStore`` whose saved
snapshot is read with ``load()``; ``agent.hooks.add_callback`` is ``agent.add_hook``.

Not ported:

- ``test_answered_interrupt_is_released_when_conversation_management_raises``: it makes
  Strands' ``conversation_manager.apply_management`` raise; stageware's conversation
  managers are InvokeModel middleware inside each model call, with no step after the
  invocation (the AfterInvocationEvent failure case of the same guarantee is ported).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
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
    BeforeModelCallEvent,
    EventLoopStopEvent,
    ExecuteToolEvent,
    FunctionTool,
    Interrupt,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    MessageAddedEvent,
    MiddlewareInterruptResult,
    ModelMessageEvent,
    ModelStreamChunkEvent,
    Prompt,
    ScriptedModel,
    SQLiteSessionStore,
    ToolContext,
    ToolInterruptEvent,
    ToolResultMessageEvent,
    ToolUse,
    tool,
)
from tests.host.agent_helpers import PlainTool, stored_snapshot

from .support import (
    answer,
    approve,
    assistant,
    chunk_text,
    first_text,
    pass_stop,
    text_chunk,
    tool_turn,
)

pytestmark = pytest.mark.anyio

Wrap = Callable[[AgentStreamContext, AgentStreamNext], AsyncIterator[AgentStreamEvent]]


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(["Hello!"])


@pytest.fixture
def agent(model: ScriptedModel) -> Agent:
    return Agent(model)


async def passthrough(
    context: AgentStreamContext, next_fn: AgentStreamNext
) -> AsyncIterator[AgentStreamEvent]:
    async for event in next_fn(context):
        yield event


def gate_named(name: str, reason: str | None = None) -> Wrap:
    """A gate that interrupts with *name* before the pass, then runs it."""

    async def gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        context.interrupt(name, reason=reason)
        async for event in next_fn(context):
            yield event

    return gate


def gate_once(name: str = "gate") -> Wrap:
    """A gate that interrupts on its first pass only."""
    interrupted: list[bool] = []

    async def gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        if not interrupted:
            interrupted.append(True)
            context.interrupt(name)
        async for event in next_fn(context):
            yield event

    return gate


async def short_circuit(
    context: AgentStreamContext, next_fn: AgentStreamNext
) -> AsyncIterator[AgentStreamEvent]:
    yield pass_stop("Short-circuited")


async def inject_trailing(
    context: AgentStreamContext, next_fn: AgentStreamNext
) -> AsyncIterator[AgentStreamEvent]:
    async for event in next_fn(context):
        yield event
    yield text_chunk("trailing")  # A non-stop event after the result.


def make_calc() -> FunctionTool[[], str]:
    @tool
    def calc() -> str:
        """Return a constant."""
        return "42"

    return calc


def make_confirm_tool(result_prefix: str = "") -> FunctionTool[[ToolContext], Any]:
    @tool
    def confirm_tool(tool_context: ToolContext) -> Any:
        """Ask for approval, then return once resumed."""
        response = tool_context.interrupt("tool_gate", reason="approve tool?")
        return f"{result_prefix}{response}" if result_prefix else response

    return confirm_tool


async def assert_accepts_a_fresh_prompt(agent: Agent) -> None:
    """Strands checks ``not agent._interrupt_state.activated``: a fresh prompt is not refused."""
    assert agent.pending_interrupts == []
    result = await agent.invoke_async("a fresh prompt")
    assert result.stop_reason == "end_turn"


# --- wrap phase: wrapping the whole stream ---


async def test_wrap_executes_around_full_stream(agent: Agent) -> None:
    """Middleware runs before and after the whole agent stream."""
    call_order: list[str] = []

    async def middleware(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        call_order.append("before")
        async for event in next_fn(context):
            yield event
        call_order.append("after")

    agent.add_middleware(AgentStreamStage, middleware)
    result = await agent.invoke_async("Test prompt")

    assert call_order == ["before", "after"]
    assert result.stop_reason == "end_turn"
    assert first_text(result.message) == "Hello!"


async def test_wrap_receives_agent_stream_context(agent: Agent) -> None:
    received: list[AgentStreamContext] = []

    async def capture(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        received.append(context)
        async for event in next_fn(context):
            yield event

    agent.add_middleware(AgentStreamStage, capture)
    await agent.invoke_async("Test prompt")

    assert len(received) == 1
    ctx = received[0]
    assert ctx.agent is agent
    assert isinstance(ctx.messages, list)
    assert isinstance(ctx.invocation_state, dict)


async def test_context_invocation_state_shared_by_reference(agent: Agent) -> None:
    """invocation_state is the caller's own dict: middleware writes are visible to it."""
    caller_state: dict[str, Any] = {"key": "value"}
    is_same_object: list[bool] = []

    async def capture(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        is_same_object.append(context.invocation_state is caller_state)
        context.invocation_state["added_by_middleware"] = True
        async for event in next_fn(context):
            yield event

    agent.add_middleware(AgentStreamStage, capture)
    await agent.invoke_async("Test prompt", invocation_state=caller_state)

    assert is_same_object == [True]
    assert caller_state["added_by_middleware"] is True


async def test_wrap_short_circuits_entire_stream() -> None:
    """Middleware can short-circuit the pass by yielding a stop event without calling next."""
    model = ScriptedModel([])
    agent = Agent(model)

    agent.add_middleware(AgentStreamStage, short_circuit)
    result = await agent.invoke_async("Test prompt")

    assert model.requests == []
    assert result.stop_reason == "end_turn"
    assert first_text(result.message) == "Short-circuited"


async def test_wrap_multiple_middleware_execute_in_registration_order(agent: Agent) -> None:
    call_order: list[str] = []

    def layer(name: str) -> Wrap:
        async def handler(
            context: AgentStreamContext, next_fn: AgentStreamNext
        ) -> AsyncIterator[AgentStreamEvent]:
            call_order.append(f"{name}-before")
            async for event in next_fn(context):
                yield event
            call_order.append(f"{name}-after")

        return handler

    agent.add_middleware(AgentStreamStage, layer("outer"))
    agent.add_middleware(AgentStreamStage, layer("inner"))
    await agent.invoke_async("Test prompt")

    assert call_order == ["outer-before", "inner-before", "inner-after", "outer-after"]


async def test_wrap_can_filter_events(agent: Agent) -> None:
    """Middleware can drop events from the stream without changing the result."""
    saw_chunk: list[bool] = []

    async def drop_chunks(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(context):
            if not isinstance(event, ModelStreamChunkEvent):
                yield event

    async def observer(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(context):
            if isinstance(event, ModelStreamChunkEvent):
                saw_chunk.append(True)
            yield event

    # The observer (outer) sees the events after drop_chunks (inner) removed them.
    agent.add_middleware(AgentStreamStage, observer)
    agent.add_middleware(AgentStreamStage, drop_chunks)
    result = await agent.invoke_async("Test prompt")

    assert not saw_chunk
    assert result.stop_reason == "end_turn"


async def test_wrap_buffers_content_across_a_multi_turn_pass() -> None:
    """Middleware wraps a whole multi-cycle pass and can hold back intermediate turns' text."""
    model = ScriptedModel(
        [tool_turn("calc", {}, "t1", text="Let me calculate."), "The answer is 42."],
        chunk_size=100,
    )
    agent = Agent(model, tools=[make_calc()])
    emitted_text: list[str] = []

    async def stream_final_turn_only(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        buffered: list[AgentStreamEvent] = []
        last_turn_text: list[AgentStreamEvent] = []
        async for event in next_fn(context):
            if chunk_text(event) is not None:
                # Hold this turn's text back for now.
                buffered.append(event)
                continue
            if isinstance(event, ModelMessageEvent):
                # A turn completed: its text is now the latest turn's; earlier turns' is dropped.
                last_turn_text = buffered
                buffered = []
            yield event
        # Flush the final turn's text once the stream is complete.
        for text_event in last_turn_text:
            text = chunk_text(text_event)
            assert text is not None
            emitted_text.append(text)
            yield text_event

    agent.add_middleware(AgentStreamStage, stream_final_turn_only)
    result = await agent.invoke_async("go")

    assert result.stop_reason == "end_turn"
    # Only the final turn's text is emitted; the tool-use turn's text is held back.
    assert emitted_text == ["The answer is 42."]


async def test_wrap_can_inject_trailing_event_after_stop(agent: Agent) -> None:
    """Events yielded after the stop event do not displace the result."""
    agent.add_middleware(AgentStreamStage, inject_trailing)
    result = await agent.invoke_async("Test prompt")

    assert result.stop_reason == "end_turn"
    assert first_text(result.message) == "Hello!"


async def test_wrap_can_suppress_all_events_except_result(agent: Agent) -> None:
    """Middleware can drop every event but the stop event, and the result still comes from it."""
    events: list[AgentStreamEvent] = []

    async def suppress_non_results(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(context):
            if isinstance(event, EventLoopStopEvent):
                yield event

    async def observer(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(context):
            events.append(event)
            yield event

    agent.add_middleware(AgentStreamStage, observer)
    agent.add_middleware(AgentStreamStage, suppress_non_results)
    result = await agent.invoke_async("Test prompt")

    assert all(isinstance(event, EventLoopStopEvent) for event in events)
    assert result.stop_reason == "end_turn"


async def test_wrap_dropping_stop_event_raises_actionable_error(agent: Agent) -> None:
    """Dropping the stop event is an actionable RuntimeError, not an opaque failure."""

    async def drop_stop(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(context):
            if not isinstance(event, EventLoopStopEvent):
                yield event

    agent.add_middleware(AgentStreamStage, drop_stop)

    with pytest.raises(RuntimeError, match=r"without yielding an? EventLoopStopEvent"):
        await agent.invoke_async("Test prompt")


# --- input / output phases ---


async def test_input_transforms_context_reaches_event_loop(agent: Agent) -> None:
    """A replaced invocation_state reaches the event loop (and its hooks)."""
    marker_seen_by_model: list[bool] = []

    def inject_marker(context: AgentStreamContext) -> AgentStreamContext:
        return context.replace(
            invocation_state={**context.invocation_state, "marker": "from_input"}
        )

    def check_invocation_state(event: BeforeModelCallEvent) -> None:
        marker_seen_by_model.append(event.invocation_state.get("marker") == "from_input")

    agent.add_hook(check_invocation_state, BeforeModelCallEvent)
    agent.add_middleware(AgentStreamStage.Input, inject_marker)
    await agent.invoke_async("Test prompt")

    assert marker_seen_by_model == [True]


async def test_messages_replace_and_in_place_edit_both_reach_history(agent: Agent) -> None:
    """The terminal appends ctx.messages: a replaced list and an in-place edit reach history."""

    async def swap_list(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        modified = dataclasses.replace(
            context, messages=[{"role": "user", "content": [{"text": "replaced-list"}]}]
        )
        async for event in next_fn(modified):
            yield event

    agent.add_middleware(AgentStreamStage, swap_list)
    await agent.invoke_async("original")

    user_texts = [first_text(m) for m in agent.messages if m["role"] == "user"]
    assert user_texts == ["replaced-list"]

    other = Agent(ScriptedModel(["ok"]))

    async def edit_in_place(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        context.messages[0]["content"] = [{"text": "mutated-in-place"}]
        async for event in next_fn(context):
            yield event

    other.add_middleware(AgentStreamStage, edit_in_place)
    await other.invoke_async("original")

    other_user_texts = [first_text(m) for m in other.messages if m["role"] == "user"]
    assert other_user_texts == ["mutated-in-place"]


async def test_phase_ordering_at_agent_level(agent: Agent) -> None:
    """Input, Wrap and Output run in that order whatever the registration order."""
    order: list[str] = []

    def output_handler(result: AgentStreamResult) -> AgentStreamResult:
        order.append("output")
        return result

    async def wrap_handler(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        order.append("wrap")
        async for event in next_fn(context):
            yield event

    def input_handler(context: AgentStreamContext) -> AgentStreamContext:
        order.append("input")
        return context

    agent.add_middleware(AgentStreamStage.Output, output_handler)
    agent.add_middleware(AgentStreamStage, wrap_handler)
    agent.add_middleware(AgentStreamStage.Input, input_handler)
    await agent.invoke_async("Test prompt")

    assert order == ["input", "wrap", "output"]


# --- no-middleware baseline ---


async def test_no_agent_stream_middleware_works(agent: Agent) -> None:
    result = await agent.invoke_async("hello")
    assert result.stop_reason == "end_turn"
    assert first_text(result.message) == "Hello!"


async def test_other_stage_middleware_does_not_affect_agent_stream() -> None:
    """Middleware on InvokeModelStage does not run as AgentStreamStage middleware."""
    agent = Agent(ScriptedModel(["ok"]))
    agent_stream_ran: list[bool] = []

    async def invoke_model_mw(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        async for event in next_fn(context):
            yield event

    async def agent_stream_mw(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:  # pragma: no cover - must never run
        agent_stream_ran.append(True)
        async for event in next_fn(context):
            yield event

    agent.add_middleware(InvokeModelStage, invoke_model_mw)
    await agent.invoke_async("test")

    assert agent_stream_mw is not None
    assert not agent_stream_ran


# --- interrupts ---


async def test_middleware_interrupt_halts_agent(agent: Agent) -> None:
    """context.interrupt() with no prior response halts the agent with stop_reason interrupt."""
    agent.add_middleware(AgentStreamStage, gate_named("confirm_stream", "Are you sure?"))
    result = await agent.invoke_async("Test")

    assert result.stop_reason == "interrupt"
    assert len(result.interrupts) == 1
    assert result.interrupts[0].name == "confirm_stream"
    assert result.interrupts[0].reason == "Are you sure?"


async def test_middleware_interrupt_does_not_call_model() -> None:
    """An AgentStreamStage interrupt stops before the model is called."""
    model = ScriptedModel([])
    agent = Agent(model)
    agent.add_middleware(AgentStreamStage, gate_named("gate"))
    result = await agent.invoke_async("Test")

    assert result.stop_reason == "interrupt"
    assert model.requests == []


async def test_middleware_interrupt_id_uses_agent_stream_namespace(agent: Agent) -> None:
    agent.add_middleware(AgentStreamStage, gate_named("my_gate"))
    result = await agent.invoke_async("Test")

    assert result.interrupts[0].id.startswith("v2:middleware_agent_stream:agent:")


async def test_middleware_interrupt_registered_in_state(agent: Agent) -> None:
    agent.add_middleware(AgentStreamStage, gate_named("gate", "confirm"))
    result = await agent.invoke_async("Test")

    assert result.stop_reason == "interrupt"
    assert len(agent.pending_interrupts) == 1


async def test_middleware_gets_response_on_resume_and_continues() -> None:
    """On resume interrupt() returns the wrapped response and the stream runs to end_turn."""
    agent = Agent(ScriptedModel(["Hello!", "Hello!"]))
    interrupt_results: list[MiddlewareInterruptResult] = []

    async def gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        interrupt_results.append(context.interrupt("gate", reason="Proceed?"))
        async for event in next_fn(context):
            yield event

    agent.add_middleware(AgentStreamStage, gate)

    result = await agent.invoke_async("Test")
    assert result.stop_reason == "interrupt"

    result = await agent.invoke_async(answer(result.interrupts[0].id, "go"))
    assert isinstance(interrupt_results[0], MiddlewareInterruptResult)
    assert interrupt_results[0].response == "go"
    assert result.stop_reason == "end_turn"
    assert first_text(result.message) == "Hello!"


async def test_middleware_interrupt_with_preemptive_response_skips_interrupt(agent: Agent) -> None:
    skipped: list[bool] = []

    async def gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        skipped.append(
            context.interrupt("gate", response="pre-approved").response == "pre-approved"
        )
        async for event in next_fn(context):
            yield event

    agent.add_middleware(AgentStreamStage, gate)
    result = await agent.invoke_async("Test")

    assert result.stop_reason == "end_turn"
    assert skipped == [True]


async def test_resumed_interrupt_deactivates_state_after_completion() -> None:
    """After a resumed interrupt completes with end_turn, the interrupt state is inactive."""
    agent = Agent(ScriptedModel(["First", "Second"]))
    agent.add_middleware(AgentStreamStage, gate_once())

    result = await agent.invoke_async("Test")
    assert result.stop_reason == "interrupt"

    result = await agent.invoke_async(answer(result.interrupts[0].id, "go"))
    assert result.stop_reason == "end_turn"
    await assert_accepts_a_fresh_prompt(agent)


async def test_resumed_interrupt_can_proceed_into_a_tool_call() -> None:
    model = ScriptedModel([tool_turn("calc", {}, "t1"), "done"])
    agent = Agent(model, tools=[make_calc()])
    agent.add_middleware(AgentStreamStage, gate_once())

    result = await agent.invoke_async("go")
    assert result.stop_reason == "interrupt"

    result = await agent.invoke_async(answer(result.interrupts[0].id, "go"))
    assert result.stop_reason == "end_turn"
    assert first_text(result.message) == "done"


async def test_resumed_interrupt_reads_response_after_a_tool_cycle_runs() -> None:
    """A gate that re-reads its approval after next_fn drains still resolves after a tool cycle."""
    agent = Agent(ScriptedModel([tool_turn("calc", {}, "t1"), "done"]), tools=[make_calc()])
    reads: list[tuple[str, object]] = []

    async def gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        reads.append(("pre", context.interrupt("gate").response))
        async for event in next_fn(context):
            yield event
        reads.append(("post", context.interrupt("gate").response))

    agent.add_middleware(AgentStreamStage, gate)

    result = await agent.invoke_async("go")
    assert result.stop_reason == "interrupt"

    result = await agent.invoke_async(answer(result.interrupts[0].id, "go"))
    assert result.stop_reason == "end_turn"
    assert first_text(result.message) == "done"
    assert reads == [("pre", "go"), ("post", "go")]


async def test_resumed_agent_stream_interrupt_then_tool_interrupt() -> None:
    """A resumed agent-stream interrupt followed by a tool interrupt stops and resumes cleanly."""
    model = ScriptedModel([tool_turn("confirm_tool", {}, "t1"), "done", "fresh"])
    agent = Agent(model, tools=[make_confirm_tool()])
    agent.add_middleware(AgentStreamStage, gate_once("stream_gate"))

    # Pass 1: the agent-stream gate halts the invocation.
    result = await agent.invoke_async("go")
    assert result.stop_reason == "interrupt"
    assert result.interrupts[0].name == "stream_gate"

    # Pass 2: the resumed pass calls the model and the tool, which interrupts in turn.
    result = await agent.invoke_async(answer(result.interrupts[0].id, "go"))
    assert result.stop_reason == "interrupt"
    assert result.interrupts[0].name == "tool_gate"

    # Pass 3: resuming the tool interrupt completes the invocation.
    result = await agent.invoke_async(answer(result.interrupts[0].id, "yes"))
    assert result.stop_reason == "end_turn"
    assert first_text(result.message) == "done"
    # No interrupt state leaks past a clean completion.
    await assert_accepts_a_fresh_prompt(agent)


async def test_cancel_during_agent_stream_interrupt_resume_clears_state() -> None:
    """Cancelling a resumed agent-stream interrupt clears the interrupt state."""
    agent = Agent(ScriptedModel(["First", "Second", "fresh"]))
    agent.add_middleware(AgentStreamStage, gate_once())

    result = await agent.invoke_async("Test")
    assert result.stop_reason == "interrupt"

    # Cancel before the resume: the pass ends cancelled and the gate's state is cleared.
    agent.cancel()
    result = await agent.invoke_async(answer(result.interrupts[0].id, "go"))

    assert result.stop_reason == "cancelled"
    await assert_accepts_a_fresh_prompt(agent)


async def test_sequential_agent_stream_interrupts_across_passes() -> None:
    """Two sequential agent-stream interrupts each halt and resume independently."""
    agent = Agent(ScriptedModel(["a", "b", "c", "fresh"]))
    pass_count: list[int] = []

    async def gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        pass_count.append(1)
        if len(pass_count) in (1, 2):
            context.interrupt(f"gate_{len(pass_count)}")
        async for event in next_fn(context):
            yield event

    agent.add_middleware(AgentStreamStage, gate)

    result = await agent.invoke_async("go")
    assert result.stop_reason == "interrupt"
    assert result.interrupts[0].name == "gate_1"

    result = await agent.invoke_async(answer(result.interrupts[0].id, "x"))
    assert result.stop_reason == "interrupt"
    assert result.interrupts[0].name == "gate_2"

    result = await agent.invoke_async(answer(result.interrupts[0].id, "y"))
    assert result.stop_reason == "end_turn"
    await assert_accepts_a_fresh_prompt(agent)


async def test_interrupt_message_uses_last_message_or_placeholder(agent: Agent) -> None:
    """A gate before next_fn stops with the last message of history, or a placeholder."""
    agent.add_middleware(AgentStreamStage, gate_named("gate"))
    result = await agent.invoke_async("Test")

    assert result.stop_reason == "interrupt"
    assert agent.messages == []
    assert result.message == {"role": "assistant", "content": [{"text": "Interrupted"}]}

    # Strands appends to the history and deactivates the private interrupt state by hand;
    # the port starts a second agent from that history instead.
    prior = assistant("earlier turn")
    again = Agent(ScriptedModel([]), messages=[prior])
    again.add_middleware(AgentStreamStage, gate_named("gate"))
    result = await again.invoke_async("Test again")

    assert result.stop_reason == "interrupt"
    assert result.message == prior


# --- hooks fire outside the middleware chain ---


async def test_invocation_hooks_fire_outside_agent_stream_middleware(agent: Agent) -> None:
    """Before/AfterInvocationEvent fire outside the AgentStreamStage chain."""
    order: list[str] = []
    agent.add_hook(lambda event: order.append("before_invocation"), BeforeInvocationEvent)
    agent.add_hook(lambda event: order.append("after_invocation"), AfterInvocationEvent)

    async def middleware(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        order.append("middleware-before")
        async for event in next_fn(context):
            yield event
        order.append("middleware-after")

    agent.add_middleware(AgentStreamStage, middleware)
    await agent.invoke_async("Test prompt")

    assert order == [
        "before_invocation",
        "middleware-before",
        "middleware-after",
        "after_invocation",
    ]


async def test_after_invocation_hook_fires_when_middleware_short_circuits(agent: Agent) -> None:
    after_fired: list[bool] = []
    agent.add_hook(lambda event: after_fired.append(True), AfterInvocationEvent)

    agent.add_middleware(AgentStreamStage, short_circuit)
    await agent.invoke_async("Test prompt")

    assert after_fired


async def test_user_message_added_hook_fires_inside_the_chain(agent: Agent) -> None:
    """The terminal appends the input, so its MessageAddedEvent fires inside the chain."""
    order: list[str] = []
    agent.add_hook(
        lambda event: order.append(f"msg_added:{event.message['role']}"), MessageAddedEvent
    )

    async def middleware(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        order.append("middleware-before")
        async for event in next_fn(context):
            yield event
        order.append("middleware-after")

    agent.add_middleware(AgentStreamStage, middleware)
    await agent.invoke_async("Test prompt")

    assert order == [
        "middleware-before",
        "msg_added:user",
        "msg_added:assistant",
        "middleware-after",
    ]


async def test_short_circuit_appends_nothing_to_history(agent: Agent) -> None:
    """A short-circuited pass puts neither the input nor a response in the history."""
    added_roles: list[str] = []
    agent.add_hook(lambda event: added_roles.append(event.message["role"]), MessageAddedEvent)

    agent.add_middleware(AgentStreamStage, short_circuit)
    result = await agent.invoke_async("Test prompt")

    assert result.message["content"] == [{"text": "Short-circuited"}]
    assert added_roles == []
    assert agent.messages == []


async def test_context_replace_preserves_interrupt(agent: Agent) -> None:
    """dataclasses.replace() on AgentStreamContext keeps interrupt() working."""

    async def replace_then_interrupt(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        modified = dataclasses.replace(
            context, invocation_state={**context.invocation_state, "tagged": True}
        )
        modified.interrupt("gate")
        async for event in next_fn(modified):
            yield event

    agent.add_middleware(AgentStreamStage, replace_then_interrupt)
    result = await agent.invoke_async("Test")

    assert result.stop_reason == "interrupt"
    assert result.interrupts[0].id.startswith("v2:middleware_agent_stream:agent:")


# --- tool interrupts still surface through the agent-stream chain ---


async def test_tool_interrupt_surfaces_through_agent_stream_chain() -> None:
    @tool
    def interrupting_tool(tool_context: ToolContext) -> Any:
        """Interrupt on the first call."""
        return tool_context.interrupt("confirm", reason="approve?")

    agent = Agent(
        ScriptedModel([tool_turn("interrupting_tool", {}, "t1"), "done"]), tools=[interrupting_tool]
    )
    agent.add_middleware(AgentStreamStage, passthrough)
    result = await agent.invoke_async("go")

    assert result.stop_reason == "interrupt"
    assert result.interrupts[0].name == "confirm"


async def test_agent_stream_interrupt_reports_all_unanswered_interrupts() -> None:
    """An agent-stream interrupt reports every unanswered interrupt, not only its own."""
    tool_interrupts = [
        Interrupt(id="v1:tool:a", name="gate_a", reason="a?"),
        Interrupt(id="v1:tool:b", name="gate_b", reason="b?"),
    ]

    async def multi_stream(
        tool_use: ToolUse, context: ToolContext
    ) -> AsyncIterator[ExecuteToolEvent]:
        yield ToolInterruptEvent(tool_use, tool_interrupts)

    multi_tool = PlainTool("multi_tool", multi_stream)
    agent = Agent(ScriptedModel([tool_turn("multi_tool", {}, "t1"), "done"]), tools=[multi_tool])
    raise_stream_gate: list[bool] = []

    async def gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        if raise_stream_gate:
            context.interrupt("stream_gate", reason="confirm stream?")
        async for event in next_fn(context):
            yield event

    agent.add_middleware(AgentStreamStage, gate)

    # Pass 1: the tool raises two interrupts.
    result = await agent.invoke_async("go")
    assert result.stop_reason == "interrupt"
    assert {interrupt.name for interrupt in result.interrupts} == {"gate_a", "gate_b"}

    # Pass 2: only gate_a is answered; the gate raises stream_gate on the resumed pass.
    raise_stream_gate.append(True)
    result = await agent.invoke_async(answer("v1:tool:a", "yes"))

    assert result.stop_reason == "interrupt"
    assert {interrupt.name for interrupt in result.interrupts} == {"gate_b", "stream_gate"}


async def test_resumed_interrupt_is_not_re_asked_after_a_later_tool_interrupt() -> None:
    """An answered gate is not asked again on later passes of the same interrupt cycle."""
    model = ScriptedModel(
        [tool_turn("calc", {}, "t1"), tool_turn("confirm_tool", {}, "t2"), "done"]
    )
    agent = Agent(model, tools=[make_calc(), make_confirm_tool()])
    agent.add_middleware(AgentStreamStage, gate_named("stream_gate", "approve the pass?"))

    asked: list[str] = []
    result = await agent.invoke_async("go")
    for _ in range(8):
        if result.stop_reason != "interrupt":
            break
        asked.extend(interrupt.name for interrupt in result.interrupts)
        result = await agent.invoke_async(approve(result))

    assert result.stop_reason == "end_turn"
    assert asked == ["stream_gate", "tool_gate"]


async def test_answered_interrupt_is_not_reused_by_a_later_invocation() -> None:
    """A gate's answer does not carry over to the next invocation: the human is asked again."""
    model = ScriptedModel([tool_turn("calc", {}, "t1"), "done", "unused"])
    agent = Agent(model, tools=[make_calc()])
    agent.add_middleware(AgentStreamStage, gate_named("stream_gate", "approve the pass?"))

    first = await agent.invoke_async("go")
    assert first.stop_reason == "interrupt"
    first = await agent.invoke_async(answer(first.interrupts[0].id, "yes"))
    assert first.stop_reason == "end_turn"
    assert first_text(first.message) == "done"
    assert agent.pending_interrupts == []

    # A second, independent invocation gates again rather than reusing the earlier approval.
    second = await agent.invoke_async("go again")
    assert second.stop_reason == "interrupt"
    assert second.interrupts[0].name == "stream_gate"


async def test_interrupt_after_the_pass_completes_raises() -> None:
    """Interrupting after the stream finished raises RuntimeError instead of corrupting history."""
    agent = Agent(ScriptedModel(["Hello!", "fresh"]))

    async def post_hoc_gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        async for event in next_fn(context):
            yield event
        # Gate only the first invocation (user + assistant in history), so that the fresh
        # prompt below, which Strands replaces by reading its private state, can complete.
        if len(agent.messages) <= 2:
            context.interrupt("approve_output", reason="approve the reply?")

    agent.add_middleware(AgentStreamStage, post_hoc_gate)

    with pytest.raises(
        RuntimeError, match=r"'approve_output'.*raised after the agent pass produced"
    ):
        await agent.invoke_async("Test prompt")

    # The refused interrupt is not left registered: the next invocation starts clean.
    await assert_accepts_a_fresh_prompt(agent)


async def test_after_invocation_result_is_the_stop_event_when_a_trailing_event_follows(
    agent: Agent,
) -> None:
    """AfterInvocationEvent.result comes from the stop event, not from a later event."""
    results: list[AgentResult | None] = []

    agent.add_middleware(AgentStreamStage, inject_trailing)
    agent.add_hook(lambda event: results.append(event.result), AfterInvocationEvent)

    await agent.invoke_async("Test prompt")

    assert len(results) == 1
    assert results[0] is not None
    assert results[0].stop_reason == "end_turn"
    assert first_text(results[0].message) == "Hello!"


async def test_middleware_yielded_interrupt_stop_preserves_interrupt_state() -> None:
    """A pass that stops on an interrupt keeps its interrupt state active."""
    agent = Agent(ScriptedModel(["first", "second"]))
    short_circuit_now: list[bool] = []
    resolved: list[object] = []

    async def gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        if short_circuit_now:
            short_circuit_now.clear()
            yield EventLoopStopEvent(
                stop_reason="interrupt",
                message=assistant("Awaiting approval"),
                metrics={"latencyMs": 0},
                request_state={},
                interrupts=list(agent.pending_interrupts),
            )
            return
        resolved.append(context.interrupt("stream_gate", reason="approve the pass?").response)
        async for event in next_fn(context):
            yield event

    agent.add_middleware(AgentStreamStage, gate)

    result = await agent.invoke_async("go")
    assert result.stop_reason == "interrupt"
    interrupt_id = result.interrupts[0].id

    # The resumed pass stops on an interrupt stop event the middleware yields itself.
    short_circuit_now.append(True)
    result = await agent.invoke_async(answer(interrupt_id, "yes"))

    assert result.stop_reason == "interrupt"
    # Strands reads its private state (still activated, the interrupt still registered).
    # Observably: the agent still refuses a fresh prompt, and continuing the cycle resolves
    # the gate with the answer that is still held for it.
    with pytest.raises(TypeError):
        await agent.invoke_async("a fresh prompt")
    result = await agent.invoke_async()
    assert result.stop_reason == "end_turn"
    assert resolved == ["yes"]


# --- answers live for one interrupt cycle ---

APPROVAL = "approved-by-a-human"


def charging_agent(gate: Wrap, charges: list[str], **kwargs: Any) -> Agent:
    """An agent whose model calls a charging tool, gated by *gate*."""

    @tool
    def charge_card(amount: str) -> str:
        """Charge the customer's card.

        Args:
            amount: How much to charge.
        """
        charges.append(amount)
        return f"charged {amount}"

    charge = tool_turn("charge_card", {"amount": "$100"}, "t1")
    agent = Agent(ScriptedModel([charge, "done", charge, "done"]), tools=[charge_card], **kwargs)
    agent.add_middleware(AgentStreamStage, gate)
    return agent


def charge_gate(gate_calls: list[str]) -> Wrap:
    async def gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        gate_calls.append("call")
        context.interrupt("approve_charge", reason="approve this request?")
        async for event in next_fn(context):
            yield event

    return gate


def stored_interrupt_state(store: SQLiteSessionStore) -> str:
    snapshot = stored_snapshot(store, "s1")
    return json.dumps(snapshot["interrupt_state"])


async def test_answered_interrupt_is_not_persisted_as_a_standing_approval(tmp_path: Path) -> None:
    """A completed cycle leaves no answered interrupt in the saved session."""
    gate_calls: list[str] = []
    charges: list[str] = []
    store = SQLiteSessionStore(tmp_path / "sessions.db")

    def build() -> Agent:
        return charging_agent(
            charge_gate(gate_calls), charges, session_store=store, session_id="s1"
        )

    first = await build().invoke_async("charge $100")
    assert first.stop_reason == "interrupt"

    resumed = await build().invoke_async(approve(first, APPROVAL))
    assert resumed.stop_reason == "end_turn"

    assert APPROVAL not in stored_interrupt_state(store)

    charges.clear()
    third = await build().invoke_async("charge $9999")
    assert third.stop_reason == "interrupt"
    assert charges == []


async def test_answered_interrupt_is_released_when_a_pass_ends_with_an_error() -> None:
    """A raise from AfterInvocationEvent does not strand an answered interrupt."""
    gate_calls: list[str] = []
    charges: list[str] = []
    agent = charging_agent(charge_gate(gate_calls), charges)
    hook_calls: list[AfterInvocationEvent] = []

    def failing_hook(event: AfterInvocationEvent) -> None:
        hook_calls.append(event)
        if len(hook_calls) == 2:  # the resumed pass
            raise RuntimeError("session write failed")

    agent.add_hook(failing_hook, AfterInvocationEvent)

    first = await agent.invoke_async("charge $100")
    assert first.stop_reason == "interrupt"
    with pytest.raises(RuntimeError, match="session write failed"):
        await agent.invoke_async(approve(first))

    assert agent.pending_interrupts == []

    # The next cycle raises its own unanswered interrupt instead of inheriting the answer.
    charges.clear()
    third = await agent.invoke_async("charge $9999")
    assert third.stop_reason == "interrupt"
    assert [(i.name, i.response) for i in third.interrupts] == [("approve_charge", None)]
    assert charges == []


async def drain_until_tool_result(agent: Agent, prompt: Prompt) -> None:
    """Read a stream up to the tool result, then abandon it like a disconnected client."""
    async with contextlib.aclosing(agent.stream_async(prompt)) as events:
        async for event in events:
            if isinstance(event, ToolResultMessageEvent):
                break


async def test_answered_interrupt_is_not_reused_after_the_caller_abandons_the_stream() -> None:
    """A caller that stops reading the stream leaves no usable approval behind."""
    gate_calls: list[str] = []
    charges: list[str] = []
    agent = charging_agent(charge_gate(gate_calls), charges)

    first = await agent.invoke_async("charge $100")
    assert first.stop_reason == "interrupt"

    await drain_until_tool_result(agent, approve(first))

    charges.clear()
    second = await agent.invoke_async("charge $9999")
    assert second.stop_reason == "interrupt"
    # The reported interrupt must be answerable, not an answered leftover.
    assert [(i.name, i.response) for i in second.interrupts] == [("approve_charge", None)]
    assert charges == []


async def test_interrupt_after_a_tool_interrupt_stop_is_allowed() -> None:
    """Gating on top of a tool interrupt works: the stored tool call is replayed on resume."""
    model = ScriptedModel([tool_turn("confirm_tool", {}, "t1"), "done"])
    agent = Agent(model, tools=[make_confirm_tool(result_prefix="ran: ")])

    async def batch_gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        stopped_for_interrupt = False
        async for event in next_fn(context):
            if isinstance(event, EventLoopStopEvent) and event["stop"][0] == "interrupt":
                stopped_for_interrupt = True
            yield event
        if stopped_for_interrupt:
            context.interrupt("batch_approve", reason="approve the batch too?")

    agent.add_middleware(AgentStreamStage, batch_gate)

    first = await agent.invoke_async("go")
    assert first.stop_reason == "interrupt"
    assert {interrupt.name for interrupt in first.interrupts} == {"tool_gate", "batch_approve"}

    resumed = await agent.invoke_async(approve(first))
    assert resumed.stop_reason == "end_turn"
    assert [message["role"] for message in agent.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


async def test_interrupt_after_the_pass_completes_on_a_resumed_pass_leaves_no_state() -> None:
    """The refusal clears the interrupt state, so the agent stays usable afterwards."""
    agent = Agent(ScriptedModel(["first", "second", "third"]))
    # "before": gate ahead of next_fn; "after": gate once the stream drained; "off": pass through.
    mode: list[str] = ["before"]

    async def gate(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        if mode[0] == "before":
            context.interrupt("stream_gate", reason="approve the pass?")
        async for event in next_fn(context):
            yield event
        if mode[0] == "after":
            context.interrupt("post_gate", reason="approve the output?")

    agent.add_middleware(AgentStreamStage, gate)

    first = await agent.invoke_async("go")
    assert first.stop_reason == "interrupt"

    mode[0] = "after"
    with pytest.raises(
        RuntimeError, match="raised after the agent pass produced its EventLoopStopEvent"
    ):
        await agent.invoke_async(approve(first))

    assert agent.pending_interrupts == []

    # The agent takes an ordinary prompt again rather than demanding interrupt responses.
    mode[0] = "off"
    assert (await agent.invoke_async("plain prompt")).stop_reason == "end_turn"


async def test_answered_interrupt_is_not_persisted_when_a_stream_is_abandoned(
    tmp_path: Path,
) -> None:
    """An abandoned stream leaves no answered interrupt in the saved session."""
    gate_calls: list[str] = []
    charges: list[str] = []
    store = SQLiteSessionStore(tmp_path / "sessions.db")

    def build() -> Agent:
        return charging_agent(
            charge_gate(gate_calls), charges, session_store=store, session_id="s1"
        )

    first = await build().invoke_async("charge $100")
    assert first.stop_reason == "interrupt"

    await drain_until_tool_result(build(), approve(first, APPROVAL))

    assert APPROVAL not in stored_interrupt_state(store)


async def test_restored_agent_reports_an_answerable_interrupt(tmp_path: Path) -> None:
    """A restored agent gates again rather than resolving against a stale approval."""
    gate_calls: list[str] = []
    charges: list[str] = []
    store = SQLiteSessionStore(tmp_path / "sessions.db")

    def build() -> Agent:
        return charging_agent(
            charge_gate(gate_calls), charges, session_store=store, session_id="s1"
        )

    first = await build().invoke_async("charge $100")
    await drain_until_tool_result(build(), approve(first))

    charges.clear()
    restored = await build().invoke_async("charge $9999 for something else")

    assert restored.stop_reason == "interrupt"
    assert [interrupt.name for interrupt in restored.interrupts] == ["approve_charge"]
    assert charges == []


async def test_interrupt_after_a_middleware_yielded_result_is_allowed() -> None:
    """Gating after a short-circuited pass works: nothing was produced for a resume to replay."""
    model = ScriptedModel([])
    agent = Agent(model)

    async def cached_then_confirm(
        context: AgentStreamContext, next_fn: AgentStreamNext
    ) -> AsyncIterator[AgentStreamEvent]:
        yield pass_stop("cached answer")
        context.interrupt("confirm_cached", reason="serve the cached answer?")

    agent.add_middleware(AgentStreamStage, cached_then_confirm)

    first = await agent.invoke_async("what is 2+2?")
    assert first.stop_reason == "interrupt"
    assert [interrupt.name for interrupt in first.interrupts] == ["confirm_cached"]

    resumed = await agent.invoke_async(approve(first))
    assert resumed.stop_reason == "end_turn"
    assert first_text(resumed.message) == "cached answer"
    assert model.requests == []
