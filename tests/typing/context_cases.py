"""Context replace(): keyword-only, typed per field, non-replaceable fields absent."""

from __future__ import annotations

from typing import Any, assert_type

from stageware import (
    AgentStreamContext,
    AgentTool,
    ExecuteToolContext,
    ExecuteToolResult,
    InvokeModelContext,
    InvokeModelResult,
    Message,
    MiddlewareInterruptResult,
    Model,
    ModelStopReason,
    ToolChoice,
    ToolUse,
)


def fields_have_their_schema_types(context: InvokeModelContext, tool: ExecuteToolContext) -> None:
    assert_type(context.messages, list[Message])
    assert_type(context.tool_choice, ToolChoice | None)
    assert_type(context.model, Model)
    assert_type(context.projected_input_tokens, int | None)
    assert_type(tool.tool, AgentTool | None)
    assert_type(tool.tool_use, ToolUse)


def replace_returns_the_same_context_type(
    context: InvokeModelContext, tool: ExecuteToolContext
) -> None:
    assert_type(context.replace(system_prompt="Be brief."), InvokeModelContext)
    assert_type(context.replace(system_prompt=[{"text": "Be brief."}]), InvokeModelContext)
    assert_type(context.replace(tool_choice=None), InvokeModelContext)
    assert_type(context.replace(), InvokeModelContext)
    assert_type(tool.replace(tool_use={**tool.tool_use, "input": {}}), ExecuteToolContext)


def interrupts_are_typed(tool: ExecuteToolContext, stream: AgentStreamContext) -> None:
    assert_type(tool.interrupt("approve", reason="refund over limit"), MiddlewareInterruptResult)
    assert_type(stream.interrupt("gate"), MiddlewareInterruptResult)


def results_hold_their_stage_event(result: InvokeModelResult, tool: ExecuteToolResult) -> None:
    assert_type(result.result, ModelStopReason)
    assert_type(result.value, ModelStopReason)
    assert_type(result.replace(value=result.result), InvokeModelResult)


# Expected errors.


def unknown_keyword(context: InvokeModelContext) -> None:
    context.replace(system_promt="x")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def wrongly_typed_keyword(context: InvokeModelContext, tool: ExecuteToolContext) -> None:
    context.replace(dynamic_trailing_blocks="2")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    context.replace(messages=None)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    tool.replace(tool_use={"name": "x"})  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def replace_is_keyword_only(context: InvokeModelContext) -> None:
    context.replace([])  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def non_replaceable_fields_are_not_parameters(
    context: InvokeModelContext, tool: ExecuteToolContext, stream: AgentStreamContext, agent: Any
) -> None:
    context.replace(agent=agent)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    tool.replace(cancel_signal=None)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    stream.replace(agent=agent)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def the_agent_stream_input_is_replaceable(stream: AgentStreamContext) -> None:
    assert_type(stream.replace(messages=[]), AgentStreamContext)
    stream.replace(messages=None)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def contexts_are_read_only(context: InvokeModelContext) -> None:
    context.system_prompt = "x"  # type: ignore[misc]  # pyright: ignore[reportAttributeAccessIssue]


def model_state_is_not_in_the_context(context: InvokeModelContext) -> None:
    context.model_state  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


def invoke_model_contexts_cannot_interrupt(context: InvokeModelContext) -> None:
    context.interrupt("gate")  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


def results_are_typed_per_stage(result: InvokeModelResult, tool: ExecuteToolResult) -> None:
    result.replace(result=tool.result)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
