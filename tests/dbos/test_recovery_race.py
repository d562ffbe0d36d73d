"""Two workers that start at the same moment race to recover a dead worker's run: it is
run to its end once, by one of them.

Worker A dies (SIGKILL) after the first model call and the first tool call are recorded;
then B and C start together, and each one's watcher finds A gone. Whichever recovers the
workflow replays A's steps from the journal and runs the rest; the other must not run it
too (a recovered workflow goes back to DBOS's queue, from which one worker takes it; the
session lease is the backstop).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from .crash_harness import (
    Worker,
    approvals_command,
    approve_when_waiting,
    postgres_config,
    reference_history,
    server_url,
    violations,
    wait_for_approval,
    workers,
    workflow_status,
)
from .crash_worker import Ledger, requests


@pytest.fixture(scope="module")
def server() -> str:
    return server_url()


def test_two_workers_racing_to_recover_a_dead_run_run_it_once(
    server: str, database: str, tmp_path: Path
) -> None:
    reference: list[Any] = reference_history(server, tmp_path / "reference.log")
    dying = postgres_config(database, "raced", kill=2)
    Ledger(dying.ledger).create()
    with workers() as started:
        started.append(a := Worker.start(dying, tmp_path / "a.log"))
        a.killed()
        racers = {
            name: Worker.start(
                replace(dying, job="serve", kill=None, executor_id=f"racer-{name}"),
                tmp_path / f"{name}.log",
            )
            for name in ("b", "c")
        }
        started.extend(racers.values())
        for racer in racers.values():
            racer.ready()
        interrupt_id = approve_when_waiting(dying)
        status = workflow_status(dying)

    assert violations(dying, reference, interrupt_id, status) == []
    # One of the racers ran the rest of the request: the workflow is its. The tools that
    # ran after A died (t2, and the approved refund) ran once each (above), on racers: an
    # invocation is a child workflow, which DBOS may hand to the other racer.
    assert status.executor_id in ("racer-b", "racer-c"), status.executor_id
    pids = {racer.process.pid for racer in racers.values()}
    ledger = Ledger(dying.ledger).rows(dying.session)
    after = {pid for tool_use_id, _, pid in ledger if tool_use_id != "t1"}
    assert after <= pids, (ledger, pids)
    assert [pid for tool_use_id, _, pid in ledger if tool_use_id == "t1"] == [a.process.pid]


def test_an_approval_given_while_a_dead_workers_run_is_recovered_wakes_it(
    database: str, tmp_path: Path
) -> None:
    """Recovery puts a dead worker's workflow back on DBOS's queue (ENQUEUED) until a live
    worker takes it; an approval given in that moment must still wake the run, or its wait
    lasts until the next re-check of the session (a minute by default)."""
    from dbos import DBOSClient
    from dbos._utils import INTERNAL_QUEUE_NAME

    from stageware.dbos import RECHECK_SECONDS

    waiting = postgres_config(database, "recovering")
    Ledger(waiting.ledger).create()
    with workers() as started:
        started.append(a := Worker.start(waiting, tmp_path / "a.log"))
        interrupt_id = wait_for_approval(waiting)
        a.kill()
        client = DBOSClient(system_database_url=database, application_name=waiting.app)
        try:
            (request,) = [
                w
                for w in client.list_workflows(
                    workflow_id_prefix=f"stageware:crash:{waiting.session}:"
                )
                if w.workflow_id in requests([w])
            ]
            # What DBOS's recovery does to each workflow of a dead executor (the watcher
            # calls it): back on the internal queue, for a live worker to take.
            client._sys_db.reenqueue_for_recovery(  # pyright: ignore[reportPrivateUsage]
                request.workflow_id, [str(request.executor_id)], INTERNAL_QUEUE_NAME
            )
        finally:
            client.destroy()
        answered = approvals_command(waiting, "--approve", interrupt_id)
        assert answered.returncode == 0, answered.stderr
        assert f"woke {request.workflow_id}" in answered.stdout, answered.stdout
        # A live worker takes the run from the queue and goes on at once, well before the
        # wait's re-check would have found the answer.
        alive = replace(waiting, job="serve", executor_id="taker")
        started.append(b := Worker.start(alive, tmp_path / "b.log"))
        b.ready()
        status = workflow_status(waiting, timeout=RECHECK_SECONDS / 2)
    assert status.status == "SUCCESS", status.error
