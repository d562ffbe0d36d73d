"""A worker process that dies (SIGKILL) at one point of an ordinary run, and its takeover.

Run as ``python -m tests.host.sessions.crash_worker JOB STORE LEDGER ...``; STORE is a
``StoreSpec`` as JSON, LEDGER a file each tool appends one line to per side effect (with
``O_APPEND`` a line lands whole, whichever process writes it). The worker prints one line
of JSON saying what happened, which the test reads.

The run: the prompt "refund order 7"; the model asks for two tools at once, ``refund``
(the side effect that must not happen twice) and ``lookup`` (at the points ``tool`` and
``result``, still running when the worker dies); then
the model answers "Refunded.".

Jobs:

- ``run STORE LEDGER POINT``: run it, and die at POINT:

  - ``input``: right after the save that records the prompt (the claim's);
  - ``turn``: right after the save that records the model turn with the tool calls;
  - ``tool``: inside ``refund``, after its side effect, before its result exists;
  - ``result``: right after the save that records ``refund``'s result (``lookup`` is
    still running);
  - ``answer``: right after the save that records the final answer, before the
    invocation's final save.

- ``continue STORE LEDGER``: wait for the dead worker's lease to lapse, then continue the
  run (``agent()`` with no prompt) with a model that answers whatever it is asked.
- ``retry STORE LEDGER``: wait for the lease to lapse, then send the prompt again, as a
  client that retries its request would.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, NoReturn, cast

from stageware import (
    Agent,
    ModelRequest,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    SessionError,
    SessionLeasedError,
    SessionSnapshot,
    SessionStore,
    tool,
)

from .stores import DelegatingStore, StoreSpec, open_store

SESSION = "crash-session"
PROMPT = "refund order 7"
ANSWER = "Refunded."
# Short: the takeover waits it out. Nothing else runs while a worker is alive.
LEASE_SECONDS = 1.0
POINTS = ("input", "turn", "tool", "result", "answer")


def die() -> NoReturn:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def report(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def completed_calls(snapshot: SessionSnapshot) -> set[str]:
    """The ids of the calls whose results the stored round holds."""
    pending = snapshot["interrupt_state"].get("pending_tool_execution")
    return set() if pending is None else set(pending["completed"])


class DyingStore(DelegatingStore):
    """A store that kills its process right after the save that records the point's step.

    Everything else goes to the real store; the save is committed before the kill, so
    the step is recorded and nothing after it is.
    """

    def __init__(self, store: SessionStore, point: str) -> None:
        super().__init__(store)
        self._point = point

    def saved(
        self, snapshot: SessionSnapshot, *, lease_seconds: float | None, kept_messages: int
    ) -> None:
        new = snapshot["messages"]
        last = new[-1] if new else None
        if self._point == "input" and snapshot["interrupt_state"]["pending_input"] is not None:
            die()
        if self._point == "turn" and last is not None and _calls_tools(last):
            die()
        if self._point == "result" and "t1" in completed_calls(snapshot):
            die()
        if (
            self._point == "answer"
            and lease_seconds is not None
            and last is not None
            and last["role"] == "assistant"
            and not _calls_tools(last)
        ):
            die()


def _calls_tools(message: Any) -> bool:
    return any("toolUse" in block for block in message["content"])


def tools(ledger: Path, point: str) -> list[Any]:
    @tool
    def refund(order: int) -> str:
        """Refund an order.

        Args:
            order: The order.
        """
        with ledger.open("a") as file:
            file.write(f"refund {order} by P{os.getpid()}\n")
        if point == "tool":
            die()
        return "refunded"

    @tool
    def lookup(order: int) -> str:
        """Look an order up; at ``tool`` and ``result``, still running when the worker dies.

        Args:
            order: The order.
        """
        if point in ("tool", "result"):
            time.sleep(60)  # the kill comes first
        with ledger.open("a") as file:
            file.write(f"lookup {order} by P{os.getpid()}\n")
        return "order 7: paid"

    return [refund, lookup]


def respond(request: ModelRequest) -> ScriptedTurn | str:
    """The model of every worker: the tool calls for the prompt, then the answer."""
    last = request.messages[-1]
    if any("toolResult" in block for block in last["content"]):
        return ANSWER
    return ScriptedTurn(
        tool_calls=[
            ScriptedToolCall("refund", {"order": 7}, id="t1"),
            ScriptedToolCall("lookup", {"order": 7}, id="t2"),
        ]
    )


def agent_for(store: SessionStore, ledger: Path, point: str, model: ScriptedModel) -> Agent:
    return Agent(
        model,
        tools=tools(ledger, point),
        session_store=store,
        session_id=SESSION,
        session_lease=LEASE_SECONDS,
    )


def run(store: SessionStore, ledger: Path, point: str) -> None:
    dying = cast("SessionStore", DyingStore(store, point))
    agent_for(dying, ledger, point, ScriptedModel([respond, respond]))(PROMPT)
    report(survived=True)  # the test fails on this: the worker should be dead


def continue_run(store: SessionStore, ledger: Path) -> None:
    refused = 0
    while True:
        model = ScriptedModel([respond, respond])
        agent = agent_for(store, ledger, "", model)
        try:
            result = agent()
        except SessionLeasedError:
            refused += 1
            time.sleep(0.05)
            continue
        report(
            text=result.text,
            stop_reason=result.stop_reason,
            model_calls=len(model.requests),
            refused=refused,
        )
        return


def retry(store: SessionStore, ledger: Path) -> None:
    while True:
        model = ScriptedModel([respond, respond])
        agent = agent_for(store, ledger, "", model)
        try:
            agent(PROMPT)
        except SessionLeasedError:
            time.sleep(0.05)
            continue
        except SessionError as error:
            report(error=type(error).__name__, message=str(error), model_calls=len(model.requests))
            return
        report(error=None, model_calls=len(model.requests))
        return


def main(argv: list[str]) -> None:
    job, spec, ledger, *rest = argv
    store = open_store(StoreSpec.from_json(spec))
    if job == "run":
        run(store, Path(ledger), rest[0])
    elif job == "continue":
        continue_run(store, Path(ledger))
    elif job == "retry":
        retry(store, Path(ledger))
    else:
        raise SystemExit(f"unknown job {job!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
