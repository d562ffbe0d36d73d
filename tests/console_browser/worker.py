"""A deployment's worker for the console's browser tests: durable refund requests on DBOS
that wait, suspended, for an approval only finance may give.

    python -m tests.console_browser.worker CONFIG_JSON

It launches DBOS on the system database ``CONFIG_JSON`` names, opens the session store
it names (SQLite or PostgreSQL), prints ``{"ready": true}``, then reads session ids from
its input, one a line, and starts each session's request: "Refund order <session id>:
it arrived broken." and what follows the id on the line.
The model asks to refund 30 EUR for that order; the policy suspends the call for
``role:finance``; once answered the run goes on (approved: the refund runs, logged as a
line of the tool's log; denied: the step is blocked). An order whose id starts with
``dispute-`` is escalated to the ``refunds`` queue instead, and its request waits until
a human resolves it. Each request's end is printed as its ``DurableResult``, one JSON
line. It shuts DBOS down when its input closes.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from dataclasses import asdict, dataclass
from typing import Final

from dbos import WorkflowHandle

from stageware import Agent, ScriptedModel, ScriptedToolCall, ScriptedTurn, tool
from stageware._host.models._scripted import ModelRequest
from stageware._host.sessions import SessionStore
from stageware.dbos import DurableAgent, DurableResult, launch, shutdown
from stageware.policy import Escalate, PolicyEngine, PolicyEnv, Suspend, ToolCallEvent
from stageware.policy import middleware as policy_middleware
from tests.host.sessions.stores import StoreSpec, close_store, open_store

KIND: Final = "console-refund"
AMOUNT: Final = 30
REASON: Final = "refunds need finance's approval"
DISPUTED: Final = "dispute-"
ESCALATION: Final = "a disputed order goes to the refunds desk"
QUEUE: Final = "refunds"


@dataclass(frozen=True)
class WorkerConfig:
    """Where the worker keeps its state; travels to the process as JSON.

    Attributes:
        dbos_url: DBOS's system database (``sqlite:////absolute.db``, ``postgresql://...``).
        store: The session store's ``StoreSpec``, as JSON.
        tool_log: The refund tool's log: one line ``<order> <amount>`` a run.
    """

    dbos_url: str
    store: str
    tool_log: str

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def prompt_for(session_id: str) -> str:
    """The prompt the worker sends on *session_id* (and what its input line adds)."""
    return f"Refund order {session_id}: it arrived broken."


_config: WorkerConfig | None = None
_store: SessionStore | None = None


@tool
def refund(order: str, amount: int) -> str:
    """Refund an order to the customer.

    Args:
        order: The order's number.
        amount: In euros.
    """
    assert _config is not None
    with open(_config.tool_log, "a", encoding="utf-8") as log:
        log.write(f"{order} {amount}\n")
    return f"refunded {amount} EUR for order {order}"


def _respond(request: ModelRequest) -> ScriptedTurn | str:
    # Decided from the conversation alone, so that a continuation answers as the first
    # invocation would.
    first = request.messages[0]["content"][0]
    found = re.search(r"order (\S+):", first.get("text", ""))
    assert found is not None, first
    order = found.group(1)
    results = [
        block["toolResult"] for block in request.messages[-1]["content"] if "toolResult" in block
    ]
    if not results:
        return ScriptedTurn(
            text=f"I will refund order {order}.",
            tool_calls=[ScriptedToolCall("refund", {"order": order, "amount": AMOUNT})],
        )
    if results[0].get("status") == "error":
        return f"The refund of order {order} was not approved."
    return f"Refunded {AMOUNT} EUR for order {order}."


@policy_middleware(hooks=["tool.before"], fail_mode="closed", name="refund_approval")
async def refund_approval(event: ToolCallEvent, env: PolicyEnv) -> Suspend | Escalate:
    """Every refund waits for finance; a disputed order's goes to a human's queue."""
    if str(event.input["order"]).startswith(DISPUTED):
        return Escalate(ESCALATION, queue=QUEUE)
    return Suspend(REASON, details={"input": event.input}, approvers=["role:finance"])


def _build(session_id: str) -> Agent:
    assert _store is not None
    return Agent(
        ScriptedModel([_respond] * 10),
        tools=[refund],
        policy=PolicyEngine([refund_approval]),
        session_store=_store,
        session_id=session_id,
    )


refunds = DurableAgent(KIND, _build, wait_for_approvals=True)
_printing = threading.Lock()


def _report(handle: WorkflowHandle[DurableResult]) -> None:
    result = handle.get_result()
    with _printing:
        print(json.dumps(result.to_dict()), flush=True)


def main(config_json: str) -> None:
    global _config, _store
    _config = WorkerConfig(**json.loads(config_json))
    _store = open_store(StoreSpec.from_json(_config.store))
    # The store makes its tables on first use; the console opens only a store that has them.
    _store.load("no-such-session")
    launch(
        name="stageware-console-tests",
        database_url=_config.dbos_url,
        config={"log_level": "WARNING", "application_version": "stageware-console-tests"},
    )
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        session_id, _, more = line.rstrip("\n").partition(" ")
        prompt = f"{prompt_for(session_id)} {more}".rstrip()
        handle = refunds.start(prompt, session_id=session_id)
        threading.Thread(target=_report, args=(handle,), daemon=True).start()
    shutdown()
    close_store(_store)


if __name__ == "__main__":
    main(sys.argv[1])
