"""The generated hook events validate their payloads against the payload TypedDicts.

Each event's fields are typed with the TypedDicts of ``payloads.py`` themselves, so
pydantic checks nested content against the one definition of each type, and an event
holds plain dicts, as the host passes them around.
"""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from stageware._generated import payloads
from stageware._generated.policy_events import (
    ApprovalResolvedEvent,
    ContextEvent,
    RunEndEvent,
    ToolResultEvent,
)
from stageware._generated.policy_points import HOOK_POINTS, HookEvent

RESULT = {"toolUseId": "t1", "status": "success", "content": [{"json": {"refund": 75}}]}


def _tool_result_event(**changes: Any) -> ToolResultEvent:
    fields: dict[str, Any] = {
        "run_id": "r1",
        "tool_name": "refund",
        "tool_use_id": "t1",
        "result": RESULT,
    }
    return ToolResultEvent(**{**fields, **changes})


def _problem(error: pytest.ExceptionInfo[ValidationError]) -> tuple[tuple[int | str, ...], str]:
    [detail] = error.value.errors()
    return detail["loc"], detail["type"]


def test_nested_payload_content_is_validated() -> None:
    with pytest.raises(ValidationError) as raised:
        _tool_result_event(result={**RESULT, "status": "bogus"})

    assert _problem(raised) == (("result", "status"), "literal_error")


def test_a_missing_required_payload_key_is_refused() -> None:
    with pytest.raises(ValidationError) as raised:
        _tool_result_event(result={"toolUseId": "t1", "status": "success"})

    assert _problem(raised) == (("result", "content"), "missing")


def test_the_event_holds_the_payload_as_plain_data() -> None:
    event = _tool_result_event()

    assert type(event.result) is dict
    assert event.result == RESULT
    assert event.model_dump()["result"] == RESULT


@pytest.mark.parametrize(
    ("event", "field", "payload_type"),
    [
        (ToolResultEvent, "result", payloads.ToolResult),
        (ContextEvent, "messages", payloads.Messages),
        (RunEndEvent, "metrics", payloads.Metrics),
    ],
)
def test_fields_are_typed_with_the_payload_types_themselves(
    event: type[BaseModel], field: str, payload_type: object
) -> None:
    annotation = event.model_fields[field].annotation

    assert annotation == payload_type  # an alias is rebuilt, its arguments are the same


def test_an_unknown_event_field_is_refused() -> None:
    with pytest.raises(ValidationError) as raised:
        _tool_result_event(tool_nmae="refund")

    assert _problem(raised) == (("tool_nmae",), "extra_forbidden")


def test_extra_forbid_reaches_into_the_payload_typeddicts() -> None:
    # pydantic applies a model's config to the TypedDicts in it: a key the payload schema
    # does not declare is refused there too.
    with pytest.raises(ValidationError) as raised:
        ContextEvent.model_validate(
            {
                "run_id": "r1",
                "messages": [{"role": "user", "content": [{"text": "hi", "citations": []}]}],
                "system_prompt": None,
                "tool_specs": [],
            }
        )

    assert _problem(raised) == (("messages", 0, "content", 0, "citations"), "extra_forbidden")


def test_the_union_is_discriminated_by_the_hook_point() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(HookEvent)

    event = adapter.validate_python(
        {"hook": "run.end", "run_id": "r1", "stop_reason": "blocked", "metrics": {"latencyMs": 3}}
    )

    assert isinstance(event, RunEndEvent)
    assert {point.value for point in HOOK_POINTS} == {
        spec.event.model_fields["hook"].default for spec in HOOK_POINTS.values()
    }


@pytest.mark.parametrize("reason", ["blocked", "escalated"])
def test_a_policy_can_end_a_run(reason: payloads.StopReason) -> None:
    assert reason in get_args(payloads.StopReason)
    event = RunEndEvent(run_id="r1", stop_reason=reason, metrics={"latencyMs": 1})
    assert event.stop_reason == reason


def test_an_approval_carries_the_decision() -> None:
    event = ApprovalResolvedEvent(
        run_id="r1",
        interrupt_id="v1:policy:tool.before:refund_gate:t1",
        suspended_at="tool.before",
        middleware="refund_gate",
        approved=True,
        approver="dana@example.com",
    )

    assert event.comment is None
    with pytest.raises(ValidationError) as raised:
        ApprovalResolvedEvent.model_validate({**event.model_dump(), "approved": "maybe"})
    assert _problem(raised) == (("approved",), "bool_parsing")
