"""A worker process for the MCP policy test: an agent with an MCP server's tools, one job.

Run as ``python -m tests.host.mcp_policy_worker JOB DB RECORD [ID]``: DB is the SQLite
session file, RECORD the directory the MCP server records its calls in. Prints one line
of JSON, which the test reads.

- ``ask``: the model calls the server's ``add`` with a large sum, which the policy
  suspends for approval; prints the interrupt id.
- ``approve ID``: a fresh client (a new server process) and agent load the session and
  resume with an approval of ID.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn, SQLiteSessionStore
from stageware.mcp import MCPClient
from stageware.policy import PolicyEngine, PolicyEnv, Suspend, ToolCallEvent, middleware
from tests.policy.approvers import authenticator, credential

from .mcp_servers.servers import stdio_client

SESSION = "mcp-policy-session"


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def large_sums_need_approval(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
    """Sums over 100 wait for a person's approval."""
    if event.tool_name == "add" and event.input.get("a", 0) > 100:
        return Suspend(f"add {event.input['a']}")
    return None


def _agent(client: MCPClient, db: str, script: list[Any]) -> Agent:
    return Agent(
        ScriptedModel(script),
        tools=[client],
        policy=PolicyEngine([large_sums_need_approval], authenticator=authenticator()),
        session_store=SQLiteSessionStore(db),
        session_id=SESSION,
    )


def main(job: str, db: str, record: str, *rest: str) -> None:
    with stdio_client(record=Path(record)) as client:
        if job == "ask":
            turn = ScriptedTurn(tool_calls=[ScriptedToolCall("add", {"a": 500, "b": 1}, id="t1")])
            result = _agent(client, db, [turn])("add 500 and 1")
            print(json.dumps({"stop_reason": result.stop_reason, "id": result.interrupts[0].id}))
            return
        (interrupt_id,) = rest
        agent = _agent(client, db, ["501."])
        answer = {"approved": True, "credential": credential("approver")}
        result = agent([{"interruptResponse": {"interruptId": interrupt_id, "response": answer}}])
        results = [
            block["toolResult"]
            for message in agent.messages
            for block in message["content"]
            if "toolResult" in block
        ]
        print(
            json.dumps({"stop_reason": result.stop_reason, "text": result.text, "results": results})
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
