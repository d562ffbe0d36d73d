"""Worker processes take agent runs from one DBOS queue on PostgreSQL, with approvals between.

Each session is a support conversation that asks for a refund. This process is the
producer: it puts every session's request on a DBOS queue, and N worker processes (on one
machine here; on as many as you like in production, each pointed at the same database)
take the runs off it, each run a durable DBOS workflow (``stageware.dbos.DurableAgent``).
The queue caps how many runs a worker takes at once and how many start per second, and
runs one request of a session at a time (it is partitioned by session).

The refund tool stops the run for a human's approval (an interrupt, which ends the
workflow). The approver, outside the workers, finds the approval waiting in the session
store and sends the answer back as a request of its own, on the same queue, to whichever
worker takes it. To show what the session store still guards against, every answer is
delivered twice (a client retry, a redelivered message): one delivery resumes the run and
pays, the other finds nothing left to answer and is refused before any tool runs.

Run it against a database you can write to (DBOS and the store create their own tables)::

    pip install -e '.[postgres,dbos]'
    python examples/multi_worker.py postgresql://user:pass@localhost/db --workers 4 --sessions 200

It prints runs per second, the refunds paid, the duplicate deliveries refused, and how many
refunds were paid twice: that last number must be 0.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Generator
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from stageware import (
    Agent,
    ModelRequest,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    ToolContext,
    tool,
)
from stageware.postgres import PostgresSessionStore

APP = "multi_worker_example"
AGENT = "support"
QUEUE = "support"
PROMPT = "I was charged twice, please refund 5."


def reply(request: ModelRequest) -> ScriptedTurn | str:
    """The model: a refund call for the customer's message, the answer once it is paid."""
    last = request.messages[-1]["content"][0]
    if "toolResult" in last:
        return "Your refund of 5 is on its way."
    return ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 5})])


# --- A worker process ---------------------------------------------------------------------


def serve(url: str, schema: str) -> None:
    """Launch DBOS, take runs from the application's queues until stdin closes."""
    from stageware.dbos import DurableAgent, launch, shutdown

    # Calls bounded at 5 s, not the default 1 s: all the workers and the database share
    # one machine here, where a save may wait its turn past 1 s.
    store = PostgresSessionStore(url, schema=schema, max_size=2, statement_timeout=5.0)
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

    def build_support(session_id: str) -> Agent:
        # A fresh agent for each run, as a web worker makes one per request. Two turns at
        # most per run: the refund call, then (after the approval) the answer.
        return Agent(
            ScriptedModel([reply, reply]),
            tools=[refund],
            name=session_id,
            session_store=store,
            session_id=session_id,
        )

    # An interrupt ends the workflow: the answer comes back as a request of its own.
    DurableAgent(AGENT, build_support, wait_for_approvals=False)
    launch(
        name=APP,
        database_url=url,
        config={"dbos_system_schema": f"{schema}_dbos", "log_level": "WARNING"},
    )
    print("ready", flush=True)
    sys.stdin.read()  # until the producer closes the pipe
    shutdown()
    store.close()
    ledger.close()


@contextlib.contextmanager
def workers(url: str, schema: str, count: int) -> Generator[None]:
    """*count* worker processes, each launched; stopped (stdin closed) afterwards."""
    started: list[subprocess.Popen[str]] = []
    try:
        for _ in range(count):
            started.append(
                subprocess.Popen(
                    [sys.executable, __file__, "serve", url, schema],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    cwd=Path(__file__).parent,
                )
            )
        for process in started:
            assert process.stdout is not None
            if process.stdout.readline().strip() != "ready":
                raise SystemExit(f"worker {process.pid} did not start: {process.wait()}")
        yield
    finally:
        for process in started:
            assert process.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                process.stdin.close()
        for process in started:
            process.wait(timeout=60)


# --- The producer and the approver --------------------------------------------------------


