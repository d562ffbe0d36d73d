"""A durable run whose worker is killed (SIGKILL) between any two of its steps finishes
on another worker: each tool ran once, the history is the uninterrupted run's, the
approval given once was used once.

The run (``crash_worker``): model, then ``lookup`` and ``note`` at once, model, the
``refund`` after a policy approval, model: six steps and one durable wait. Worker A dies
after its N-th recorded step, for every N; worker B, alive from the start, finds A dead
(the watcher) and DBOS recovers A's workflow on B, which replays it from the journal. The
approval is given once, from the command line, whenever the run waits for it.

The same kills with the journal replaced by one that records nothing must break those
guarantees: that is what proves these tests see the checkpoints at work.
"""

from __future__ import annotations

import time
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


@pytest.fixture(scope="module")
def server() -> str:
    return server_url()


@pytest.fixture(scope="module")
def reference(server: str, tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    return reference_history(server, tmp_path_factory.mktemp("reference") / "worker.log")


@pytest.fixture
def database(server: str) -> Iterator[str]:
    with fresh_database(server) as database:
        yield database


def kill_and_recover(
    database: str, reference: list[Any], logs: Path, point: int | str, journal: str
) -> list[str]:
    """Run with worker A dying at *point* and B taking over; what went wrong, if anything."""
    kill = None if point == "waiting" else point
    dying = postgres_config(database, f"killed-at-{point}", kill=kill, journal=journal)
    alive = replace(dying, job="serve", kill=None)
    Ledger(dying.ledger).create()
    with workers() as started:
        started.append(b := Worker.start(alive, logs / "b.log"))
        b.ready()
        started.append(a := Worker.start(dying, logs / "a.log"))
        if point == "waiting":
            wait_for_approval(dying)
            time.sleep(0.5)  # the workflow is in its durable wait by now
            a.kill()
        interrupt_id = approve_when_waiting(dying)
        if point != "waiting":
            a.killed()
        status = workflow_status(dying)
        found = violations(dying, reference, interrupt_id, status)
    # The kill landed where it was meant to: A ran the tools of the steps before it, B the
    # others (a tool that ran twice is reported above).
    ran: dict[str, set[int]] = {}
    for tool_use_id, _, pid in Ledger(dying.ledger).rows():
        ran.setdefault(tool_use_id, set()).add(pid)
    expected = {t: {a.process.pid if ran_before(point, t) else b.process.pid} for t in ran}
    if ran != expected:
        found.append(f"the tools ran in {ran}, not as the kill point says: {expected}")
    return found


def ran_before(point: int | str, tool_use_id: str) -> bool:
    """Whether the dying worker ran *tool_use_id* before it died at *point*."""
    if point == "final":
        return True
    recorded = 4 if point in ("interrupt", "waiting") else int(point)
    return TOOL_STEPS[tool_use_id] <= recorded


@pytest.mark.parametrize("point", POINTS, ids=[f"after-{p}" for p in POINTS])
def test_a_run_killed_anywhere_finishes_once_on_another_worker(
    database: str, reference: list[Any], tmp_path: Path, point: int | str
) -> None:
    assert kill_and_recover(database, reference, tmp_path, point, "dbos") == []


@pytest.mark.parametrize("point", [2, 5], ids=["after-2", "after-5"])
def test_without_the_journal_the_same_kills_break_the_guarantees(
    database: str, reference: list[Any], tmp_path: Path, point: int
) -> None:
    found = kill_and_recover(database, reference, tmp_path, point, "none")
    assert any("each tool should run once" in violation for violation in found), found
