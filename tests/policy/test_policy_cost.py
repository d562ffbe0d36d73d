"""What the engine resolves once, and builds fast, stays what each call would have found.

The engine resolves each middleware's band, fail mode, timeout and logger per hook point
when it is built (``Attached``), and builds each call's ``PolicyEnv`` and ``Decision``
through their slots (``_records``). These tests check that the shortcuts give what the
slow way gives: the same objects, the middleware declared for a hook point and only
those, one engine serving many agents with separate runs, timeouts still enforced, and
each middleware's logger under its installed name.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta
from typing import Any

import anyio
import pytest

from stageware import Agent, ScriptedModel
from stageware._generated.policy_points import Band, HookPoint
from stageware._host._halt import Decision
from stageware._policy._attached import Attached
from stageware._policy._records import continue_record, decision_record, policy_env
from stageware.policy import (
    Block,
    Continue,
    FailMode,
    PolicyEngine,
    PolicyEntry,
    PolicyEnv,
    Principal,
    Retry,
    middleware,
)

from .policy_helpers import Ledger, deciding, refund_agent, refund_script

pytestmark = pytest.mark.anyio

TOOL_AND_MODEL = ["tool.before", "tool.after", "model.request", "model.response"]


def _sample(point: HookPoint = HookPoint.TOOL_BEFORE) -> Attached:
    declared = middleware(hooks=[point.value], fail_mode="open", name="sample")(_let_through)
    return Attached.at(point, PolicyEntry(declared, band=Band.GUARDRAIL))


async def _let_through(event: Any, env: PolicyEnv) -> Continue:
    return Continue()


def test_a_built_env_is_the_one_the_constructor_makes() -> None:
    sample = _sample()
    fields: dict[str, Any] = {
        "run_id": "run-1",
        "session_id": "session-1",
        "agent_name": "desk",
        "hook": HookPoint.TOOL_BEFORE,
        "middleware": "sample",
        "band": Band.GUARDRAIL,
        "attempt": 2,
        "logger": logging.getLogger("stageware.policy.sample"),
        "principal": Principal("dana", frozenset({"finance"})),
    }
    built = policy_env(sample, "run-1", "session-1", "desk", 2, fields["principal"])
    # Every field, in order: a field PolicyEnv gains and the builder does not set fails here.
    assert [field.name for field in dataclasses.fields(PolicyEnv)] == [*fields, "notes"]
    assert type(built) is PolicyEnv
    assert built == PolicyEnv(**fields)
    assert built.notes == []
    assert built.notes is not policy_env(sample, "run-1", "session-1", "desk", 2).notes
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, "attempt", 3)  # noqa: B010 - the checkers refuse it as written


def test_a_continue_record_is_the_one_the_constructor_makes() -> None:
    notes = ["looked"]
    built = continue_record(_sample(HookPoint.TOOL_AFTER), "run-1", 0.012, 2, notes)
    assert type(built) is Decision
    assert built == Decision(
        run_id="run-1",
        hook="tool.after",
        middleware="sample",
        band="guardrail",
        outcome="continue",
        duration_ms=0.012,
        attempt=2,
        notes=("looked",),
    )
    notes.append("later")  # the record keeps what was noted by the end of the call
    assert built.notes == ("looked",)
    assert continue_record(_sample(), "run-1", 0.0, 1, []).notes == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, "outcome", "block")  # noqa: B010 - the checkers refuse it as written


def test_a_built_decision_is_the_one_the_constructor_makes() -> None:
    fields: dict[str, Any] = {
        "run_id": "run-1",
        "hook": "tool.before",
        "middleware": "sample",
        "band": "app",
        "outcome": "block",
        "reason": "too much",
        "modified": True,
        "duration_ms": 1.234,
        "attempt": 2,
        "error": "raised ValueError: no",
        "timed_out": True,
        "notes": ("looked",),
    }
    built = decision_record(*fields.values())
    assert type(built) is Decision
    assert [field.name for field in dataclasses.fields(Decision)] == [*fields, "approver"]
    assert built == Decision(**fields)
    assert built.approver is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, "outcome", "continue")  # noqa: B010 - the checkers refuse it as written


def _continue(name: str, hooks: list[str], calls: list[tuple[str, str]]) -> Any:
    async def policy(event: Any, env: PolicyEnv) -> Continue:
        calls.append((env.middleware, env.hook.value))
        return Continue()

    return middleware(hooks=hooks, fail_mode="open", name=name)(policy)


async def test_each_middleware_runs_at_the_hook_points_it_declares_and_no_others() -> None:
    calls: list[tuple[str, str]] = []
    tools = _continue("tools", ["tool.before", "tool.after"], calls)
    models = _continue("models", ["model.request"], calls)
    narrowed = PolicyEntry(
        _continue("narrowed", TOOL_AND_MODEL, calls), hooks=(HookPoint.TOOL_AFTER,)
    )
    agent, _, _ = refund_agent(tools, models, narrowed)
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "end_turn"
    # Two model calls, one tool call; within a band, spec order, either way.
    assert calls == [
        ("models", "model.request"),
        ("tools", "tool.before"),
        ("tools", "tool.after"),
        ("narrowed", "tool.after"),
        ("models", "model.request"),
    ]
    assert [(d.middleware, d.hook) for d in result.decisions] == calls
    engine = PolicyEngine([tools, models, narrowed])
    for point in HookPoint:
        assert [a.entry for a in engine.attached(point)] == list(engine.order(point))
    assert engine.attached(HookPoint.MODEL_RESPONSE) == ()


async def test_what_a_call_is_told_comes_from_its_entry_and_its_run() -> None:
    seen: list[PolicyEnv] = []

    def look(event: Any, env: PolicyEnv) -> None:
        seen.append(env)
        env.note(f"call {len(seen)}")

    entry = PolicyEntry(
        deciding("tool.before", look, name="looker", fail_mode="open"), band=Band.GUARDRAIL
    )
    agent, _, _ = refund_agent(entry)
    first = await agent.invoke_async("refund")
    agent.model = ScriptedModel(refund_script())
    second = await agent.invoke_async("refund")
    [one, two] = seen
    assert (one.middleware, one.band, one.hook, one.attempt) == (
        "looker",
        Band.GUARDRAIL,
        HookPoint.TOOL_BEFORE,
        1,
    )
    assert one.run_id != two.run_id
    # Notes go with their own call's record, never the next one's.
    assert one.notes == ["call 1"]
    assert two.notes == ["call 2"]
    assert [d.notes for d in first.decisions] == [("call 1",)]
    assert [d.notes for d in second.decisions] == [("call 2",)]
    assert [d.band for d in first.decisions] == ["guardrail"]


async def test_one_engine_serves_many_agents_with_runs_of_their_own() -> None:
    attempts: list[tuple[str, int]] = []

    def retry_once(event: Any, env: PolicyEnv) -> Retry | None:
        attempts.append((env.run_id, env.attempt))
        return Retry("again") if env.attempt == 1 else None

    retrying = deciding("model.response", retry_once, name="retrying", fail_mode="open")
    engine = PolicyEngine([retrying])
    tool_call, answer = refund_script()
    ledgers = [Ledger(), Ledger()]
    agents = [
        Agent(
            ScriptedModel([tool_call, tool_call, answer, answer]),
            tools=[ledger.tool],
            policy=engine,
        )
        for ledger in ledgers
    ]
    results = [await agent.invoke_async("refund") for agent in agents]
    assert all(result.stop_reason == "end_turn" for result in results)
    assert [ledger.payouts for ledger in ledgers] == [[50], [50]]
    runs = list(dict.fromkeys(run_id for run_id, _ in attempts))
    assert len(runs) == 2
    # Each run counts its own retries: both start at attempt 1, per model call.
    for run_id in runs:
        assert [attempt for r, attempt in attempts if r == run_id] == [1, 2, 1, 2]


async def test_a_timeout_is_enforced_on_every_agent_of_one_engine() -> None:
    async def stuck(event: Any, env: PolicyEnv) -> None:
        await anyio.sleep(5)

    guard = middleware(hooks=["tool.before"], fail_mode="closed", timeout="50ms")(stuck)
    engine = PolicyEngine([guard])
    for _ in range(2):
        ledger = Ledger()
        shared = Agent(ScriptedModel(refund_script()), tools=[ledger.tool], policy=engine)
        with anyio.fail_after(2):
            result = await shared.invoke_async("refund")
        assert result.stop_reason == "blocked"
        [decision] = result.decisions
        assert decision.timed_out
        assert decision.outcome == "block"
        assert decision.error == "timed out after 0.05s"
        assert ledger.payouts == []


async def test_a_spec_shortened_timeout_is_the_one_enforced() -> None:
    async def slow(event: Any, env: PolicyEnv) -> None:
        await anyio.sleep(0.5)

    declared = middleware(hooks=["tool.before"], fail_mode="open", timeout="2s")(slow)
    agent, ledger, _ = refund_agent(PolicyEntry(declared, timeout=timedelta(milliseconds=20)))
    result = await agent.invoke_async("refund")
    [decision] = result.decisions
    assert decision.timed_out
    assert decision.outcome == "continue"
    assert ledger.payouts == [50]


async def test_a_middleware_without_a_timeout_is_not_cut_short() -> None:
    async def waits(event: Any, env: PolicyEnv) -> Block:
        await anyio.sleep(0.05)
        return Block("waited, then refused")

    agent, ledger, _ = refund_agent(middleware(hooks=["tool.before"], fail_mode="open")(waits))
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "blocked"
    assert [(d.outcome, d.error) for d in result.decisions] == [("block", None)]
    assert result.decisions[0].duration_ms >= 50
    assert ledger.payouts == []


async def test_a_middleware_logs_under_its_installed_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def log(event: Any, env: PolicyEnv) -> None:
        env.logger.info("saw %s", env.hook.value)

    declared = deciding("tool.before", log, name="speaker", fail_mode="open")
    renamed = declared.with_name("acme.speaker")
    with caplog.at_level(logging.DEBUG, logger="stageware.policy"):
        agent, _, _ = refund_agent(declared, renamed)
        result = await agent.invoke_async("refund")
    said = [(r.name, r.getMessage()) for r in caplog.records if r.getMessage() == "saw tool.before"]
    assert said == [
        ("stageware.policy.speaker", "saw tool.before"),
        ("stageware.policy.acme.speaker", "saw tool.before"),
    ]
    # Each decision is still logged on stageware.policy, Continue at DEBUG.
    logged = [r for r in caplog.records if "stageware_decision" in r.__dict__]
    assert [r.__dict__["stageware_decision"] for r in logged] == list(result.decisions)
    assert {r.levelno for r in logged} == {logging.DEBUG}


async def test_a_failing_middleware_is_settled_by_its_fail_mode_at_each_hook_point() -> None:
    def broken(event: Any, env: PolicyEnv) -> None:
        raise ValueError("broken")

    closed = deciding("tool.before", broken, name="closed_one", fail_mode="closed")
    agent, ledger, _ = refund_agent(closed)
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "blocked"
    assert result.decisions[0].error == "raised ValueError: broken"
    assert ledger.payouts == []
    # run.end allows no Block: a closed middleware's error there is traced like an open one.
    at_end = middleware(hooks=["run.end"], fail_mode=FailMode.CLOSED, name="at_end")(_raising)
    agent, ledger, _ = refund_agent(at_end)
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "end_turn"
    assert ledger.payouts == [50]
    assert [(d.hook, d.outcome) for d in result.decisions] == [("run.end", "continue")]


async def _raising(event: Any, env: PolicyEnv) -> None:
    raise ValueError("broken at the end")
