"""The workflows the durable-wait tests run: a refund agent on DBOS that waits for a human.

``refund_until_answered`` records the agent's invocations as DBOS steps and, between them,
waits with ``wait_for_session`` (on a replay the steps hand back how the invocation
stopped, so nothing is invoked twice); ``refund_in_place`` calls the agent directly and
waits with ``wait_for_answers``, as ``DurableAgent`` does. Every payout is a line in a
ledger file, and every invocation a line in a log, so a test counts them across processes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dbos import DBOS

from stageware import Agent, ScriptedModel, tool
from stageware._dbos._waits import wait_for_answers, wait_for_session
from stageware.policy import Block, Escalate, PolicyEngine, PolicyEnv, Suspend, ToolCallEvent
from stageware.policy import middleware as policy_middleware
from tests.host.agent_helpers import calls
from tests.host.sessions.stores import StoreSpec, close_store, open_store

__all__ = ["APP_VERSION", "KIND", "Setup", "refund_in_place", "refund_until_answered"]

KIND = "refunds"
APP_VERSION = "stageware-waits-tests"

Setup = dict[str, Any]
"""What a run needs, as JSON: ``spec`` (the store), ``ledger``, ``log`` (paths),
``timeout``, ``on_timeout`` (``None``, ``"block"`` or ``"escalate"``), ``recheck``."""


def _guard(setup: Setup) -> Any:
    then = setup["on_timeout"]
    on_timeout = (
        Escalate("refund approval expired", queue="refunds")
        if then == "escalate"
        else Block("refund approval expired")
        if then == "block"
        else None
    )

    @policy_middleware(hooks=["tool.before"], fail_mode="closed", name="refund_guard")
    async def refund_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend:
        return Suspend("a refund needs a manager", timeout=setup["timeout"], on_timeout=on_timeout)

    return refund_guard


def _agent(setup: Setup, session_id: str, store: Any, replies: list[Any]) -> Agent:
    ledger = Path(setup["ledger"])

    @tool
    def refund(amount: int) -> str:
        """Refund an amount to the customer."""
        with ledger.open("a") as paid:
            paid.write(f"{amount}\n")
        return f"refunded {amount}"

    return Agent(
        ScriptedModel(replies),
        tools=[refund],
        policy=PolicyEngine([_guard(setup)]),
        session_store=store,
        session_id=session_id,
    )


async def _invoke(setup: Setup, session_id: str, prompt: str | None) -> dict[str, Any]:
    """One invocation on a store of its own: the first (a prompt) or the continuation."""
    with Path(setup["log"]).open("a") as log:
        log.write(f"{'prompt' if prompt else 'continue'}\n")
    store = open_store(StoreSpec.from_json(setup["spec"]))
    try:
        replies: list[Any] = [calls(("refund", {"amount": 900}, "t1"))] if prompt else []
        agent = _agent(setup, session_id, store, [*replies, "Refunded."])
        result = await agent.invoke_async(prompt)
        halt = result.halt
        return {
            "stop_reason": str(result.stop_reason),
            "escalation_id": None if halt is None else halt.escalation_id,
            "text": result.text,
        }
    finally:
        close_store(store)


async def _settled(setup: Setup, session_id: str, stopped: dict[str, Any]) -> None:
    store = open_store(StoreSpec.from_json(setup["spec"]))
    try:
        await wait_for_session(
            store,
            session_id,
            stopped["stop_reason"],
            stopped["escalation_id"],
            workflow_id=str(DBOS.workflow_id),
            recheck_seconds=setup["recheck"],
        )
    finally:
        close_store(store)


@DBOS.workflow(name="stageware-tests.refund_until_answered")
async def refund_until_answered(setup_json: str, session_id: str) -> dict[str, Any]:
    setup: Setup = json.loads(setup_json)
    stopped = await DBOS.run_step_async(
        {"name": "invoke"}, _invoke, setup, session_id, "refund 900"
    )
    await _settled(setup, session_id, stopped)
    if stopped["stop_reason"] == "interrupt":
        stopped = await DBOS.run_step_async({"name": "continue"}, _invoke, setup, session_id, None)
        # A timeout declared as Escalate ends the run escalated: that waits too.
        await _settled(setup, session_id, stopped)
    return stopped


@DBOS.workflow(name="stageware-tests.refund_in_place")
async def refund_in_place(setup_json: str, session_id: str) -> dict[str, Any]:
    setup: Setup = json.loads(setup_json)
    store = open_store(StoreSpec.from_json(setup["spec"]))
    try:
        agent = _agent(
            setup, session_id, store, [calls(("refund", {"amount": 900}, "t1")), "Refunded."]
        )
        result = await agent.invoke_async("refund 900")
        await wait_for_answers(
            agent, result, workflow_id=str(DBOS.workflow_id), recheck_seconds=setup["recheck"]
        )
        agent.reload_session()  # the answer was saved by another process
        result = await agent.invoke_async()
        return {"stop_reason": str(result.stop_reason), "text": result.text}
    finally:
        close_store(store)
