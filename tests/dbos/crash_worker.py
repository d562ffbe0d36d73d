"""A worker process of a durable agent that dies (SIGKILL) at a chosen step boundary.

Run as ``python -m tests.dbos.crash_worker CONFIG`` with a ``WorkerConfig`` as JSON. The
worker launches DBOS on the test's database (an application of the test's own), registers
the ``crash`` agent kind, and then, by its job:

- ``run``: starts the run of ``PROMPT`` for the session and waits for its end, printing
  one line of JSON (the ``DurableResult``); a worker told to die never prints it;
- ``serve``: serves: takes over the workflows of dead workers (DBOS recovery) until its
  standard input closes, then prints ``{"served": true}``;
- ``finish``: waits for the session's workflow, which DBOS recovered at launch (a
  restarted process with the dead one's executor id), and prints its result.

The run (the same in every worker, so that the uninterrupted reference and a run killed
anywhere can be compared): the model asks for ``lookup`` (t1) and ``note`` (t2) at once;
then for ``refund`` (t3), which the ``refund_gate`` policy suspends for one approval;
approved, the refund runs and the model answers ``ANSWER``. Six steps, in order: model,
t1, t2, model, t3, model. Every tool run adds a row to the ledger (its tool use id and this
process id), which the test counts.

Dying: with ``kill=N`` the worker kills itself once its N-th step is recorded in the
journal, before step N+1 does anything (the step bodies check at their start, and a step
of a concurrent round first waits for the steps drawn before it, so that the order the
kill lands in is fixed). ``kill="interrupt"`` dies right after the save that stores the
pending approval, ``kill="final"`` right after the run's final save. ``pause=N`` stops at
the same place instead, writes ``pause_file`` and goes on once the test deletes it.

``journal="none"`` replaces the DBOS journal with one that records nothing (each step
just runs): the test that proves the kill tests bite runs the same kills in that mode.
This module reads the mode; no product code does.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn, cast

from stageware import (
    Agent,
    ModelRequest,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    SessionSnapshot,
    SessionStore,
    SQLiteSessionStore,
    ToolContext,
    tool,
)
from stageware.policy import PolicyEngine, PolicyEnv, Suspend, ToolCallEvent, middleware
from tests.host.sessions.stores import DelegatingStore

KIND = "crash"
PROMPT = "refund order 7"
ANSWER = "Refunded 250 on order 7."
REFUND = 250
STEPS = 6
"""Model, t1, t2, model, t3, model."""

ALIVE_SECONDS = 120.0
"""How long a worker waits for anything before it gives up: the test's own bound is shorter."""


@dataclass(frozen=True)
class WorkerConfig:
    """What one worker process does (travels to it as JSON).

    Attributes:
        job: ``run``, ``serve`` or ``finish``.
        database: The DBOS database: a ``postgresql://`` URL or ``sqlite:///path``.
        sessions: Where the session store lives: the same kind of URL; SQLite is a file
            of its own.
        schema: The session store's Postgres schema (unused on SQLite).
        ledger: The ledger: the Postgres URL (table ``crash_ledger``) or an SQLite file.
        app: The DBOS application name (one per test).
        session: The session the run is for.
        executor_id: DBOS's executor id (``None``: ``launch`` picks a unique one).
        kill: The step count to die at, or ``"interrupt"`` / ``"final"``; ``None``: live.
        pause: The step count to pause at (see the module docstring).
        pause_file: The file a pause writes and waits to see deleted.
        journal: ``dbos``, or ``none`` for the journal that records nothing.
        lease: The session lease, in seconds (short: a replay waits out its own).
        watch_seconds: How often the dead-worker watcher looks.
    """

    job: str
    database: str
    sessions: str
    ledger: str
    app: str
    session: str
    schema: str = "stageware"
    executor_id: str | None = None
    kill: int | str | None = None
    pause: int | None = None
    pause_file: str = ""
    journal: str = "dbos"
    lease: float = 1.5
    watch_seconds: float = 0.5

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerConfig:
        return cls(**json.loads(text))


