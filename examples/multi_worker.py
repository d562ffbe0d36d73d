"""Many worker processes serve many sessions from one PostgreSQL, with approvals in between.

Each session is a support conversation that asks for a refund. The worker that gets the
request stops the run for a human's approval (an interrupt); the approval comes back
through a *different* worker, as it would behind a load balancer. To show what the
session store guards against, every approval is delivered twice, to two workers at the
same moment (a client retry, a redelivered queue message): one of them claims the session
and pays, the other is refused before any tool runs.

Run it against a database you can write to (the store creates its own schema)::

    pip install -e '.[postgres]'
    python examples/multi_worker.py postgresql://user:pass@localhost/db --workers 4 --sessions 200

It prints sessions per second, how many duplicate deliveries the store refused (a
conflict or a live lease) or found with nothing left to answer, and how many refunds were
paid twice: that last number must be 0.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
import time
import uuid
from dataclasses import dataclass
from multiprocessing.queues import Queue
from typing import Any

import psycopg
from psycopg import sql

from stageware import (
    Agent,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    SessionConflictError,
    ToolContext,
    tool,
)
from stageware.postgres import PostgresSessionStore


@dataclass(frozen=True)
class Job:
    """A request for a worker: start a session's refund, or deliver its approval."""

    session_id: str
    interrupt_id: str | None = None


def worker(url: str, schema: str, jobs: Any, results: Any) -> None:
    """Serve jobs until a ``None`` arrives; each job gets a fresh agent, as in a web worker."""
    store = PostgresSessionStore(url, schema=schema, max_size=2)
    ledger = psycopg.connect(url, autocommit=True)

    @tool
    def refund(amount: int, context: ToolContext) -> str:
        """Refund an amount once a human approved it.

        Args:
            amount: How much to refund.
        """
        context.interrupt("approve_refund", reason={"amount": amount})
        ledger.execute(
            "INSERT INTO example_refunds (session_id, worker) VALUES (%s, %s)",
            (context.agent.name, os.getpid()),
        )
        return f"refunded {amount}"

    while (job := jobs.get()) is not None:
        # The model's next turn: a refund call for a new request; after the approval, the
        # answer to the customer.
        if job.interrupt_id is None:
            model = ScriptedModel(
                [ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 5})])]
            )
        else:
            model = ScriptedModel(["Your refund of 5 is on its way."])
        agent = Agent(
            model,
            tools=[refund],
            name=job.session_id,
            session_store=store,
            session_id=job.session_id,
        )
        try:
            if job.interrupt_id is None:
                result = agent("I was charged twice, please refund 5.")
                results.put(("asked", job.session_id, result.interrupts[0].id))
            else:
                response = {"interruptId": job.interrupt_id, "response": "approved"}
                agent([{"interruptResponse": response}])
                results.put(("paid", job.session_id, None))
        except SessionConflictError:
            # The other delivery holds or has just saved the session: nothing ran here.
            results.put(("conflict", job.session_id, None))
        except RuntimeError as error:
            if "not waiting" not in str(error):
                raise
            # This delivery loaded the session after the other one had finished the
            # resume: nothing is waiting any more, and nothing ran.
            results.put(("late", job.session_id, None))
    store.close()
    ledger.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("url", help="a postgresql:// URL")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args()
    worker_count: int = args.workers

    schema = f"example_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.url, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS example_refunds (session_id text, worker int)"
        )
        connection.execute("TRUNCATE example_refunds")

    context = multiprocessing.get_context("spawn")
    queues: list[Queue[Job | None]] = [context.Queue() for _ in range(worker_count)]
    results: Queue[tuple[str, str, str | None]] = context.Queue()
    workers = [
        context.Process(target=worker, args=(args.url, schema, jobs, results)) for jobs in queues
    ]
    for process in workers:
        process.start()

    started = time.perf_counter()
    sessions = [f"customer-{n}" for n in range(args.sessions)]
    for n, session_id in enumerate(sessions):
        queues[n % worker_count].put(Job(session_id))
    counts = {"asked": 0, "paid": 0, "conflict": 0, "late": 0}
    outstanding = len(sessions)
    while outstanding:
        try:
            kind, session_id, interrupt_id = results.get(timeout=120)
        except queue.Empty:
            raise SystemExit("a worker stopped answering") from None
        counts[kind] += 1
        outstanding -= 1
        if kind == "asked":
            # The approval goes to two other workers than the one that asked, at once.
            home = sessions.index(session_id) % worker_count
            for hop in (1, 2):
                queues[(home + hop) % worker_count].put(Job(session_id, interrupt_id))
            outstanding += 2
    elapsed = time.perf_counter() - started
    for jobs in queues:
        jobs.put(None)
    for process in workers:
        process.join()

    with psycopg.connect(args.url) as connection:
        paid_twice = connection.execute(
            "SELECT count(*) FROM (SELECT session_id FROM example_refunds "
            "GROUP BY session_id HAVING count(*) > 1) AS doubled"
        ).fetchone()
        refunds = connection.execute("SELECT count(*) FROM example_refunds").fetchone()
        connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        connection.execute("DROP TABLE example_refunds")
    assert paid_twice is not None
    assert refunds is not None

    print(f"workers:            {args.workers}")
    print(f"sessions:           {len(sessions)} (each: a request, then its approval twice)")
    print(f"elapsed:            {elapsed:.2f} s")
    print(f"sessions/second:    {len(sessions) / elapsed:.1f}")
    print(f"refunds paid:       {refunds[0]}")
    print(f"conflicts:          {counts['conflict']} (duplicates refused by the store)")
    print(f"late duplicates:    {counts['late']} (arrived after the resume had finished)")
    print(f"double executions:  {paid_twice[0]}")
    if paid_twice[0] or refunds[0] != len(sessions):
        raise SystemExit("a refund was paid twice or not at all")


if __name__ == "__main__":
    main()
