"""A durable run whose worker is killed (SIGKILL) between any two of its steps finishes
on another worker: each tool ran once, the history is the uninterrupted run's, the
approval given once was used once.

The run (``crash_worker``): model, then ``lookup`` and ``note`` at once, model, the
``refund`` after a policy approval, model: six steps and one durable wait. Worker A dies
after its N-th recorded step, for every N; worker B, alive from the start, finds A dead
(the watcher) and DBOS recovers A's workflow on B, which replays it from the journal. The
approval is given once, from the command line, whenever the run waits for it. Each point
has a database of its own, and a few run side by side.

The same kills with the journal replaced by one that records nothing must break those
guarantees: that is what proves these tests see the checkpoints at work.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.host.sessions.stores import fresh_database

from .crash_harness import (
    Worker,
    approve_when_waiting,
    postgres_config,
    reference_history,
    server_url,
    violations,
    wait_for_approval,
    workers,
    workflow_status,
)
from .crash_worker import STEPS, Ledger

# Every boundary between two steps (the kill lands after step N is recorded, before step
# N+1 starts; 0: after the claim, before the first model call); right after the save
# that stores the pending approval; while the workflow waits for it; after the run's
# final save, before the workflow records its end.
POINTS: list[int | str] = [*range(STEPS), "interrupt", "waiting", "final"]
# The place of each tool call among the steps (model, t1, t2, model, t3, model).
TOOL_STEPS = {"t1": 2, "t2": 3, "t3": 5}
AT_ONCE = 4
"""How many runs go side by side (each is two worker processes)."""
# The kills that the test without the journal repeats: one before the approval, one after.
UNJOURNALED: list[int | str] = [2, 5]


Run = tuple[str, int | str]
"""A run of the module: the journal (``dbos`` or ``none``) and the kill point."""
Outcome = list[str] | BaseException
"""What went wrong in one run (empty: nothing), or the error that stopped the harness."""


@pytest.fixture(scope="module")
def server() -> str:
    return server_url()


@pytest.fixture(scope="module")
def reference(server: str, tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    return reference_history(server, tmp_path_factory.mktemp("reference") / "worker.log")


def kill_and_recover(
    server: str, reference: list[Any], journal: str, point: int | str, logs: Path
) -> list[str]:
    """Run with worker A dying at *point* and B taking over; what went wrong, if anything.

    A database of the run's own: a dead worker's workflows go back to DBOS's queue, which
    every live worker of the application takes from, so two runs in one application
    would recover each other's.
    """
    with fresh_database(server) as database:
        dying = postgres_config(
            database,
            f"killed-at-{point}",
            kill=None if point == "waiting" else point,
            journal=journal,
        )
        Ledger(dying.ledger).create()
        with workers() as started:
            alive = replace(dying, job="serve", kill=None)
            started.append(b := Worker.start(alive, logs / f"{journal}-{point}-b.log"))
            started.append(a := Worker.start(dying, logs / f"{journal}-{point}-a.log"))
            b.ready()
            if point == "waiting":
                wait_for_approval(dying)
                time.sleep(0.5)  # the workflow is in its durable wait by now
                a.kill()
            interrupt_id = approve_when_waiting(dying)
            if point != "waiting":
                a.killed()
            status = workflow_status(dying)
            found = violations(dying, reference, interrupt_id, status)
        # The kill landed where it was meant to: A ran the tools of the steps before it,
        # B the others (a tool that ran twice is reported above).
        ran: dict[str, set[int]] = {}
        for tool_use_id, _, pid in Ledger(dying.ledger).rows(dying.session):
            ran.setdefault(tool_use_id, set()).add(pid)
        mine = {a.process.pid}
        expected = {t: mine if ran_before(point, t) else {b.process.pid} for t in ran}
        if ran != expected:
            found.append(f"the tools ran in {ran}, not as the kill point says: {expected}")
        return found


def ran_before(point: int | str, tool_use_id: str) -> bool:
    """Whether the dying worker ran *tool_use_id* before it died at *point*."""
    if point == "final":
        return True
    recorded = 4 if point in ("interrupt", "waiting") else int(point)
    return TOOL_STEPS[tool_use_id] <= recorded


@pytest.fixture(scope="module")
def outcomes(
    server: str, reference: list[Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[Run, Outcome]:
    """Every run of the module, a few at a time: most of a run's time is spent starting
    processes and waiting out a lease, which runs side by side overlap."""
    logs = tmp_path_factory.mktemp("workers")
    runs = [("dbos", p) for p in POINTS] + [("none", p) for p in UNJOURNALED]
    with ThreadPoolExecutor(AT_ONCE) as pool:
        started = {
            run: pool.submit(kill_and_recover, server, reference, *run, logs) for run in runs
        }
        return {run: future.exception() or future.result() for run, future in started.items()}


def outcome(outcomes: dict[Run, Outcome], run: tuple[str, int | str]) -> list[str]:
    found = outcomes[run]
    if isinstance(found, BaseException):
        raise found
    return found


@pytest.mark.parametrize("point", POINTS, ids=[f"after-{p}" for p in POINTS])
def test_a_run_killed_anywhere_finishes_once_on_another_worker(
    outcomes: dict[Run, Outcome], point: int | str
) -> None:
    assert outcome(outcomes, ("dbos", point)) == []


@pytest.mark.parametrize("point", UNJOURNALED, ids=[f"after-{p}" for p in UNJOURNALED])
def test_without_the_journal_the_same_kills_break_the_guarantees(
    outcomes: dict[Run, Outcome], point: int
) -> None:
    found = outcome(outcomes, ("none", point))
    assert any("each tool should run once" in violation for violation in found), found
