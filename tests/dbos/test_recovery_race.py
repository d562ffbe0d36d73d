"""Two workers that start at the same moment race to recover a dead worker's run: it is
run to its end once, by one of them.

Worker A dies (SIGKILL) after the first model call and the first tool call are recorded;
then B and C start together, and each one's watcher finds A gone. Whichever recovers the
workflow replays A's steps from the journal and runs the rest; the other must not run it
too (a recovered workflow goes back to DBOS's queue, from which one worker takes it; the
session lease is the backstop).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from .crash_harness import (
    Worker,
    approve_when_waiting,
    fresh_database,
    postgres_config,
    reference_history,
    server_url,
    violations,
    workers,
    workflow_status,
)
from .crash_worker import Ledger


@pytest.fixture(scope="module")
def server() -> str:
    return server_url()


@pytest.fixture
def database(server: str) -> Iterator[str]:
    with fresh_database(server) as database:
        yield database


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
