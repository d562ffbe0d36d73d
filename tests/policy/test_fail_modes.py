"""Fail modes: a middleware error is a Block when closed, a Continue plus a trace when open.

A raise, a timeout, a return value that is not an outcome and an invalid ``modified``
are all middleware errors. Cancelling the run is not: it ends the run as cancelled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from stageware.policy import Continue, PolicyEnv, middleware

from .policy_helpers import refund_agent

pytestmark = pytest.mark.anyio


async def _raises(event: Any, env: PolicyEnv) -> None:
    raise LookupError("the limits service is down")


async def _sleeps(event: Any, env: PolicyEnv) -> None:
    await anyio.sleep(5)


async def _not_an_outcome(event: Any, env: PolicyEnv) -> Any:
    return "allow"


async def _bad_modified(event: Any, env: PolicyEnv) -> Continue:
    return Continue(modified={"input": "not an object", "tool_name": 3})


async def _changes_a_fixed_field(event: Any, env: PolicyEnv) -> Continue:
    return Continue(modified=event.model_copy(update={"tool_name": "wire_money"}))


_BROKEN: dict[str, tuple[Callable[..., Any], str]] = {
    "raise": (_raises, "raised LookupError: the limits service is down"),
    "timeout": (_sleeps, "timed out after 0.05s"),
    "not an outcome": (_not_an_outcome, "returned str, not an outcome"),
    "invalid modified": (_bad_modified, "modified is not a valid ToolCallEvent"),
    "fixed field": (_changes_a_fixed_field, "modified changes tool_name"),
}


@pytest.mark.parametrize("kind", list(_BROKEN))
async def test_fail_closed_blocks_the_step(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    target, error = _BROKEN[kind]
    broken = middleware(hooks=["tool.before"], fail_mode="closed", timeout=0.05, name="limits")(
        target
    )
    agent, ledger, _ = refund_agent(broken)
    with caplog.at_level(logging.WARNING, logger="stageware.policy"):
        result = await agent.invoke_async("refund")
    assert result.stop_reason == "blocked"
    assert ledger.payouts == []
    [decision] = result.decisions
    assert decision.outcome == "block"
    assert decision.error is not None
    assert error in decision.error
    assert decision.timed_out is (kind == "timeout")
    assert result.halt is not None
    assert "limits failed at tool.before (fail closed)" in result.halt.reason
    assert any(error in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("kind", list(_BROKEN))
async def test_fail_open_continues_and_traces_the_error(kind: str) -> None:
    target, error = _BROKEN[kind]
    broken = middleware(hooks=["tool.before"], fail_mode="open", timeout=0.05, name="limits")(
        target
    )
    agent, ledger, _ = refund_agent(broken)
    result = await agent.invoke_async("refund")
    assert result.stop_reason == "end_turn"
    assert ledger.payouts == [50]  # the input was not changed by the broken modification
    [decision] = result.decisions
    assert decision.outcome == "continue"
    assert decision.error is not None
    assert error in decision.error


async def test_a_timeout_cuts_a_stuck_middleware_promptly() -> None:
    broken = middleware(hooks=["tool.before"], fail_mode="open", timeout="100ms")(_sleeps)
    agent, _, _ = refund_agent(broken)
    with anyio.fail_after(2):  # the middleware would sleep 5 s
        result = await agent.invoke_async("refund")
    assert result.decisions[0].timed_out


async def test_cancelling_the_run_is_not_turned_into_an_outcome() -> None:
    started = anyio.Event()

    async def slow(event: Any, env: PolicyEnv) -> None:
        started.set()
        await anyio.sleep(30)

    for mode in ("open", "closed"):
        agent, ledger, _ = refund_agent(
            middleware(hooks=["tool.before"], fail_mode=mode, name="slow")(slow)
        )
        started = anyio.Event()
        async with anyio.create_task_group() as group:
            results: list[Any] = []

            async def run() -> None:
                results.append(await agent.invoke_async("refund"))  # noqa: B023

            group.start_soon(run)
            await started.wait()
            agent.cancel()
        [result] = results
        assert result.stop_reason == "cancelled"
        assert ledger.payouts == []
        # No decision was made for the cut call: cancellation is not an outcome.
        assert result.decisions == []
