"""The agent: add_middleware is typed as the registry's, and so are hooks, results and tools."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, assert_type

from stageware import (
    AfterToolCallEvent,
    Agent,
    AgentAsTool,
    AgentResult,
    AgentResultEvent,
    AgentStreamEvent,
    AgentStreamStage,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolResult,
    ExecuteToolStage,
    FunctionTool,
    Interrupt,
    InvokeModelContext,
    InvokeModelResult,
    InvokeModelStage,
    MessageAddedEvent,
    Messages,
    ModelError,
    ScriptedModel,
    StopReason,
    SystemContentBlock,
    TokenCounter,
    ToolContext,
    ToolResultEvent,
    ToolSpec,
    tool,
)

agent = Agent(ScriptedModel([]))


# Positive cases.


def gate(context: ExecuteToolContext) -> ExecuteToolContext:
    context.interrupt("approve", reason="run the tool?")
    return context


async def observe(
    context: ExecuteToolContext, next_fn: ExecuteToolNext
) -> AsyncIterator[ExecuteToolEvent]:
    async for event in next_fn(context):
        yield event


async def strands_style(
    ctx: ExecuteToolContext, next_fn: Callable[[ExecuteToolContext], AsyncGenerator[Any, None]]
) -> AsyncGenerator[Any, None]:
    async for event in next_fn(ctx):
        yield event


def keep(result: InvokeModelResult) -> InvokeModelResult:
    return result


def every_phase_accepts_its_handler() -> None:
    agent.add_middleware(ExecuteToolStage.Input, gate)
    agent.add_middleware(ExecuteToolStage, observe)
    agent.add_middleware(ExecuteToolStage, strands_style)
    agent.add_middleware(ExecuteToolStage.Wrap, observe)
    agent.add_middleware(InvokeModelStage.Output, keep)


def lambdas_are_inferred_from_the_token() -> None:
    agent.add_middleware(InvokeModelStage.Input, lambda c: c.replace(system_prompt="Be brief."))
    agent.add_middleware(ExecuteToolStage.Input, lambda c: c.replace(tool=None))
    agent.add_middleware(AgentStreamStage.Input, lambda c: c.replace(invocation_state={}))
    agent.add_middleware(AgentStreamStage.Input, lambda c: c.replace(messages=c.messages[-1:]))
    agent.add_middleware(ExecuteToolStage.Output, lambda r: r.replace(result=r.result))


def hooks_receive_their_event_type() -> None:
    def before_tool(event: BeforeToolCallEvent) -> None:
        event.cancel_tool = "not today"

    async def after_tool(event: AfterToolCallEvent) -> None:
        event.retry = event.exception is not None

    agent.add_hook(before_tool, BeforeToolCallEvent)
    agent.add_hook(after_tool, AfterToolCallEvent)
    agent.add_hook(lambda e: print(e.message["role"]), MessageAddedEvent)


async def results_and_events_are_typed() -> None:
    result = await agent.invoke_async("hi")
    assert_type(result, AgentResult)
    assert_type(result.stop_reason, StopReason)
    assert_type(result.interrupts, list[Interrupt])
    assert_type(result.error, ModelError | None)
    assert_type(agent("hi"), AgentResult)
    async for event in agent.stream_async("hi"):
        assert_type(event, AgentStreamEvent | AgentResultEvent)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


@tool(name="lookup")
async def lookup(key: str, context: ToolContext) -> str:
    """Look a key up."""
    return key


async def tools_keep_their_signature() -> None:
    assert isinstance(add, FunctionTool)
    assert_type(add(1, 2), int)
    assert_type(await lookup("k", ToolContext.__new__(ToolContext)), str)
    Agent(ScriptedModel([]), tools=[add, lookup])


# Expected errors: each must stay an error, or the run fails.


def a_handler_for_another_stage_is_rejected() -> None:
    agent.add_middleware(InvokeModelStage.Input, gate)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]
    agent.add_middleware(InvokeModelStage, observe)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def an_output_handler_for_another_stage_is_rejected() -> None:
    def wrong(result: ExecuteToolResult) -> ExecuteToolResult:
        return result

    agent.add_middleware(InvokeModelStage.Output, wrong)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def a_typo_inside_a_lambda_is_reported() -> None:
    agent.add_middleware(ExecuteToolStage.Input, lambda c: c.replace(tool_uses={}))  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue, reportUnknownLambdaType]


def an_unhonoured_field_is_not_replaceable() -> None:
    def swap_signal(context: ExecuteToolContext) -> ExecuteToolContext:
        return context.replace(cancel_signal=None)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue, reportUnknownVariableType]

    agent.add_middleware(ExecuteToolStage.Input, swap_signal)


def a_typo_inside_a_hook_lambda_is_reported() -> None:
    agent.add_hook(lambda e: print(e.mesage), MessageAddedEvent)  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]


def a_hook_for_another_event_is_rejected() -> None:
    def before_model(event: BeforeModelCallEvent) -> None:
        return None

    agent.add_hook(before_model, AfterToolCallEvent)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def a_wrap_handler_yielding_another_stages_event_is_rejected() -> None:
    async def yields_model_events(
        context: InvokeModelContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ToolResultEvent]:
        yield ToolResultEvent({"toolUseId": "t1", "status": "success", "content": []})

    agent.add_middleware(ExecuteToolStage, yields_model_events)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def a_strands_style_handler_for_another_stage_is_rejected() -> None:
    agent.add_middleware(InvokeModelStage, strands_style)  # type: ignore[arg-type]  # pyright: ignore[reportCallIssue, reportArgumentType]


def a_tool_is_called_with_its_own_signature() -> None:
    add("1", 2)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


class OwnCounter:
    async def count_tokens(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        system_prompt_content: list[SystemContentBlock] | None = None,
    ) -> int:
        return len(messages)


class BlockingCounter:
    def count_tokens(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        system_prompt_content: list[SystemContentBlock] | None = None,
    ) -> int:
        return len(messages)


async def token_counters_are_async_and_count_in_ints(model: object) -> None:
    counter: TokenCounter = OwnCounter()
    scripted: TokenCounter = ScriptedModel([])
    assert_type(await counter.count_tokens([]), int)
    assert_type(await scripted.count_tokens([], [], "system"), int)
    if isinstance(model, TokenCounter):
        assert_type(await model.count_tokens([]), int)
    # A count must not block the event loop: a sync count_tokens is not a TokenCounter.
    counters: list[TokenCounter] = [counter, scripted]
    counters.append(BlockingCounter())  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


# Agents as tools, and agent ids.

sub_agent = Agent(ScriptedModel([]), name="researcher", agent_id="research-1")
assert_type(sub_agent.agent_id, str)
assert_type(sub_agent.as_tool(), AgentAsTool)
assert_type(sub_agent.as_tool(name="research", description="Finds facts.").agent, Agent)
parent_agent = Agent(ScriptedModel([]), tools=[sub_agent.as_tool(), add])


def a_gate_reads_the_agent_id(context: ExecuteToolContext) -> str:
    return assert_type(context.agent.agent_id, str)


def as_tool_takes_keywords_only() -> None:
    sub_agent.as_tool("research")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def an_agent_id_is_a_string() -> None:
    Agent(ScriptedModel([]), agent_id=7)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def an_agent_id_is_read_only() -> None:
    sub_agent.agent_id = "other"  # type: ignore[misc]  # pyright: ignore[reportAttributeAccessIssue]
