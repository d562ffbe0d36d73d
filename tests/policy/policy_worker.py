"""A worker process for the durable-approval tests: one agent with a policy, one job, exit.

Run as ``python -m tests.policy.policy_worker JOB STORE LEDGER ...``; STORE is a
``StoreSpec`` as JSON. The worker prints one line of JSON, which the test reads.

Jobs:

- ``ask STORE LEDGER``: ask for a refund of 500, which the policy suspends for approval;
  prints the interrupt id.
- ``approve STORE LEDGER ID READY GO``: load the session, create READY, wait for GO, then
  resume with an approval of ID.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from stageware import (
    Agent,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    SessionConflictError,
    tool,
)
from stageware.policy import PolicyEngine, PolicyEnv, Suspend, ToolCallEvent, middleware
from tests.host.sessions.stores import StoreSpec, open_store
from tests.policy.approvers import authenticator, credential

SESSION = "policy-session"


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def large_refunds_need_approval(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
    """Refunds over 100 wait for a person's approval."""
    if event.input.get("amount", 0) > 100:
        return Suspend(f"refund of {event.input['amount']}")
    return None


def _agent(spec: str, ledger: Path, script: list[Any]) -> Agent:
    @tool
    def refund(amount: int) -> str:
        """Refund an amount."""
        with ledger.open("a") as file:  # O_APPEND: whole lines from any process
            file.write(f"refunded {amount} by P{os.getpid()}\n")
        return "refunded"

    return Agent(
        ScriptedModel(script),
        tools=[refund],
        policy=PolicyEngine([large_refunds_need_approval], authenticator=authenticator()),
        session_store=open_store(StoreSpec.from_json(spec)),
        session_id=SESSION,
        session_lease=5.0,
    )


def _report(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def main(job: str, spec: str, ledger: str, *rest: str) -> None:
    path = Path(ledger)
    if job == "ask":
        turn = ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 500}, id="t1")])
        result = _agent(spec, path, [turn])("refund 500 please")
        _report(stop_reason=result.stop_reason, interrupt_id=result.interrupts[0].id)
        return
    if job == "approve":
        interrupt_id, ready, go = rest
        agent = _agent(spec, path, ["Refunded after approval."])
        Path(ready).touch()
        while not Path(go).exists():
            time.sleep(0.001)
        answer = {"approved": True, "credential": credential(f"worker-{os.getpid()}")}
        try:
            result = agent(
                [{"interruptResponse": {"interruptId": interrupt_id, "response": answer}}]
            )
        except SessionConflictError as error:
            _report(ok=False, error=type(error).__name__)
            return
        _report(ok=True, stop_reason=result.stop_reason, text=result.text)
        return
    raise SystemExit(f"unknown job {job!r}")


if __name__ == "__main__":
    main(*sys.argv[1:])
