"""A worker process for the multi-process session tests: one agent, one job, then exit.

Run as ``python -m tests.host.sessions.agent_worker JOB STORE ...``; STORE is a
``StoreSpec`` as JSON. The worker prints one line of JSON saying what happened, which the
test reads.

Jobs:

- ``append STORE TEXT``: add one user turn, reloading and retrying on a conflict.
- ``ask STORE``: start a refund that stops for approval; prints the interrupt id.
- ``resume STORE LEDGER ID READY GO``: load the session, create the file READY, wait for
  the file GO, then answer ID with "yes".
- ``resume-and-die STORE LEDGER ID``: answer ID, then die (SIGKILL) at the next model
  call: after the approved tool ran, before the invocation's final save.
- ``continue STORE LEDGER READY GO``: create the file READY, wait for the file GO, then
  wait for the session's lease to lapse and continue the resume that was cut short
  (``agent()`` with no prompt). Started before the kill, so that its start-up (seconds on a
  loaded machine) does not eat the dead worker's lease.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from stageware import (
    Agent,
    ModelRequest,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    SessionConflictError,
    SessionLeasedError,
    SessionStore,
    ToolContext,
    tool,
)

from .stores import StoreSpec, open_store

SESSION = "shared-session"
# Long enough that a worker told to go when another was killed still finds its lease held;
# short, since the test waits it out.
LEASE_SECONDS = 4.0


def refund_tool(ledger: Path) -> Any:
    @tool
    def refund(amount: int, context: ToolContext) -> str:
        """Refund an amount once a human approved it.

        Args:
            amount: How much.
        """
        context.interrupt("approve", reason=amount)
        # O_APPEND: each line lands whole, whichever process writes it.
        with ledger.open("a") as file:
            file.write(f"refunded {amount} by P{os.getpid()}\n")
        return "refunded"

    return refund


def agent_for(store: SessionStore, model: ScriptedModel, ledger: Path | None = None) -> Agent:
    tools = [] if ledger is None else [refund_tool(ledger)]
    return Agent(
        model, tools=tools, session_store=store, session_id=SESSION, session_lease=LEASE_SECONDS
    )


def report(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def append(store: SessionStore, text: str) -> None:
    conflicts = 0
    while True:
        agent = agent_for(store, ScriptedModel([f"noted {text}"]))
        try:
            agent(text)
        except SessionConflictError:  # a lease error is a conflict too
            conflicts += 1
            time.sleep(0.005 * min(conflicts, 20))
            continue
        report(ok=True, conflicts=conflicts)
        return


def ask(store: SessionStore, ledger: Path) -> None:
    turn = ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 5}, id="t1")])
    result = agent_for(store, ScriptedModel([turn]), ledger)("refund me 5")
    report(interrupt_id=result.interrupts[0].id, stop_reason=result.stop_reason)


def resume(store: SessionStore, ledger: Path, interrupt_id: str, ready: Path, go: Path) -> None:
    agent = agent_for(store, ScriptedModel(["Refunded."]), ledger)
    ready.touch()
    while not go.exists():
        time.sleep(0.001)
    try:
        result = agent([{"interruptResponse": {"interruptId": interrupt_id, "response": "yes"}}])
    except SessionConflictError as error:
        report(ok=False, error=type(error).__name__)
        return
    report(ok=True, text=result.text)


def die(request: ModelRequest) -> NoReturn:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def resume_and_die(store: SessionStore, ledger: Path, interrupt_id: str) -> None:
    agent = agent_for(store, ScriptedModel([die]), ledger)
    agent([{"interruptResponse": {"interruptId": interrupt_id, "response": "yes"}}])
    report(ok=True, survived=True)  # the test fails on this line: the worker should be dead


def continue_run(store: SessionStore, ledger: Path, ready: Path, go: Path) -> None:
    ready.touch()
    while not go.exists():
        time.sleep(0.001)
    refused = 0
    while True:
        agent = agent_for(store, ScriptedModel(["Refunded after a restart."]), ledger)
        try:
            result = agent()
        except SessionLeasedError:
            refused += 1
            time.sleep(0.05)
            continue
        report(ok=True, text=result.text, refused=refused, pending=len(agent.pending_interrupts))
        return


def main(argv: list[str]) -> None:
    job, spec, *rest = argv
    store = open_store(StoreSpec.from_json(spec))
    if job == "append":
        append(store, rest[0])
    elif job == "ask":
        ask(store, Path(rest[0]))
    elif job == "resume":
        resume(store, Path(rest[0]), rest[1], Path(rest[2]), Path(rest[3]))
    elif job == "resume-and-die":
        resume_and_die(store, Path(rest[0]), rest[1])
    elif job == "continue":
        continue_run(store, Path(rest[0]), Path(rest[1]), Path(rest[2]))
    else:
        raise SystemExit(f"unknown job {job!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
