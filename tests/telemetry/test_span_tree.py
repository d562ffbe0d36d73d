"""The spans of real agent runs, read back from an in-memory exporter, on asyncio and trio.

Each run is traced through ``Agent(tracer_provider=...)``; the global provider stays the
API's default, so the rest of the suite runs untraced (the global case is tested in a
subprocess, in ``test_switch``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import TracerProvider

from stageware import (
    Agent,
    AgentStreamContext,
    AgentStreamEvent,
    AgentStreamNext,
    AgentStreamStage,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolStage,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    ToolContext,
    tool,
)
from stageware.policy import Block, Continue, HookPoint, PolicyEngine
from tests.policy.policy_helpers import Ledger, deciding

from .tracing_helpers import Recorder, attributes, is_error

pytestmark = pytest.mark.anyio


async def model_wrap(
    context: InvokeModelContext, next_fn: InvokeModelNext
) -> AsyncIterator[InvokeModelEvent]:
    async for event in next_fn(context):
        yield event


async def tool_wrap(
    context: ExecuteToolContext, next_fn: ExecuteToolNext
) -> AsyncIterator[ExecuteToolEvent]:
    async for event in next_fn(context):
        yield event


async def stream_wrap(
    context: AgentStreamContext, next_fn: AgentStreamNext
) -> AsyncIterator[AgentStreamEvent]:
    async for event in next_fn(context):
        yield event


def meeting_tools(provider: TracerProvider) -> list[Any]:
    """Two tools that finish only if they run at the same time; each makes a span of its own."""
    arrived = {"left": anyio.Event(), "right": anyio.Event()}
    tracer = provider.get_tracer("the application")

    async def meet(me: str, other: str) -> str:
        with tracer.start_as_current_span(f"inside {me}"):
            arrived[me].set()
            with anyio.fail_after(5):
                await arrived[other].wait()
            return f"{me} met {other}"

    @tool
    async def left() -> str:
        """Wait for the right tool."""
        return await meet("left", "right")

    @tool
    async def right() -> str:
        """Wait for the left tool."""
        return await meet("right", "left")

    return [left, right]


def two_calls() -> ScriptedModel:
    turn = ScriptedTurn(
        text="both at once",
        tool_calls=[ScriptedToolCall("left", {}, id="t1"), ScriptedToolCall("right", {}, id="t2")],
    )
    return ScriptedModel([turn, "done"], model_id="model-x")


async def test_a_run_nests_model_and_tool_calls() -> None:
    """invoke_agent -> agent_pass -> chat / execute_tool, each with its handlers' spans."""
    recorder = Recorder.start()
    agent = Agent(
        two_calls(),
        tools=meeting_tools(recorder.provider),
        name="helper",
        tracer_provider=recorder.provider,
    )
    agent.add_middleware(InvokeModelStage.Input, lambda c: c)
    agent.add_middleware(InvokeModelStage, model_wrap)
    agent.add_middleware(ExecuteToolStage, tool_wrap)
    agent.add_middleware(AgentStreamStage, stream_wrap)

    result = await agent.invoke_async("go")

    assert result.stop_reason == "end_turn"
    tree = recorder.tree()
    outline = "\n".join(tree.outline())
    invocation = tree.root
    assert invocation.name == "invoke_agent helper", outline
    assert attributes(invocation) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "helper",
        "gen_ai.agent.id": "helper",
        "stageware.stop_reason": "end_turn",
        "gen_ai.usage.input_tokens": result.metrics.usage["inputTokens"],
        "gen_ai.usage.output_tokens": result.metrics.usage["outputTokens"],
    }
    [agent_pass] = tree.children(invocation)
    assert agent_pass.name == "agent_pass"
    assert attributes(agent_pass)["stageware.stop_reason"] == "end_turn"
    names = [span.name for span in tree.children(agent_pass)]
    # The two tool calls start in no particular order (trio schedules tasks as it likes).
    names[2:4] = sorted(names[2:4])
    assert names == [
        "middleware AgentStreamStage.Wrap",
        "chat model-x",
        "execute_tool left",
        "execute_tool right",
        "chat model-x",
    ], outline

    first_call, second_call = tree.named("chat model-x")
    assert attributes(first_call) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "model-x",
        "gen_ai.response.finish_reasons": ("tool_use",),
        "gen_ai.usage.input_tokens": attributes(first_call)["gen_ai.usage.input_tokens"],
        "gen_ai.usage.output_tokens": attributes(first_call)["gen_ai.usage.output_tokens"],
    }
    assert attributes(second_call)["gen_ai.response.finish_reasons"] == ("end_turn",)
    calls = (first_call, second_call)
    usage = result.metrics.usage
    for kind, key in (("input", "inputTokens"), ("output", "outputTokens")):
        counted = sum(_count(span, f"gen_ai.usage.{kind}_tokens") for span in calls)
        assert counted == usage.get(key)
    assert [span.name for span in tree.children(first_call)] == [
        "middleware InvokeModelStage.Input",
        "middleware InvokeModelStage.Wrap",
    ]
    handler = tree.children(first_call)[0]
    assert attributes(handler) == {
        "stageware.stage": "InvokeModel",
        "stageware.phase": "Input",
        "stageware.handler": f"{test_a_run_nests_model_and_tool_calls.__name__}.<locals>.<lambda>",
    }

    for name, call_id in (("left", "t1"), ("right", "t2")):
        span = tree.one(f"execute_tool {name}")
        assert attributes(span) == {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            "stageware.tool.status": "success",
        }
        assert [child.name for child in tree.children(span)] == [
            "middleware ExecuteToolStage.Wrap",
            f"inside {name}",  # the tool's own span, made in the tool's task
        ]
    # They ran at the same time (each waited for the other), in tasks of their own.
    left, right = tree.one("execute_tool left"), tree.one("execute_tool right")
    assert left.start_time is not None
    assert left.end_time is not None
    assert right.start_time is not None
    assert right.end_time is not None
    assert left.start_time < right.end_time
    assert right.start_time < left.end_time
    assert not any(is_error(span) for span in tree.spans)
    assert all(span.end_time is not None for span in tree.spans)


