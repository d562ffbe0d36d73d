"""The engine's order: bands outermost first on the way in, innermost first on the way out."""

from __future__ import annotations

from typing import Any

from stageware.policy import (
    Band,
    Continue,
    HookPoint,
    PolicyEngine,
    PolicyEntry,
    PolicyEnv,
    middleware,
)

from .policy_helpers import deciding, refund_agent


def _named(name: str, band: str, hooks: list[str]) -> PolicyEntry:
    async def policy(event: Any, env: PolicyEnv) -> None:
        return None

    declared = middleware(hooks=hooks, fail_mode="open", name=name)(policy)
    if band == "baseline":
        return PolicyEntry(declared, band=Band.BASELINE, baseline=True)
    return PolicyEntry(declared, band=Band(band))


def test_inbound_runs_outermost_band_first_and_outbound_innermost_first() -> None:
    hooks = ["tool.before", "tool.after"]
    engine = PolicyEngine(
        [
            _named("app1", "app", hooks),
            _named("guard1", "guardrail", hooks),
            _named("base1", "baseline", hooks),
            _named("platform1", "platform", hooks),
            _named("guard2", "guardrail", hooks),
            _named("app2", "app", hooks),
        ]
    )
    inbound = [entry.name for entry in engine.order(HookPoint.TOOL_BEFORE)]
    outbound = [entry.name for entry in engine.order(HookPoint.TOOL_AFTER)]
    assert inbound == ["base1", "guard1", "guard2", "platform1", "app1", "app2"]
    # Spec order within a band, both ways.
    assert outbound == ["app1", "app2", "platform1", "guard1", "guard2", "base1"]
    assert engine.order(HookPoint.RUN_START) == ()


def test_a_narrowed_entry_attaches_only_to_its_hooks() -> None:
    declared = _named("both", "app", ["tool.before", "tool.after"]).middleware
    engine = PolicyEngine([PolicyEntry(declared, hooks=(HookPoint.TOOL_AFTER,))])
    assert engine.order(HookPoint.TOOL_BEFORE) == ()
    assert [e.name for e in engine.order(HookPoint.TOOL_AFTER)] == ["both"]


def test_the_first_outcome_other_than_continue_ends_the_sequence() -> None:
    from stageware.policy import Block

    seen: list[str] = []

    def record(name: str, outcome: Any) -> Any:
        def decide(event: Any, env: PolicyEnv) -> Any:
            seen.append(name)
            return outcome

        return decide

    agent, ledger, _ = refund_agent(
        PolicyEntry(
            deciding("tool.before", record("g", Continue()), name="g"), band=Band.GUARDRAIL
        ),
        deciding("tool.before", record("a1", Block("no")), name="a1"),
        deciding("tool.before", record("a2", None), name="a2"),
    )
    result = agent("refund please")
    assert seen == ["g", "a1"]
    assert result.stop_reason == "blocked"
    assert ledger.payouts == []
    assert [(d.middleware, d.outcome) for d in result.decisions] == [
        ("g", "continue"),
        ("a1", "block"),
    ]
