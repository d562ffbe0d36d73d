"""The policy surface: hook points, bands, directions and hook event models are typed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, assert_type

from pydantic import BaseModel

from stageware import Message, MiddlewareStage, Phase
from stageware.policy import (
    BANDS,
    HOOK_POINTS,
    Band,
    Direction,
    HookEvent,
    HookPoint,
    HookPointSpec,
    ModelResponseEvent,
    RunStartEvent,
    ToolCallEvent,
    ToolResultEvent,
)


def the_tables_are_typed(point: HookPoint) -> None:
    assert_type(HOOK_POINTS, Mapping[HookPoint, HookPointSpec])
    assert_type(BANDS, tuple[Band, ...])
    spec = HOOK_POINTS[point]
    assert_type(spec.stage, MiddlewareStage[Any, Any, Any])
    assert_type(spec.phase, Phase)
    assert_type(spec.direction, Direction)
    assert_type(spec.event, type[BaseModel])


def enum_members_are_strings() -> None:
    assert_type(HookPoint.TOOL_BEFORE.value, Literal["tool.before"])
    assert_type(Band.APP, Literal[Band.APP])
    assert_type(Direction.INBOUND, Literal[Direction.INBOUND])


def hook_event_fields_are_typed(
    call: ToolCallEvent, result: ToolResultEvent, start: RunStartEvent, response: ModelResponseEvent
) -> None:
    assert_type(call.hook, Literal["tool.before"])
    assert_type(call.tool_name, str)
    assert_type(call.tool_use_id, str)
    assert_type(result.error, str | None)
    assert_type(start.run_id, str)
    # The fields are the payload TypedDicts themselves, not copies of them.
    assert_type(response.message, Message)
    assert_type(response.usage["totalTokens"], int)
    assert_type(result.result["status"], Literal["success", "error"])


def the_union_narrows_on_its_discriminator(event: HookEvent) -> None:
    if event.hook == "tool.before":
        assert_type(event, ToolCallEvent)


# Expected errors.


def an_unknown_hook_point_is_an_error() -> None:
    HookPoint.TOOL_BEFOR  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


def hook_event_fields_are_checked() -> None:
    ToolCallEvent(run_id="r", tool_name=3, tool_use_id="t", input={})  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    ToolCallEvent(hook="tool.after", run_id="r", tool_name="t", tool_use_id="t", input={})  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