def _count(span: ReadableSpan, key: str) -> int:
    value = attributes(span)[key]
    assert isinstance(value, int)
    return value


async def test_a_sync_tool_s_spans_nest_under_its_call() -> None:
    recorder = Recorder.start()
    tracer = recorder.provider.get_tracer("the application")

    @tool
    def lookup(order_id: int) -> str:
        """Look an order up.

        Args:
            order_id: The order.
        """
        with tracer.start_as_current_span("lookup in a thread"):
            return "shipped"

    model = ScriptedModel(
        [ScriptedTurn(tool_calls=[ScriptedToolCall("lookup", {"order_id": 1})]), "ok"]
    )
    agent = Agent(model, tools=[lookup], tracer_provider=recorder.provider)
    await agent.invoke_async("go")

    tree = recorder.tree()
    inside = tree.one("lookup in a thread")
    assert tree.parent_of(inside).name == "execute_tool lookup"


async def test_an_interrupt_is_recorded_not_an_error_and_the_resume_is_a_trace_of_its_own() -> None:
    recorder = Recorder.start()

    @tool
    def refund(amount: int, context: ToolContext) -> str:
        """Refund an amount, with a human's approval.

        Args:
            amount: How much.
        """
        context.interrupt("refund", reason=f"refund {amount}?")
        return "refunded"

    model = ScriptedModel(
        [ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 5}, id="t1")]), "done"]
    )
    agent = Agent(model, tools=[refund], tracer_provider=recorder.provider)
    first = await agent.invoke_async("go")

    assert first.stop_reason == "interrupt"
    tree = recorder.tree()
    invocation = tree.root
    assert attributes(invocation)["stageware.stop_reason"] == "interrupt"
    assert attributes(invocation)["stageware.interrupts"] == (first.interrupts[0].id,)
    call = tree.one("execute_tool refund")
    assert attributes(call)["stageware.interrupted"] is True
    assert "stageware.tool.status" not in attributes(call)
    assert tree.parent_of(call).name == "agent_pass"
    assert not any(is_error(span) for span in tree.spans)

    recorder.clear()
    answer = [{"interruptResponse": {"interruptId": first.interrupts[0].id, "response": "ok"}}]
    second = await agent.invoke_async(answer)
    assert second.stop_reason == "end_turn"
    resumed = recorder.tree()
    assert attributes(resumed.root)["stageware.stop_reason"] == "end_turn"
    assert [span.name for span in resumed.children(resumed.one("agent_pass"))] == [
        "execute_tool refund",  # replayed without asking the model again
        "chat scripted",
    ]