def die() -> NoReturn:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def report(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


# The ledger: one row per run of a tool, written before the tool returns.


class Ledger:
    """The rows the tools write: ``(session, tool_use_id, tool, pid)``, one per run."""

    def __init__(self, target: str) -> None:
        self.target = target

    @property
    def _postgres(self) -> bool:
        return self.target.startswith(("postgresql://", "postgres://"))

    def create(self) -> None:
        statement = (
            "CREATE TABLE IF NOT EXISTS crash_ledger "
            "(session TEXT NOT NULL, tool_use_id TEXT NOT NULL, tool TEXT NOT NULL, "
            "pid INTEGER NOT NULL)"
        )
        self._execute(statement, ())

    def record(self, session: str, tool_use_id: str, name: str) -> None:
        if self._postgres:
            statement = "INSERT INTO crash_ledger VALUES (%s, %s, %s, %s)"
        else:
            statement = "INSERT INTO crash_ledger VALUES (?, ?, ?, ?)"
        self._execute(statement, (session, tool_use_id, name, os.getpid()))

    def rows(self, session: str) -> list[tuple[str, str, int]]:
        """The runs of *session*'s tools: ``(tool_use_id, tool, pid)``."""
        statement = (
            "SELECT tool_use_id, tool, pid FROM crash_ledger WHERE session = {} "
            "ORDER BY tool_use_id"
        )
        found: list[tuple[Any, ...]]
        if self._postgres:
            import psycopg

            with psycopg.connect(self.target) as connection:
                found = connection.execute(statement.format("%s").encode(), (session,)).fetchall()
        else:
            lite = sqlite3.connect(self.target, timeout=30)
            try:
                found = lite.execute(statement.format("?"), (session,)).fetchall()
            finally:
                lite.close()
        return [(str(r[0]), str(r[1]), int(r[2])) for r in found]

    def _execute(self, statement: str, parameters: tuple[object, ...]) -> None:
        if self._postgres:
            import psycopg

            with psycopg.connect(self.target, autocommit=True) as connection:
                connection.execute(statement.encode(), parameters)
            return
        lite = sqlite3.connect(self.target, timeout=30)
        try:
            with lite:
                lite.execute(statement, parameters)
        finally:
            lite.close()


# The agent.


def respond(request: ModelRequest) -> ScriptedTurn | str:
    """Every worker's model: the turn that follows the last message of the request."""
    last = request.messages[-1]
    results = {
        block["toolResult"]["toolUseId"] for block in last["content"] if "toolResult" in block
    }
    if "t3" in results:
        return ANSWER
    if results:
        return ScriptedTurn(
            text="Looked it up; refunding.",
            tool_calls=[ScriptedToolCall("refund", {"order": 7, "amount": REFUND}, id="t3")],
        )
    return ScriptedTurn(
        tool_calls=[
            ScriptedToolCall("lookup", {"order": 7}, id="t1"),
            ScriptedToolCall("note", {"text": "customer asked for a refund"}, id="t2"),
        ]
    )


def tools(ledger: Ledger, session: str) -> list[Any]:
    @tool
    def lookup(order: int, context: ToolContext) -> str:
        """Look an order up.

        Args:
            order: The order.
        """
        ledger.record(session, str(context.tool_use["toolUseId"]), "lookup")
        return f"order {order}: paid {REFUND}"

    @tool
    def note(text: str, context: ToolContext) -> str:
        """Add a note to the customer's file.

        Args:
            text: The note.
        """
        ledger.record(session, str(context.tool_use["toolUseId"]), "note")
        return "noted"

    @tool
    def refund(order: int, amount: int, context: ToolContext) -> str:
        """Refund an order.

        Args:
            order: The order.
            amount: How much.
        """
        ledger.record(session, str(context.tool_use["toolUseId"]), "refund")
        return f"refunded {amount} on order {order}"

    return [lookup, note, refund]


@middleware(hooks=["tool.before"], fail_mode="closed", name="refund_gate")
async def refund_gate(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
    """Every refund waits for one approval."""
    if event.tool_name == "refund":
        return Suspend(f"refund of {event.input.get('amount')} needs approval")
    return None


class DyingStore(DelegatingStore):
    """The session store, which kills its process right after the save the config names."""

    def __init__(self, store: SessionStore, kill: int | str | None) -> None:
        super().__init__(store)
        self._kill = kill

    def saved(
        self, snapshot: SessionSnapshot, *, lease_seconds: float | None, kept_messages: int
    ) -> None:
        if lease_seconds is None:  # the final save of an invocation: it releases the lease
            interrupts: list[dict[str, Any]] = snapshot["interrupt_state"].get("interrupts") or []
            if self._kill == "interrupt" and any(i["response"] is None for i in interrupts):
                die()
            if self._kill == "final" and any(
                block.get("text") == ANSWER
                for message in snapshot["messages"]
                for block in message["content"]
            ):
                die()


STORE_SECONDS = 10.0
"""The bound of each store call: long, since these tests are about crashes, not a slow
database, and they start many processes at once on small machines."""


def open_sessions(config: WorkerConfig) -> SessionStore:
    if config.sessions.startswith("sqlite:///"):
        return SQLiteSessionStore(config.sessions.removeprefix("sqlite:///"))
    from stageware.postgres import PostgresSessionStore

    return PostgresSessionStore(
        config.sessions, schema=config.schema, statement_timeout=STORE_SECONDS
    )


# Dying between steps: the journal's calls, counted.


class StepGate:
    """Counts the steps the journal recorded, and stops the process at the configured one.

    Every step body starts with ``before(number)``: a step drawn after others of its
    round that are still running waits for them to be recorded first (so concurrent
    steps are recorded in the order drawn, and a kill lands between the same two steps
    on every run); then, if the recorded count is the configured one, the process dies
    (or pauses) before the step does anything.
    """

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.recorded = 0
        self._drawn = 0
        self._running: set[int] = set()

    def draw(self) -> int:
        self._drawn += 1
        return self._drawn

    async def before(self, number: int) -> None:
        self._running.add(number)
        # Let the other calls of a concurrent round reach the journal too.
        await asyncio.sleep(0.05)
        deadline = time.monotonic() + ALIVE_SECONDS
        while any(other < number for other in self._running) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await self._stop_here()

    def after(self, number: int) -> None:
        self._running.discard(number)
        self.recorded += 1

    async def _stop_here(self) -> None:
        if self.config.kill == self.recorded:
            die()
        if self.config.pause == self.recorded:
            pause_file = Path(self.config.pause_file)
            pause_file.write_text(str(os.getpid()))
            deadline = time.monotonic() + ALIVE_SECONDS
            while pause_file.exists() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)


def gate_journal(config: WorkerConfig) -> None:
    """Route the DBOS journal's steps through a ``StepGate`` (and, for ``journal="none"``,
    record nothing at all).

    The journal class is patched, not the host: the host sends its calls to whatever
    journal is current, and the DBOS workflow makes the current one a ``DBOSJournal``.
    """
    from stageware._dbos._journal import DBOSJournal

    gate = StepGate(config)
    original_reserve = DBOSJournal.reserve
    original_run = DBOSJournal.run

    def reserve(self: Any, name: str) -> object:
        place = None if config.journal == "none" else original_reserve(self, name)
        return (gate.draw(), place)

    async def run(self: Any, drawn: object, step: Callable[[], Awaitable[Any]]) -> Any:
        number, place = cast("tuple[int, object]", drawn)

        async def gated() -> Any:
            await gate.before(number)
            return await step()

        if config.journal == "none":
            result = await gated()
        else:
            result = await original_run(self, place, gated)
        gate.after(number)
        return result

    setattr(DBOSJournal, "reserve", reserve)  # noqa: B010 (a method replaced, on purpose)
    setattr(DBOSJournal, "run", run)  # noqa: B010


def main(text: str) -> None:
    config = WorkerConfig.from_json(text)
    from stageware.dbos import DurableAgent, launch

    ledger = Ledger(config.ledger)
    store = cast("SessionStore", DyingStore(open_sessions(config), config.kill))
    if config.kill is not None or config.pause is not None or config.journal != "dbos":
        gate_journal(config)

    def build(session_id: str) -> Agent:
        return Agent(
            ScriptedModel([respond] * 8),
            tools=tools(ledger, session_id),
            session_store=store,
            session_id=session_id,
            session_lease=config.lease,
            policy=PolicyEngine([refund_gate]),
        )

    agent = DurableAgent(KIND, build)
    launch(
        name=config.app,
        database_url=config.database,
        executor_id=config.executor_id,
        watch_seconds=config.watch_seconds,
    )
    if config.job == "run":
        result = agent.run(PROMPT, session_id=config.session)
        report(**asdict(result))
    elif config.job == "serve":
        report(ready=True, pid=os.getpid())
        sys.stdin.read()  # until the test closes it
        report(served=True)
    elif config.job == "finish":
        report(**finish(config))
    else:
        raise SystemExit(f"unknown job {config.job!r}")
    from stageware.dbos import shutdown

    shutdown()


def requests(workflows: list[Any]) -> list[str]:
    """The ids of the request workflows among *workflows* (not their invocations,
    ``<request id>/<n>``)."""
    return [str(w.workflow_id) for w in workflows if "/" not in str(w.workflow_id)]


def finish(config: WorkerConfig) -> dict[str, Any]:
    """The result of the session's workflow, which this process's launch recovered."""
    from dbos import DBOS, WorkflowHandle

    from stageware.dbos import DurableResult

    prefix = f"stageware:{KIND}:{config.session}:"
    deadline = time.monotonic() + ALIVE_SECONDS
    while time.monotonic() < deadline:
        found = requests(DBOS.list_workflows(workflow_id_prefix=prefix))
        if found:
            handle: WorkflowHandle[DurableResult] = DBOS.retrieve_workflow(found[0])
            return asdict(handle.get_result())
        time.sleep(0.1)
    raise SystemExit(f"no workflow starts with {prefix!r}")


if __name__ == "__main__":
    main(sys.argv[1])
