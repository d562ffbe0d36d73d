"""A worker process for the sub-agent restart test: a parent and its sub-agent, one job.

Run as ``python -m tests.host.sub_agent_worker DB``: DB is the SQLite session file. The
parent's model calls the sub-agent ``payer``, whose model calls ``pay``, which the
sub-agent's policy suspends for someone in finance. Prints one line of JSON (the stop
reason and the interrupt ids), which the test reads; the test resumes in its own process.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from stageware import Agent, ScriptedModel, SQLiteSessionStore, tool
from stageware.policy import PolicyEngine, PolicyEnv, Suspend, ToolCallEvent, middleware
from tests.host.agent_helpers import calls
from tests.policy.approvers import authenticator

SESSION = "order-42"


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def pay_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
    """Payments wait for someone in finance."""
    return Suspend("a payment", approvers=["role:finance"])


def team(db: str, paid: list[int], sub_script: list[Any], parent_script: list[Any]) -> Agent:
    """The parent and its sub-agent on the session file *db*; ``pay`` appends to *paid*."""

    @tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return "paid"

    sub = Agent(
        ScriptedModel(sub_script),
        tools=[pay],
        agent_id="payer",
        policy=PolicyEngine([pay_guard], authenticator=authenticator()),
    )
    return Agent(
        ScriptedModel(parent_script),
        tools=[sub.as_tool()],
        agent_id="desk",
        session_store=SQLiteSessionStore(db),
        session_id=SESSION,
    )


def main(db: str) -> None:
    paid: list[int] = []
    parent = team(
        db,
        paid,
        [calls(("pay", {"amount": 70}, "call_0"))],
        [calls(("payer", {"input": "pay 70"}, "p1"))],
    )
    result = parent("pay the supplier")
    print(
        json.dumps(
            {
                "stop_reason": result.stop_reason,
                "ids": [i.id for i in result.interrupts],
                "paid": paid,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