async def test_a_middleware_interrupt_ends_its_handler_span_without_an_error() -> None:
    recorder = Recorder.start()

    def gate(context: ExecuteToolContext) -> ExecuteToolContext:
        context.interrupt("approve", reason="ok?")
        return context

    model = ScriptedModel(
        [ScriptedTurn(tool_calls=[ScriptedToolCall("echo", {"text": "x"}, id="t1")]), "done"]
    )

    @tool
    def echo(text: str) -> str:
        """Echo.

        Args:
            text: What to echo.
        """
        return text

    agent = Agent(model, tools=[echo], tracer_provider=recorder.provider)
    agent.add_middleware(ExecuteToolStage.Input, gate)
    result = await agent.invoke_async("go")

    assert result.stop_reason == "interrupt"
    tree = recorder.tree()
    handler = tree.one("middleware ExecuteToolStage.Input")
    assert tree.parent_of(handler).name == "execute_tool echo"
    assert attributes(handler)["stageware.interrupted"] is True
    assert [event.name for event in handler.events] == ["interrupt"]
    assert not is_error(handler)


async def test_a_policy_block_is_a_decision_span_and_the_invocation_s_stop_reason() -> None:
    recorder = Recorder.start()
    allow = deciding(HookPoint.MODEL_REQUEST, lambda event, env: Continue(), name="allow")
    block = deciding(HookPoint.TOOL_BEFORE, lambda event, env: Block("no refunds"), name="no")
    audit = deciding(HookPoint.RUN_END, lambda event, env: None, name="audit")
    ledger = Ledger()
    agent = Agent(
        ScriptedModel(
            [ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 5}, id="t1")])]
        ),
        tools=[ledger.tool],
        policy=PolicyEngine([allow, block, audit]),
        tracer_provider=recorder.provider,
    )

    result = await agent.invoke_async("refund please")

    assert result.stop_reason == "blocked"
    assert ledger.payouts == []
    tree = recorder.tree()
    invocation = tree.root
    assert attributes(invocation)["stageware.stop_reason"] == "blocked"
    assert attributes(invocation)["stageware.halt.hook"] == "tool.before"
    assert attributes(invocation)["stageware.halt.middleware"] == "no"

    blocked = tree.one("policy tool.before")
    assert attributes(blocked) == {
        "stageware.policy.hook": "tool.before",
        "stageware.policy.middleware": "no",
        "stageware.policy.band": "app",
        "stageware.policy.outcome": "block",
        "stageware.policy.modified": False,
        "stageware.policy.reason": "no refunds",
    }
    assert not is_error(blocked)
    handler = tree.parent_of(blocked)
    assert handler.name == "middleware ExecuteToolStage.Input"
    assert [event.name for event in handler.events] == ["halt"]
    call = tree.parent_of(handler)
    assert call.name == "execute_tool refund"
    assert attributes(call)["stageware.tool.status"] == "error"  # the model reads why

    allowed = tree.one("policy model.request")
    assert attributes(allowed)["stageware.policy.outcome"] == "continue"
    # A Wrap handler's decisions hang from the model call it wraps.
    assert tree.parent_of(allowed).name == "chat scripted"
    # run.end is decided in an AfterInvocationEvent hook, outside every stage.
    ended = tree.one("policy run.end")
    assert tree.parent_of(ended).name == invocation.name