def main() -> None:
    from dbos import DBOSClient

    from stageware.dbos import DurableResult, enqueue_with_client

    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("url", help="a postgresql:// URL")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--per-worker", type=int, default=8, help="runs one worker takes at once")
    parser.add_argument(
        "--rate", type=int, default=0, help="runs started per second at most (0: no limit)"
    )
    args = parser.parse_args()

    # The sessions and DBOS's tables in schemas of this run's own, dropped at the end.
    schema = f"example_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.url, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS example_refunds (session_id text, worker int)"
        )
        connection.execute("TRUNCATE example_refunds")

    counts = {"paid": 0, "refused": 0}
    with (
        workers(args.url, schema, args.workers),
        PostgresSessionStore(args.url, schema=schema, max_size=2) as store,
    ):
        client = DBOSClient(
            system_database_url=args.url, application_name=APP, dbos_system_schema=f"{schema}_dbos"
        )
        client.register_queue(
            QUEUE,
            worker_concurrency=args.per_worker,
            partition_concurrency=1,  # one run of a session at a time
            limiter={"limit": args.rate, "period": 1.0} if args.rate else None,
            polling_interval_sec=0.1,
        )

        def enqueue(session_id: str, prompt: Any) -> str:
            handle = enqueue_with_client(client, QUEUE, AGENT, prompt, session_id=session_id)
            return handle.get_workflow_id()

        started = time.perf_counter()
        sessions = [f"customer-{n}" for n in range(args.sessions)]
        waiting = {enqueue(session_id, PROMPT): ("request", session_id) for session_id in sessions}
        runs = len(waiting)
        while waiting:
            finished = client.list_workflows(
                workflow_ids=list(waiting), status=["SUCCESS", "ERROR"], load_input=False
            )
            for status in finished:
                kind, session_id = waiting.pop(status.workflow_id)
                result = status.output
                if kind == "request":
                    if not isinstance(result, DurableResult) or result.stop_reason != "interrupt":
                        raise SystemExit(
                            f"{session_id}: the request did not stop for the approval: "
                            f"{status.status} {result or status.error}"
                        )
                    # The approver: what waits in the session store, answered twice.
                    [asked] = Agent(
                        ScriptedModel([]), session_store=store, session_id=session_id
                    ).pending_interrupts
                    answer = [
                        {"interruptResponse": {"interruptId": asked.id, "response": "approved"}}
                    ]
                    for _ in range(2):
                        waiting[enqueue(session_id, answer)] = ("answer", session_id)
                        runs += 1
                elif isinstance(result, DurableResult) and result.error is None:
                    counts["paid"] += 1
                else:
                    # Nothing was waiting any more: the other delivery had resumed the run.
                    counts["refused"] += 1
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        client.destroy()

    with psycopg.connect(args.url) as connection:
        paid_twice = connection.execute(
            "SELECT count(*) FROM (SELECT session_id FROM example_refunds "
            "GROUP BY session_id HAVING count(*) > 1) AS doubled"
        ).fetchone()
        refunds = connection.execute("SELECT count(*) FROM example_refunds").fetchone()
        for dropped in (schema, f"{schema}_dbos"):
            connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(dropped)))
        connection.execute("DROP TABLE example_refunds")
    assert paid_twice is not None
    assert refunds is not None

    print(f"workers:            {args.workers}")
    print(f"sessions:           {len(sessions)} (each: a request, then its answer twice)")
    print(f"runs:               {runs}")
    print(f"elapsed:            {elapsed:.2f} s")
    print(f"runs/second:        {runs / elapsed:.1f}")
    print(f"refunds paid:       {refunds[0]}")
    print(f"duplicates refused: {counts['refused']} (found nothing left to answer)")
    print(f"double executions:  {paid_twice[0]}")
    if paid_twice[0] or refunds[0] != len(sessions):
        raise SystemExit("a refund was paid twice or not at all")


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(*sys.argv[2:4])
    else:
        main()
