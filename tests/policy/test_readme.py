"""The policies guide says what the code does: its outcome table and its example."""

from __future__ import annotations

import re
from typing import Any

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn, tool
from stageware.policy import (
    ALLOWED,
    HOOK_POINTS,
    MODIFIABLE,
    Block,
    Continue,
    Escalate,
    Guide,
    HookPoint,
    Retry,
    Suspend,
)
from tests.readme import find_section, page_of

_COLUMNS = (Continue, Block, Suspend, Escalate, Retry, Guide)


def _section(title: str) -> str:
    return find_section(f"## {title}\n").text


def test_the_outcome_table_is_the_enforced_one() -> None:
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in _section("Policies").splitlines()
        if line.startswith("| `")
    ]
    assert [row[0].strip("`") for row in rows] == [point.value for point in HookPoint]
    for row in rows:
        point = HookPoint(row[0].strip("`"))
        spec = HOOK_POINTS[point]
        assert row[1].endswith(f"{spec.stage.name} {spec.phase.value}"), row
        assert row[2] == spec.direction.value
        allowed = [kind for kind, cell in zip(_COLUMNS, row[3:9], strict=True) if cell == "✓"]
        assert set(allowed) == ALLOWED[point], point
        named = set(re.findall(r"`(\w+)`", row[9].split("(")[0]))
        assert named == MODIFIABLE[point], point


def test_the_example_runs_as_written() -> None:
    section = _section("Policies")
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    # The block is whole: its own tool and model, as a reader pastes it.
    namespace: dict[str, Any] = {}
    exec(compile(code, page_of("## Policies\n"), "exec"), namespace)
    result = namespace["result"]
    assert result.stop_reason == "end_turn"
    [ran] = [
        block["toolResult"]
        for message in namespace["agent"].messages
        for block in message["content"]
        if "toolResult" in block
    ]
    assert ran["content"] == [{"text": "refunded 400 for order 1234"}]
    assert [d.outcome for d in result.decisions] == ["continue"]
    [decision] = result.decisions
    assert decision.reason == "approved by dana@example.com (authenticator): loyal customer"
    assert decision.approver == "dana@example.com"


def test_the_class_middleware_example_runs_as_written() -> None:
    code = _section("Policies").split("```python\n")[2].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, page_of("## Policies\n"), "exec"), namespace)
    paid: list[int] = []

    @tool
    def refund(amount: int) -> str:
        """Refund an amount."""
        paid.append(amount)
        return "refunded"

    model = ScriptedModel(
        [
            ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 600}, id="t1")]),
            "Refunded.",
        ]
    )
    result = Agent(model, tools=[refund], policy=namespace["engine"])("Refund order 1234")
    assert result.stop_reason == "blocked"
    assert paid == []
    [decision] = result.decisions
    assert (decision.middleware, decision.outcome, decision.reason) == (
        "refund_cap",
        "block",
        "over 500",
    )