async def test_errors_set_status_error_with_the_exception_recorded() -> None:
    recorder = Recorder.start()

    @tool
    def broken() -> str:
        """Fail."""
        raise ValueError("no such order")

    model = ScriptedModel(
        [ScriptedTurn(tool_calls=[ScriptedToolCall("broken", {})]), RuntimeError("model down")]
    )
    agent = Agent(model, tools=[broken], tracer_provider=recorder.provider, retry_strategy=None)
    with pytest.raises(RuntimeError, match="model down"):
        await agent.invoke_async("go")

    tree = recorder.tree()
    call = tree.one("execute_tool broken")
    assert is_error(call)  # the model received an error result
    assert attributes(call)["error.type"] == "tool_error"
    failed = tree.named("chat scripted")[1]
    assert is_error(failed)
    assert attributes(failed)["error.type"] == "RuntimeError"
    assert [event.name for event in failed.events] == ["exception"]
    assert is_error(tree.root)
    assert is_error(tree.one("agent_pass"))


async def test_a_cancelled_run_ends_every_span() -> None:
    recorder = Recorder.start()
    started = anyio.Event()

    @tool
    async def stuck() -> str:
        """Never finish."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    model = ScriptedModel([ScriptedTurn(tool_calls=[ScriptedToolCall("stuck", {})])])
    agent = Agent(model, tools=[stuck], tracer_provider=recorder.provider)
    async with anyio.create_task_group() as group:

        async def cancel_when_started() -> None:
            await started.wait()
            agent.cancel()

        group.start_soon(cancel_when_started)
        result = await agent.invoke_async("go")

    assert result.stop_reason == "cancelled"
    tree = recorder.tree()
    assert attributes(tree.root)["stageware.stop_reason"] == "cancelled"
    call = tree.one("execute_tool stuck")
    assert attributes(call)["stageware.cancelled"] is True
    assert all(span.end_time is not None for span in tree.spans)


async def test_handlers_added_after_a_traced_run_are_traced_in_the_next() -> None:
    recorder = Recorder.start()
    agent = Agent(ScriptedModel(["one", "two"]), tracer_provider=recorder.provider)
    await agent.invoke_async("go")
    assert not recorder.tree().named("middleware InvokeModelStage.Output")

    recorder.clear()
    agent.add_middleware(InvokeModelStage.Output, lambda r: r)
    await agent.invoke_async("again")
    assert recorder.tree().named("middleware InvokeModelStage.Output")


async def test_a_failing_handler_is_named_as_untraced_and_its_span_is_an_error() -> None:
    recorder = Recorder.start()

    def forgets_to_return(context: InvokeModelContext) -> None:
        pass

    def raises(context: InvokeModelContext) -> InvokeModelContext:
        raise LookupError("no route")

    agent = Agent(ScriptedModel(["unused"]), tracer_provider=recorder.provider)
    agent.add_middleware(InvokeModelStage.Input, forgets_to_return)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"handler .*forgets_to_return returned NoneType"):
        await agent.invoke_async("go")

    recorder.clear()
    agent = Agent(ScriptedModel(["unused"]), tracer_provider=recorder.provider)
    agent.add_middleware(InvokeModelStage.Input, raises)
    with pytest.raises(LookupError):
        await agent.invoke_async("go")
    handler = recorder.tree().one("middleware InvokeModelStage.Input")
    assert is_error(handler)
    assert attributes(handler)["error.type"] == "LookupError"
    assert is_error(recorder.tree().one("chat scripted"))
