"""Stage events: fields and dict-style keys are typed from the schema."""

from __future__ import annotations

from typing import assert_type

from stageware import (
    EventLoopStopEvent,
    Interrupt,
    Message,
    Metrics,
    ModelStopReason,
    StopReason,
    ToolResult,
    ToolResultEvent,
    Usage,
)


def event_fields_have_their_schema_types(
    stop: ModelStopReason, tool: ToolResultEvent, loop: EventLoopStopEvent
) -> None:
    assert_type(stop.stop_reason, StopReason)
    assert_type(stop.message, Message)
    assert_type(stop["stop"], tuple[StopReason, Message, Usage, Metrics])
    assert_type(tool.tool_result, ToolResult)
    assert_type(tool.exception, Exception | None)
    assert_type(loop.interrupts, list[Interrupt] | None)


def events_are_built_positionally_or_by_keyword(message: Message, usage: Usage) -> None:
    ModelStopReason("end_turn", message, usage, {"latencyMs": 3})
    ModelStopReason(stop_reason="end_turn", message=message, usage=usage, metrics={"latencyMs": 3})
    ToolResultEvent({"toolUseId": "t1", "status": "success", "content": [{"text": "ok"}]})


# Expected errors.


def an_unknown_stop_reason_is_rejected(message: Message, usage: Usage) -> None:
    ModelStopReason("finished", message, usage, {"latencyMs": 3})  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def an_unknown_key_is_rejected(stop: ModelStopReason) -> None:
    stop["stopp"]  # type: ignore[index]  # pyright: ignore[reportArgumentType]


def events_are_read_only(stop: ModelStopReason) -> None:
    stop.stop_reason = "end_turn"  # type: ignore[misc]  # pyright: ignore[reportAttributeAccessIssue]
